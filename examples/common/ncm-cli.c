/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cli.c: sizes, choosing the one function, statistics lines and --persist for ncm-tun and ncm-proxy. */
#include <glib-unix.h>
#include <signal.h>

#include "ncm-cli.h"

static gchar **opt_device;
static gchar *opt_pace;
static gboolean opt_ntb32;
static gboolean opt_switch_config;
static gboolean opt_apple_switch;
static gint opt_nudge_ms;
static gboolean opt_no_ack_merge;
static gint opt_tx_ntbs = 0;

static gboolean cli_device_parse_tuning(NcmDeviceOptions *ret_options, GError **error);

static const GOptionEntry device_entries[] = {
	{ "device", 'd', 0, G_OPTION_ARG_STRING_ARRAY, &opt_device,
	  "Select the function: VID:PID, serial=S, path=BUS-PORT.., mac=aa:bb:.. (repeat to combine; "
	  "in ncm-tun, a kind given again selects one more device)",
	  "SEL" },
	{ "pace", 0, 0, G_OPTION_ARG_STRING, &opt_pace,
	  "Cap transmission at RATE bytes/s (suffix k, M, G: powers of 1000)", "RATE" },
	{ "ntb32", 0, 0, G_OPTION_ARG_NONE, &opt_ntb32,
	  "Use NTB32 when the device supports it", NULL },
	{ "switch-config", 0, 0, G_OPTION_ARG_NONE, &opt_switch_config,
	  "Select the USB configuration that holds the NCM function when another one is "
	  "active (iPhones and iPads in NCM mode: see --apple-switch); this disturbs whatever "
	  "uses the active one, such as usbmuxd", NULL },
	{ "apple-switch", 0, 0, G_OPTION_ARG_NONE, &opt_apple_switch,
	  "First ask the Apple devices --device selects (iPhone, iPad: iOS 17+; VID:PID, path= "
	  "and serial=, the UDID; all without --device, or with several) not in NCM mode yet "
	  "for their NCM function, and wait up to 15 s for it to appear (with --persist, ask "
	  "again whenever it comes back without); implies --switch-config", NULL },
	{ "nudge-ms", 0, 0, G_OPTION_ARG_INT, &opt_nudge_ms,
	  "Quiet time after a stream before the tail nudge, for gadgets (Linux f_ncm) that "
	  "hold their last NTB; 0 = 100, -1 = never", "MS" },
	{ "no-ack-merge", 0, 0, G_OPTION_ARG_NONE, &opt_no_ack_merge,
	  "Send every pure TCP ACK (by default a newer ACK of a connection replaces an older one "
	  "still waiting in the same NTB)", NULL },
	{ "tx-ntbs-per-transfer", 0, 0, G_OPTION_ARG_INT, &opt_tx_ntbs,
	  "Full NTBs one USB OUT transfer may carry back to back (0 = as many as 128 KiB holds; "
	  "1 = one, for a device that loses data otherwise)", "N" },
	G_OPTION_ENTRY_NULL
};

const GOptionEntry *
cli_device_entries(void)
{
	return device_entries;
}

gboolean
cli_parse_options(const gchar *summary, const GOptionEntry *entries, const gchar *description,
		  int *argc, char ***argv, GError **error)
{
	g_autoptr(GOptionContext) oc = g_option_context_new(summary);

	g_option_context_add_main_entries(oc, cli_device_entries(), NULL);
	g_option_context_add_main_entries(oc, entries, NULL);
	g_option_context_set_description(oc, description);
	if (!g_option_context_parse(oc, argc, argv, error))
		return FALSE;
	if (*argc > 1) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
			    "unexpected argument %s (see --help)", (*argv)[1]);
		return FALSE;
	}
	return TRUE;
}

/* Whether @b sets a field @a already has: then @b is about another device. */
static gboolean
match_overlaps(const NcmMatch *a, const NcmMatch *b)
{
	return ((a->vid || a->pid) && (b->vid || b->pid)) || (a->serial && b->serial) ||
	       (a->port_path && b->port_path) || (a->have_mac && b->have_mac);
}

GArray *
cli_device_parse_many(NcmDeviceOptions *ret_options, GError **error)
{
	g_autoptr(GArray) matches = g_array_new(FALSE, TRUE, sizeof(NcmMatch));
	NcmMatch cur = { 0 };

	for (guint i = 0; opt_device && opt_device[i]; i++) {
		NcmMatch one = { 0 };

		if (!ncm_match_parse(&one, opt_device[i], error))
			return NULL;
		if (match_overlaps(&cur, &one)) {
			g_array_append_val(matches, cur);
			cur = (NcmMatch){ 0 };
		}
		ncm_match_parse(&cur, opt_device[i], NULL);
	}
	g_array_append_val(matches, cur);
	if (!cli_device_parse_tuning(ret_options, error))
		return NULL;
	return g_steal_pointer(&matches);
}

gboolean
cli_device_parse(NcmMatch *ret_match, NcmDeviceOptions *ret_options, GError **error)
{
	g_autoptr(GArray) matches = cli_device_parse_many(ret_options, error);

	if (!matches)
		return FALSE;
	if (matches->len > 1) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--device: one function only here, and a selector of the same kind "
			    "was given twice (combine different kinds, such as VID:PID and "
			    "serial=S)");
		return FALSE;
	}
	*ret_match = g_array_index(matches, NcmMatch, 0);
	return TRUE;
}

static gboolean
cli_device_parse_tuning(NcmDeviceOptions *ret_options, GError **error)
{
	ncm_device_options_init(ret_options);
	ret_options->ntb32 = opt_ntb32;
	/* An Apple device's NCM comes in a configuration of its own. */
	ret_options->switch_config = opt_switch_config || opt_apple_switch;
	ret_options->nudge_ms = opt_nudge_ms < 0 ? NCM_NUDGE_OFF : (guint)opt_nudge_ms;
	ret_options->no_ack_merge = opt_no_ack_merge;
	if (opt_tx_ntbs < 0) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--tx-ntbs-per-transfer takes 0 (the default) or more");
		return FALSE;
	}
	ret_options->tx_ntbs_per_transfer = (guint)opt_tx_ntbs;
	return !opt_pace || cli_parse_size("pace", opt_pace, &ret_options->pace_bytes_per_sec, error);
}

gboolean
cli_parse_size(const gchar *option, const gchar *text, guint64 *ret, GError **error)
{
	gchar *end = NULL;
	gdouble v = g_ascii_strtod(text, &end);
	gdouble mult = 1;

	if (end && (*end == 'k' || *end == 'K'))
		mult = 1e3;
	else if (end && (*end == 'm' || *end == 'M'))
		mult = 1e6;
	else if (end && (*end == 'g' || *end == 'G'))
		mult = 1e9;
	if (mult > 1)
		end++;
	if (end == text || !end || *end || !(v > 0) || v * mult > 1e15) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--%s %s: expected bytes such as 500k, 20M or 1.5G", option, text);
		return FALSE;
	}
	*ret = (guint64)(v * mult);
	return TRUE;
}

/* ---- Choosing the function ------------------------------------------------------ */

#define APPLE_VID 0x05ac
#define APPLE_WAIT_S 15

/* Whether an Apple device's NCM function that @match selects is there. */
static gboolean
apple_function_present(NcmContext *ctx, const NcmMatch *match)
{
	g_autoptr(GPtrArray) all = ncm_context_enumerate(ctx, match, NULL);

	for (guint i = 0; all && i < all->len; i++)
		if (((const NcmFunctionInfo *)all->pdata[i])->vid == APPLE_VID)
			return TRUE;
	return FALSE;
}

gboolean
cli_apple_switch(NcmContext *ctx, const NcmMatch *match, int usb_fd, GError **error)
{
	GError *local = NULL;
	gint64 end;
	guint n;

	if (!opt_apple_switch)
		return TRUE;
	/* Another vendor's device was asked for: no phone's switch can bring it. */
	if (match && match->vid && match->vid != APPLE_VID)
		return TRUE;
	if (usb_fd >= 0) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--apple-switch cannot be combined with --usb-fd: the device leaves "
			    "the bus and comes back on a new node, which the fd does not follow; "
			    "switch it first (ncm-probe --apple-switch) and pass the new node's fd");
		return FALSE;
	}
	/* Set only when no device was asked; an Apple keyboard alone also sets
	 * it: the selection that follows says what is really missing. */
	if (!(n = ncm_context_switch_apple_devices_matching(ctx, match, &local)) && local) {
		g_warning("--apple-switch: %s", local->message);
		g_error_free(local);
		return TRUE;
	}
	if (n == 0)
		return TRUE;
	g_message("asked %u Apple device(s) for their NCM function; waiting for it to appear", n);
	/* The device leaves the bus and comes back with NCM: up to a few seconds. */
	end = g_get_monotonic_time() + APPLE_WAIT_S * G_USEC_PER_SEC;
	while (!apple_function_present(ctx, match) && g_get_monotonic_time() < end) {
		if (cli_quit_requested()) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
				    "stopped by a signal while waiting for the Apple device");
			return FALSE;
		}
		g_usleep(100 * 1000);
	}
	if (g_get_monotonic_time() >= end)
		g_message("no NCM function of an Apple device appeared within %d s", APPLE_WAIT_S);
	return TRUE;
}

/*
 * serial= and mac= are read from the device, which this user may not be
 * allowed to open: then nothing matches, and the real problem is the
 * permission. Says so for the first such function of the right VID:PID.
 */
static gboolean
explain_unreadable(NcmContext *ctx, const NcmMatch *match, GError **error)
{
	NcmMatch ids = { .vid = match->vid, .pid = match->pid, .port_path = match->port_path };
	g_autoptr(GPtrArray) all = NULL;

	if (!match->serial && !match->have_mac)
		return FALSE;
	all = ncm_context_enumerate(ctx, &ids, NULL);
	for (guint i = 0; all && i < all->len; i++) {
		const NcmFunctionInfo *info = all->pdata[i];

		if (!info->access_error)
			continue;
		/* libncm's access_error says what to do (a group to join, or a rule). */
		g_set_error(error, NCM_ERROR, NCM_ERROR_PERMISSION,
			    "no USB CDC-NCM function matches the --device filters, and the serial "
			    "number and MAC of %04x:%04x at %s could not be read: %s",
			    info->vid, info->pid, info->port_path, info->access_error);
		return TRUE;
	}
	return FALSE;
}

static gboolean
has_filters(const NcmMatch *m)
{
	return m->vid || m->pid || m->serial || m->port_path || m->have_mac;
}

NcmFunctionInfo *
cli_select_function(NcmContext *ctx, const NcmMatch *match, int usb_fd, GError **error)
{
	g_autoptr(GPtrArray) all = usb_fd >= 0 ? ncm_context_enumerate_fd(ctx, usb_fd, match, error)
					       : ncm_context_enumerate(ctx, match, error);
	g_autoptr(GString) list = g_string_new(NULL);

	if (!all)
		return NULL;
	if (all->len == 1)
		return ncm_function_info_ref(all->pdata[0]);
	if (all->len == 0) {
		if (usb_fd < 0 && explain_unreadable(ctx, match, error))
			return NULL;
		if (usb_fd >= 0)
			g_set_error(error, NCM_ERROR, NCM_ERROR_NOT_FOUND,
				    "the device on fd %d has no USB CDC-NCM function%s", usb_fd,
				    has_filters(match) ? " that the --device filters select" : "");
		else
			g_set_error(error, NCM_ERROR, NCM_ERROR_NOT_FOUND,
				    "no USB CDC-NCM function matches%s (ncm-probe lists them)",
				    has_filters(match) ? " the --device filters" : "");
		return NULL;
	}
	for (guint i = 0; i < all->len; i++) {
		const NcmFunctionInfo *info = all->pdata[i];

		g_string_append_printf(list, "\n  path=%s  %04x:%04x  serial=%s",
				       info->port_path, info->vid, info->pid,
				       info->serial ? info->serial : "?");
		/* Two functions of one device (an iPad's) differ only in their MAC. */
		if (info->have_mac)
			g_string_append_printf(list, "  mac=%02x:%02x:%02x:%02x:%02x:%02x",
					       info->mac[0], info->mac[1], info->mac[2],
					       info->mac[3], info->mac[4], info->mac[5]);
		g_string_append_printf(list, "  interface %u", info->comm_iface);
	}
	/* The user's to settle (an option), not a device's: --persist does not wait. */
	g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
		    "%u functions match; pick one with --device:%s", all->len, list->str);
	return NULL;
}

/* ---- Statistics ------------------------------------------------------------------ */

void
cli_stats_add(NcmStats *sum, const NcmStats *add)
{
	guint64 *s = (guint64 *)sum;
	const guint64 *a = (const guint64 *)add;

	G_STATIC_ASSERT(sizeof(NcmStats) % sizeof(guint64) == 0);
	for (gsize i = 0; i < sizeof(NcmStats) / sizeof(guint64); i++)
		s[i] += a[i];
}

void
cli_print_usb_stats(FILE *out, const NcmStats *st)
{
	fprintf(out, "  usb rx: %" G_GUINT64_FORMAT " NTBs, %" G_GUINT64_FORMAT
		" datagrams, %" G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT " bad NTBs, %"
		G_GUINT64_FORMAT " errors, %" G_GUINT64_FORMAT " ACKs thinned, %" G_GUINT64_FORMAT
		" bursts\n", st->rx_ntbs, st->rx_datagrams, st->rx_bytes, st->rx_bad_ntbs,
		st->rx_errors + st->rx_overflows + st->rx_stalls, st->rx_acks_thinned, st->rx_batches);
	for (guint i = 0; i < G_N_ELEMENTS(st->rx_rejects); i++) {
		const gchar *name = ncm_stats_reject_name(i);

		if (name && st->rx_rejects[i])
			fprintf(out, "  rx reject %-24s %" G_GUINT64_FORMAT "\n", name,
				st->rx_rejects[i]);
	}
	if (st->rx_joined_ntbs)
		fprintf(out, "  rx joined NTBs: %" G_GUINT64_FORMAT " shared a transfer with the "
			"NTB before (the device leaves out ZLPs)\n", st->rx_joined_ntbs);
	if (st->rx_nudges)
		fprintf(out, "  tail nudges: %" G_GUINT64_FORMAT " sent, %" G_GUINT64_FORMAT
			" followed by held frames\n", st->rx_nudges, st->rx_nudge_freed);
	fprintf(out, "  usb tx: %" G_GUINT64_FORMAT " NTBs, %" G_GUINT64_FORMAT
		" datagrams, %" G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT " would-block, %"
		G_GUINT64_FORMAT " errors, %" G_GUINT64_FORMAT " paced waits, %" G_GUINT64_FORMAT
		" ACKs merged, %" G_GUINT64_FORMAT " transfers\n", st->tx_ntbs, st->tx_datagrams,
		st->tx_bytes, st->tx_would_block, st->tx_errors, st->tx_paced_waits, st->tx_acks_merged,
		st->tx_transfers);
	if (st->tx_queue_limit)
		fprintf(out, "  usb tx queue: at most %" G_GUINT64_FORMAT " bytes (16 ms of the pacing "
			"rate, or of a bus below high speed, at least 4 NTBs)\n", st->tx_queue_limit);
}

/* ---- --persist ---------------------------------------------------------------------- */

guint
cli_persist_backoff_s(guint attempts)
{
	return attempts >= 6 ? 60 : 1u << MAX(attempts, 1);
}

/*
 * @arrival: the function was just plugged in (or switched to): tried at once.
 * The retry timer's own tries wait for next_try; on_retry checks it once per
 * pass over the functions, so that a failing one does not keep a later one
 * from its turn.
 */
static void
try_reopen(CliPersist *p, const NcmFunctionInfo *info, gboolean arrival)
{
	g_autoptr(GError) error = NULL;
	gint64 now = g_get_monotonic_time();
	guint wait_s;

	if (p->current(p->data) || !ncm_match_test(p->match, info) ||
	    (p->wanted && !p->wanted(p->data, info)))
		return;
	/* A replug brings a new address. The same device announced again (its
	 * interfaces, a rescan) waits its turn like any retry. */
	if (arrival && info->bus == p->tried_bus && info->address == p->tried_address) {
		if (now < p->next_try)
			return;
	} else if (arrival) {
		p->attempts = 0;
	}
	p->tried_bus = info->bus;
	p->tried_address = info->address;
	/* A success counts too: a session that fails soon after its open must not
	 * make the next open come sooner. */
	wait_s = cli_persist_backoff_s(++p->attempts);
	p->next_try = now + wait_s * G_USEC_PER_SEC;
	if (p->reopen(p->data, info, &error)) {
		p->up_since = now;
		p->opened = TRUE;
		return;
	}
	/* It may still be settling (busy, strings unreadable): the retry timer tries again. */
	g_message("%s %s: %s (trying again in %u s%s)", p->opened ? "reattach" : "open",
		  info->port_path, error->message, wait_s,
		  p->attempts == 1 ? ", then less often while it keeps failing" : "");
}

static void
on_function_added(NcmContext *ctx, NcmFunctionInfo *info, CliPersist *p)
{
	try_reopen(p, info, TRUE);
}

static void
on_device_removed(NcmContext *ctx, guint bus, guint address, CliPersist *p)
{
	NcmDevice *device = p->current(p->data);
	const NcmFunctionInfo *info;

	if (!device)
		return;
	info = ncm_device_get_info(device);
	if (info->bus == bus && info->address == address)
		p->removed(p->data);
}

/*
 * Runs only while the owner has no device: a device's session ends by a
 * call to cli_persist_lost(), so nothing wakes an owner whose device works,
 * all day long for a phone left plugged in.
 */
static gboolean
on_retry(gpointer data)
{
	CliPersist *p = data;
	g_autoptr(GPtrArray) all = NULL;

	if (!p->current(p->data)) {
		/* A phone plugged in again comes back without NCM: ask again.
		 * Devices in NCM mode already are only read (GET_MODE), and only
		 * while ours is away; what appears is taken on "function-added". */
		if (opt_apple_switch) {
			g_autoptr(GError) e = NULL;
			guint n = ncm_context_switch_apple_devices_matching(p->ctx, p->match, &e);

			if (n)
				g_message("asked %u Apple device(s) for their NCM function again", n);
		}
		if (g_get_monotonic_time() < p->next_try)
			return G_SOURCE_CONTINUE;
		all = ncm_context_enumerate(p->ctx, p->match, NULL);
		for (guint i = 0; all && i < all->len && !p->current(p->data); i++)
			try_reopen(p, all->pdata[i], FALSE);
	}
	if (!p->current(p->data))
		return G_SOURCE_CONTINUE;
	p->retry_id = 0;
	return G_SOURCE_REMOVE;
}

static void
retry_arm(CliPersist *p)
{
	if (!p->retry_id)
		p->retry_id = g_timeout_add_seconds(2, on_retry, p);
}

void
cli_persist_lost(CliPersist *p)
{
	/* Not started yet: cli_persist_start() arms it for an owner without a device. */
	if (!p->ctx)
		return;
	/* A session that lasted lets the next open come at once. */
	if (p->up_since &&
	    g_get_monotonic_time() - p->up_since >= CLI_PERSIST_STABLE_S * G_USEC_PER_SEC)
		p->attempts = 0, p->next_try = 0;
	p->up_since = 0;
	retry_arm(p);
}

gboolean
cli_persist_start(CliPersist *p, GError **error)
{
	g_signal_connect(p->ctx, "function-added", G_CALLBACK(on_function_added), p);
	g_signal_connect(p->ctx, "device-removed", G_CALLBACK(on_device_removed), p);
	if (!p->shared_watch && !ncm_context_watch(p->ctx, p->match, 0, error))
		return FALSE;
	if (!p->current(p->data))
		retry_arm(p);
	return TRUE;
}

gboolean
cli_persist_waits_for(const GError *error)
{
	if (!error || error->domain != NCM_ERROR)
		return FALSE;
	switch (error->code) {
	case NCM_ERROR_KERNEL_DRIVER:
	case NCM_ERROR_CONFIG_INACTIVE:
	case NCM_ERROR_UNSUPPORTED:
		return FALSE;
	default:
		return TRUE;
	}
}

void
cli_persist_stop(CliPersist *p)
{
	if (p->retry_id)
		g_source_remove(p->retry_id);
	p->retry_id = 0;
	if (p->ctx)
		g_signal_handlers_disconnect_by_data(p->ctx, p);
	/* cli_persist_lost() does nothing after this. */
	p->ctx = NULL;
}

/* ---- Signals ------------------------------------------------------------------------- */

static gboolean quit_requested;

static gboolean
on_quit_signal(gpointer data)
{
	quit_requested = TRUE;
	g_main_loop_quit(((CliSignals *)data)->loop);
	return G_SOURCE_CONTINUE;
}

gboolean
cli_quit_requested(void)
{
	/* During setup nothing runs the loop: dispatch what is pending. */
	while (g_main_context_iteration(NULL, FALSE))
		;
	return quit_requested;
}

static gboolean
on_stats_signal(gpointer data)
{
	CliSignals *s = data;

	s->print_stats(s->data);
	return G_SOURCE_CONTINUE;
}

void
cli_signals_add(CliSignals *signals)
{
	struct sigaction hup;

	g_unix_signal_add(SIGINT, on_quit_signal, signals);
	g_unix_signal_add(SIGTERM, on_quit_signal, signals);
	/* A closed terminal or ssh session: the default action would leave the
	 * device without its kernel driver until replugged. Under nohup
	 * (SIGHUP ignored) we keep running, as asked. */
	if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN)
		g_unix_signal_add(SIGHUP, on_quit_signal, signals);
	/* A closed stderr pipe must not kill us before the devices go back. */
	signal(SIGPIPE, SIG_IGN);
	g_unix_signal_add(SIGUSR1, on_stats_signal, signals);
}
