/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tun: runs a USB CDC-NCM function as an ordinary network interface (TAP or TUN), like cdc_ncm. */
#include <errno.h>
#include <glib-unix.h>
#include <grp.h>
#include <net/if.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ncm.h>

#include "ncm-cli.h"
#include "ncm-link.h"
#include "ncm-pcap.h"
#include "ncm-rtnl.h"
#include "ncm-tap.h"

enum {
	EXIT_OK = 0,       /* stopped by SIGINT/SIGTERM */
	EXIT_RUNTIME = 1,  /* the device went away (without --persist) or failed */
	EXIT_SETUP = 2,    /* bad options, no device, no permission */
};

static gchar *opt_name;
static gint opt_mtu;
static gchar **opt_ipv4;
static gchar **opt_ipv6;
static gboolean opt_persist;
static gchar *opt_pcap;
static gchar *opt_pcap_max;
/* A capture left running must not fill the disk. */
#define NCM_TUN_PCAP_MAX (256u * 1024 * 1024)
static gchar *opt_user;
static gboolean opt_no_up;
static gboolean opt_tun;
static gboolean opt_no_offload;
static gboolean opt_all;

static const GOptionEntry entries[] = {
	{ "name", 'n', 0, G_OPTION_ARG_STRING, &opt_name,
	  "Interface name; %d is numbered by the kernel (default ncm%d)", "NAME" },
	{ "ifname", 0, 0, G_OPTION_ARG_STRING, &opt_name,
	  "The same as --name", "NAME" },
	{ "all", 'a', 0, G_OPTION_ARG_NONE, &opt_all,
	  "Every function --device selects (all without it), an interface each; with --persist "
	  "also those that arrive later. One that cannot be opened at the start is skipped with "
	  "a warning (with --persist tried again in 2, 4 ... 60 s, and when plugged in again)", NULL },
	{ "mtu", 'm', 0, G_OPTION_ARG_INT, &opt_mtu,
	  "IP MTU (default: the device's, from wMaxSegmentSize - 14, where a wMaxSegmentSize "
	  "under 1514 counts as 1514)", "MTU" },
	{ "ipv4", '4', 0, G_OPTION_ARG_STRING_ARRAY, &opt_ipv4,
	  "Add an IPv4 address, e.g. 192.168.79.1/24 (repeatable)", "ADDR/PREFIX" },
	{ "ipv6", '6', 0, G_OPTION_ARG_STRING_ARRAY, &opt_ipv6,
	  "Add an IPv6 address, e.g. fd79::1/64 (repeatable)", "ADDR/PREFIX" },
	{ "persist", 'p', 0, G_OPTION_ARG_NONE, &opt_persist,
	  "Keep the interface through unplug and replug; resume when the device is back. A device not plugged in at the start gets its interface when it comes", NULL },
	{ "pcap", 0, 0, G_OPTION_ARG_FILENAME, &opt_pcap,
	  "Record every datagram, both directions, to FILE (classic pcap), a new file", "FILE" },
	{ "pcap-max", 0, 0, G_OPTION_ARG_STRING, &opt_pcap_max,
	  "Stop recording when the pcap file reaches SIZE bytes (500k, 20M, 1.5G; default 256M)",
	  "SIZE" },
	{ "user", 'u', 0, G_OPTION_ARG_STRING, &opt_user,
	  "Drop privileges to USER after opening the interface and the device", "USER" },
	{ "tun", 0, 0, G_OPTION_ARG_NONE, &opt_tun,
	  "A TUN (IP only) interface instead of TAP; ncm-tun answers ARP and NDP itself", NULL },
	{ "no-offload", 0, 0, G_OPTION_ARG_NONE, &opt_no_offload,
	  "One frame per TAP read and write (no TSO, checksum offload or coalescing)", NULL },
	{ "no-up", 0, 0, G_OPTION_ARG_NONE, &opt_no_up,
	  "Leave the interface's addresses and up/down state alone", NULL },
	G_OPTION_ENTRY_NULL
};

static const gchar description[] =
	"DESCRIPTION\n"
	"  ncm-tun claims one USB CDC-NCM function (detaching cdc_ncm from it) and\n"
	"  makes it an ordinary network interface through a TAP device: what the\n"
	"  kernel's cdc_ncm would do, in userspace. The interface gets the function's\n"
	"  MAC address (iMACAddress) and MTU, the addresses given, and is set up.\n"
	"  With --tun the interface is IP-only (TUN) and ncm-tun speaks Ethernet\n"
	"  for it, answering the device's ARP and neighbour solicitations.\n"
	"  It runs in the foreground until SIGINT or SIGTERM, then gives the\n"
	"  function back to cdc_ncm and removes the interface (unless it was\n"
	"  created beforehand as a persistent interface).\n"
	"\n"
	"EXAMPLES\n"
	"  As root, the only NCM device, with addresses:\n"
	"    ncm-tun --ipv4 192.168.79.1/24 --ipv6 fd79::1/64\n"
	"  One device of several, kept across replugs, capped at 20 MB/s:\n"
	"    ncm-tun -d 0525:a4a1 -d serial=0123 --persist --pace 20M\n"
	"  Without root: root creates the interface once, owned by user U\n"
	"  (and configures its addresses), then U runs ncm-tun on it:\n"
	"    ip tuntap add mode tap user U name ncm0\n"
	"    ip link set ncm0 address <the function's MAC> mtu 1500 up\n"
	"    ncm-tun --name ncm0            (as U)\n"
	"  U also needs write access to the device's /dev/bus/usb node (a udev rule).\n"
	"  Several devices in one process, an interface each (ncm0, ncm1, ...):\n"
	"    ncm-tun --all --persist          (every function, also later ones)\n"
	"    ncm-tun -d serial=A -d serial=B  (a selector kind given again: one more)\n"
	"  Record a session for a bug report:\n"
	"    ncm-tun --pcap /tmp/ncm.pcap ...; tcpdump -r /tmp/ncm.pcap\n"
	"\n"
	"SIGNALS\n"
	"  SIGINT, SIGTERM, SIGHUP\n"
	"                   release the device (cdc_ncm takes it back), remove\n"
	"                   the interface, print statistics and exit; during\n"
	"                   --apple-switch's wait, exit at once. SIGPIPE is ignored.\n"
	"  SIGUSR1          print statistics to stderr and keep running.\n"
	"\n"
	"EXIT STATUS\n"
	"  0  stopped by SIGINT, SIGTERM or SIGHUP\n"
	"  1  the device went away (without --persist) or failed while running\n"
	"  2  setup failed: bad options, no matching device, no permission, busy\n"
	"     (with --all: every function failed). With --persist a device not\n"
	"     plugged in, or not open to ncm-tun yet, is waited for instead\n"
	"\n"
	"NOTES\n"
	"  Creating an interface needs CAP_NET_ADMIN; so do setting its MTU, MAC,\n"
	"  addresses and up state. On a pre-created interface without that\n"
	"  capability, ncm-tun says so and leaves its configuration to root.\n"
	"  No /dev/net/tun: load the module (modprobe tun).\n"
	"  The interface's carrier follows the device's NETWORK_CONNECTION\n"
	"  notifications; functions without an interrupt endpoint are always up.\n"
	"  Frames the kernel does not take fast enough are dropped and counted,\n"
	"  never queued: the statistics show them as rx-drops.\n"
	"  --pcap writes from the data threads: put the file on a fast local file\n"
	"  system (tmpfs), or the capture slows the link down. The file must not\n"
	"  exist yet; it is created mode 0600 before privileges are dropped, and\n"
	"  never through a symlink. Records past --pcap-max are counted, not written.\n"
	"  With --user, a replugged device (--persist) is opened as USER: it needs\n"
	"  access to the new /dev/bus/usb node.\n"
	"  Several devices (--all, or -d naming more than one): --name needs a %d;\n"
	"  give each interface its addresses yourself (--ipv4, --ipv6 and --pcap are\n"
	"  for one device). Under --all an interface belongs to a USB port: what\n"
	"  comes back on that port gets it again, a new port gets a new interface\n"
	"  (not after --user: creating one needs CAP_NET_ADMIN). One device\n"
	"  leaving stops only its interface's traffic; without --persist, ncm-tun\n"
	"  exits when the last one has gone. SIGUSR1 and exit print statistics\n"
	"  per interface, then the total.\n";

typedef struct App App;

/* One interface and the device behind it. */
typedef struct {
	App *app;
	NcmMatch match;          /* its device */
	gchar *port_path;        /* --all: the USB port it serves (match.port_path) */
	NcmTap *tap;             /* NULL until its device first came (--persist) */
	guint mtu;               /* the interface's, as ncm-tun set it */
	NcmDevice *device;       /* NULL while waiting for a replug */
	NcmLink *link;
	guint8 mac[6];           /* the interface's MAC, from the first device */
	NcmStats past;           /* summed over devices already closed */
	guint sessions;
	CliPersist persist;
	gboolean setup_left_to_root;
} Tun;

struct App {
	GMainLoop *loop;
	NcmContext *ctx;
	GArray *matches;         /* NcmMatch: one per -d device, or --all's filters */
	gboolean multi;          /* --all or several devices: interfaces come and go */
	NcmDeviceOptions options;
	GArray *prefixes;        /* NcmRtnlPrefix, for the one interface */
	NcmPcap *pcap;
	guint64 pcap_max;
	GPtrArray *tuns;         /* Tun, in the order they were made */
	gboolean watching;       /* --persist started: new Tuns persist too */
	gboolean stopping;       /* the devices were given back: the final statistics */
	CliSignals signals;
	int status;
};

static void tun_detach(Tun *tun, const gchar *why);
static gboolean tun_make(Tun *tun, const NcmFunctionInfo *info, GError **error);
static gboolean same_function(const NcmFunctionInfo *a, const NcmFunctionInfo *b);
static guint tuns_made(App *app);

/* ---- statistics --------------------------------------------------------- */

/* The interface's name now: its owner may have renamed it (ip link set ... name). */
static const gchar *
tun_ifname(Tun *tun, gchar buf[IF_NAMESIZE])
{
	int idx = ncm_tap_get_ifindex(tun->tap);

	if (idx > 0 && if_indextoname((unsigned)idx, buf))
		return buf;
	return ncm_tap_get_name(tun->tap);
}

/* The kernel's own drop counter: a TAP write never fails when the backlog is full. */
static guint64
kernel_counter(Tun *tun, const gchar *name)
{
	gchar ifname[IF_NAMESIZE];
	g_autofree gchar *path = g_strdup_printf("/sys/class/net/%s/statistics/%s",
						 tun_ifname(tun, ifname), name);
	g_autofree gchar *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return 0;
	return g_ascii_strtoull(text, NULL, 10);
}

/* Prints one interface's statistics and adds them to the totals. */
static void
print_tun_stats(Tun *tun, NcmStats *sum, NcmTapStats *tap_sum)
{
	NcmStats st = tun->past;
	NcmTapStats ts;
	gchar ifname[IF_NAMESIZE];

	if (tun->device) {
		NcmStats now;

		ncm_device_get_stats(tun->device, &now);
		cli_stats_add(&st, &now);
	}
	ncm_tap_get_stats(tun->tap, &ts);
	cli_stats_add(sum, &st);
	tap_sum->rx_frames += ts.rx_frames;
	tap_sum->rx_drops_full += ts.rx_drops_full;
	tap_sum->tx_frames += ts.tx_frames;
	tap_sum->tx_drops_invalid += ts.tx_drops_invalid;
	tap_sum->tx_drops_closed += ts.tx_drops_closed;
	fprintf(stderr, "ncm-tun: %s, %u device session(s)%s\n", tun_ifname(tun, ifname),
		tun->sessions, tun->device || tun->app->stopping ? "" : ", no device now");
	cli_print_usb_stats(stderr, &st);
	fprintf(stderr, "  tap rx: %" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT
		" rx-drops (interface full), %" G_GUINT64_FORMAT " write errors, %" G_GUINT64_FORMAT
		" ACKs thinned\n", ts.rx_frames, ts.rx_drops_full, ts.rx_errors, ts.rx_acks_thinned);
	if (ncm_tap_has_offload(tun->tap))
		fprintf(stderr, "  tap offload: rx %" G_GUINT64_FORMAT " coalesced packets (%"
			G_GUINT64_FORMAT " frames merged, %" G_GUINT64_FORMAT " bad checksums), tx %"
			G_GUINT64_FORMAT " TSO packets cut\n", ts.rx_super, ts.rx_coalesced,
			ts.rx_bad_csum, ts.tx_gso_packets);
	if (ncm_tap_has_offload(tun->tap))
		fprintf(stderr, "  tap runs ended: %" G_GUINT64_FORMAT " full, %" G_GUINT64_FORMAT
			" by a short segment, %" G_GUINT64_FORMAT " by a gap, %" G_GUINT64_FORMAT
			" by a header, %" G_GUINT64_FORMAT " by another frame, %" G_GUINT64_FORMAT
			" flushed\n", ts.rx_run_ends[0], ts.rx_run_ends[1], ts.rx_run_ends[2],
			ts.rx_run_ends[3], ts.rx_run_ends[4], ts.rx_run_ends[5]);
	fprintf(stderr, "  tap tx: %" G_GUINT64_FORMAT " frames in %" G_GUINT64_FORMAT
		" bursts, %" G_GUINT64_FORMAT " waits, %" G_GUINT64_FORMAT " dropped (invalid), %"
		G_GUINT64_FORMAT " dropped (no device)\n", ts.tx_frames, ts.tx_bursts, ts.tx_waits,
		ts.tx_drops_invalid, ts.tx_drops_closed);
	fprintf(stderr, "  tap queue: %" G_GUINT64_FORMAT " packets read ahead while the device was "
		"busy, %" G_GUINT64_FORMAT " ACKs and %" G_GUINT64_FORMAT " packets of sparse flows "
		"sent ahead of data, %" G_GUINT64_FORMAT " dropped (queue full)\n", ts.tx_queued,
		ts.tx_acks_ahead, ts.tx_sparse_ahead, ts.tx_drops_queue);
	fprintf(stderr, "  tap delay: %.2f ms mean wait of %" G_GUINT64_FORMAT " queued packets, %.0f ms "
		"waiting for the device's room\n",
		ts.tx_sojourn_packets ? (double)ts.tx_sojourn_us / (double)ts.tx_sojourn_packets / 1000 : 0,
		ts.tx_sojourn_packets, (double)ts.tx_room_wait_us / 1000);
	fprintf(stderr, "  kernel: %" G_GUINT64_FORMAT " rx dropped, %" G_GUINT64_FORMAT
		" tx dropped (the interface's own counters)\n", kernel_counter(tun, "rx_dropped"),
		kernel_counter(tun, "tx_dropped"));
	if (opt_tun)
		fprintf(stderr, "  tun: %" G_GUINT64_FORMAT " ARP/NDP answers\n", ts.l3_answers);
	if (tun->app->pcap)
		fprintf(stderr, "  pcap: %" G_GUINT64_FORMAT " records, %" G_GUINT64_FORMAT
			" lost, %" G_GUINT64_FORMAT " over --pcap-max\n",
			ncm_pcap_get_records(tun->app->pcap), ncm_pcap_get_lost(tun->app->pcap),
			ncm_pcap_get_over_max(tun->app->pcap));
}

/* Every interface that carried traffic, then (several devices) the sum. */
static void
print_stats(gpointer data)
{
	App *app = data;
	NcmStats sum = { 0 };
	NcmTapStats tap_sum = { 0 };
	guint shown = 0, sessions = 0;

	for (guint i = 0; i < app->tuns->len; i++) {
		Tun *tun = app->tuns->pdata[i];

		if (!tun->sessions)
			continue;
		print_tun_stats(tun, &sum, &tap_sum);
		shown++;
		sessions += tun->sessions;
	}
	if (!app->multi || !shown)
		return;
	fprintf(stderr, "ncm-tun: total over %u interface(s), %u device session(s)\n", shown,
		sessions);
	cli_print_usb_stats(stderr, &sum);
	fprintf(stderr, "  tap rx: %" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT
		" rx-drops; tap tx: %" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT
		" dropped\n", tap_sum.rx_frames, tap_sum.rx_drops_full, tap_sum.tx_frames,
		tap_sum.tx_drops_invalid + tap_sum.tx_drops_closed);
}

/* ---- option parsing ----------------------------------------------------- */

/* What makes sense for one interface only, refused for several. */
static gboolean
check_multi_options(App *app, GError **error)
{
	const gchar *single = opt_ipv4 ? "--ipv4" : opt_ipv6 ? "--ipv6" : opt_pcap ? "--pcap" : NULL;

	app->multi = opt_all || app->matches->len > 1;
	if (opt_all && app->matches->len > 1) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--all takes the filters of one --device (such as a VID:PID), not "
			    "several devices");
		return FALSE;
	}
	if (!app->multi)
		return TRUE;
	if (single) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "%s is for one device; with several, give each interface its "
			    "addresses with ip(8) (the interface has the device's MAC)", single);
		return FALSE;
	}
	if (opt_name && !strstr(opt_name, "%d")) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--name %s: several devices need a name with %%d, such as ncm%%d",
			    opt_name);
		return FALSE;
	}
	return TRUE;
}

static gboolean
parse_options(App *app, int *argc, char ***argv, GError **error)
{
	if (!cli_parse_options("- USB CDC-NCM functions as network interfaces", entries, description, argc,
			       argv, error))
		return FALSE;
	if (!(app->matches = cli_device_parse_many(&app->options, error)) ||
	    !check_multi_options(app, error))
		return FALSE;
	app->pcap_max = NCM_TUN_PCAP_MAX;
	if (opt_pcap_max && !cli_parse_size("pcap-max", opt_pcap_max, &app->pcap_max, error))
		return FALSE;
	if (opt_mtu < 0 || (opt_mtu > 0 && opt_mtu < 68)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--mtu %d: expected at least 68", opt_mtu);
		return FALSE;
	}
	return TRUE;
}
/* Parses every --ipv4/--ipv6 up front so mistakes stop us before anything is claimed. */
static GArray *
parse_prefixes(GError **error)
{
	g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(NcmRtnlPrefix));
	gchar **lists[2] = { opt_ipv4, opt_ipv6 };
	const int families[2] = { AF_INET, AF_INET6 };

	for (guint l = 0; l < 2; l++) {
		for (guint i = 0; lists[l] && lists[l][i]; i++) {
			NcmRtnlPrefix p;

			if (!ncm_rtnl_prefix_parse(&p, lists[l][i], error))
				return NULL;
			if (p.family != families[l]) {
				g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
					    "%s is not an IPv%c address", lists[l][i],
					    l ? '6' : '4');
				return NULL;
			}
			g_array_append_val(all, p);
		}
	}
	return g_steal_pointer(&all);
}

/* ---- the device ---------------------------------------------------------- */

static void
on_link_changed(NcmDevice *device, gboolean up, Tun *tun)
{
	g_autoptr(GError) error = NULL;

	g_message("%s: link %s", ncm_tap_get_name(tun->tap), up ? "up" : "down");
	if (!ncm_tap_set_carrier(tun->tap, up, &error))
		g_warning("%s", error->message);
}

static void
on_removed(NcmDevice *device, Tun *tun)
{
	tun_detach(tun, "the device went away");
}

static void
on_device_error(NcmDevice *device, GError *error, Tun *tun)
{
	g_warning("device error: %s", error->message);
	tun_detach(tun, "the device failed");
}

/* Claims the function and connects its control-plane signals; nothing moves yet. */
static gboolean
tun_open(Tun *tun, const NcmFunctionInfo *info, GError **error)
{
	NcmDevice *device = ncm_device_open(tun->app->ctx, info, &tun->app->options, error);

	if (!device)
		return FALSE;
	g_signal_connect(device, "link-changed", G_CALLBACK(on_link_changed), tun);
	g_signal_connect(device, "removed", G_CALLBACK(on_removed), tun);
	g_signal_connect(device, "error", G_CALLBACK(on_device_error), tun);
	tun->device = device;
	return TRUE;
}

/* Undoes tun_open() (no session started on it). */
static void
tun_close_device(Tun *tun)
{
	g_signal_handlers_disconnect_by_data(tun->device, tun);
	ncm_device_close(tun->device);
	g_clear_object(&tun->device);
}

/* Starts the data path between the device and the interface: one session. */
static gboolean
tun_start(Tun *tun, GError **error)
{
	const NcmFunctionInfo *info = ncm_device_get_info(tun->device);
	gboolean carrier;

	tun->link = ncm_link_new_for_device(tun->device);
	if (!ncm_tap_attach(tun->tap, tun->link, error)) {
		ncm_link_free(g_steal_pointer(&tun->link));
		tun_close_device(tun);
		return FALSE;
	}
	tun->sessions++;
	/* Without an interrupt endpoint no NETWORK_CONNECTION ever comes: assume up. */
	carrier = info->intr_ep == 0 || ncm_device_get_link_up(tun->device);
	ncm_tap_set_carrier(tun->tap, carrier, NULL);
	g_message("%s: %04x:%04x at %s attached", ncm_tap_get_name(tun->tap), info->vid,
		  info->pid, info->port_path);
	return TRUE;
}

/* Whether any interface still has its device. */
static gboolean
app_has_device(App *app)
{
	for (guint i = 0; i < app->tuns->len; i++)
		if (((Tun *)app->tuns->pdata[i])->device)
			return TRUE;
	return FALSE;
}

/*
 * Ends the session; the interface stays. Without --persist, exits when the
 * last device has gone: the others' traffic goes on meanwhile.
 */
static void
tun_detach(Tun *tun, const gchar *why)
{
	NcmStats st;

	if (!tun->device)
		return;
	g_signal_handlers_disconnect_by_data(tun->device, tun);
	ncm_tap_set_carrier(tun->tap, FALSE, NULL);
	/* Stops the reader, then ncm_device_close(): cdc_ncm gets the function back. */
	if (tun->link)
		ncm_tap_detach(tun->tap);
	else
		ncm_device_close(tun->device);  /* setup failed before the data path started */
	ncm_device_get_stats(tun->device, &st);
	cli_stats_add(&tun->past, &st);
	ncm_link_free(g_steal_pointer(&tun->link));
	g_clear_object(&tun->device);
	if (!why)
		return;
	if (opt_persist) {
		g_message("%s: %s; waiting for it to come back", ncm_tap_get_name(tun->tap), why);
		cli_persist_lost(&tun->persist);
		return;
	}
	if (tun->app->multi)
		g_printerr("ncm-tun: %s: %s\n", ncm_tap_get_name(tun->tap), why);
	else
		g_printerr("ncm-tun: %s\n", why);
	if (app_has_device(tun->app))
		return;
	tun->app->status = EXIT_RUNTIME;
	g_main_loop_quit(tun->app->loop);
}

/*
 * Someone deleted our interface: nothing left to carry that device's frames
 * to. Its device is let go (a kernel driver gets it back); the other
 * interfaces go on, and with none left ncm-tun exits.
 */
static gboolean
on_interface_gone(gpointer data)
{
	Tun *tun = data;
	App *app = tun->app;

	if (app->tuns->len > 1) {
		guint made = tuns_made(app) - 1;

		g_printerr("ncm-tun: the interface %s was deleted; its device is let go, the "
			   "other %u interface(s) go on%s\n", ncm_tap_get_name(tun->tap), made,
			   app->tuns->len - 1 > made ? ", and devices to come are waited for" : "");
		g_ptr_array_remove(app->tuns, tun);
		/* The others may be waiting for devices that went away. */
		if (!opt_persist && !app_has_device(app)) {
			app->status = EXIT_RUNTIME;
			g_main_loop_quit(app->loop);
		}
		return G_SOURCE_REMOVE;
	}
	g_printerr("ncm-tun: the interface %s was deleted\n", ncm_tap_get_name(tun->tap));
	app->status = EXIT_RUNTIME;
	g_main_loop_quit(app->loop);
	return G_SOURCE_REMOVE;
}

/* ---- the interface ------------------------------------------------------- */

/*
 * Without CAP_NET_ADMIN a pre-created interface is root's to configure: say
 * so once and skip the remaining steps. An interface we created must be
 * configured.
 */
static gboolean
setup_step(Tun *tun, gboolean ok, GError **error)
{
	if (ok)
		return TRUE;
	if (ncm_tap_is_persistent(tun->tap) &&
	    g_error_matches(*error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED)) {
		const guint8 *m = tun->mac;
		/* A TAP that keeps another MAC drops the device's unicast frames to us. */
		g_autofree gchar *mac = opt_tun ? g_strdup("") :
			g_strdup_printf(" address %02x:%02x:%02x:%02x:%02x:%02x",
					m[0], m[1], m[2], m[3], m[4], m[5]);

		g_message("%s was created beforehand and we may not configure it (%s): "
			  "leaving its MTU, MAC, addresses and up state to root, who should run "
			  "ip link set %s%s mtu %u up, then add the addresses",
			  ncm_tap_get_name(tun->tap), (*error)->message,
			  ncm_tap_get_name(tun->tap), mac, tun->mtu);
		g_clear_error(error);
		tun->setup_left_to_root = TRUE;
		return TRUE;
	}
	return FALSE;
}

static gboolean
setup_interface(Tun *tun, GError **error)
{
	GArray *prefixes = tun->app->prefixes;
	int idx = ncm_tap_get_ifindex(tun->tap);
	guint mtu = ncm_device_get_mtu(tun->device);

	if (opt_mtu > 0 && (guint)opt_mtu > mtu) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--mtu %d is larger than the device's maximum (%u)", opt_mtu, mtu);
		return FALSE;
	}
	if (opt_mtu > 0)
		mtu = (guint)opt_mtu;
	tun->mtu = mtu;
	ncm_device_get_mac(tun->device, tun->mac);
	if (!setup_step(tun, ncm_rtnl_set_mtu(idx, mtu, error), error))
		return FALSE;
	/* A TUN interface has no link layer: the backend uses the MAC itself. */
	if (!opt_tun && !tun->setup_left_to_root &&
	    !setup_step(tun, ncm_rtnl_set_mac(idx, tun->mac, error), error))
		return FALSE;
	if (opt_no_up || tun->setup_left_to_root)
		return TRUE;
	for (guint i = 0; i < prefixes->len; i++) {
		const NcmRtnlPrefix *p = &g_array_index(prefixes, NcmRtnlPrefix, i);

		if (!setup_step(tun, ncm_rtnl_add_address(idx, p, FALSE, error), error))
			return FALSE;
	}
	return setup_step(tun, ncm_rtnl_set_up(idx, TRUE, error), error);
}

/* A different function came back under --persist: the interface follows its MAC. */
static void
follow_mac(Tun *tun)
{
	g_autoptr(GError) error = NULL;
	guint8 mac[6];

	ncm_device_get_mac(tun->device, mac);
	if (opt_tun || !memcmp(mac, tun->mac, 6))
		return;
	if (!ncm_rtnl_set_mac(ncm_tap_get_ifindex(tun->tap), mac, &error))
		g_warning("the device's MAC changed and the interface keeps its old one: %s",
			  error->message);
	else
		memcpy(tun->mac, mac, 6);
}

/*
 * ... and its MTU: a device that comes back with a smaller one would see
 * every larger frame refused. --mtu still caps it.
 */
static void
follow_mtu(Tun *tun)
{
	g_autoptr(GError) error = NULL;
	guint mtu = ncm_device_get_mtu(tun->device);

	if (opt_mtu > 0 && (guint)opt_mtu < mtu)
		mtu = (guint)opt_mtu;
	if (mtu == tun->mtu)
		return;
	if (!ncm_rtnl_set_mtu(ncm_tap_get_ifindex(tun->tap), mtu, &error)) {
		g_warning("the device's MTU changed to %u and the interface keeps %u: %s", mtu,
			  tun->mtu, error->message);
		return;
	}
	g_message("%s: MTU %u (was %u), as the device that came back", ncm_tap_get_name(tun->tap),
		  mtu, tun->mtu);
	tun->mtu = mtu;
}

/* ---- --persist: replug ------------------------------------------------------ */

static NcmDevice *
persist_current(gpointer data)
{
	return ((Tun *)data)->device;
}

static gboolean
persist_reopen(gpointer data, const NcmFunctionInfo *info, GError **error)
{
	Tun *tun = data;

	if (!tun->tap) {
		if (!tun_make(tun, info, error))
			return FALSE;
		g_message("%s: running", ncm_tap_get_name(tun->tap));
		return TRUE;
	}
	if (!tun_open(tun, info, error) || !tun_start(tun, error))
		return FALSE;
	follow_mac(tun);
	follow_mtu(tun);
	return TRUE;
}

static void
persist_removed(gpointer data)
{
	tun_detach(data, "the device went away");
}

/* Not a function another interface has: two selectors may match one device. */
static gboolean
persist_wanted(gpointer data, const NcmFunctionInfo *info)
{
	Tun *tun = data;
	GPtrArray *tuns = tun->app->tuns;

	for (guint i = 0; i < tuns->len; i++) {
		Tun *t = tuns->pdata[i];

		if (t != tun && t->device && same_function(ncm_device_get_info(t->device), info))
			return FALSE;
	}
	return TRUE;
}

static gboolean
start_persist(Tun *tun, GError **error)
{
	tun->persist = (CliPersist){
		.ctx = tun->app->ctx,
		.match = &tun->match,
		.current = persist_current,
		.reopen = persist_reopen,
		.removed = persist_removed,
		.data = tun,
		.shared_watch = TRUE,
		.wanted = persist_wanted,
		.opened = tun->tap != NULL,
	};
	return cli_persist_start(&tun->persist, error);
}

/* ---- privileges, signals, main ----------------------------------------------- */

/* After this, the open TAP fd and usbfs fd keep working; nothing new can be created. */
static gboolean
drop_privileges(const gchar *user, GError **error)
{
	struct passwd *pw = getpwnam(user);

	if (!pw) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--user %s: no such user", user);
		return FALSE;
	}
	if (initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
	    setuid(pw->pw_uid) < 0) {
		int err = errno;

		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err),
			    "dropping privileges to %s: %s (--user needs root)", user,
			    g_strerror(err));
		return FALSE;
	}
	if (pw->pw_uid != 0 && setuid(0) == 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "dropping privileges to %s did not stick", user);
		return FALSE;
	}
	return TRUE;
}

/* ---- interfaces: one per device ---------------------------------------------- */

static void
tun_free(Tun *tun)
{
	cli_persist_stop(&tun->persist);
	if (tun->device)
		tun_detach(tun, NULL);
	/* A non-persistent interface goes with its fd. */
	if (tun->tap)
		ncm_tap_free(tun->tap);
	g_free(tun->port_path);
	g_free(tun);
}

/* Under --all the port (@port_path) is the interface's identity across replugs. */
static Tun *
tun_new(App *app, const NcmMatch *match, const gchar *port_path)
{
	Tun *tun = g_new0(Tun, 1);

	tun->app = app;
	tun->match = *match;
	if (opt_all) {
		tun->port_path = g_strdup(port_path);
		tun->match.port_path = tun->port_path;
	}
	return tun;
}

/*
 * The interface, made for @info, its first device, and running; on failure
 * nothing of it is left (no interface, the device given back).
 */
static gboolean
tun_make(Tun *tun, const NcmFunctionInfo *info, GError **error)
{
	/* The device first: a device still waited for (not ours yet, held
	 * elsewhere) fails here on every retry, and an interface made and
	 * deleted each time would churn the host's network configuration. */
	if (!tun_open(tun, info, error))
		return FALSE;
	tun->tap = ncm_tap_open_full(opt_name, opt_tun ? NCM_TAP_MODE_TUN : NCM_TAP_MODE_TAP,
				     opt_no_offload ? 0 : NCM_TAP_OFFLOAD, error);
	if (!tun->tap) {
		/* tun_detach() needs the interface. */
		tun_close_device(tun);
		return FALSE;
	}
	ncm_tap_set_pcap(tun->tap, tun->app->pcap);
	ncm_tap_set_gone_func(tun->tap, on_interface_gone, tun);
	if (setup_interface(tun, error) && tun_start(tun, error))
		return TRUE;
	if (tun->device)
		tun_detach(tun, NULL);
	g_clear_pointer(&tun->tap, ncm_tap_free);
	return FALSE;
}

/* The interface for @info, running; NULL (nothing left behind) on failure. */
static Tun *
tun_add(App *app, const NcmFunctionInfo *info, const NcmMatch *match, GError **error)
{
	Tun *tun = tun_new(app, match, info->port_path);

	if (!tun_make(tun, info, error) || (app->watching && !start_persist(tun, error))) {
		tun_free(tun);
		return NULL;
	}
	g_ptr_array_add(app->tuns, tun);
	return tun;
}

/*
 * --persist: an interface still to be made, for a device not plugged in at
 * the start or not opened then (busy, its node not yet given to us). Its
 * watch tries it as it would a replug, retries included, and makes the
 * interface at the first open.
 */
static Tun *
tun_add_waiting(App *app, const NcmMatch *match, const gchar *port_path)
{
	Tun *tun = tun_new(app, match, port_path);

	g_ptr_array_add(app->tuns, tun);
	return tun;
}

/*
 * --persist: @info, which failed to open with @error, waits as an interface
 * still to be made, if that error can be waited out; FALSE if not.
 */
static gboolean
tun_wait_for(App *app, const NcmMatch *match, const NcmFunctionInfo *info, const GError *error)
{
	g_autoptr(GError) local = NULL;
	Tun *tun;

	if (!opt_persist || opt_user || !cli_persist_waits_for(error))
		return FALSE;
	g_warning("skipping the function at %s for now: %s (tried again in 2, 4 ... 60 s, and at "
		  "once when it is plugged in again)", info->port_path, error->message);
	tun = tun_add_waiting(app, match, info->port_path);
	/* Before the watch starts, start_watching() starts it. */
	if (app->watching && !start_persist(tun, &local))
		g_warning("the function at %s: %s", info->port_path, local->message);
	return TRUE;
}

/* Interfaces made so far (waiting ones have none yet). */
static guint
tuns_made(App *app)
{
	guint n = 0;

	for (guint i = 0; i < app->tuns->len; i++)
		n += ((Tun *)app->tuns->pdata[i])->tap != NULL;
	return n;
}

static gboolean
same_function(const NcmFunctionInfo *a, const NcmFunctionInfo *b)
{
	return a->bus == b->bus && a->address == b->address && a->comm_iface == b->comm_iface;
}

/*
 * --all --persist: runs after every interface's own handler (connected
 * after), so a function none of them took, on a port none waits for, is new.
 */
/* An interface has @info, or waits for it (its own handler takes it). */
static gboolean
function_taken(App *app, const NcmFunctionInfo *info)
{
	for (guint i = 0; i < app->tuns->len; i++) {
		Tun *t = app->tuns->pdata[i];

		if (t->device ? same_function(ncm_device_get_info(t->device), info)
			      : ncm_match_test(&t->match, info))
			return TRUE;
	}
	return FALSE;
}

static void
on_function_arrived(NcmContext *ctx, NcmFunctionInfo *info, App *app)
{
	g_autoptr(GError) error = NULL;
	Tun *tun;

	if (function_taken(app, info))
		return;
	if ((tun = tun_add(app, info, &g_array_index(app->matches, NcmMatch, 0), &error)))
		g_message("%s: running", ncm_tap_get_name(tun->tap));
	/* Still settling, or held for a moment: tried again as a replug would be. */
	else if (!tun_wait_for(app, &g_array_index(app->matches, NcmMatch, 0), info, error))
		g_warning("new device at %s: %s", info->port_path, error->message);
}

static void
info_unref0(gpointer info)
{
	if (info)
		ncm_function_info_unref(info);
}

/* The functions to start with: one per -d device (NULL for one to wait for), or everything --all selects. */
static GPtrArray *
select_functions(App *app, GError **error)
{
	g_autoptr(GPtrArray) infos = g_ptr_array_new_with_free_func(info_unref0);
	const NcmMatch *base = &g_array_index(app->matches, NcmMatch, 0);

	if (opt_all) {
		g_autoptr(GPtrArray) all = ncm_context_enumerate(app->ctx, base, error);
		NcmFunctionInfo *one;

		if (!all)
			return NULL;
		if (all->len || opt_persist)
			return g_steal_pointer(&all);
		/* For its message: none found, or unreadable serials. */
		if (!(one = cli_select_function(app->ctx, base, -1, error)))
			return NULL;
		g_ptr_array_add(infos, one);
		return g_steal_pointer(&infos);
	}
	for (guint i = 0; i < app->matches->len; i++) {
		g_autoptr(GError) local = NULL;
		NcmFunctionInfo *info = cli_select_function(
			app->ctx, &g_array_index(app->matches, NcmMatch, i), -1, &local);

		/* Started before the device (at boot, say), or before udev gave it
		 * to us: under --persist it gets its interface when it can be
		 * opened. Several that match are for the user to settle first. */
		if (!info && opt_persist && cli_persist_waits_for(local)) {
			g_autofree gchar *which = app->matches->len > 1
							  ? g_strdup_printf("device %u: ", i + 1)
							  : g_strdup("");

			if (opt_user) {
				g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
					    "%s%s; with --user ncm-tun cannot wait for it: its "
					    "interface would need CAP_NET_ADMIN then. Plug it in (or "
					    "give it to the user) before starting ncm-tun, or leave out "
					    "--user and give ncm-tun CAP_NET_ADMIN alone "
					    "(ncm-tun.service does)", which, local->message);
				return NULL;
			}
			if (local->code == NCM_ERROR_NOT_FOUND)
				g_message("%s%s; waiting for it (--persist)", which, local->message);
			else
				g_warning("%s%s; waiting for that (--persist)", which, local->message);
			g_ptr_array_add(infos, NULL);
			continue;
		}
		if (!info) {
			g_propagate_error(error, g_steal_pointer(&local));
			return NULL;
		}
		g_ptr_array_add(infos, info);
		for (guint j = 0; j < i; j++) {
			if (!infos->pdata[j] || !same_function(infos->pdata[j], info))
				continue;
			g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
				    "--device: devices %u and %u select the same function (%s)",
				    j + 1, i + 1, info->port_path);
			return NULL;
		}
	}
	return g_steal_pointer(&infos);
}

/* --persist: every interface waits for its device, and (--all) new ones get one. */
static gboolean
start_watching(App *app, GError **error)
{
	for (guint i = 0; i < app->tuns->len; i++)
		if (!start_persist(app->tuns->pdata[i], error))
			return FALSE;
	app->watching = TRUE;
	if (opt_all)
		g_signal_connect_after(app->ctx, "function-added", G_CALLBACK(on_function_arrived),
				       app);
	/* One watch per context: the filters all interfaces share, or each their own. */
	return ncm_context_watch(app->ctx,
				 opt_all || app->matches->len == 1
					 ? &g_array_index(app->matches, NcmMatch, 0)
					 : NULL,
				 0, error);
}

/* Everything up to the running data path; errors here exit with EXIT_SETUP. */
static gboolean
app_setup(App *app, GError **error)
{
	g_autoptr(GPtrArray) infos = NULL;

	if (opt_user && !getpwnam(opt_user)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--user %s: no such user", opt_user);
		return FALSE;
	}
	app->ctx = ncm_context_new(error);
	if (!app->ctx ||
	    !cli_apple_switch(app->ctx, opt_all || app->matches->len == 1
					       ? &g_array_index(app->matches, NcmMatch, 0)
					       : NULL,
			      -1, error) ||
	    !(infos = select_functions(app, error)))
		return FALSE;
	if (opt_pcap && !(app->pcap = ncm_pcap_open(opt_pcap, app->pcap_max, error)))
		return FALSE;
	for (guint i = 0; i < infos->len; i++) {
		const NcmMatch *match = &g_array_index(app->matches, NcmMatch, opt_all ? 0 : i);
		const NcmFunctionInfo *info = infos->pdata[i];
		g_autoptr(GError) local = NULL;

		if (!info) {
			tun_add_waiting(app, match, NULL);
			continue;
		}
		/* --persist: tried again as after a replug (its node not given
		 * to us yet at boot, another program that lets go). Otherwise,
		 * --all: one function another program holds must not keep the
		 * others down (as for one that arrives later); unless none opens. */
		if (tun_add(app, info, match, &local) || tun_wait_for(app, match, info, local))
			continue;
		if (!opt_all || (i + 1 == infos->len && app->tuns->len == 0)) {
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
		g_warning("skipping the function at %s: %s%s", info->port_path, local->message,
			  opt_persist ? " (after --user it gets no interface later: that needs "
					"CAP_NET_ADMIN)" : "");
	}
	if (opt_user && !drop_privileges(opt_user, error))
		return FALSE;
	return !opt_persist || start_watching(app, error);
}

static void
app_cleanup(App *app)
{
	if (app->ctx)
		g_signal_handlers_disconnect_by_data(app->ctx, app);
	app->stopping = TRUE;
	for (guint i = 0; i < app->tuns->len; i++) {
		Tun *tun = app->tuns->pdata[i];

		cli_persist_stop(&tun->persist);
		if (tun->device)
			tun_detach(tun, NULL);
	}
	print_stats(app);
	g_ptr_array_unref(app->tuns);
	ncm_pcap_close(app->pcap);
	g_clear_object(&app->ctx);
	g_clear_pointer(&app->matches, g_array_unref);
	g_clear_pointer(&app->prefixes, g_array_unref);
	g_main_context_release(NULL);
	g_main_loop_unref(app->loop);
}

int
main(int argc, char **argv)
{
	App app = { .status = EXIT_OK };
	g_autoptr(GError) error = NULL;

	app.tuns = g_ptr_array_new_with_free_func((GDestroyNotify)tun_free);
	if (!parse_options(&app, &argc, &argv, &error) ||
	    !(app.prefixes = parse_prefixes(&error))) {
		fprintf(stderr, "ncm-tun: %s\n", error->message);
		g_ptr_array_unref(app.tuns);
		g_clear_pointer(&app.matches, g_array_unref);
		return EXIT_SETUP;
	}
	app.loop = g_main_loop_new(NULL, FALSE);
	/*
	 * Held for the whole run: g_main_context_invoke() from the libusb thread
	 * would otherwise acquire a free default context during setup and run
	 * our signal handlers right there, on the libusb thread.
	 */
	g_main_context_acquire(NULL);
	/* Before setup: a signal then must still give the devices back to cdc_ncm. */
	app.signals = (CliSignals){ app.loop, print_stats, &app };
	cli_signals_add(&app.signals);
	if (!app_setup(&app, &error)) {
		fprintf(stderr, "ncm-tun: %s\n", error->message);
		/* A signal during setup is a stop, as later. */
		app.status = g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ? EXIT_OK
										       : EXIT_SETUP;
		app_cleanup(&app);
		return app.status;
	}
	for (guint i = 0; app.multi && i < app.tuns->len; i++) {
		Tun *tun = app.tuns->pdata[i];

		if (tun->tap)
			g_message("%s: running", ncm_tap_get_name(tun->tap));
	}
	if (app.multi)
		g_message("%u interface(s) running (SIGUSR1 prints statistics, SIGINT/SIGTERM stop)",
			  tuns_made(&app));
	else if (tuns_made(&app))
		g_message("%s: running (SIGUSR1 prints statistics, SIGINT/SIGTERM stop)",
			  ncm_tap_get_name(((Tun *)app.tuns->pdata[0])->tap));
	else
		g_message("waiting for the device (SIGUSR1 prints statistics, SIGINT/SIGTERM stop)");
	g_main_loop_run(app.loop);
	app_cleanup(&app);
	return app.status;
}
