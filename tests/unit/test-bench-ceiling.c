/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bench-ceiling.c: ncm-bench's fractions of the usbfs ceiling, the /proc/net/dev counters the uplink is counted with, and the raw commands' MACs. */
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "ncm-bench-ceiling.h"
#include "ncm-bench-json.h"
#include "ncm-bench-proto.h"

/* A result with Mbit/s over @n repetitions (none: a failed test). */
static BenchResult *
result_new(const char *path, const char *test, double *mbit, gsize n)
{
	BenchResult *r = bench_result_new(path, test);

	if (n > 0)
		bench_summarize(mbit, n, &r->mbit);
	return r;
}

static void
test_pairs(void)
{
	g_assert_cmpstr(bench_ceiling_test("tcp_down"), ==, "raw_down");
	g_assert_cmpstr(bench_ceiling_test("tcp_up"), ==, "raw_up");
	g_assert_cmpstr(bench_ceiling_test("tcp_bidir"), ==, "raw_bidir");
	/* The ceiling has none itself, nor have tests that are not bulk throughput. */
	g_assert_null(bench_ceiling_test("raw_down"));
	g_assert_null(bench_ceiling_test("bulk_stalls"));
	g_assert_null(bench_ceiling_test("tcp_down_x"));
}

/*
 * Each direction against its own ceiling, median over median with the
 * run's spread kept; the first raw result that has Mbit/s is the ceiling,
 * a failed one (no Mbit/s) is passed over.
 */
static void
test_apply(void)
{
	g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)bench_result_free);
	double down[] = {150, 100, 200}, up[] = {90, 120, 60}, bidir[] = {80};
	double raw_down[] = {400, 420, 380}, raw_up[] = {900}, other_up[] = {450};
	BenchResult *d, *u, *b, *rd, *ru;

	g_ptr_array_add(results, d = result_new("cdc_ncm", "tcp_down", down, 3));
	g_ptr_array_add(results, u = result_new("cdc_ncm", "tcp_up", up, 3));
	g_ptr_array_add(results, b = result_new("cdc_ncm", "tcp_bidir", bidir, 1));
	g_ptr_array_add(results, result_new("raw", "raw_down", NULL, 0)); /* failed */
	g_ptr_array_add(results, rd = result_new("raw2", "raw_down", raw_down, 3));
	g_ptr_array_add(results, ru = result_new("raw2", "raw_up", raw_up, 1));
	g_ptr_array_add(results, result_new("raw3", "raw_up", other_up, 1));
	bench_ceiling_apply(results);

	g_assert_cmpuint(d->ceiling.n, ==, 3);
	g_assert_cmpfloat(d->ceiling_mbit, ==, 400);
	g_assert_cmpfloat_with_epsilon(d->ceiling.median, 150.0 / 400, 1e-12);
	g_assert_cmpfloat_with_epsilon(d->ceiling.min, 100.0 / 400, 1e-12);
	g_assert_cmpfloat_with_epsilon(d->ceiling.max, 200.0 / 400, 1e-12);
	g_assert_cmpfloat(u->ceiling_mbit, ==, 900);
	g_assert_cmpfloat_with_epsilon(u->ceiling.median, 90.0 / 900, 1e-12);
	g_assert_cmpfloat_with_epsilon(u->ceiling.max, 120.0 / 900, 1e-12);
	/* No raw_bidir ran: no fraction, rather than one against another direction. */
	g_assert_cmpuint(b->ceiling.n, ==, 0);
	g_assert_cmpuint(rd->ceiling.n, ==, 0);
	g_assert_cmpuint(ru->ceiling.n, ==, 0);

	/* Again, after the ceiling's result went away: nothing stale is left. */
	g_ptr_array_remove(results, ru);
	g_ptr_array_remove_index(results, 5); /* raw3's raw_up */
	bench_ceiling_apply(results);
	g_assert_cmpuint(u->ceiling.n, ==, 0);
	g_assert_cmpfloat(u->ceiling_mbit, ==, 0);
	g_assert_cmpuint(d->ceiling.n, ==, 3);
}

/* The JSON carries the fraction as a summary and the ceiling it was taken against. */
static void
test_json(void)
{
	g_autofree char *dir = g_dir_make_tmp("bench-ceiling-XXXXXX", NULL);
	g_autofree char *out = g_build_filename(dir, "out.json", NULL);
	g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)bench_result_free);
	g_autoptr(GString) env = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;
	double down[] = {100}, raw_down[] = {400};

	g_ptr_array_add(results, result_new("lwip", "tcp_down", down, 1));
	g_ptr_array_add(results, result_new("raw", "raw_down", raw_down, 1));
	bench_ceiling_apply(results);
	g_assert_true(bench_json_write(out, env, NULL, results, &error));
	g_assert_no_error(error);
	g_assert_true(g_file_get_contents(out, &text, NULL, NULL));
	g_assert_nonnull(strstr(text, "{\"path\":\"lwip\",\"test\":\"tcp_down\",\"ceiling_fraction\":"
				"{\"median\":0.25,\"min\":0.25,\"max\":0.25,\"n\":1},\"ceiling_mbit_s\":400}"));
	g_assert_nonnull(strstr(text, "{\"path\":\"raw\",\"test\":\"raw_down\"}"));
	g_remove(out);
	g_rmdir(dir);
}

/* /proc/net/dev as 6.1 writes it, one counter wide enough to touch the colon. */
static const char netdev[] =
	"Inter-|   Receive                                                |  Transmit\n"
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
	"drop fifo colls carrier compressed\n"
	"    lo:    7424      96    0    0    0     0          0         0     7424      96    0 "
	"   0    0     0       0          0\n"
	"  usb0:123456789012  81543    0    0    0     0          0         3  1234567    9876    0 "
	"   0    0     0       0          0\n"
	"usb10: 5 6 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

static void
test_netdev(void)
{
	guint64 bytes = 1, packets = 1;

	g_assert_true(bench_netdev_rx_parse(netdev, "usb0", &bytes, &packets));
	g_assert_cmpuint(bytes, ==, 123456789012u);
	g_assert_cmpuint(packets, ==, 81543);
	g_assert_true(bench_netdev_rx_parse(netdev, "lo", &bytes, &packets));
	g_assert_cmpuint(packets, ==, 96);
	/* A name is matched whole: usb1 is not usb10's prefix. */
	g_assert_false(bench_netdev_rx_parse(netdev, "usb1", &bytes, &packets));
	g_assert_true(bench_netdev_rx_parse(netdev, "usb10", &bytes, &packets));
	g_assert_cmpuint(bytes, ==, 5);
	g_assert_false(bench_netdev_rx_parse("  usb0: x 1\n", "usb0", &bytes, &packets));
	g_assert_false(bench_netdev_rx_parse("", "usb0", &bytes, &packets));
}

static void
test_mac(void)
{
	guint8 mac[6] = {0}, want[6] = {0x02, 0x4e, 0x43, 0x4d, 0x00, 0xaf};
	g_autofree char *text = bench_mac_text(want);

	g_assert_cmpstr(text, ==, "02:4e:43:4d:00:af");
	g_assert_true(bench_mac_parse("02:4E:43:4d:00:AF", mac));
	g_assert_cmpmem(mac, 6, want, 6);
	g_assert_true(bench_cmd_mac("RAW_FLOOD secs=3 mac=02:4e:43:4d:00:af len=1514", "mac", mac));
	g_assert_cmpmem(mac, 6, want, 6);
	g_assert_true(bench_cmd_mac("RAW_FLOOD mac=02:4e:43:4d:00:af", "mac", mac));
	/* Refused, and the output left alone. */
	memset(mac, 0x55, sizeof(mac));
	g_assert_false(bench_mac_parse("02:4e:43:4d:00", mac));
	g_assert_false(bench_mac_parse("02:4e:43:4d:00:af:", mac));
	g_assert_false(bench_mac_parse("02-4e-43-4d-00-af", mac));
	g_assert_false(bench_mac_parse("02:4e:43:4d:00:ag", mac));
	g_assert_false(bench_cmd_mac("RAW_FLOOD secs=3", "mac", mac));
	g_assert_false(bench_cmd_mac("RAW_FLOOD mac=02:4e:43:4d:00:af0", "mac", mac));
	g_assert_false(bench_cmd_mac("RAW_FLOOD xmac=02:4e:43:4d:00:af", "mac", mac));
	for (int i = 0; i < 6; i++)
		g_assert_cmpuint(mac[i], ==, 0x55);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bench-ceiling/pairs", test_pairs);
	g_test_add_func("/bench-ceiling/apply", test_apply);
	g_test_add_func("/bench-ceiling/json", test_json);
	g_test_add_func("/bench-ceiling/netdev", test_netdev);
	g_test_add_func("/bench-ceiling/mac", test_mac);
	return g_test_run();
}
