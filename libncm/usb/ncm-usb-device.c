/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-device.c: NcmDevice's life cycle (open, start, close) and getters. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ncm-usb-device.h"


/* How long close() waits for cancelled transfers before giving up on them. */
#define NCM_CLOSE_WAIT_US (5 * G_USEC_PER_SEC)

G_DEFINE_TYPE(NcmDevice, ncm_device, G_TYPE_OBJECT)

G_STATIC_ASSERT(NCM_NTB_N_ERRORS <= G_N_ELEMENTS(((NcmStats *)0)->rx_rejects));

void
ncm_device_options_init(NcmDeviceOptions *options)
{
	memset(options, 0, sizeof(*options));
	options->detach_kernel_driver = TRUE;
}

const gchar *
ncm_stats_reject_name(guint index)
{
	return index < NCM_NTB_N_ERRORS ? ncm_ntb_error_name((NcmNtbError)index) : NULL;
}

/* ---- Life cycle ----------------------------------------------------- */

/*
 * A function found in a passed fd is opened through a duplicate of it, so
 * that closing the device leaves the info (and a later open) its own.
 * Otherwise by its node: found by a fresh scan, it has no libusb_device.
 */
static gboolean
open_node(NcmDevice *self, GError **error)
{
	g_autofree gchar *node = ncm_function_info_dup_usbfs_path(self->info);
	int passed = ncm_function_info_get_fd(self->info);
	int saved, r;

	if (passed >= 0)
		self->fd = fcntl(passed, F_DUPFD_CLOEXEC, 3);
	else
		self->fd = open(node, O_RDWR | O_CLOEXEC);
	if (self->fd < 0) {
		saved = errno;
		ncm_set_usb_error(error, saved == EACCES || saved == EPERM ? LIBUSB_ERROR_ACCESS
					 : saved == ENOENT ? LIBUSB_ERROR_NO_DEVICE
					 : LIBUSB_ERROR_IO, self->info, "opening the device");
		return FALSE;
	}
	r = libusb_wrap_sys_device(ncm_context_get_usb(self->context), self->fd, &self->handle);
	if (r < 0) {
		self->handle = NULL;
		ncm_set_usb_error(error, r, self->info, "opening the device");
		return FALSE;
	}
	return TRUE;
}

static gboolean
open_handle(NcmDevice *self, GError **error)
{
	libusb_device *dev = ncm_function_info_get_usb_device(self->info);
	int r;

	if (!dev)
		return open_node(self, error);
	r = libusb_open(dev, &self->handle);
	if (r < 0) {
		self->handle = NULL;
		ncm_set_usb_error(error, r, self->info, "opening the device");
		return FALSE;
	}
	return TRUE;
}

/* @owner: where the device's signals go (the opener's thread-default context). */
static NcmDevice *
device_open(NcmContext *context, const NcmFunctionInfo *info, const NcmDeviceOptions *options,
	    GMainContext *owner, GError **error)
{
	g_autoptr(NcmDevice) self = g_object_new(NCM_TYPE_DEVICE, NULL);

	g_main_context_unref(self->owner);
	self->owner = g_main_context_ref(owner);
	self->context = g_object_ref(context);
	self->info = ncm_function_info_ref((NcmFunctionInfo *)info);
	if (options)
		self->options = *options;
	else
		ncm_device_options_init(&self->options);

	if (!open_handle(self, error))
		return NULL;
	if (!ncm_device_claim(self, error) || !ncm_device_negotiate(self, error) ||
	    !ncm_device_rx_setup(self, error) || !ncm_device_tx_setup(self, error))
		return NULL;
#ifdef NCM_TEST_HOOKS
	ncm_device_fault_init(self);
#endif
	ncm_device_timers_setup(self);
	return g_steal_pointer(&self);
}

NcmDevice *
ncm_device_open(NcmContext *context, const NcmFunctionInfo *info,
		const NcmDeviceOptions *options, GError **error)
{
	g_autoptr(GMainContext) owner = NULL;

	g_return_val_if_fail(NCM_IS_CONTEXT(context), NULL);
	g_return_val_if_fail(info != NULL, NULL);
	g_return_val_if_fail(!ncm_context_is_event_thread(context), NULL);

	owner = g_main_context_ref_thread_default();
	return device_open(context, info, options, owner, error);
}

/* ---- Opening on a worker thread ----------------------------------------- */

/*
 * What the worker needs, copied at the call: the caller's @options may be
 * gone by the time the worker runs.
 */
typedef struct {
	NcmContext *context;
	NcmFunctionInfo *info;
	NcmDeviceOptions options;
	gboolean have_options;
	GMainContext *owner;
} NcmOpenData;

/* The tasks' source tag: -Wpedantic forbids a function pointer as gpointer. */
static const gchar open_tag;

static void
open_data_free(gpointer data)
{
	NcmOpenData *d = data;

	/* Freed on whichever thread drops the task last: the worker's writes
	 * reach it through GLib's uninstrumented locks. */
	ncm_tsan_acquire(d);
	g_object_unref(d->context);
	ncm_function_info_unref(d->info);
	g_main_context_unref(d->owner);
	g_free(d);
}

/* The task's result destructor: an opened device nobody will take. */
static void
close_opened(gpointer data)
{
	NcmDevice *self = data;

	ncm_tsan_acquire(self);
	ncm_device_close(self);
	g_object_unref(self);
}

static void
open_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
	NcmOpenData *d = task_data;
	NcmDevice *self = NULL;
	GError *error = NULL;

	ncm_tsan_acquire(d);
	/* Cancelled while queued: GTask may still run us; do not open at all. */
	if (!g_cancellable_is_cancelled(cancellable))
		self = device_open(d->context, d->info, d->have_options ? &d->options : NULL,
				   d->owner, &error);
	ncm_tsan_release(d);
	/* FALSE: cancelled, and the task has already returned G_IO_ERROR_CANCELLED. */
	if (!g_task_set_return_on_cancel(task, FALSE)) {
		g_clear_error(&error);
		if (self)
			close_opened(self);
		return;
	}
	if (!self) {
		if (!g_task_return_error_if_cancelled(task))
			g_task_return_error(task, g_steal_pointer(&error));
		g_clear_error(&error);
		return;
	}
	ncm_tsan_release(self);
	g_task_return_pointer(task, self, close_opened);
}

void
ncm_device_open_async(NcmContext *context, const NcmFunctionInfo *info,
		      const NcmDeviceOptions *options, GCancellable *cancellable,
		      GAsyncReadyCallback callback, gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	NcmOpenData *d;

	g_return_if_fail(NCM_IS_CONTEXT(context));
	g_return_if_fail(info != NULL);
	g_return_if_fail(!ncm_context_is_event_thread(context));

	d = g_new0(NcmOpenData, 1);
	d->context = g_object_ref(context);
	d->info = ncm_function_info_ref((NcmFunctionInfo *)info);
	d->have_options = options != NULL;
	if (options)
		d->options = *options;
	d->owner = g_main_context_ref_thread_default();
	ncm_tsan_release(d);

	task = g_task_new(context, cancellable, callback, user_data);
	g_task_set_source_tag(task, (gpointer)&open_tag);
	g_task_set_name(task, "ncm_device_open_async");
	g_task_set_task_data(task, d, open_data_free);
	/* A cancelled open returns at once; the worker finishes the control
	 * transfers it is in and then closes what it opened. */
	g_task_set_return_on_cancel(task, TRUE);
	g_task_run_in_thread(task, open_thread);
}

NcmDevice *
ncm_device_open_finish(GAsyncResult *result, GError **error)
{
	NcmDevice *self;

	g_return_val_if_fail(G_IS_TASK(result), NULL);
	g_return_val_if_fail(g_async_result_is_tagged(result, (gpointer)&open_tag), NULL);

	/* Cancelled after the open succeeded: the error, and the task's
	 * destructor closes the device (GTask checks the cancellable). */
	self = g_task_propagate_pointer(G_TASK(result), error);
	if (self)
		ncm_tsan_acquire(self);
	return self;
}

void
ncm_device_set_sink(NcmDevice *self, const NcmLinkSink *sink, gpointer user_data)
{
	g_return_if_fail(NCM_IS_DEVICE(self));
	ncm_mutex_lock(&self->flight_lock);
	if (self->state == NCM_STATE_OPEN) {
		self->sink = sink ? *sink : (NcmLinkSink){ 0 };
		self->sink_data = user_data;
	} else {
		g_critical("ncm_device_set_sink() called after ncm_device_start()");
	}
	ncm_mutex_unlock(&self->flight_lock);
}

void
ncm_device_set_writable_batched(NcmDevice *self, gboolean batched)
{
	g_return_if_fail(NCM_IS_DEVICE(self));
	ncm_mutex_lock(&self->flight_lock);
	if (self->state == NCM_STATE_OPEN)
		self->writable_batched = !!batched;
	else
		g_critical("ncm_device_set_writable_batched() called after ncm_device_start()");
	ncm_mutex_unlock(&self->flight_lock);
}

void
ncm_device_set_sender_flushes(NcmDevice *self, gboolean flushes)
{
	g_return_if_fail(NCM_IS_DEVICE(self));
	ncm_mutex_lock(&self->flight_lock);
	if (self->state == NCM_STATE_OPEN)
		self->sender_flushes = !!flushes;
	else
		g_critical("ncm_device_set_sender_flushes() called after ncm_device_start()");
	ncm_mutex_unlock(&self->flight_lock);
}

gboolean
ncm_device_start(NcmDevice *self, GError **error)
{
	g_return_val_if_fail(NCM_IS_DEVICE(self), FALSE);

	ncm_mutex_lock(&self->flight_lock);
	if (self->state != NCM_STATE_OPEN) {
		ncm_mutex_unlock(&self->flight_lock);
		g_set_error(error, NCM_ERROR, NCM_ERROR_CLOSED, "the device was already started or closed");
		return FALSE;
	}
	self->state = NCM_STATE_RUNNING;
	g_atomic_int_set(&self->running, 1);
	ncm_mutex_unlock(&self->flight_lock);

	ncm_device_timers_start(self);
	if (!ncm_device_rx_start(self, error) || !ncm_device_intr_start(self, error)) {
		ncm_device_close(self);
		return FALSE;
	}
	return TRUE;
}

static void
cancel_and_wait(NcmDevice *self)
{
	ncm_device_rx_cancel(self);
	ncm_device_tx_cancel(self);
	if (self->intr)
		libusb_cancel_transfer(self->intr);
	if (!ncm_device_flight_wait(self, g_get_monotonic_time() + NCM_CLOSE_WAIT_US)) {
		/* Freeing a transfer libusb still holds would be a use-after-free: leak it. */
		g_warning("%u USB transfers did not finish after cancelling; leaking them",
			  self->in_flight);
		self->rx = NULL;
		self->tx = NULL;
		self->intr = NULL;
	}
}

void
ncm_device_close(NcmDevice *self)
{
	g_return_if_fail(NCM_IS_DEVICE(self));
	if (self->context && ncm_context_is_event_thread(self->context)) {
		g_critical("ncm_device_close() called on the libusb event thread: it would deadlock");
		return;
	}

	ncm_mutex_lock(&self->flight_lock);
	if (self->state == NCM_STATE_CLOSED || self->state == NCM_STATE_CLOSING) {
		ncm_mutex_unlock(&self->flight_lock);
		return;
	}
	self->state = NCM_STATE_CLOSING;
	g_atomic_int_set(&self->running, 0);
	ncm_mutex_unlock(&self->flight_lock);

	ncm_device_halt_stop(self);
	cancel_and_wait(self);
	ncm_device_timers_stop(self);
	/* Buffers first: mapped ones belong to the handle that release closes. */
	ncm_device_rx_free(self);
	ncm_device_tx_free(self);
	ncm_device_release(self);
	ncm_mutex_lock(&self->flight_lock);
	self->state = NCM_STATE_CLOSED;
	ncm_mutex_unlock(&self->flight_lock);
}

static void
ncm_device_finalize(GObject *object)
{
	NcmDevice *self = NCM_DEVICE(object);

	/* The last reference may go on any thread, and GObject's count is in
	 * uninstrumented GLib: a dispatch's reads of the device on the owner's
	 * thread reach here through the release before its unref. */
	ncm_tsan_acquire(self);
	ncm_device_close(self);
	g_clear_pointer(&self->stalled, g_ptr_array_unref);
	g_clear_pointer(&self->dev_mem, g_hash_table_unref);
	if (self->fd >= 0)
		close(self->fd);
	g_clear_pointer(&self->info, ncm_function_info_unref);
	g_clear_object(&self->context);
	g_main_context_unref(self->owner);
	g_mutex_clear(&self->flight_lock);
	g_cond_clear(&self->flight_cond);
	g_mutex_clear(&self->tx_lock);
	G_OBJECT_CLASS(ncm_device_parent_class)->finalize(object);
}

static void
ncm_device_init(NcmDevice *self)
{
	g_mutex_init(&self->flight_lock);
	g_cond_init(&self->flight_cond);
	g_mutex_init(&self->tx_lock);
	self->owner = g_main_context_ref_thread_default();
	self->stalled = g_ptr_array_new();
	self->fd = -1;
	self->emitted_link = -1;
}

static void
ncm_device_class_init(NcmDeviceClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->finalize = ncm_device_finalize;
	ncm_device_events_class_init(object_class);
}

/* ---- Getters --------------------------------------------------------- */

void
ncm_device_get_stats(NcmDevice *self, NcmStats *ret_stats)
{
	const guint64 *src = (const guint64 *)&self->stats;
	guint64 *dst = (guint64 *)ret_stats;

	G_STATIC_ASSERT(sizeof(NcmStats) % sizeof(guint64) == 0);
	for (gsize i = 0; i < sizeof(NcmStats) / sizeof(guint64); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

const NcmFunctionInfo *
ncm_device_get_info(NcmDevice *self)
{
	return self->info;
}

void
ncm_device_get_mac(NcmDevice *self, guint8 ret_mac[6])
{
	memcpy(ret_mac, self->mac, 6);
}

guint64
ncm_device_get_tx_queue_limit(NcmDevice *self)
{
	return __atomic_load_n(&self->stats.tx_queue_limit, __ATOMIC_RELAXED);
}

guint
ncm_device_get_max_frame(NcmDevice *self)
{
	return self->ntb.max_frame;
}

guint
ncm_device_get_mtu(NcmDevice *self)
{
	/* 0 before the open, not 4 GB. */
	return self->ntb.max_frame > 14 ? self->ntb.max_frame - 14 : 0;
}

gboolean
ncm_device_get_link_up(NcmDevice *self)
{
	return g_atomic_int_get(&self->link_up);
}

gboolean
ncm_device_is_gone(NcmDevice *self)
{
	return g_atomic_int_get(&self->gone);
}

void
ncm_device_get_ntb_info(NcmDevice *self, NcmNtbInfo *ret_info)
{
	*ret_info = self->ntb;
}
