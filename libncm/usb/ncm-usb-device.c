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

static gboolean
open_node(NcmDevice *self, GError **error)
{
	g_autofree gchar *node = ncm_function_info_dup_usbfs_path(self->info);
	int saved, r;

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

NcmDevice *
ncm_device_open(NcmContext *context, const NcmFunctionInfo *info,
		const NcmDeviceOptions *options, GError **error)
{
	g_autoptr(NcmDevice) self = NULL;

	g_return_val_if_fail(NCM_IS_CONTEXT(context), NULL);
	g_return_val_if_fail(info != NULL, NULL);
	g_return_val_if_fail(!ncm_context_is_event_thread(context), NULL);

	self = g_object_new(NCM_TYPE_DEVICE, NULL);
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

guint
ncm_device_get_max_frame(NcmDevice *self)
{
	return self->ntb.max_frame;
}

guint
ncm_device_get_mtu(NcmDevice *self)
{
	return self->ntb.max_frame - 14;
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
