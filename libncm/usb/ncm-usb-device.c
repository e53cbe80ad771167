/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-device.c: NcmDevice's life cycle, control-plane signals and stats. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ncm-usb-device.h"


/* How long close() waits for cancelled transfers before giving up on them. */
#define NCM_CLOSE_WAIT_US (5 * G_USEC_PER_SEC)

enum {
	SIGNAL_LINK_CHANGED,
	SIGNAL_SPEED_CHANGED,
	SIGNAL_REMOVED,
	SIGNAL_ERROR,
	N_SIGNALS
};
static guint signals[N_SIGNALS];

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

/* ---- Control-plane events ------------------------------------------- */

typedef struct {
	NcmDevice *device;
	guint signal;
	gboolean up;
	guint32 down_bps;
	guint32 up_bps;
	GError *error;
} NcmEvent;

static gboolean
event_dispatch(gpointer data)
{
	NcmEvent *ev = data;

	switch (ev->signal) {
	case SIGNAL_LINK_CHANGED:
		g_signal_emit(ev->device, signals[ev->signal], 0, ev->up);
		break;
	case SIGNAL_SPEED_CHANGED:
		g_signal_emit(ev->device, signals[ev->signal], 0, ev->down_bps, ev->up_bps);
		break;
	case SIGNAL_REMOVED:
		g_signal_emit(ev->device, signals[ev->signal], 0);
		break;
	case SIGNAL_ERROR:
		g_signal_emit(ev->device, signals[ev->signal], 0, ev->error);
		break;
	}
	return G_SOURCE_REMOVE;
}

static void
event_free(gpointer data)
{
	NcmEvent *ev = data;

	g_clear_error(&ev->error);
	g_object_unref(ev->device);
	g_free(ev);
}

static void
post(NcmDevice *self, NcmEvent *ev)
{
	ev->device = g_object_ref(self);
	NCM_STAT_ADD(self, main_dispatches, 1);
	ncm_context_count_dispatch(self->context);
	ncm_context_post(self->owner, event_dispatch, ev, event_free);
}

void
ncm_device_post_removed(NcmDevice *self)
{
	if (!g_atomic_int_compare_and_exchange(&self->removed_emitted, 0, 1))
		return;
	NcmEvent *ev = g_new0(NcmEvent, 1);
	ev->signal = SIGNAL_REMOVED;
	post(self, ev);
}

void
ncm_device_mark_gone(NcmDevice *self)
{
	g_atomic_int_set(&self->gone, 1);
	ncm_device_post_removed(self);
}

void
ncm_device_post_link(NcmDevice *self, gboolean up)
{
	NcmEvent *ev = g_new0(NcmEvent, 1);

	g_atomic_int_set(&self->link_up, up);
	ev->signal = SIGNAL_LINK_CHANGED;
	ev->up = up;
	post(self, ev);
}

void
ncm_device_post_speed(NcmDevice *self, guint32 down, guint32 up)
{
	NcmEvent *ev = g_new0(NcmEvent, 1);

	__atomic_store_n(&self->down_bps, down, __ATOMIC_RELAXED);
	__atomic_store_n(&self->up_bps, up, __ATOMIC_RELAXED);
	ev->signal = SIGNAL_SPEED_CHANGED;
	ev->down_bps = down;
	ev->up_bps = up;
	post(self, ev);
}

void
ncm_device_post_error(NcmDevice *self, GError *error)
{
	NcmEvent *ev = g_new0(NcmEvent, 1);

	g_warning("%s", error->message);
	ev->signal = SIGNAL_ERROR;
	ev->error = error;
	post(self, ev);
}

/* ---- Flight accounting ---------------------------------------------- */

int
ncm_device_submit(NcmDevice *self, struct libusb_transfer *xfer, gboolean counted)
{
	int r = LIBUSB_ERROR_INTERRUPTED;

	ncm_mutex_lock(&self->flight_lock);
	if (self->state == NCM_STATE_RUNNING)
		r = libusb_submit_transfer(xfer);
	if (r == 0 && !counted)
		self->in_flight++;
	else if (r != 0 && counted && --self->in_flight == 0)
		g_cond_broadcast(&self->flight_cond);
	ncm_mutex_unlock(&self->flight_lock);
	return r;
}

void
ncm_device_landed(NcmDevice *self)
{
	ncm_mutex_lock(&self->flight_lock);
	if (--self->in_flight == 0)
		g_cond_broadcast(&self->flight_cond);
	ncm_mutex_unlock(&self->flight_lock);
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
	ncm_context_add_device(context, self);
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

	if (!ncm_device_rx_start(self, error) || !ncm_device_intr_start(self, error)) {
		ncm_device_close(self);
		return FALSE;
	}
	return TRUE;
}

static void
cancel_and_wait(NcmDevice *self)
{
	gint64 deadline = g_get_monotonic_time() + NCM_CLOSE_WAIT_US;
	gboolean timed_out = FALSE;

	ncm_device_rx_cancel(self);
	ncm_device_tx_cancel(self);
	if (self->intr)
		libusb_cancel_transfer(self->intr);

	ncm_mutex_lock(&self->flight_lock);
	while (self->in_flight > 0 && !timed_out)
		timed_out = !ncm_cond_wait_until(&self->flight_cond, &self->flight_lock, deadline);
	ncm_mutex_unlock(&self->flight_lock);
	if (timed_out) {
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
	GThread *clear = g_steal_pointer(&self->clear_thread);
	ncm_mutex_unlock(&self->flight_lock);

	if (clear)
		g_thread_join(clear);
	cancel_and_wait(self);
	if (self->context) {
		ncm_context_remove_device(self->context, self);
		ncm_device_rx_remember(self);
	}
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
	self->fault_state = 0x9e3779b9u;
}

static void
ncm_device_class_init(NcmDeviceClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	GType type = G_TYPE_FROM_CLASS(klass);

	object_class->finalize = ncm_device_finalize;

	/** NcmDevice::link-changed: @up: the NETWORK_CONNECTION state. */
	signals[SIGNAL_LINK_CHANGED] = g_signal_new("link-changed", type, G_SIGNAL_RUN_LAST, 0,
						    NULL, NULL, NULL, G_TYPE_NONE, 1,
						    G_TYPE_BOOLEAN);
	/** NcmDevice::speed-changed: @down_bps, @up_bps from CONNECTION_SPEED_CHANGE. */
	signals[SIGNAL_SPEED_CHANGED] = g_signal_new("speed-changed", type, G_SIGNAL_RUN_LAST, 0,
						     NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_UINT,
						     G_TYPE_UINT);
	/** NcmDevice::removed: the device went away; call ncm_device_close(). */
	signals[SIGNAL_REMOVED] = g_signal_new("removed", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL,
					       NULL, G_TYPE_NONE, 0);
	/** NcmDevice::error: @error: the data path hit something it cannot recover from. */
	signals[SIGNAL_ERROR] = g_signal_new("error", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL,
					     NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
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
