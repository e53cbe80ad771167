/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-wake.c: telling the event thread that a device's deadlines moved; TX, RX's retries and the timers all call it, so it lives apart from each. */
#include "ncm-usb-device.h"

void
ncm_device_wake(NcmDevice *self, gint64 deadline_us)
{
	/* Before the context's wake: the batch it ends must see the kick. */
	g_atomic_int_set(&self->tick_kick, 1);
	ncm_context_wake(self->context, deadline_us);
}
