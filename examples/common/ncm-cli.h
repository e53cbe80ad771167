/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cli.h: what the device-owning programs (ncm-tun, ncm-proxy) share: sizes, choosing the function, statistics, --persist. */
#pragma once

#include <stdio.h>

#include <ncm.h>

/*
 * The options that choose and tune the device, the same in every program:
 * --device (repeatable), --pace, --ntb32, --switch-config, --apple-switch, --nudge-ms,
 * --no-ack-merge, --tx-ntbs-per-transfer. Add the entries to
 * the main group, parse, then read them with cli_device_parse().
 */
const GOptionEntry *cli_device_entries(void);
gboolean cli_device_parse(NcmMatch *ret_match, NcmDeviceOptions *ret_options, GError **error);
/*
 * The same for programs that drive several devices: a selector of a kind the
 * current device already has (serial=A, then serial=B) starts the next one.
 * An array of NcmMatch, at least one (all zero without --device); they point
 * into the parsed options, which live as long as the process.
 */
GArray *cli_device_parse_many(NcmDeviceOptions *ret_options, GError **error);

/*
 * Parses the command line with the device entries and the program's own
 * @entries, @summary after the name and @description below the options in
 * --help; a positional argument is an error (none of these programs takes one).
 */
gboolean cli_parse_options(const gchar *summary, const GOptionEntry *entries, const gchar *description,
			   int *argc, char ***argv, GError **error);

/*
 * --apple-switch: asks the Apple devices @match selects (VID:PID, path=,
 * serial=; all with a NULL @match, as with several --device) that are not
 * yet in NCM mode for it
 * (ncm_context_switch_apple_devices_matching()), then waits until the re-enumerated
 * function that @match selects is listed, at most 15 s; without the option,
 * nothing. Under --persist the retry asks again while the device is away.
 * Refused with a passed fd (@usb_fd >= 0), which the device's new node
 * would not follow. Before cli_select_function(); the owner's thread.
 */
gboolean cli_apple_switch(NcmContext *ctx, const NcmMatch *match, int usb_fd, GError **error);

/* A byte count or rate such as 500k, 20M or 1.5G (powers of 1000), for --@option. */
gboolean cli_parse_size(const gchar *option, const gchar *text, guint64 *ret, GError **error);

/*
 * The one function @match selects, among all devices or (@usb_fd >= 0) the
 * one behind that fd. None: an error that names the permission problem when
 * a serial= or mac= selector could not be read for lack of it; several: an
 * error listing them, never a guess. Thread: the owner's.
 */
NcmFunctionInfo *cli_select_function(NcmContext *ctx, const NcmMatch *match, int usb_fd,
				     GError **error);

/* NcmStats is all guint64 counters: @sum += @add, field by field. */
void cli_stats_add(NcmStats *sum, const NcmStats *add);
/* The "  usb rx: ..." and "  usb tx: ..." lines (ncm-bench reads their NTB counts, and
 * prints them for its own devices when a test hangs),
 * with rejects by reason and tail nudges between them when there were any. */
void cli_print_usb_stats(FILE *out, const NcmStats *st);

/*
 * --persist: watches for the selected function to come back after it went
 * away, and retries for what no arrival announces (an error on a device that
 * stayed plugged in). The owner's context only.
 *
 * A device that stays plugged in and keeps failing (its open, or a session
 * soon after it) is tried after 2, 4, 8 ... up to 60 s: each open may detach
 * a kernel driver and give it back, and a desktop reconfigures that
 * interface every time. An arrival is tried at once and starts the count
 * again; so does a session that lasted CLI_PERSIST_STABLE_S.
 */
#define CLI_PERSIST_STABLE_S 30
typedef struct {
	NcmContext *ctx;
	const NcmMatch *match;
	/* The device open now, or NULL while waiting for one. */
	NcmDevice *(*current)(gpointer data);
	/* Opens @info as the new device; FALSE (with @error) to try again later. */
	gboolean (*reopen)(gpointer data, const NcmFunctionInfo *info, GError **error);
	/* The current device was unplugged. */
	void (*removed)(gpointer data);
	gpointer data;
	/* Several CliPersist on one context: the owner calls ncm_context_watch() once
	 * (a second call replaces the first), after cli_persist_start(). */
	gboolean shared_watch;
	/* Optional: FALSE leaves @info alone (another of the owner's holds it). */
	gboolean (*wanted)(gpointer data, const NcmFunctionInfo *info);
	/* A device was open once: a failed open is a reattach, not the first
	 * open of a device that was waited for. The owner sets it at the start. */
	gboolean opened;
	guint retry_id;
	guint attempts;     /* opens since the last arrival or stable session */
	guint tried_bus, tried_address; /* the device of the last open (0: none) */
	gint64 next_try;    /* monotonic us: no retry before it */
	gint64 up_since;    /* monotonic us of the open that holds now; 0 if none */
} CliPersist;

/* Seconds to wait after the @attempts-th open in a row: 2, 4, 8 ... 60. */
guint cli_persist_backoff_s(guint attempts);

gboolean cli_persist_start(CliPersist *persist, GError **error);
/* The owner's device session ended (unplugged, failed): retries begin. */
void cli_persist_lost(CliPersist *persist);
/*
 * Whether --persist waits out @error from choosing or opening a device: the
 * device absent, not open to us yet, held by another program, gone, or
 * failing while it settles. A wrong option, a missing capability, a kernel
 * driver that may not be detached or an inactive configuration would fail
 * the same way every time: those stop the program at the start.
 */
gboolean cli_persist_waits_for(const GError *error);
void cli_persist_stop(CliPersist *persist);

/*
 * SIGINT, SIGTERM and SIGHUP quit @loop (SIGPIPE is ignored), SIGUSR1 calls
 * @print_stats(@data): on the default main context, so whatever they touch
 * is the main thread's.
 * @signals must live as long as the process runs.
 */
typedef struct {
	GMainLoop *loop;
	void (*print_stats)(gpointer data);
	gpointer data;
} CliSignals;

void cli_signals_add(CliSignals *signals);
/*
 * Whether SIGINT, SIGTERM or SIGHUP came (after dispatching what the default
 * context has pending): for setup steps that wait before the loop runs.
 * The owner's thread, holding the default context.
 */
gboolean cli_quit_requested(void);
