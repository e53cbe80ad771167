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
	/* A packet of the flow is in the reader's hands: none of it is sparse. */
	tap_queue_set_hand(&q, ncm_flow_bucket(f, data));
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

/* An IPv4 UDP datagram from port @sport, @payload bytes; @frag sets the
 * fragment offset field (a later fragment). */
static gsize
udp_frame(guint8 *f, guint sport, guint payload, guint frag)
{
	guint l3 = ETH, l4 = l3 + 20;

	memset(f, 0, 2048);
	wr16(f + 12, 0x0800);
	f[l3] = 0x45;
	wr16(f + l3 + 2, 20 + 8 + payload);
	wr16(f + l3 + 6, frag);
	f[l3 + 9] = 17;
	f[l3 + 12] = 10;
	f[l3 + 16] = 10;
	f[l3 + 19] = 2;
	wr16(f + l4, sport);
	wr16(f + l4 + 2, 53);
	return l4 + 8 + payload;
}

/* Flows are told apart by addresses, protocol and ports, never by what
 * they carry; a datagram's fragments share one. */
static void
test_flow(void)
{
	guint8 f[2048];
	gsize n = udp_frame(f, 1000, 10, 0);
	guint a = ncm_flow_bucket(f, n), b;

	g_assert_cmpuint(a, <, NCM_FLOW_BUCKETS);
	f[n - 1] = 0xff;
	g_assert_cmpuint(ncm_flow_bucket(f, n), ==, a);
	n = udp_frame(f, 1001, 10, 0);
	b = ncm_flow_bucket(f, n);
	g_assert_cmpuint(b, !=, a);
	/* The first fragment (more fragments) and a later one. */
	n = udp_frame(f, 1001, 10, 0x2000);
	a = ncm_flow_bucket(f, n);
	n = udp_frame(f, 7, 10, 0x0010);
	g_assert_cmpuint(ncm_flow_bucket(f, n), ==, a);
	/* Truncated headers still give a bucket. */
	for (gsize len = 0; len < n; len++)
		g_assert_cmpuint(ncm_flow_bucket(f, len), <, NCM_FLOW_BUCKETS);
}

/*
 * A bulk flow fills the queue; probes of another flow go ahead of it, the
 * ones that come while earlier ones still wait or are being sent too, up
 * to NCM_FLOW_AHEAD_MAX bytes of the flow. Past that its packets join the
 * bulk, and while one is there so do all of its later ones. Once the flow
 * has nothing queued its packets go ahead again; large ones never do.
 */
static void
test_sparse(void)
{
	static const guint8 ahead_order[] = {2, 3, 20}, bulk_order[] = {21, 4};
	guint8 f[2048];
	gsize data = tcp_frame(f, FALSE, 0x18, 0, 1000), probe, full;
	TapQueued *p;
	TapQueue q;

	tap_queue_init(&q, 8 * data);
	tap_queue_set_hand(&q, ncm_flow_bucket(f, data));
	for (guint i = 0; i < 3; i++)
		g_assert_true(tap_queue_push(&q, queued(f, data)));
	tap_queue_set_hand(&q, NCM_FLOW_NONE);
	g_assert_cmpuint(q.bulk.length, ==, 3);
	probe = udp_frame(f, 1000, 36, 0);
	f[60] = 1;
	g_assert_true(tap_queue_push(&q, queued(f, probe)));
	f[60] = 2;
	g_assert_true(tap_queue_push(&q, queued(f, probe)));
	g_assert_cmpuint(q.acks.length, ==, 2);
	g_assert_cmpuint(q.sparse_bytes, ==, 2 * probe);
	/* 1 is being sent: 3 still goes ahead, behind 2. */
	p = tap_queue_pop_ack(&q);
	g_assert_cmpuint(p->frame[60], ==, 1);
	f[60] = 3;
	g_assert_true(tap_queue_push(&q, queued(f, probe)));
	g_assert_cmpuint(q.acks.length, ==, 2);
	/* A full frame of the flow fits its room ahead; the next does not,
	 * and the probe after it follows it into the bulk. */
	full = udp_frame(f, 1000, NCM_FLOW_SPARSE_MAX - 42, 0);
	g_assert_cmpuint(full, ==, NCM_FLOW_SPARSE_MAX);
	f[60] = 20;
	g_assert_true(tap_queue_push(&q, queued(f, full)));
	f[60] = 21;
	g_assert_true(tap_queue_push(&q, queued(f, full)));
	probe = udp_frame(f, 1000, 36, 0);
	f[60] = 4;
	g_assert_true(tap_queue_push(&q, queued(f, probe)));
	g_assert_cmpuint(q.acks.length, ==, 3);
	g_assert_cmpuint(q.bulk.length, ==, 5);
	g_assert_cmpuint(q.flows.ahead_bytes[ncm_flow_bucket(f, probe)], ==, 3 * probe + full);
	tap_queue_done(&q, p);
	g_free(p);
	for (guint i = 0; i < G_N_ELEMENTS(ahead_order); i++) {
		p = tap_queue_pop_ack(&q);
		g_assert_cmpuint(p->frame[60], ==, ahead_order[i]);
		tap_queue_done(&q, p);
		g_free(p);
	}
	g_assert_null(tap_queue_pop_ack(&q));
	for (guint i = 0; i < 5; i++) {
		p = tap_queue_pop_bulk(&q);
		g_assert_nonnull(p);
		if (i >= 3)
			g_assert_cmpuint(p->frame[60], ==, bulk_order[i - 3]);
		tap_queue_done(&q, p);
		g_free(p);
	}
	g_assert_null(tap_queue_pop_bulk(&q));
	for (guint b = 0; b < NCM_FLOW_BUCKETS; b++) {
		g_assert_cmpuint(q.flows.queued[b], ==, 0);
		g_assert_cmpuint(q.flows.ahead[b], ==, 0);
		g_assert_cmpuint(q.flows.ahead_bytes[b], ==, 0);
	}
	/* Its flow has nothing queued: ahead again, but not when large. */
	f[60] = 5;
	g_assert_true(tap_queue_push(&q, queued(f, probe)));
	probe = udp_frame(f, 2000, NCM_FLOW_SPARSE_MAX, 0);
	g_assert_true(tap_queue_push(&q, queued(f, probe)));
	g_assert_cmpuint(q.bulk.length, ==, 1);
	p = tap_queue_pop_ack(&q);
	g_assert_cmpuint(p->frame[60], ==, 5);
	g_free(p);
	tap_queue_clear(&q);
	g_assert_cmpuint(q.sparse_bytes, ==, 0);
}

/* Sparse packets count against the limit of their own: many flows cannot
 * queue past it by each sending one. */
static void
test_sparse_limit(void)
{
	guint8 f[2048];
	gsize n = udp_frame(f, 1, 100, 0);
	TapQueue q;
	guint ahead = 0;

	tap_queue_init(&q, 3 * n);
	for (guint port = 1; port <= 64; port++) {
		udp_frame(f, port, 100, 0);
		g_assert_true(tap_queue_push(&q, queued(f, n)) || q.bulk_bytes >= q.limit);
	}
	for (TapQueued *p; (p = tap_queue_pop_ack(&q)); g_free(p))
		ahead++;
	g_assert_cmpuint(ahead, ==, 3);
	g_assert_cmpuint(q.bulk.length, ==, 3);
	g_assert_cmpuint(q.dropped, ==, 58);
	tap_queue_clear(&q);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/tap-queue/is-ack", test_is_ack);
	g_test_add_func("/tap-queue/order-and-limit", test_order_and_limit);
	g_test_add_func("/tap-queue/ack-cap", test_ack_cap);
	g_test_add_func("/tap-queue/flow", test_flow);
	g_test_add_func("/tap-queue/sparse", test_sparse);
	g_test_add_func("/tap-queue/sparse-limit", test_sparse_limit);
	return g_test_run();
}
