/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vmtest-data.h: test data the VM programs agree on: an xorshift32 stream and FNV-1a. */
#pragma once

#include <glib.h>

#define VMTEST_FNV_INIT 2166136261u

/* Fills buf from the xorshift32 state *x; both ends of a stream regenerate
 * it from the same seed, so a byte moved, lost or changed shows. */
static inline void
vmtest_gen_fill(guint32 *x, guint8 *buf, gsize len)
{
	for (gsize i = 0; i < len; i++) {
		*x ^= *x << 13;
		*x ^= *x >> 17;
		*x ^= *x << 5;
		buf[i] = (guint8)*x;
	}
}

static inline guint32
vmtest_fnv1a(guint32 h, const guint8 *b, gsize len)
{
	for (gsize i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}
