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

	/**
	 * NcmDevice::link-changed:
	 * @self: the #NcmDevice.
	 * @up: the NETWORK_CONNECTION state the device reported.
	 *
	 * The link went up or down. Emitted on the owner's main context.
	 */
	signals[SIGNAL_LINK_CHANGED] = g_signal_new("link-changed", type, G_SIGNAL_RUN_LAST, 0,
						    NULL, NULL, NULL, G_TYPE_NONE, 1,
						    G_TYPE_BOOLEAN);
	/**
	 * NcmDevice::speed-changed:
	 * @self: the #NcmDevice.
	 * @down_bps: the downstream bit rate from CONNECTION_SPEED_CHANGE.
	 * @up_bps: the upstream bit rate.
	 *
	 * The device reported new link speeds. Emitted on the owner's main
	 * context.
	 */
	signals[SIGNAL_SPEED_CHANGED] = g_signal_new("speed-changed", type, G_SIGNAL_RUN_LAST, 0,
						     NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_UINT,
						     G_TYPE_UINT);
	/**
	 * NcmDevice::removed:
	 * @self: the #NcmDevice.
	 *
	 * The device went away (unplugged or reset): call ncm_device_close().
	 * Emitted on the owner's main context.
	 */
	signals[SIGNAL_REMOVED] = g_signal_new("removed", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL,
					       NULL, G_TYPE_NONE, 0);
	/**
	 * NcmDevice::error:
	 * @self: the #NcmDevice.
	 * @error: what happened, in %NCM_ERROR.
	 *
	 * The data path hit something it cannot recover from (a transfer
	 * that keeps failing): close the device. Emitted on the owner's main
	 * context.
	 */
	signals[SIGNAL_ERROR] = g_signal_new("error", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL,
					     NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}

typedef struct {
	NcmDevice *device;
	guint signal;
	GError *error;
} NcmEvent;

/*
 * Link and speed are state, not a stream of events: a gadget that repeats
 * NETWORK_CONNECTION on every interrupt poll must not queue a dispatch per
 * poll on the owner's context (unbounded memory, a carrier flap each). The
 * event thread posts only on a change and only when nothing is queued yet;
 * the dispatch clears the flag first, then emits the latest state if it
 * differs from what the owner last saw.
 */
static void
emit_link(NcmDevice *self)
{
	gint up;

	g_atomic_int_set(&self->link_pending, 0);
	up = g_atomic_int_get(&self->link_up);
	if (up != self->emitted_link) {
		self->emitted_link = up;
		g_signal_emit(self, signals[SIGNAL_LINK_CHANGED], 0, up);
	}
}

static void
emit_speed(NcmDevice *self)
{
	guint32 down, up;

	g_atomic_int_set(&self->speed_pending, 0);
	down = __atomic_load_n(&self->down_bps, __ATOMIC_RELAXED);
	up = __atomic_load_n(&self->up_bps, __ATOMIC_RELAXED);
	if (!self->emitted_speed || down != self->emitted_down || up != self->emitted_up) {
		self->emitted_speed = TRUE;
		self->emitted_down = down;
		self->emitted_up = up;
		g_signal_emit(self, signals[SIGNAL_SPEED_CHANGED], 0, down, up);
	}
}

static gboolean
event_dispatch(gpointer data)
{
	NcmEvent *ev = data;

	switch (ev->signal) {
	case SIGNAL_LINK_CHANGED:
		emit_link(ev->device);
		break;
	case SIGNAL_SPEED_CHANGED:
		emit_speed(ev->device);
		break;
	case SIGNAL_REMOVED:
		ncm_context_watch_recheck(ev->device->context, ev->device->info->bus,
					  ev->device->info->address);
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
	/* The device may be finalized on another thread; see its finalize. */
	ncm_tsan_release(ev->device);
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
	NCM_TOUCH(self, "ncm_device_post_removed");
	if (!g_atomic_int_compare_and_exchange(&self->removed_emitted, 0, 1))
		return;
	NcmEvent *ev = g_new0(NcmEvent, 1);
	ev->signal = SIGNAL_REMOVED;
	post(self, ev);
}

void
ncm_device_mark_gone(NcmDevice *self)
{
	NCM_TOUCH(self, "ncm_device_mark_gone");
	g_atomic_int_set(&self->gone, 1);
	ncm_device_post_removed(self);
}

static void
post_state(NcmDevice *self, guint signal, gint *pending)
{
	NcmEvent *ev;

	if (!g_atomic_int_compare_and_exchange(pending, 0, 1))
		return;  /* the queued one will read the latest state */
	ev = g_new0(NcmEvent, 1);
	ev->signal = signal;
	post(self, ev);
}

/* Event thread (or the opener, for functions without an interrupt endpoint). */
void
ncm_device_post_link(NcmDevice *self, gboolean up)
{
	gint old;

	NCM_TOUCH(self, "ncm_device_post_link");
	old = __atomic_exchange_n(&self->link_up, up ? 1 : 0, __ATOMIC_SEQ_CST);
	if (g_atomic_int_get(&self->link_known) && old == (up ? 1 : 0))
		return;
	g_atomic_int_set(&self->link_known, 1);
	post_state(self, SIGNAL_LINK_CHANGED, &self->link_pending);
}

void
ncm_device_post_speed(NcmDevice *self, guint32 down, guint32 up)
{
	guint32 old_down, old_up;

	NCM_TOUCH(self, "ncm_device_post_speed");
	old_down = __atomic_exchange_n(&self->down_bps, down, __ATOMIC_RELAXED);
	old_up = __atomic_exchange_n(&self->up_bps, up, __ATOMIC_RELAXED);
	if (g_atomic_int_get(&self->speed_known) && old_down == down && old_up == up)
		return;
	g_atomic_int_set(&self->speed_known, 1);
	post_state(self, SIGNAL_SPEED_CHANGED, &self->speed_pending);
}

void
ncm_device_post_error(NcmDevice *self, GError *error)
{
	NcmEvent *ev;

	NCM_TOUCH(self, "ncm_device_post_error");
	ev = g_new0(NcmEvent, 1);
	g_warning("%s", error->message);
	ev->signal = SIGNAL_ERROR;
	ev->error = error;
	post(self, ev);
}
