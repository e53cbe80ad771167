/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-halt.c: STALLed endpoints: CLEAR_FEATURE on a thread of its own, then the stalled IN transfers (bulk and interrupt) go back through their retry round. */
#include "ncm-usb-device.h"

/* Cleared, the stalled transfers wait out their retry round (ncm-usb-retry.c):
 * a device that halts again at once is not cleared in a tight loop. */
static void
resubmit_stalled(NcmDevice *self, GPtrArray *slots)
{
	for (guint i = 0; i < slots->len; i++) {
		NcmSlot *slot = g_ptr_array_index(slots, i);

		ncm_device_retry_return(self, slot->xfer);
	}
}

/* The interrupt transfer waited out of flight for the halt to clear. */
static void
clear_intr(NcmDevice *self)
{
	int r = libusb_clear_halt(self->handle, self->info->intr_ep);

	if (r < 0)
		g_debug("clearing the interrupt halt: %s", libusb_strerror(r));
	ncm_device_retry_return(self, self->intr);
}

/* Clears halts until none is asked for, then says it is done. */
static gpointer
clear_halt_thread(gpointer data)
{
	NcmDevice *self = data;

	for (;;) {
		g_autoptr(GPtrArray) slots = NULL;
		gboolean out, intr;
		int r;

		ncm_mutex_lock(&self->flight_lock);
		out = self->clear_out;
		intr = self->clear_intr;
		self->clear_out = self->clear_intr = FALSE;
		if ((self->stalled->len == 0 && !out && !intr) || self->state != NCM_STATE_RUNNING) {
			self->clear_done = TRUE;
			ncm_mutex_unlock(&self->flight_lock);
			return NULL;
		}
		slots = g_steal_pointer(&self->stalled);
		self->stalled = g_ptr_array_new();
		ncm_mutex_unlock(&self->flight_lock);
		if (out && (r = libusb_clear_halt(self->handle, self->info->bulk_out_ep)) < 0)
			g_debug("clearing the bulk-OUT halt: %s", libusb_strerror(r));
		if (intr)
			clear_intr(self);
		if (slots->len == 0)
			continue;
		if ((r = libusb_clear_halt(self->handle, self->info->bulk_in_ep)) < 0)
			g_debug("clearing the bulk-IN halt: %s", libusb_strerror(r));
		resubmit_stalled(self, slots);
	}
}

/* flight_lock held: makes sure a clearing thread runs. */
static void
start_clearing_locked(NcmDevice *self)
{
	if (self->clear_thread && self->clear_done) {
		/* It has returned (clear_done is its last act): joining does not block. */
		g_thread_join(g_steal_pointer(&self->clear_thread));
	}
	if (self->state == NCM_STATE_RUNNING && !self->clear_thread) {
		self->clear_done = FALSE;
		self->clear_thread = g_thread_new("ncm-clear-halt", clear_halt_thread, self);
	}
}

/* A STALL needs a synchronous CLEAR_FEATURE, which the event thread must not do. */
void
ncm_device_halt_stalled(NcmDevice *self, NcmSlot *slot)
{
	NCM_TOUCH(self, "ncm_device_halt_stalled");
	NCM_STAT_ADD(self, rx_stalls, 1);
	ncm_mutex_lock(&self->flight_lock);
	g_ptr_array_add(self->stalled, slot);
	start_clearing_locked(self);
	ncm_device_landed_locked(self);
	ncm_mutex_unlock(&self->flight_lock);
}

/* The stalled OUT transfer's NTB is lost (counted by TX); later ones need the halt cleared. */
void
ncm_device_halt_clear_out(NcmDevice *self)
{
	NCM_TOUCH(self, "ncm_device_halt_clear_out");
	ncm_mutex_lock(&self->flight_lock);
	self->clear_out = TRUE;
	start_clearing_locked(self);
	ncm_mutex_unlock(&self->flight_lock);
}

/* The interrupt endpoint STALLed: its transfer leaves the flight until the
 * halt is cleared, since a resubmission would only meet the halt again. */
void
ncm_device_halt_intr(NcmDevice *self)
{
	NCM_TOUCH(self, "ncm_device_halt_intr");
	ncm_mutex_lock(&self->flight_lock);
	self->clear_intr = TRUE;
	start_clearing_locked(self);
	ncm_device_landed_locked(self);
	ncm_mutex_unlock(&self->flight_lock);
}

void
ncm_device_halt_stop(NcmDevice *self)
{
	GThread *clear;

	ncm_mutex_lock(&self->flight_lock);
	clear = g_steal_pointer(&self->clear_thread);
	ncm_mutex_unlock(&self->flight_lock);
	if (clear)
		g_thread_join(clear);
}
