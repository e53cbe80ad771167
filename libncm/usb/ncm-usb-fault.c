/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-fault.c: test builds only (-Dtest_hooks, on for all but release builds): damages received NTBs as a bad cable or a buggy device would, and fails a resubmission as a device that vanishes does. */
#include <stdlib.h>

#include "ncm-usb-device.h"

/*
 * Compiled only into test builds, and switched on by the environment
 * (NCM_TEST_FAULT_ONE_IN=N: one received NTB in N is flipped, cut short
 * or parsed twice), so the VM tests can prove that good frames survive
 * bad ones while release builds carry no trace of it on the data path.
 */

/*
 * A device can vanish between a completion and its resubmission: the
 * completion then runs its error path (mark the device gone) and drops the
 * count. NCM_TEST_FAIL_RESUBMIT=rx|intr makes that happen on demand, once
 * per open, for the first resubmission of a bulk-IN transfer or of the
 * interrupt transfer from its own completion, so the VM test vm-driver-landed
 * can walk those error paths under ncm-usb-landed.c's check.
 */
enum { FAULT_RESUBMIT_NONE, FAULT_RESUBMIT_RX, FAULT_RESUBMIT_INTR };

static guint
fault_resubmit_parse(void)
{
	const gchar *env = g_getenv("NCM_TEST_FAIL_RESUBMIT");

	if (!env)
		return FAULT_RESUBMIT_NONE;
	if (g_str_equal(env, "rx"))
		return FAULT_RESUBMIT_RX;
	if (g_str_equal(env, "intr"))
		return FAULT_RESUBMIT_INTR;
	g_warning("test hook: NCM_TEST_FAIL_RESUBMIT=%s is neither rx nor intr: ignored", env);
	return FAULT_RESUBMIT_NONE;
}

void
ncm_device_fault_init(NcmDevice *self)
{
	const gchar *env = g_getenv("NCM_TEST_FAULT_ONE_IN");

	self->fault_one_in = env ? (guint)strtoul(env, NULL, 10) : 0;
	self->fault_state = 0x9e3779b9u;
	if (self->fault_one_in)
		g_message("test hook: damaging 1 in %u received NTBs", self->fault_one_in);
	self->fault_resubmit = fault_resubmit_parse();
}

static guint32
fault_next(NcmDevice *self)
{
	guint32 x = self->fault_state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return self->fault_state = x;
}

void
ncm_device_fault_rx(NcmDevice *self, guint8 *buf, gsize len, NcmParseFunc parse)
{
	guint32 r;

	if (!self->fault_one_in || len == 0) {
		parse(self, buf, len);
		return;
	}
	r = fault_next(self);
	if (r % self->fault_one_in != 0) {
		parse(self, buf, len);
		return;
	}
	switch ((r >> 16) % 3) {
	case 0:
		buf[(r >> 8) % len] ^= (guint8)(1u << (r & 7));
		parse(self, buf, len);
		break;
	case 1:
		parse(self, buf, (r >> 8) % len);
		break;
	default:
		parse(self, buf, len);
		parse(self, buf, len);
		break;
	}
}

int
ncm_device_fault_submit(NcmDevice *self, struct libusb_transfer *xfer)
{
	/* By endpoint, not by self->intr: the owner's thread sets that while RX
	 * completions already run here. */
	const NcmFunctionInfo *info = self->info;
	guint pipe = info->intr_ep && xfer->endpoint == info->intr_ep ? FAULT_RESUBMIT_INTR
		     : xfer->endpoint == info->bulk_in_ep ? FAULT_RESUBMIT_RX
		     : FAULT_RESUBMIT_NONE;

	if (pipe == FAULT_RESUBMIT_NONE || pipe != self->fault_resubmit ||
	    !ncm_device_in_completion())
		return libusb_submit_transfer(xfer);
	self->fault_resubmit = FAULT_RESUBMIT_NONE;
	g_message("test hook: failing the resubmission of the %s transfer as if the device had gone",
		  pipe == FAULT_RESUBMIT_RX ? "bulk-IN" : "interrupt");
	return LIBUSB_ERROR_NO_DEVICE;
}
