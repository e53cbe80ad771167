/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-hold.c: received ACKs kept until their event batch ends (ncm-tap-hold.h says why). */
#include "ncm-tap-hold.h"

#include <string.h>

#include "ncm-ack.h"

/* Marks in @skip the held ACKs a later one supersedes (ncm-tap-hold.h). */
static void
thin(TapHold *h, guint n, bool *skip)
{
	const uint8_t *frames[TAP_HOLD_FRAMES];
	size_t lens[TAP_HOLD_FRAMES];

	for (guint i = 0; i < n; i++) {
		frames[i] = h->frames[i];
		lens[i] = h->lens[i];
	}
	__atomic_fetch_add(&h->thinned, ncm_ack_thin(frames, lens, n, skip), __ATOMIC_RELAXED);
}

gboolean
tap_hold_wants(const guint8 *frame, gsize len)
{
	NcmAckInfo ai;

	return tap_hold_fits(len) && ncm_ack_classify(frame, len, &ai) && !ai.payload;
}

void
tap_hold_flush(TapHold *h, TapHoldWrite write, gpointer user_data)
{
	bool skip[TAP_HOLD_FRAMES] = { false };
	guint n = h->n;

	/* Emptied first: a write that leads back here finds nothing twice. */
	h->n = 0;
	if (h->thin && n > 1)
		thin(h, n, skip);
	for (guint i = 0; i < n; i++)
		if (!skip[i])
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
