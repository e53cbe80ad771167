/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-abi.c: the public structs' sizes and field offsets, against the layout libncm.so.1 and libncm-lwip.so.1 promise. */
#include <stddef.h>
#include <string.h>

#include <ncm.h>
#ifdef NCM_TEST_LWIP
#include <ncm-lwip.h>
#endif

/*
 * A program built against an older header allocates the size that header
 * gave and expects each field where that header put it. So every size and
 * offset below is part of the ABI: a failure here means installed programs
 * would read or write the wrong bytes.
 *
 * The documented way to add a field (the comment on each struct, README.md,
 * "The API in one page") takes it from the front of the struct's private
 * _reserved, so the size stays and no listed field moves: this test keeps
 * passing; list the new field's offset here too. Growing a struct, or
 * moving or resizing a field, fails it. If that is really meant, it is an
 * ABI break: bump ncm_soversion in meson.build and the version scripts'
 * nodes (libncm/libncm.map), and commit the new values with it.
 *
 * The values are LP64's (x86-64, arm64): elsewhere pointers and the
 * alignment of guint64 differ, and the test skips.
 */
#define ABI_SOVERSION "1" /* the soname these layouts belong to */

/* One value of the layout: what this build has, what was committed. */
typedef struct {
	const gchar *name;
	gsize actual, committed;
} AbiValue;

#define SIZE(T, n) { "sizeof(" #T ")", sizeof(T), n }
/* A field's offset and its size: a field whose type widens moves no offset
 * when padding followed it, and still breaks what programs read. */
#define FIELD(T, f, at, len) \
	{ "offsetof(" #T ", " #f ")", offsetof(T, f), at }, \
	{ "sizeof(" #T "." #f ")", sizeof(((T *)0)->f), len }
/* The reserve is the last member (nothing was appended after it); its
 * offset is not listed, since taking a field from it moves it. */
#define RESERVE_ENDS(T) { "the byte count of " #T " after _reserved", \
	sizeof(T) - offsetof(T, _reserved) - sizeof(((T *)0)->_reserved), 0 }

static const AbiValue device_values[] = {
	SIZE(NcmStats, 1024),
	RESERVE_ENDS(NcmStats),
	FIELD(NcmStats, rx_ntbs, 0, 8),
	FIELD(NcmStats, rx_datagrams, 8, 8),
	FIELD(NcmStats, rx_bytes, 16, 8),
	FIELD(NcmStats, rx_bad_ntbs, 24, 8),
	FIELD(NcmStats, rx_rejects, 32, 256),
	FIELD(NcmStats, rx_overflows, 288, 8),
	FIELD(NcmStats, rx_stalls, 296, 8),
	FIELD(NcmStats, rx_errors, 304, 8),
	FIELD(NcmStats, rx_sink_drops, 312, 8),
	FIELD(NcmStats, tx_ntbs, 320, 8),
	FIELD(NcmStats, tx_datagrams, 328, 8),
	FIELD(NcmStats, tx_bytes, 336, 8),
	FIELD(NcmStats, tx_flush_full, 344, 8),
	FIELD(NcmStats, tx_flush_limit, 352, 8),
	FIELD(NcmStats, tx_flush_explicit, 360, 8),
	FIELD(NcmStats, tx_flush_timer, 368, 8),
	FIELD(NcmStats, tx_would_block, 376, 8),
	FIELD(NcmStats, tx_invalid, 384, 8),
	FIELD(NcmStats, tx_errors, 392, 8),
	FIELD(NcmStats, tx_paced_waits, 400, 8),
	FIELD(NcmStats, intr_events, 408, 8),
	FIELD(NcmStats, intr_malformed, 416, 8),
	FIELD(NcmStats, main_dispatches, 424, 8),
	FIELD(NcmStats, rx_nudges, 432, 8),
	FIELD(NcmStats, rx_nudge_freed, 440, 8),
	FIELD(NcmStats, tx_acks_merged, 448, 8),
	FIELD(NcmStats, rx_batches, 456, 8),
	FIELD(NcmStats, rx_acks_thinned, 464, 8),
	FIELD(NcmStats, tx_transfers, 472, 8),
	FIELD(NcmStats, tx_queue_limit, 480, 8),
	FIELD(NcmStats, rx_joined_ntbs, 488, 8),

	SIZE(NcmNtbInfo, 128),
	RESERVE_ENDS(NcmNtbInfo),
	FIELD(NcmNtbInfo, formats, 0, 2),
	FIELD(NcmNtbInfo, in_max_size, 4, 4),
	FIELD(NcmNtbInfo, in_divisor, 8, 2),
	FIELD(NcmNtbInfo, in_remainder, 10, 2),
	FIELD(NcmNtbInfo, in_alignment, 12, 2),
	FIELD(NcmNtbInfo, out_max_size, 16, 4),
	FIELD(NcmNtbInfo, out_divisor, 20, 2),
	FIELD(NcmNtbInfo, out_remainder, 22, 2),
	FIELD(NcmNtbInfo, out_alignment, 24, 2),
	FIELD(NcmNtbInfo, out_max_datagrams, 26, 2),
	FIELD(NcmNtbInfo, ntb32, 28, 4),
	FIELD(NcmNtbInfo, rx_ntb_size, 32, 4),
	FIELD(NcmNtbInfo, tx_ntb_size, 36, 4),
	FIELD(NcmNtbInfo, rx_transfers, 40, 4),
	FIELD(NcmNtbInfo, tx_transfers, 44, 4),
	FIELD(NcmNtbInfo, max_frame, 48, 4),
	FIELD(NcmNtbInfo, mapped_buffers, 52, 4),
	FIELD(NcmNtbInfo, tx_ntbs_per_transfer, 56, 4),

	SIZE(NcmDeviceOptions, 256),
	RESERVE_ENDS(NcmDeviceOptions),
	FIELD(NcmDeviceOptions, ntb32, 0, 4),
	FIELD(NcmDeviceOptions, rx_ntb_size, 4, 4),
	FIELD(NcmDeviceOptions, tx_ntb_size, 8, 4),
	FIELD(NcmDeviceOptions, rx_transfers, 12, 4),
	FIELD(NcmDeviceOptions, tx_transfers, 16, 4),
	FIELD(NcmDeviceOptions, pace_bytes_per_sec, 24, 8),
	FIELD(NcmDeviceOptions, flush_timeout_us, 32, 4),
	FIELD(NcmDeviceOptions, switch_config, 36, 4),
	FIELD(NcmDeviceOptions, detach_kernel_driver, 40, 4),
	FIELD(NcmDeviceOptions, ndp_first, 44, 4),
	FIELD(NcmDeviceOptions, packet_filter, 48, 1),
	FIELD(NcmDeviceOptions, nudge_ms, 52, 4),
	FIELD(NcmDeviceOptions, no_ack_merge, 56, 4),
	FIELD(NcmDeviceOptions, tx_ntbs_per_transfer, 60, 4),

	SIZE(NcmLinkSink, 64),
	RESERVE_ENDS(NcmLinkSink),
	FIELD(NcmLinkSink, receive, 0, 8),
	FIELD(NcmLinkSink, receive_done, 8, 8),
	FIELD(NcmLinkSink, writable, 16, 8),
};

static const AbiValue context_values[] = {
	SIZE(NcmMatch, 88),
	RESERVE_ENDS(NcmMatch),
	FIELD(NcmMatch, vid, 0, 2),
	FIELD(NcmMatch, pid, 2, 2),
	FIELD(NcmMatch, serial, 8, 8),
	FIELD(NcmMatch, port_path, 16, 8),
	FIELD(NcmMatch, have_mac, 24, 4),
	FIELD(NcmMatch, mac, 28, 6),

	/* Only the library allocates it, so it grows at its end (no reserve):
	 * its size is not listed, only that every field stays put. */
	FIELD(NcmFunctionInfo, bus, 0, 1),
	FIELD(NcmFunctionInfo, address, 1, 1),
	FIELD(NcmFunctionInfo, port_path, 8, 8),
	FIELD(NcmFunctionInfo, vid, 16, 2),
	FIELD(NcmFunctionInfo, pid, 18, 2),
	FIELD(NcmFunctionInfo, manufacturer, 24, 8),
	FIELD(NcmFunctionInfo, product, 32, 8),
	FIELD(NcmFunctionInfo, serial, 40, 8),
	FIELD(NcmFunctionInfo, have_mac, 48, 4),
	FIELD(NcmFunctionInfo, mac, 52, 6),
	FIELD(NcmFunctionInfo, speed_mbps, 60, 4),
	FIELD(NcmFunctionInfo, active_config, 64, 1),
	FIELD(NcmFunctionInfo, config_value, 65, 1),
	FIELD(NcmFunctionInfo, comm_iface, 66, 1),
	FIELD(NcmFunctionInfo, data_iface, 67, 1),
	FIELD(NcmFunctionInfo, data_alt, 68, 1),
	FIELD(NcmFunctionInfo, intr_ep, 69, 1),
	FIELD(NcmFunctionInfo, intr_max_packet, 70, 2),
	FIELD(NcmFunctionInfo, bulk_in_ep, 72, 1),
	FIELD(NcmFunctionInfo, bulk_out_ep, 73, 1),
	FIELD(NcmFunctionInfo, bulk_in_max_packet, 74, 2),
	FIELD(NcmFunctionInfo, bulk_out_max_packet, 76, 2),
	FIELD(NcmFunctionInfo, max_segment_size, 78, 2),
	FIELD(NcmFunctionInfo, bcd_ncm, 80, 2),
	FIELD(NcmFunctionInfo, net_caps, 82, 1),
	FIELD(NcmFunctionInfo, kernel_driver, 88, 8),
	FIELD(NcmFunctionInfo, access_error, 96, 8),
	{ "sizeof(NcmFunctionInfo) covers access_error (grown only at the end)",
	  sizeof(NcmFunctionInfo) >= 104, TRUE },
};

#ifdef NCM_TEST_LWIP
static const AbiValue lwip_values[] = {
	SIZE(NcmLwipStats, 512),
	RESERVE_ENDS(NcmLwipStats),
	FIELD(NcmLwipStats, rx_frames, 0, 8),
	FIELD(NcmLwipStats, rx_drops, 8, 8),
	FIELD(NcmLwipStats, tx_frames, 16, 8),
	FIELD(NcmLwipStats, tx_queued, 24, 8),
	FIELD(NcmLwipStats, tx_drops, 32, 8),
	FIELD(NcmLwipStats, tx_flushes, 40, 8),
	FIELD(NcmLwipStats, window_posts, 48, 8),
	FIELD(NcmLwipStats, main_dispatches, 56, 8),
	FIELD(NcmLwipStats, rx_compacted, 64, 8),
	FIELD(NcmLwipStats, syn_evicted, 72, 8),
	FIELD(NcmLwipStats, time_wait_evicted, 80, 8),
	FIELD(NcmLwipStats, rx_merged, 88, 8),
	FIELD(NcmLwipStats, core_lock_waits, 96, 8),
	FIELD(NcmLwipStats, core_lock_wait_us, 104, 8),
	FIELD(NcmLwipStats, tx_cut, 112, 8),
	FIELD(NcmLwipStats, tx_sparse_ahead, 120, 8),

	SIZE(NcmLwipNetifConfig, 120),
	RESERVE_ENDS(NcmLwipNetifConfig),
	FIELD(NcmLwipNetifConfig, ipv4, 0, 8),
	FIELD(NcmLwipNetifConfig, ipv4_prefix, 8, 4),
	FIELD(NcmLwipNetifConfig, ipv4_gateway, 16, 8),
	FIELD(NcmLwipNetifConfig, dhcp, 24, 4),
	FIELD(NcmLwipNetifConfig, ipv6_link_local, 28, 4),
	FIELD(NcmLwipNetifConfig, ipv6_dad, 32, 4),
	FIELD(NcmLwipNetifConfig, ipv6_slaac, 36, 4),
	FIELD(NcmLwipNetifConfig, ipv6, 40, 8),
	FIELD(NcmLwipNetifConfig, make_default, 48, 4),
};
#endif

static gboolean
is_lp64(void)
{
	return sizeof(gpointer) == 8 && sizeof(glong) == 8 && G_ALIGNOF(guint64) == 8;
}

/* Every difference is reported before the test fails, to fix them in one go. */
static void
check_values(const AbiValue *v, gsize n)
{
	guint wrong = 0;

	if (!is_lp64()) {
		g_test_skip("the committed layouts are LP64's");
		return;
	}
	g_assert_cmpstr(NCM_TEST_SOVERSION, ==, ABI_SOVERSION);
	for (gsize i = 0; i < n; i++) {
		if (v[i].actual == v[i].committed)
			continue;
		g_test_message("%s is %" G_GSIZE_FORMAT ", libncm.so." ABI_SOVERSION " has %"
			       G_GSIZE_FORMAT ": an ABI break. A new field takes the front of"
			       " _reserved, which shrinks by the field's size and padding",
			       v[i].name, v[i].actual, v[i].committed);
		wrong++;
	}
	g_assert_cmpuint(wrong, ==, 0);
}

static void
test_device_layout(void)
{
	check_values(device_values, G_N_ELEMENTS(device_values));
}

static void
test_context_layout(void)
{
	check_values(context_values, G_N_ELEMENTS(context_values));
}

#ifdef NCM_TEST_LWIP
static void
test_lwip_layout(void)
{
	check_values(lwip_values, G_N_ELEMENTS(lwip_values));
}
#endif

static void
assert_zero(const void *p, gsize len)
{
	const guint8 *b = p;

	for (gsize i = 0; i < len; i++)
		g_assert_cmpuint(b[i], ==, 0);
}

/*
 * A field taken from the reserve later reads zero from a library older
 * than it (the getters), and zero keeps what the library did before it
 * (init): both need the library to write zeros over the whole reserve.
 */
static void
test_reserve_written_zero(void)
{
	g_autoptr(NcmDevice) dev = g_object_new(NCM_TYPE_DEVICE, NULL);
	NcmDeviceOptions options;
	NcmStats stats;
	NcmNtbInfo ntb;

	memset(&options, 0xa5, sizeof(options));
	ncm_device_options_init(&options);
	assert_zero(options._reserved, sizeof(options._reserved));
	g_assert_true(options.detach_kernel_driver);

	memset(&stats, 0xa5, sizeof(stats));
	ncm_device_get_stats(dev, &stats);
	assert_zero(&stats, sizeof(stats));

	memset(&ntb, 0xa5, sizeof(ntb));
	ncm_device_get_ntb_info(dev, &ntb);
	assert_zero(ntb._reserved, sizeof(ntb._reserved));
}

#ifdef NCM_TEST_LWIP
static void
test_lwip_reserve_written_zero(void)
{
	g_autoptr(NcmLwipStack) stack = ncm_lwip_stack_get_default();
	NcmLwipNetifConfig config;
	NcmLwipStats stats;

	memset(&config, 0xa5, sizeof(config));
	ncm_lwip_netif_config_init(&config);
	assert_zero(config._reserved, sizeof(config._reserved));
	g_assert_true(config.ipv6_link_local);

	memset(&stats, 0xa5, sizeof(stats));
	ncm_lwip_stack_get_stats(stack, &stats);
	assert_zero(stats._reserved, sizeof(stats._reserved));
}
#endif

/* ncm-version.h is written by hand: it must say what meson.build installs (libncm.pc). */
static void
test_version_macros(void)
{
	g_autofree gchar *v = g_strdup_printf("%d.%d.%d", NCM_MAJOR_VERSION, NCM_MINOR_VERSION,
					      NCM_MICRO_VERSION);

	g_assert_cmpstr(v, ==, NCM_TEST_PROJECT_VERSION);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/abi/layout/device", test_device_layout);
	g_test_add_func("/abi/layout/context", test_context_layout);
	g_test_add_func("/abi/reserve-written-zero", test_reserve_written_zero);
	g_test_add_func("/abi/version-macros", test_version_macros);
#ifdef NCM_TEST_LWIP
	g_test_add_func("/abi/layout/lwip", test_lwip_layout);
	g_test_add_func("/abi/lwip-reserve-written-zero", test_lwip_reserve_written_zero);
#endif
	return g_test_run();
}
