/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ack.c: which TCP ACKs merge in the open NTB, and which must reach the sender as sent. */
#include <glib.h>
#include <string.h>

#include "ncm-ack.h"

/*
 * Frames are laid out byte by byte from RFC 791 (IPv4), RFC 8200 (IPv6) and
 * RFC 9293 (TCP), not with ncm-ack.c's names. The "NTB" is a plain buffer
 * holding frames at known offsets, as the packer leaves them.
 */

typedef struct {
	gboolean v6;
	guint16 sport, dport;
	guint32 seq, ack;
	guint8 flags;      /* 0x10 = ACK */
	guint16 window;
	gboolean ts;       /* the 12-byte NOP NOP TS option block */
	gboolean sack;     /* NOP NOP SACK with one block */
	gsize payload;
	guint32 tsval;
	guint8 ihl_words;  /* 0 = 5 */
	guint16 frag;      /* IPv4 flags + offset */
	guint8 v6_next;    /* 0 = TCP (6) */
} Seg;

static gsize
build(guint8 *b, const Seg *s)
{
	gsize opt = (s->ts ? 12 : 0) + (s->sack ? 12 : 0);
	gsize tcp = 20 + opt + s->payload;
	gsize l3 = 14, l4, ihl = (s->ihl_words ? s->ihl_words : 5) * 4;

	memset(b, 0, 200 + s->payload);
	memcpy(b, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02", 12);
	if (!s->v6) {
		b[12] = 0x08, b[13] = 0x00;
		b[l3] = 0x40 | (guint8)(ihl / 4);
		b[l3 + 2] = (guint8)((ihl + tcp) >> 8), b[l3 + 3] = (guint8)(ihl + tcp);
		b[l3 + 6] = (guint8)(s->frag >> 8), b[l3 + 7] = (guint8)s->frag;
		b[l3 + 8] = 64, b[l3 + 9] = 6;
		memcpy(b + l3 + 12, "\xc0\xa8\x4d\x02\xc0\xa8\x4d\x01", 8);
		l4 = l3 + ihl;
	} else {
		b[12] = 0x86, b[13] = 0xdd;
		b[l3] = 0x60;
		b[l3 + 4] = (guint8)(tcp >> 8), b[l3 + 5] = (guint8)tcp;
		b[l3 + 6] = s->v6_next ? s->v6_next : 6, b[l3 + 7] = 64;
		b[l3 + 8] = 0xfe, b[l3 + 9] = 0x80, b[l3 + 23] = 2;
		b[l3 + 24] = 0xfe, b[l3 + 25] = 0x80, b[l3 + 39] = 1;
		l4 = l3 + 40;
	}
	b[l4] = (guint8)(s->sport >> 8), b[l4 + 1] = (guint8)s->sport;
	b[l4 + 2] = (guint8)(s->dport >> 8), b[l4 + 3] = (guint8)s->dport;
	for (int i = 0; i < 4; i++) {
		b[l4 + 4 + i] = (guint8)(s->seq >> (24 - 8 * i));
		b[l4 + 8 + i] = (guint8)(s->ack >> (24 - 8 * i));
	}
	b[l4 + 12] = (guint8)(((20 + opt) / 4) << 4);
	b[l4 + 13] = s->flags;
	b[l4 + 14] = (guint8)(s->window >> 8), b[l4 + 15] = (guint8)s->window;
	gsize o = l4 + 20;
	if (s->ts) {
		b[o] = 1, b[o + 1] = 1, b[o + 2] = 8, b[o + 3] = 10;
		for (int i = 0; i < 4; i++)
			b[o + 4 + i] = (guint8)(s->tsval >> (24 - 8 * i));
		o += 12;
	}
	if (s->sack) {
		b[o] = 1, b[o + 1] = 1, b[o + 2] = 5, b[o + 3] = 10;
		o += 12;
	}
	return o + s->payload;
}

static Seg
ack_seg(guint32 ack)
{
	return (Seg){ .sport = 5201, .dport = 40000, .seq = 1, .ack = ack, .flags = 0x10,
		      .window = 1000, .ts = TRUE, .tsval = ack };
}

static void
test_classify(void)
{
	guint8 b[2048];
	NcmAckInfo info;
	Seg s = ack_seg(1000);
	gsize len = build(b, &s);

	g_assert_true(ncm_ack_classify(b, len, &info));
	g_assert_true(info.tcp && info.pure && !info.v6);
	g_assert_cmpuint(info.ack, ==, 1000);
	g_assert_cmpuint(info.l3, ==, 14);
	g_assert_cmpuint(info.l4, ==, 34);

	s.v6 = TRUE;
	len = build(b, &s);
	g_assert_true(ncm_ack_classify(b, len, &info));
	g_assert_true(info.tcp && info.pure && info.v6);
	g_assert_cmpuint(info.l4, ==, 54);

	/* TCP, but never merged: each of these the sender must see. */
	const struct {
		const char *what;
		Seg s;
	} keep[] = {
		{ "payload", { .sport = 1, .dport = 2, .ack = 5, .flags = 0x10, .payload = 1 } },
		{ "SACK", { .sport = 1, .dport = 2, .ack = 5, .flags = 0x10, .ts = TRUE, .sack = TRUE } },
		{ "PSH", { .sport = 1, .dport = 2, .ack = 5, .flags = 0x18 } },
		{ "FIN", { .sport = 1, .dport = 2, .ack = 5, .flags = 0x11 } },
		{ "ECE", { .sport = 1, .dport = 2, .ack = 5, .flags = 0x50 } },
		{ "SYN-ACK", { .sport = 1, .dport = 2, .ack = 5, .flags = 0x12 } },
		{ "RST", { .sport = 1, .dport = 2, .ack = 5, .flags = 0x14 } },
	};
	for (gsize i = 0; i < G_N_ELEMENTS(keep); i++) {
		len = build(b, &keep[i].s);
		g_assert_true(ncm_ack_classify(b, len, &info));
		if (info.pure)
			g_error("%s classified as a mergeable ACK", keep[i].what);
		g_assert_true(info.tcp);
	}
	/* IPv4 options are stepped over: still a pure ACK, its TCP header at 38. */
	len = build(b, &(Seg){ .sport = 1, .dport = 2, .ack = 5, .flags = 0x10, .ihl_words = 6 });
	g_assert_true(ncm_ack_classify(b, len, &info));
	g_assert_true(info.pure);
	g_assert_cmpuint(info.l4, ==, 38);

	/* Not TCP as far as merging goes. */
	Seg frag = ack_seg(5);
	frag.frag = 0x2000; /* MF */
	len = build(b, &frag);
	g_assert_false(ncm_ack_classify(b, len, &info));
	g_assert_false(info.tcp);
	frag.frag = 0x0001; /* offset 8 */
	len = build(b, &frag);
	g_assert_false(ncm_ack_classify(b, len, &info));
	Seg ext = ack_seg(5);
	ext.v6 = TRUE;
	len = build(b, &ext);
	b[14 + 6] = 0; /* next header: hop-by-hop options */
	g_assert_false(ncm_ack_classify(b, len, &info));
	len = build(b, &s);
	b[12] = 0x08, b[13] = 0x06; /* ARP */
	g_assert_false(ncm_ack_classify(b, len, &info));

	/* Every truncation of valid frames: no read past the end (ASan), and
	 * never TCP once the headers no longer fit. */
	for (int v6 = 0; v6 < 2; v6++) {
		Seg t = ack_seg(7);

		t.v6 = v6;
		len = build(b, &t);
		for (gsize cut = 0; cut < len; cut++) {
			guint8 *copy = g_memdup2(b, cut ? cut : 1);

			g_assert_false(ncm_ack_classify(copy, cut, &info));
			g_free(copy);
		}
	}
}

/* An open NTB: frames at fixed offsets, tracked as the packer adds them. */
typedef struct {
	guint8 buf[4096];
	gsize tail;
	NcmAckTable table;
	guint merged;
} Ntb;

/* What ncm-usb-tx.c does with one frame: merge, or add and track. Returns the offset or -1 when merged. */
/* Where the next datagram goes: 4-byte aligned, as the packer places them. */
static gssize
next_off(const Ntb *n)
{
	return (gssize)((n->tail + 3) & ~(gsize)3);
}

static gssize
send_seg(Ntb *n, const Seg *s)
{
	guint8 f[2048];
	gsize len = build(f, s);
	NcmAckInfo info;
	gssize off;

	ncm_ack_classify(f, len, &info);
	if (ncm_ack_merge(&n->table, n->buf, n->tail, f, len, &info)) {
		n->merged++;
		return -1;
	}
	off = next_off(n);
	memcpy(n->buf + off, f, len);
	n->tail = (gsize)off + len;
	ncm_ack_track(&n->table, n->buf, n->tail, (guint32)off, len, &info);
	return off;
}

static guint32
ack_at(const Ntb *n, gssize off, gboolean v6)
{
	const guint8 *p = n->buf + off + (v6 ? 54 : 34) + 8;

	return (guint32)p[0] << 24 | (guint32)p[1] << 16 | (guint32)p[2] << 8 | p[3];
}

static void
test_merge(void)
{
	Ntb n = { 0 };
	gssize first = send_seg(&n, &(Seg){ .sport = 5201, .dport = 40000, .ack = 1000, .flags = 0x10, .ts = TRUE });

	g_assert_cmpint(first, >=, 0);
	/* A newer cumulative ACK takes the older one's place, bytes and all. */
	Seg newer = ack_seg(3896);
	g_assert_cmpint(send_seg(&n, &newer), ==, -1);
	g_assert_cmpuint(ack_at(&n, first, FALSE), ==, 3896);
	guint8 f[2048];
	gsize len = build(f, &newer);
	g_assert_cmpmem(n.buf + first, len, f, len);

	/* A duplicate ACK (same number) is added: fast retransmit counts them. */
	g_assert_cmpint(send_seg(&n, &newer), >=, 0);
	/* So is a window update with nothing new acknowledged. */
	Seg win = ack_seg(3896);
	win.window = 4000;
	g_assert_cmpint(send_seg(&n, &win), >=, 0);
	/* An older ACK is not merged either. */
	g_assert_cmpint(send_seg(&n, &(Seg){ .sport = 5201, .dport = 40000, .ack = 2000, .flags = 0x10, .ts = TRUE }), >=, 0);
	g_assert_cmpuint(n.merged, ==, 1);
}

static void
test_flows(void)
{
	Ntb n = { 0 };
	Seg a = ack_seg(1000), b = ack_seg(1000);

	b.dport = 40001; /* another connection */
	gssize oa = send_seg(&n, &a), ob = send_seg(&n, &b);
	g_assert_cmpint(oa, >=, 0);
	g_assert_cmpint(ob, >, oa);
	b.ack = 9000;
	g_assert_cmpint(send_seg(&n, &b), ==, -1);
	g_assert_cmpuint(ack_at(&n, oa, FALSE), ==, 1000);
	g_assert_cmpuint(ack_at(&n, ob, FALSE), ==, 9000);

	/* Another segment of flow a joins after a's ACK: a newer ACK must not
	 * jump over it into the earlier place. */
	Seg data = { .sport = 5201, .dport = 40000, .seq = 77, .ack = 1500, .flags = 0x18, .payload = 100 };
	g_assert_cmpint(send_seg(&n, &data), >=, 0);
	a.ack = 2000;
	gssize again = send_seg(&n, &a);
	g_assert_cmpint(again, >, ob);
	g_assert_cmpuint(ack_at(&n, oa, FALSE), ==, 1000);
	/* ... and the new one is its flow's entry from there on. */
	a.ack = 2500;
	g_assert_cmpint(send_seg(&n, &a), ==, -1);
	g_assert_cmpuint(ack_at(&n, again, FALSE), ==, 2500);

	/* IPv6 and IPv4 with equal ports are different flows. */
	Seg v6 = ack_seg(100);
	v6.v6 = TRUE;
	gssize o6 = send_seg(&n, &v6);
	g_assert_cmpint(o6, >=, 0);
	v6.ack = 200;
	g_assert_cmpint(send_seg(&n, &v6), ==, -1);
	g_assert_cmpuint(ack_at(&n, o6, TRUE), ==, 200);

	/* A different length (timestamps off) is added, not overwritten. */
	Seg short_ack = ack_seg(300);
	short_ack.v6 = TRUE;
	short_ack.ts = FALSE;
	g_assert_cmpint(send_seg(&n, &short_ack), >=, 0);
}

static void
test_wrap_and_reset(void)
{
	Ntb n = { 0 };
	gssize o = send_seg(&n, &(Seg){ .sport = 1, .dport = 2, .ack = 0xfffffff0u, .flags = 0x10 });

	/* Sequence space wraps: 0x10 is after 0xfffffff0. */
	g_assert_cmpint(send_seg(&n, &(Seg){ .sport = 1, .dport = 2, .ack = 0x10, .flags = 0x10 }), ==, -1);
	g_assert_cmpuint(ack_at(&n, o, FALSE), ==, 0x10);
	/* A new NTB forgets the old one's frames. */
	ncm_ack_reset(&n.table);
	g_assert_cmpint(send_seg(&n, &(Seg){ .sport = 1, .dport = 2, .ack = 0x20, .flags = 0x10 }), >=, 0);

	/* More flows than the table holds: the oldest is forgotten, not overwritten wrongly. */
	Ntb m = { 0 };
	gssize offs[NCM_ACK_TRACK + 1];
	for (guint i = 0; i <= NCM_ACK_TRACK; i++)
		offs[i] = send_seg(&m, &(Seg){ .sport = 1, .dport = (guint16)(100 + i), .ack = 10, .flags = 0x10 });
	g_assert_cmpint(send_seg(&m, &(Seg){ .sport = 1, .dport = 101, .ack = 20, .flags = 0x10 }), ==, -1);
	g_assert_cmpint(send_seg(&m, &(Seg){ .sport = 1, .dport = 100, .ack = 20, .flags = 0x10 }), >=, 0);
	g_assert_cmpuint(ack_at(&m, offs[1], FALSE), ==, 20);
	g_assert_cmpuint(ack_at(&m, offs[0], FALSE), ==, 10);
}

/*
 * A segment that reaches the NTB in pieces (ncm-tun's TSO segments: headers,
 * then payload) is tracked from its copy: a newer ACK of its flow must not
 * merge into the place before it.
 */
/* @s copied in as sendv copies a frame in pieces (headers, then the rest from
 * byte @cut), without a merge attempt; returns its offset. */
static gssize
send_pieces(Ntb *n, const Seg *s, gsize cut)
{
	guint8 f[2048];
	gsize len = build(f, s);
	gssize off = next_off(n);

	memcpy(n->buf + off, f, cut);
	memcpy(n->buf + off + cut, f + cut, len - cut);
	n->tail = (gsize)off + len;
	ncm_ack_track_copied(&n->table, n->buf, n->tail, (guint32)off, len);
	return off;
}

static void
test_pieces(void)
{
	Ntb n = { 0 };
	Seg a = ack_seg(1000);
	Seg data = { .sport = 5201, .dport = 40000, .seq = 77, .ack = 1500, .flags = 0x18, .ts = TRUE,
		     .payload = 100 };
	gssize oa = send_seg(&n, &a), od = send_pieces(&n, &data, 60);

	g_assert_cmpint(oa, >=, 0);
	a.ack = 2000;
	gssize again = send_seg(&n, &a);
	g_assert_cmpint(again, >, od);
	g_assert_cmpuint(ack_at(&n, oa, FALSE), ==, 1000);
	/* A pure ACK in pieces becomes its flow's entry, as a whole one would. */
	Ntb m = { 0 };
	Seg b = ack_seg(3000);
	g_assert_cmpint(send_pieces(&m, &b, 60), ==, 0);
	b.ack = 4000;
	g_assert_cmpint(send_seg(&m, &b), ==, -1);
	g_assert_cmpuint(ack_at(&m, 0, FALSE), ==, 4000);
}

/* One received NTB: the frames of @segs in order; returns the skip pattern as a string of 0/1. */
static char *
thin(const Seg *segs, guint n)
{
	guint8 (*bufs)[2048] = g_malloc(n * sizeof(*bufs));
	const guint8 **frames = g_new(const guint8 *, n);
	gsize *lens = g_new(gsize, n);
	bool *skip = g_new(bool, n);
	GString *s = g_string_new(NULL);
	guint count = 0;

	for (guint i = 0; i < n; i++) {
		lens[i] = build(bufs[i], &segs[i]);
		frames[i] = bufs[i];
	}
	guint thinned = ncm_ack_thin(frames, lens, n, skip);
	for (guint i = 0; i < n; i++) {
		g_string_append_c(s, skip[i] ? '1' : '0');
		count += skip[i];
	}
	g_assert_cmpuint(thinned, ==, count);
	g_free(bufs);
	g_free(frames);
	g_free(lens);
	g_free(skip);
	return g_string_free(s, FALSE);
}

#define ACK(a) { .sport = 5201, .dport = 40000, .ack = (a), .flags = 0x10, .ts = TRUE }
#define ACK_TO(p, a) { .sport = 5201, .dport = (p), .ack = (a), .flags = 0x10, .ts = TRUE }

static void
check_thin(const Seg *segs, guint n, const char *want)
{
	g_autofree char *got = thin(segs, n);

	g_assert_cmpstr(got, ==, want);
}

static void
test_thin(void)
{
	/* The last ACK of a run says what the others did. */
	check_thin((Seg[]){ ACK(100), ACK(200), ACK(300) }, 3, "110");
	/* Duplicates and window updates stay: fast retransmit counts them. */
	check_thin((Seg[]){ ACK(100), ACK(200), ACK(200), ACK(200) }, 4, "1000");
	Seg w1 = ACK(300), w2 = ACK(300);
	w2.window = 9000;
	check_thin((Seg[]){ w1, w2 }, 2, "00");
	/* Flows apart. */
	check_thin((Seg[]){ ACK_TO(1, 10), ACK_TO(2, 10), ACK_TO(1, 20), ACK_TO(2, 20) }, 4, "1100");
	/* Not across another segment of the flow, nor SACK. */
	Seg data = { .sport = 5201, .dport = 40000, .ack = 150, .flags = 0x18, .payload = 10 };
	check_thin((Seg[]){ ACK(100), data, ACK(200) }, 3, "000");
	Seg sack = ACK(150);
	sack.sack = TRUE;
	check_thin((Seg[]){ ACK(100), sack, ACK(200) }, 3, "000");
	/* Older than the later one after wrap: 0xfffffff0 before 0x10. */
	check_thin((Seg[]){ ACK(0xfffffff0u), ACK(0x10) }, 2, "10");
	/* A later, older ACK (reordered) supersedes nothing. */
	check_thin((Seg[]){ ACK(300), ACK(200) }, 2, "00");
	g_autofree char *one = thin((Seg[]){ ACK(1) }, 1);
	g_assert_cmpstr(one, ==, "0");
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/ack/classify", test_classify);
	g_test_add_func("/ack/merge", test_merge);
	g_test_add_func("/ack/flows", test_flows);
	g_test_add_func("/ack/wrap-and-reset", test_wrap_and_reset);
	g_test_add_func("/ack/thin", test_thin);
	g_test_add_func("/ack/pieces", test_pieces);
	return g_test_run();
}
