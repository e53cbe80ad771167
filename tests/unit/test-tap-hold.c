/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-tap-hold.c: small received frames kept until the batch ends: in order, copied, a full hold written first. */
#include <string.h>

#include "ncm-tap-hold.h"

typedef struct {
	guint n;
	guint8 first[256];  /* each write's first byte */
	gsize lens[256];
} Log;

static void
log_write(gpointer user_data, const guint8 *frame, gsize len)
{
	Log *l = user_data;

	g_assert_cmpuint(l->n, <, G_N_ELEMENTS(l->first));
	l->first[l->n] = frame[0];
	l->lens[l->n++] = len;
}

/* Kept (copies: the caller's buffer is reused at once) until flushed, oldest first. */
static void
test_order(void)
{
	TapHold h;
	Log l = { 0 };
	guint8 f[TAP_HOLD_FRAME_MAX];

	tap_hold_init(&h);
	for (guint i = 0; i < 5; i++) {
		memset(f, (int)i, sizeof(f));
		tap_hold_take(&h, f, 60 + i, log_write, &l);
	}
	memset(f, 0xee, sizeof(f));
	g_assert_cmpuint(l.n, ==, 0);
	tap_hold_flush(&h, log_write, &l);
	g_assert_cmpuint(l.n, ==, 5);
	for (guint i = 0; i < 5; i++) {
		g_assert_cmpuint(l.first[i], ==, i);
		g_assert_cmpuint(l.lens[i], ==, 60 + i);
	}
	/* Flushed means empty. */
	tap_hold_flush(&h, log_write, &l);
	g_assert_cmpuint(l.n, ==, 5);
}

/* A full hold is written before it takes the next frame: nothing lost, order kept. */
static void
test_full(void)
{
	TapHold h;
	Log l = { 0 };
	guint8 f[TAP_HOLD_FRAME_MAX];

	tap_hold_init(&h);
	for (guint i = 0; i < TAP_HOLD_FRAMES + 3; i++) {
		f[0] = (guint8)i;
		tap_hold_take(&h, f, TAP_HOLD_FRAME_MAX, log_write, &l);
		g_assert_cmpuint(l.n, ==, i < TAP_HOLD_FRAMES ? 0 : TAP_HOLD_FRAMES);
	}
	tap_hold_flush(&h, log_write, &l);
	g_assert_cmpuint(l.n, ==, TAP_HOLD_FRAMES + 3);
	for (guint i = 0; i < l.n; i++)
		g_assert_cmpuint(l.first[i], ==, i);
}

static void
test_fits(void)
{
	g_assert_true(tap_hold_fits(54));                 /* an IPv4 pure ACK */
	g_assert_true(tap_hold_fits(TAP_HOLD_FRAME_MAX));
	g_assert_false(tap_hold_fits(TAP_HOLD_FRAME_MAX + 1));
	g_assert_false(tap_hold_fits(1514));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/tap-hold/order", test_order);
	g_test_add_func("/tap-hold/full", test_full);
	g_test_add_func("/tap-hold/fits", test_fits);
	return g_test_run();
}
