/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-hold.c: small received frames kept until their event batch ends (ncm-tap-hold.h says why). */
#include "ncm-tap-hold.h"

#include <string.h>

void
tap_hold_flush(TapHold *h, TapHoldWrite write, gpointer user_data)
{
	guint n = h->n;

	/* Emptied first: a write that leads back here finds nothing twice. */
	h->n = 0;
	for (guint i = 0; i < n; i++)
		write(user_data, h->frames[i], h->lens[i]);
}

void
tap_hold_take(TapHold *h, const guint8 *frame, gsize len, TapHoldWrite write,
	      gpointer user_data)
{
	g_return_if_fail(tap_hold_fits(len));
	if (h->n == TAP_HOLD_FRAMES)
		tap_hold_flush(h, write, user_data);
	memcpy(h->frames[h->n], frame, len);
	h->lens[h->n++] = (guint16)len;
}
