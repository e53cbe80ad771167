/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-flight.c: counting the transfers in flight, so that close() cancels and waits for exactly those. */
#include "ncm-usb-device.h"

/*
 * The submit ioctl runs outside flight_lock: every completion drops its
 * count under that lock (ncm_device_landed()), so an OUT completion on the
 * event thread used to wait for a producer's whole ioctl (issue 15). The
 * transfer is counted before it is submitted, and close() waits for
 * submissions under way (submitting) before it cancels: a submission either
 * saw the state RUNNING and ends before the cancel, or is refused.
 */
int
ncm_device_submit(NcmDevice *self, struct libusb_transfer *xfer, gboolean counted)
{
	gboolean fail = FALSE;
	int r;

	NCM_TOUCH(self, "ncm_device_submit");
	ncm_mutex_lock(&self->flight_lock);
	if (self->state != NCM_STATE_RUNNING) {
		ncm_mutex_unlock(&self->flight_lock);
		return LIBUSB_ERROR_INTERRUPTED;
	}
#ifdef NCM_TEST_HOOKS
	fail = ncm_device_fault_submit_fails(self, xfer);
#endif
	if (!counted)
		self->in_flight++;
	self->submitting++;
	ncm_mutex_unlock(&self->flight_lock);

	r = fail ? LIBUSB_ERROR_NO_DEVICE : libusb_submit_transfer(xfer);

	ncm_mutex_lock(&self->flight_lock);
	/* Not ncm_device_landed_locked(): this is no completion's last touch. */
	if (r != 0 && !counted && --self->in_flight == 0)
		g_cond_broadcast(&self->flight_cond);
	if (--self->submitting == 0 && self->state != NCM_STATE_RUNNING)
		g_cond_broadcast(&self->flight_cond);
	ncm_mutex_unlock(&self->flight_lock);
	return r;
}

/* flight_lock held, the state no longer RUNNING: no submission is under way when it returns. */
void
ncm_device_submit_wait_locked(NcmDevice *self)
{
	while (self->submitting > 0)
		ncm_cond_wait(&self->flight_cond, &self->flight_lock);
}

void
ncm_device_landed_locked(NcmDevice *self)
{
#ifdef NCM_TEST_HOOKS
	ncm_device_landed_mark(self);
#endif
	if (--self->in_flight == 0)
		g_cond_broadcast(&self->flight_cond);
}

void
ncm_device_landed(NcmDevice *self)
{
	ncm_mutex_lock(&self->flight_lock);
	ncm_device_landed_locked(self);
	ncm_mutex_unlock(&self->flight_lock);
}

gboolean
ncm_device_flight_wait(NcmDevice *self, gint64 deadline)
{
	gboolean timed_out = FALSE;

	ncm_mutex_lock(&self->flight_lock);
	while (self->in_flight > 0 && !timed_out)
		timed_out = !ncm_cond_wait_until(&self->flight_cond, &self->flight_lock, deadline);
	ncm_mutex_unlock(&self->flight_lock);
	return !timed_out;
}
