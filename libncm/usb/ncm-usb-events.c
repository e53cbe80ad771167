/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-events.c: NcmDevice's control-plane signals, posted from the libusb thread to the owner's main context. */
#include "ncm-usb-device.h"

enum {
	SIGNAL_LINK_CHANGED,
	SIGNAL_SPEED_CHANGED,
	SIGNAL_REMOVED,
	SIGNAL_ERROR,
	N_SIGNALS
};
static guint signals[N_SIGNALS];

void
ncm_device_events_class_init(GObjectClass *klass)
{
	GType type = G_TYPE_FROM_CLASS(klass);

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
