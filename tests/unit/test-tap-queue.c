/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-tap-queue.c: the TAP reader's queue: which packets count as pure ACKs, ACKs first, the byte limit. */
#include <string.h>

#include "ncm-tap-queue.h"

#define ETH 14
/* The low byte of a segment's ack number: a tag that keeps it a pure ACK. */
#define ACK_TAG(v6) (ETH + ((v6) ? 40 : 20) + 11)

static void
wr16(guint8 *p, guint v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

/* A TCP segment in an Ethernet frame: @flags, @opts bytes of options (NOPs), @payload bytes. */
static gsize
tcp_frame(guint8 *f, gboolean v6, guint8 flags, guint opts, guint payload)
{
	guint l3 = ETH, ip = v6 ? 40 : 20, l4 = l3 + ip, doff = 20 + opts;

	memset(f, 0, 2048);
	wr16(f + 12, v6 ? 0x86dd : 0x0800);
	if (v6) {
		f[l3] = 0x60;
		wr16(f + l3 + 4, doff + payload);
		f[l3 + 6] = 6;
	} else {
		f[l3] = 0x45;
		wr16(f + l3 + 2, ip + doff + payload);
		f[l3 + 9] = 6;
	}
	f[l4 + 12] = (guint8)(doff / 4 << 4);
	f[l4 + 13] = flags;
	memset(f + l4 + 20, 1, opts);
	return l4 + doff + payload;
}

static TapQueued *
queued(const guint8 *f, gsize len)
{
	TapQueued *p = g_malloc0(sizeof(TapQueued) + len);

	memcpy(p->frame, f, len);
	p->len = len;
	return p;
}

static void
test_is_ack(void)
{
	static const TapVnetHdr plain, tso = { .gso_type = TAP_VNET_GSO_TCPV4 };
	guint8 f[2048];
	gsize n;

	for (int v6 = 0; v6 <= 1; v6++) {
		n = tcp_frame(f, v6, 0x10, 0, 0);
		g_assert_true(tap_queue_is_ack(&plain, f, n));
		/* SACK blocks and timestamps: still an ACK. */
		n = tcp_frame(f, v6, 0x10, 32, 0);
		g_assert_true(tap_queue_is_ack(&plain, f, n));
		/* PSH, ECE, CWR ride along. */
		n = tcp_frame(f, v6, 0x10 | 0x08 | 0x40 | 0x80, 0, 0);
		g_assert_true(tap_queue_is_ack(&plain, f, n));
		/* Ethernet padding after a short IPv4 packet is not payload. */
		n = tcp_frame(f, v6, 0x10, 0, 0);
		g_assert_true(tap_queue_is_ack(&plain, f, MAX(n, 60)));
		/* Data, SYN, FIN, RST, URG, no ACK: in order with the rest. */
		n = tcp_frame(f, v6, 0x10, 0, 1);
		g_assert_false(tap_queue_is_ack(&plain, f, n));
		for (guint8 bad = 1; bad <= 0x20; bad <<= 1) {
			if (bad == 0x08 || bad == 0x10)
				continue;
			n = tcp_frame(f, v6, 0x10 | bad, 0, 0);
			g_assert_false(tap_queue_is_ack(&plain, f, n));
		}
		n = tcp_frame(f, v6, 0x08, 0, 0);
		g_assert_false(tap_queue_is_ack(&plain, f, n));
		/* Cut short: the header claims more than the frame holds. */
		n = tcp_frame(f, v6, 0x10, 12, 0);
		g_assert_false(tap_queue_is_ack(&plain, f, n - 1));
		g_assert_false(tap_queue_is_ack(&plain, f, ETH + 10));
	}
	n = tcp_frame(f, FALSE, 0x10, 0, 0);
	g_assert_false(tap_queue_is_ack(&tso, f, n));
	/* An IPv4 fragment carries no TCP header of its own. */
	wr16(f + ETH + 6, 0x2000);
	g_assert_false(tap_queue_is_ack(&plain, f, n));
	/* UDP. */
	n = tcp_frame(f, FALSE, 0x10, 0, 0);
	f[ETH + 9] = 17;
	g_assert_false(tap_queue_is_ack(&plain, f, n));
	/* A data offset under 20. */
	n = tcp_frame(f, FALSE, 0x10, 0, 0);
	f[ETH + 20 + 12] = 4 << 4;
	g_assert_false(tap_queue_is_ack(&plain, f, n));
}

/* ACKs leave before older data, each class in its own order; the limit drops data, never ACKs. */
static void
test_order_and_limit(void)
{
	guint8 f[2048];
	gsize data = tcp_frame(f, FALSE, 0x18, 0, 1000), ack;
	TapQueue q;
	TapQueued *p;

	tap_queue_init(&q, 3 * data);
	for (guint i = 0; i < 5; i++) {
		f[100] = (guint8)i;
		g_assert_cmpint(tap_queue_push(&q, queued(f, data)), ==, i < 3);
	}
	g_assert_cmpuint(q.bulk_bytes, ==, 3 * data);
	g_assert_cmpuint(q.dropped, ==, 2);
	for (guint i = 0; i < 3; i++) {
		ack = tcp_frame(f, i & 1, 0x10, 0, 0);
		f[ACK_TAG(i & 1)] = (guint8)(10 + i);
		g_assert_true(tap_queue_push(&q, queued(f, ack)));
	}
	for (guint i = 0; i < 3; i++) {
		p = tap_queue_pop_ack(&q);
		g_assert_nonnull(p);
		g_assert_cmpuint(p->frame[ACK_TAG(i & 1)], ==, 10 + i);
		if (i == 1) {
			tap_queue_unpop_ack(&q, p);
			p = tap_queue_pop_ack(&q);
			g_assert_cmpuint(p->frame[ACK_TAG(1)], ==, 11);
		}
		g_free(p);
	}
	g_assert_null(tap_queue_pop_ack(&q));
	for (guint i = 0; i < 3; i++) {
		p = tap_queue_pop_bulk(&q);
		g_assert_nonnull(p);
		g_assert_cmpuint(p->frame[100], ==, i);
		g_free(p);
	}
	g_assert_null(tap_queue_pop_bulk(&q));
	g_assert_cmpuint(q.bulk_bytes, ==, 0);
	/* Room again once drained. */
	g_assert_true(tap_queue_push(&q, queued(f, data)));
	tap_queue_clear(&q);
	g_assert_cmpuint(q.bulk_bytes, ==, 0);
	g_assert_null(tap_queue_pop_bulk(&q));
}

/* ACKs have a cap of their own, counted apart. */
static void
test_ack_cap(void)
{
	guint8 f[2048];
	gsize ack = tcp_frame(f, FALSE, 0x10, 0, 0);
	TapQueue q;

	tap_queue_init(&q, 0);
	for (guint i = 0; i < TAP_QUEUE_MAX_ACKS + 3; i++)
		g_assert_cmpint(tap_queue_push(&q, queued(f, ack)), ==, i < TAP_QUEUE_MAX_ACKS);
	g_assert_cmpuint(q.dropped, ==, 3);
	g_assert_cmpuint(q.dropped_acks, ==, 3);
	/* A limit of 0 takes no data at all. */
	ack = tcp_frame(f, FALSE, 0x18, 0, 1);
	g_assert_false(tap_queue_push(&q, queued(f, ack)));
	tap_queue_clear(&q);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/tap-queue/is-ack", test_is_ack);
	g_test_add_func("/tap-queue/order-and-limit", test_order_and_limit);
	g_test_add_func("/tap-queue/ack-cap", test_ack_cap);
	return g_test_run();
}
