/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-fault.c: test builds only (-Dtest_hooks, on for all but release builds): damages received NTBs as a bad cable or a buggy device would. */
#include <stdlib.h>

#include "ncm-usb-device.h"

/*
 * Compiled only into test builds, and switched on by the environment
 * (NCM_TEST_FAULT_ONE_IN=N: one received NTB in N is flipped, cut short
 * or parsed twice), so the VM tests can prove that good frames survive
 * bad ones while release builds carry no trace of it on the data path.
 */

void
ncm_device_fault_init(NcmDevice *self)
{
	const gchar *env = g_getenv("NCM_TEST_FAULT_ONE_IN");

	self->fault_one_in = env ? (guint)strtoul(env, NULL, 10) : 0;
	self->fault_state = 0x9e3779b9u;
	if (self->fault_one_in)
		g_message("test hook: damaging 1 in %u received NTBs", self->fault_one_in);
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
