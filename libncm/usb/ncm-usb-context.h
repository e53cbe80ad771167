/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-context.h: what NcmDevice needs from NcmContext. */
#pragma once

#include <libusb.h>

#include "ncm-context.h"
#include "ncm-sync.h"

typedef struct _NcmDevice NcmDevice;

libusb_context *ncm_context_get_usb(NcmContext *self);
gboolean ncm_context_is_event_thread(NcmContext *self);
/* TRUE when libusb's own device list cannot be trusted to show arrivals. */
gboolean ncm_context_needs_fresh_scan(NcmContext *self);

/*
 * Devices with timed work (the last-resort TX flush, pacing) register here;
 * the event thread calls ncm_device_tick() after every event batch.
 */
void ncm_context_add_device(NcmContext *self, NcmDevice *device);
void ncm_context_remove_device(NcmContext *self, NcmDevice *device);
/*
 * What a device learned and the next session on the same function should
 * start from (the tail nudge's addresses), by a key naming the function.
 * Blobs of one key always have the same @len.
 */
void ncm_context_remember(NcmContext *self, const gchar *key, gconstpointer data, gsize len);
gboolean ncm_context_recall(NcmContext *self, const gchar *key, gpointer ret_data, gsize len);
/* Makes the event thread look at its timers before @deadline_us (monotonic). */
void ncm_context_wake(NcmContext *self, gint64 deadline_us);
void ncm_context_count_dispatch(NcmContext *self);
/*
 * Queues @func on @owner as an idle source. Never runs it in place:
 * g_main_context_invoke() would run it on the calling (libusb) thread when
 * nobody owns @owner, and signal handlers must not run there.
 */
void ncm_context_post(GMainContext *owner, GSourceFunc func, gpointer data, GDestroyNotify destroy);

/* Implemented by the device: timed work, returns the next deadline. */
gint64 ncm_device_tick(NcmDevice *device, gint64 now_us);

/* Function info, private side: NULL when found by a fresh scan (open by node). */
libusb_device *ncm_function_info_get_usb_device(const NcmFunctionInfo *info);

/* Maps a libusb error from an operation on @info to an actionable GError. */
void ncm_set_usb_error(GError **error, int usb_err, const NcmFunctionInfo *info,
		       const char *what);
