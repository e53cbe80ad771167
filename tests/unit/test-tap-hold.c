/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-tap-hold.c: received TCP segments without payload kept until the batch ends: in order, copied, a full hold written first, superseded ACKs left out. */
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

	tap_hold_init(&h, FALSE);
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

	tap_hold_init(&h, FALSE);
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

/* An Ethernet + IPv4 + TCP frame of flow @port, ACK @ack, @payload bytes, no options (RFC 791, RFC 9293). */
static gsize
tcp_frame(guint8 *f, guint16 port, guint32 ack, gsize payload)
{
	gsize len = 14 + 20 + 20 + payload;

	memset(f, 0, len);
	f[12] = 0x08;                            /* IPv4 */
	f[14] = 0x45;                            /* version 4, 20-byte header */
	f[16] = (guint8)((len - 14) >> 8);
	f[17] = (guint8)(len - 14);
	f[22] = 64;                              /* TTL */
	f[23] = 6;                               /* TCP */
	f[26] = 10, f[29] = 1, f[30] = 10, f[33] = 2;
	f[34] = (guint8)(port >> 8), f[35] = (guint8)port, f[37] = 80;
	f[42] = (guint8)(ack >> 24), f[43] = (guint8)(ack >> 16), f[44] = (guint8)(ack >> 8), f[45] = (guint8)ack;
	f[46] = 0x50;                            /* 20-byte header */
	f[47] = payload ? 0x18 : 0x10;           /* ACK (and PSH with data) */
	f[48] = 0x10;                            /* window */
	f[14 + 20 + 20] = 0xdd;                  /* the payload's first byte, if any */
	return len;
}

static void
take_tcp(TapHold *h, Log *l, guint16 port, guint32 ack, gsize payload)
{
	guint8 f[TAP_HOLD_FRAME_MAX];

	tap_hold_take(h, f, tcp_frame(f, port, ack, payload), log_write, l);
}

/*
 * Thinning by libncm's receive rule: a pure ACK goes only when a later one
 * of its flow advances on it with nothing else of the flow between; duplicate
 * ACKs and other flows' frames are all written, in order.
 */
static void
test_thin(void)
{
	TapHold h = { 0 };
	Log l = { 0 };

	tap_hold_init(&h, TRUE);
	take_tcp(&h, &l, 1000, 100, 0);
	take_tcp(&h, &l, 2000, 500, 0);
	take_tcp(&h, &l, 1000, 200, 0);
	take_tcp(&h, &l, 1000, 300, 0);
	tap_hold_flush(&h, log_write, &l);
	g_assert_cmpuint(l.n, ==, 2);             /* flow 2000's, then 1000's ACK 300 */
	g_assert_cmpuint(h.thinned, ==, 2);

	/* A data segment of the flow between keeps the ACK before it. */
	l.n = 0;
	take_tcp(&h, &l, 1000, 400, 0);
	take_tcp(&h, &l, 1000, 400, 10);
	take_tcp(&h, &l, 1000, 500, 0);
	tap_hold_flush(&h, log_write, &l);
	g_assert_cmpuint(l.n, ==, 3);
	g_assert_cmpuint(l.lens[1], ==, 64);

	/* Duplicate ACKs are the sender's signal of a loss: all of them go. */
	l.n = 0;
	for (guint i = 0; i < 3; i++)
		take_tcp(&h, &l, 1000, 600, 0);
	tap_hold_flush(&h, log_write, &l);
	g_assert_cmpuint(l.n, ==, 3);
	g_assert_cmpuint(h.thinned, ==, 2);

	/* Not Ethernet (TUN mode): nothing is parsed, everything goes. */
	l.n = 0;
	tap_hold_init(&h, FALSE);
	take_tcp(&h, &l, 1000, 700, 0);
	take_tcp(&h, &l, 1000, 800, 0);
	tap_hold_flush(&h, log_write, &l);
	g_assert_cmpuint(l.n, ==, 2);
}

static void
test_fits(void)
{
	g_assert_true(tap_hold_fits(54));                 /* an IPv4 pure ACK */
	g_assert_true(tap_hold_fits(TAP_HOLD_FRAME_MAX));
	g_assert_false(tap_hold_fits(TAP_HOLD_FRAME_MAX + 1));
	g_assert_false(tap_hold_fits(1514));
}

/* What is held: TCP segments without payload that fit; not data, not UDP, not ARP. */
static void
test_wants(void)
{
	guint8 f[1514];
	gsize len;

	g_assert_true(tap_hold_wants(f, tcp_frame(f, 1000, 1, 0)));
	f[47] = 0x11;                                    /* FIN: still no payload */
	g_assert_true(tap_hold_wants(f, 54));
	g_assert_false(tap_hold_wants(f, tcp_frame(f, 1000, 1, 1)));
	len = tcp_frame(f, 1000, 1, 0);
	f[23] = 17;                                      /* UDP, same size */
	g_assert_false(tap_hold_wants(f, len));
	memset(f, 0, 60);
	f[12] = 0x08, f[13] = 0x06;                      /* ARP */
	g_assert_false(tap_hold_wants(f, 60));
	/* An ACK in a frame padded past what the hold takes. */
	tcp_frame(f, 1000, 1, 0);
	memset(f + 54, 0, TAP_HOLD_FRAME_MAX);
	g_assert_false(tap_hold_wants(f, TAP_HOLD_FRAME_MAX + 1));
	g_assert_true(tap_hold_wants(f, TAP_HOLD_FRAME_MAX));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/tap-hold/order", test_order);
	g_test_add_func("/tap-hold/full", test_full);
	g_test_add_func("/tap-hold/fits", test_fits);
	g_test_add_func("/tap-hold/thin", test_thin);
	g_test_add_func("/tap-hold/wants", test_wants);
	return g_test_run();
}
