/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-codel.c: CoDel's drop decision for the TAP reader's queue (ncm-tap-codel.h says why). */
#include "ncm-tap-codel.h"

/* A backlog of at most one full frame is no queue: CoDel's MTU rule. */
#define CODEL_MIN_BACKLOG 1514u

void
tap_codel_init(TapCodel *c, gint64 target, gint64 interval)
{
	*c = (TapCodel){ .target = target, .interval = interval };
}

/* floor(sqrt(n)) for the control law, without libm. */
static guint64
isqrt(guint64 n)
{
	guint64 r = 0, bit = G_GUINT64_CONSTANT(1) << 62;

	while (bit > n)
		bit >>= 2;
	while (bit) {
		if (n >= r + bit) {
			n -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

/* t + interval / sqrt(count), the root in 1/1024ths. */
static gint64
control_law(const TapCodel *c, gint64 t)
{
	guint64 root = isqrt((guint64)MAX(c->count, 1u) << 20);

	return t + (gint64)((guint64)c->interval * 1024u / root);
}

/* RFC 8289's dodequeue: whether the sojourn has stood above target for an interval. */
static gboolean
standing(TapCodel *c, gint64 now, gint64 sojourn, gsize backlog)
{
	if (sojourn < c->target || backlog <= CODEL_MIN_BACKLOG) {
		c->first_above = 0;
		return FALSE;
	}
	if (c->first_above == 0) {
		c->first_above = now + c->interval;
		return FALSE;
	}
	return now >= c->first_above;
}

gboolean
tap_codel_drop(TapCodel *c, gint64 now, gint64 sojourn, gsize backlog)
{
	gboolean ok = c->target > 0 && standing(c, now, sojourn, backlog);
	guint delta;

	if (c->dropping) {
		if (!ok) {
			c->dropping = FALSE;
			return FALSE;
		}
		if (now < c->drop_next)
			return FALSE;
		c->count++;
		c->drop_next = control_law(c, c->drop_next);
		c->drops++;
		return TRUE;
	}
	if (!ok)
		return FALSE;
	/* A new dropping state soon after the last one resumes near its rate. */
	c->dropping = TRUE;
	delta = c->count - c->last_count;
	c->count = delta > 1 && now - c->drop_next < 16 * c->interval ? delta : 1;
	c->last_count = c->count;
	c->drop_next = control_law(c, now);
	c->drops++;
	return TRUE;
}

void
tap_codel_empty(TapCodel *c)
{
	c->first_above = 0;
	c->dropping = FALSE;
}
