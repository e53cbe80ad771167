/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-probe: lists every NCM function with its descriptors, MAC, capabilities and NTB parameters. */
#include <stdio.h>
#include <stdlib.h>

#include <ncm.h>

static gboolean opt_no_open;
static gboolean opt_keep_driver;
static gchar **opt_match;
static gboolean opt_apple;

static const GOptionEntry entries[] = {
	{ "no-open", 'n', 0, G_OPTION_ARG_NONE, &opt_no_open,
	  "Do not claim functions to read NTB parameters (descriptors only)", NULL },
	{ "keep-driver", 'k', 0, G_OPTION_ARG_NONE, &opt_keep_driver,
	  "Skip functions a kernel driver holds instead of detaching it for the query", NULL },
	{ "apple-switch", 'a', 0, G_OPTION_ARG_NONE, &opt_apple,
	  "First ask the Apple devices (iOS 17+) --device selects (all without it) to expose "
	  "NCM, then list", NULL },
	{ "device", 'd', 0, G_OPTION_ARG_STRING_ARRAY, &opt_match,
	  "Select: VID:PID, serial=S, path=BUS-PORT.., mac=aa:bb:..", "SEL" },
	G_OPTION_ENTRY_NULL
};

static void
print_caps(guint8 caps)
{
	static const char *names[] = { "packet-filter", "net-address", "encapsulated",
				       "max-datagram-size", "crc-mode", "ntb-input-size-8" };

	printf("  capabilities:   0x%02x", caps);
	for (guint i = 0; i < G_N_ELEMENTS(names); i++)
		if (caps & (1u << i))
			printf(" %s", names[i]);
	printf("\n");
}

static void
print_info(const NcmFunctionInfo *info)
{
	printf("%s  %04x:%04x  bus %03u device %03u  %u Mbit/s\n", info->port_path, info->vid,
	       info->pid, info->bus, info->address, info->speed_mbps);
	printf("  manufacturer:   %s\n", info->manufacturer ? info->manufacturer : "?");
	printf("  product:        %s\n", info->product ? info->product : "?");
	printf("  serial:         %s\n", info->serial ? info->serial : "?");
	if (info->access_error)
		printf("  access:         %s\n", info->access_error);
	printf("  configuration:  %u (active %u)%s\n", info->config_value, info->active_config,
	       info->config_value == info->active_config ? "" : "  [inactive]");
	printf("  interfaces:     comm %u, data %u alt %u\n", info->comm_iface, info->data_iface,
	       info->data_alt);
	printf("  endpoints:      bulk in 0x%02x (%u), bulk out 0x%02x (%u), interrupt ",
	       info->bulk_in_ep, info->bulk_in_max_packet, info->bulk_out_ep,
	       info->bulk_out_max_packet);
	if (info->intr_ep)
		printf("0x%02x (%u)\n", info->intr_ep, info->intr_max_packet);
	else
		printf("none\n");
	if (info->have_mac)
		printf("  mac:            %02x:%02x:%02x:%02x:%02x:%02x\n", info->mac[0],
		       info->mac[1], info->mac[2], info->mac[3], info->mac[4], info->mac[5]);
	else
		printf("  mac:            ?\n");
	printf("  max segment:    %u\n", info->max_segment_size);
	printf("  ncm version:    %x.%02x\n", info->bcd_ncm >> 8, info->bcd_ncm & 0xff);
	print_caps(info->net_caps);
	printf("  kernel driver:  %s\n", info->kernel_driver ? info->kernel_driver : "none");
}

static void
print_ntb(const NcmNtbInfo *n)
{
	printf("  ntb formats:    %s%s\n", (n->formats & 1) ? "NTB16 " : "",
	       (n->formats & 2) ? "NTB32" : "");
	printf("  ntb in:         max %u, divisor %u, remainder %u, alignment %u\n",
	       n->in_max_size, n->in_divisor, n->in_remainder, n->in_alignment);
	printf("  ntb out:        max %u, divisor %u, remainder %u, alignment %u, "
	       "max datagrams %u\n",
	       n->out_max_size, n->out_divisor, n->out_remainder, n->out_alignment,
	       n->out_max_datagrams);
}

static void
query(NcmContext *ctx, const NcmFunctionInfo *info)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmDevice) dev = NULL;
	NcmDeviceOptions opts;
	NcmNtbInfo ntb;

	if (opt_keep_driver && info->kernel_driver) {
		printf("  ntb parameters: not queried (%s holds it; drop --keep-driver)\n",
		       info->kernel_driver);
		return;
	}
	ncm_device_options_init(&opts);
	dev = ncm_device_open(ctx, info, &opts, &error);
	if (!dev) {
		printf("  ntb parameters: %s\n", error->message);
		return;
	}
	ncm_device_get_ntb_info(dev, &ntb);
	print_ntb(&ntb);
	ncm_device_close(dev);
}

int
main(int argc, char **argv)
{
	g_autoptr(GOptionContext) oc = g_option_context_new("- list USB CDC-NCM functions");
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = NULL;
	g_autoptr(GPtrArray) all = NULL;
	NcmMatch match = { 0 };

	g_option_context_add_main_entries(oc, entries, NULL);
	g_option_context_set_description(oc,
		"Without --no-open, each function is claimed briefly to read its NTB\n"
		"parameters; a kernel driver (cdc_ncm) holding it is detached and\n"
		"re-attached afterwards. Exit status: 0 if a function was found, 1 if none,\n"
		"2 on errors.\n");
	if (!g_option_context_parse(oc, &argc, &argv, &error)) {
		fprintf(stderr, "ncm-probe: %s\n", error->message);
		return 2;
	}
	for (guint i = 0; opt_match && opt_match[i]; i++) {
		if (!ncm_match_parse(&match, opt_match[i], &error)) {
			fprintf(stderr, "ncm-probe: %s\n", error->message);
			return 2;
		}
	}
	ctx = ncm_context_new(&error);
	if (ctx && opt_apple) {
		guint n = ncm_context_switch_apple_devices_matching(ctx, &match, &error);

		if (error) {
			fprintf(stderr, "ncm-probe: %s\n", error->message);
			return 2;
		}
		if (n) {
			printf("asked %u Apple device(s) for NCM; waiting for them to re-enumerate\n", n);
			g_usleep(3 * G_USEC_PER_SEC);
		}
	}
	if (!ctx || !(all = ncm_context_enumerate(ctx, &match, &error))) {
		fprintf(stderr, "ncm-probe: %s\n", error->message);
		return 2;
	}
	for (guint i = 0; i < all->len; i++) {
		NcmFunctionInfo *info = g_ptr_array_index(all, i);

		print_info(info);
		if (!opt_no_open)
			query(ctx, info);
	}
	if (all->len == 0)
		fprintf(stderr, "ncm-probe: no USB CDC-NCM function found\n");
	return all->len ? 0 : 1;
}
