/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-context.h: what the driver's parts need from NcmContext: libusb, the event thread's timeouts, posting. */
#pragma once

#include <libusb.h>

#include "ncm-context.h"
#include "ncm-sync.h"

libusb_context *ncm_context_get_usb(NcmContext *self);
GMainContext *ncm_context_get_owner(NcmContext *self);
gboolean ncm_context_is_event_thread(NcmContext *self);
/* TRUE when libusb's own device list cannot be trusted to show arrivals. */
gboolean ncm_context_needs_fresh_scan(NcmContext *self);
/* From now on it cannot (udevd runs, but its events do not reach us). */
void ncm_context_set_fresh_scans(NcmContext *self);
/* libusb_init() for such a short-lived scan context, safe against a device
 * leaving meanwhile (libusb_exit() it as usual). Any thread, also a libusb
 * callback's (one of ours: NCM_HANDLING_SCOPE()); no libncm lock held. */
int ncm_context_init_fresh_usb(libusb_context **out);
/* The event loop's idle ceiling (5 s): a test raises it to show that
 * what must wake the event thread does so, by a margin no load undoes. */
void ncm_context_set_idle_ms(NcmContext *self, gint ms);
/*
 * First in every transfer callback: until it returns, this thread handles
 * @ctx's events (so holds its event lock), which a context created or
 * dropped from inside it must know, or it would wait for that lock itself.
 * The event thread says so once for its whole life.
 */
NcmContext *ncm_context_handling_enter(NcmContext *ctx);
void ncm_context_handling_leave(NcmContext **prev);
#define NCM_HANDLING_SCOPE(ctx) \
	G_GNUC_UNUSED __attribute__((cleanup(ncm_context_handling_leave))) NcmContext * \
		ncm_handling_prev_ = ncm_context_handling_enter(ctx)
/* Whether libusb's hotplug events can be relied on here (udevd runs). */
gboolean ncm_context_hotplug_usable(void);

/*
 * Timed work on the event thread (a device's TX flush, pacing, tail nudge).
 * @func runs after every event batch, holding libusb's event lock (so no
 * transfer callback runs meanwhile, on any thread) and then the context's
 * lock. Lock order: libusb's event lock, the context's lock, a device's
 * tx_lock, its flight_lock. It returns when it next wants to run
 * (monotonic us, G_MAXINT64 for never) and must not add or remove
 * timeouts. Thread: any but the event thread.
 */
typedef gint64 (*NcmTimeoutFunc)(gpointer data, gint64 now_us);
void ncm_context_add_timeout(NcmContext *self, NcmTimeoutFunc func, gpointer data);
/* Once this returns, @func no longer runs for @data. FALSE when it was not there. */
gboolean ncm_context_remove_timeout(NcmContext *self, NcmTimeoutFunc func, gpointer data);
/* Makes the event thread look at its timeouts before @deadline_us (monotonic). */
void ncm_context_wake(NcmContext *self, gint64 deadline_us);

/*
 * What a device learned and the next session on the same function should
 * start from (the tail nudge's addresses), by a key naming the function.
 * Blobs of one key always have the same @len.
 */
void ncm_context_remember(NcmContext *self, const gchar *key, gconstpointer data, gsize len);
gboolean ncm_context_recall(NcmContext *self, const gchar *key, gpointer ret_data, gsize len);

/* State another part hangs on the context (the watch), freed before libusb
 * exits. Owner's main context only. */
void ncm_context_attach(NcmContext *self, const gchar *key, gpointer data, GDestroyNotify destroy);
/* A device at @bus:@address was found gone (NcmDevice::removed). A reset
 * keeps both and sends no hotplug event, so the watch, if any, looks again
 * (ncm-usb-watch.c). Thread: any. */
void ncm_context_watch_recheck(NcmContext *self, guint bus, guint address);
gpointer ncm_context_get_attached(NcmContext *self, const gchar *key);

void ncm_context_count_dispatch(NcmContext *self);
/* A libusb hotplug callback ran (its thread); how many so far (any thread). */
void ncm_context_note_hotplug(NcmContext *self);
guint ncm_context_get_hotplug_events(NcmContext *self);
/*
 * Queues @func on @owner as an idle source. Never runs it in place:
 * g_main_context_invoke() would run it on the calling (libusb) thread when
 * nobody owns @owner, and signal handlers must not run there.
 */
void ncm_context_post(GMainContext *owner, GSourceFunc func, gpointer data, GDestroyNotify destroy);
