/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-rx.c: the receive path before lwIP: the copy's TCP checksum check against lwIP's sums, and segment merging. */
#include <string.h>
#include <glib.h>

#include "lwip/inet_chksum.h"
#include "lwip/ip_addr.h"
#include "lwip/pbuf.h"

#include "ncm-lwip-gro.h"
#include "ncm-lwip-rxsum.h"

#define FRAME_MAX 1600

typedef struct {
	guint8 f[FRAME_MAX];
	gsize len;      /* frame bytes */
	gsize l3, l4;   /* IP and TCP header offsets */
	gsize tcp_len;  /* TCP header and data, as the IP header says */
	gboolean v6;
} Frame;

static void
put16(guint8 *p, guint16 v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

/* The TCP checksum lwIP would compute for the frame's segment. */
static guint16
lwip_sum(Frame *fr)
{
	struct pbuf p = {0};

	p.payload = fr->f + fr->l4;
	p.len = p.tot_len = (u16_t)fr->tcp_len;
	p.type_internal = PBUF_REF;
	p.ref = 1;
	if (fr->v6) {
		ip6_addr_t src, dst;

		memcpy(src.addr, fr->f + fr->l3 + 8, 16);
		memcpy(dst.addr, fr->f + fr->l3 + 24, 16);
		ip6_addr_clear_zone(&src);
		ip6_addr_clear_zone(&dst);
		return ip6_chksum_pseudo(&p, 6, (u16_t)fr->tcp_len, &src, &dst);
	} else {
		ip4_addr_t src, dst;

		memcpy(&src.addr, fr->f + fr->l3 + 12, 4);
		memcpy(&dst.addr, fr->f + fr->l3 + 16, 4);
		return inet_chksum_pseudo(&p, 6, (u16_t)fr->tcp_len, &src, &dst);
	}
}

/* A random TCP segment (random options, data length and pad) with the
 * checksum lwIP computes. */
static void
make(Frame *fr, GRand *r, gboolean v6)
{
	gsize ip_opt = v6 ? 0 : 4 * (gsize)g_rand_int_range(r, 0, 11);
	gsize tcp_opt = 4 * (gsize)g_rand_int_range(r, 0, 11);
	gsize ip_hlen = v6 ? 40 : 20 + ip_opt;
	gsize data = (gsize)g_rand_int_range(r, 0, 1400 + 1);
	gsize pad = (gsize)g_rand_int_range(r, 0, 2) ? (gsize)g_rand_int_range(r, 1, 40) : 0;
	guint16 sum;

	for (gsize i = 0; i < FRAME_MAX; i++)
		fr->f[i] = (guint8)g_rand_int(r);
	fr->v6 = v6;
	fr->l3 = 14;
	fr->l4 = fr->l3 + ip_hlen;
	fr->tcp_len = 20 + tcp_opt + data;
	fr->len = fr->l4 + fr->tcp_len + pad;
	put16(fr->f + 12, v6 ? 0x86DD : 0x0800);
	if (v6) {
		fr->f[fr->l3] = 0x60;
		put16(fr->f + fr->l3 + 4, (guint16)fr->tcp_len);
		fr->f[fr->l3 + 6] = 6;
	} else {
		fr->f[fr->l3] = (guint8)(0x40 | ip_hlen / 4);
		put16(fr->f + fr->l3 + 2, (guint16)(ip_hlen + fr->tcp_len));
		/* DF may be set; MF and the offset not */
		put16(fr->f + fr->l3 + 6, g_rand_boolean(r) ? 0x4000 : 0);
		fr->f[fr->l3 + 9] = 6;
	}
	fr->f[fr->l4 + 12] = (guint8)((20 + tcp_opt) / 4 << 4);
	put16(fr->f + fr->l4 + 16, 0);
	sum = lwip_sum(fr);
	/* lwIP returns the field in network order, as stored */
	memcpy(fr->f + fr->l4 + 16, &sum, 2);
}

static gboolean
check(const Frame *fr)
{
	guint8 dst[FRAME_MAX];
	gboolean ok;

	memset(dst, 0xA5, sizeof(dst));
	ok = nlw_rx_copy_check(dst, fr->f, fr->len);
	/* The copy is exact and stops at len, whatever the verdict. */
	g_assert_cmpmem(dst, fr->len, fr->f, fr->len);
	for (gsize i = fr->len; i < FRAME_MAX; i++)
		g_assert_cmpuint(dst[i], ==, 0xA5);
	return ok;
}

/* Segments lwIP sums to a valid checksum pass; any single changed byte
 * in the pseudo-header's addresses, the TCP header or the data fails. */
static void
test_random(void)
{
	GRand *r = g_rand_new_with_seed(15);

	for (int i = 0; i < 4000; i++) {
		Frame fr;
		gsize at, lo, hi;
		guint8 mask;

		make(&fr, r, i % 2);
		g_assert_true(check(&fr));
		lo = fr.v6 ? fr.l3 + 8 : fr.l3 + 12;
		hi = fr.l4 + fr.tcp_len;
		/* the addresses, or anything in the segment */
		do
			at = (gsize)g_rand_int_range(r, (gint32)lo, (gint32)hi);
		while (at >= (fr.v6 ? fr.l3 + 40 : fr.l3 + 20) && at < fr.l4);
		mask = (guint8)g_rand_int_range(r, 1, 256);
		fr.f[at] ^= mask;
		g_assert_false(check(&fr));
		fr.f[at] ^= mask;
		/* the Ethernet pad is not part of the segment */
		if (fr.len > hi) {
			fr.f[fr.len - 1] ^= 0xFF;
			g_assert_true(check(&fr));
		}
	}
	g_rand_free(r);
}

/* Frames the check must leave to lwIP even with a right checksum. */
static void
test_refused(void)
{
	GRand *r = g_rand_new_with_seed(16);
	Frame fr, v4, v6;

	make(&v4, r, FALSE);
	make(&v6, r, TRUE);

	/* IPv4 fragments: MF, or an offset */
	fr = v4;
	put16(fr.f + fr.l3 + 6, 0x2000);
	g_assert_false(check(&fr));
	fr = v4;
	put16(fr.f + fr.l3 + 6, 0x0001);
	g_assert_false(check(&fr));
	/* not TCP */
	fr = v4;
	fr.f[fr.l3 + 9] = 17;
	g_assert_false(check(&fr));
	fr = v6;
	fr.f[fr.l3 + 6] = 0; /* hop-by-hop options first */
	g_assert_false(check(&fr));
	/* another EtherType (VLAN), another IP version */
	fr = v4;
	put16(fr.f + 12, 0x8100);
	g_assert_false(check(&fr));
	fr = v4;
	fr.f[fr.l3] = (guint8)(0x60 | (fr.f[fr.l3] & 0x0F));
	g_assert_false(check(&fr));
	/* IP lengths past the frame, or too short for a TCP header */
	fr = v4;
	fr.len = fr.l4 + fr.tcp_len - 1;
	g_assert_false(check(&fr));
	fr = v6;
	fr.len = fr.l4 + fr.tcp_len - 1;
	g_assert_false(check(&fr));
	fr = v4;
	put16(fr.f + fr.l3 + 2, (guint16)(fr.l4 - fr.l3 + 19));
	g_assert_false(check(&fr));
	fr = v6;
	put16(fr.f + fr.l3 + 4, 0);
	g_assert_false(check(&fr));
	/* IHL under 5 */
	fr = v4;
	fr.f[fr.l3] = 0x44;
	g_assert_false(check(&fr));
	/* every truncation of a valid frame short of its IP length */
	for (gsize len = 0; len < v4.l4 + v4.tcp_len; len++) {
		fr = v4;
		fr.len = len;
		g_assert_false(check(&fr));
	}
	g_rand_free(r);
}


/* ---- merging ---------------------------------------------------------------- */

#define FLOW_SEQ 0xFFFFF000u /* wraps within a run */

/* In-order data segment @k of one flow: @data bytes of pattern, flags ACK
 * (plus @extra_flags), checksummed, in a fresh pbuf. */
static struct pbuf *
segment(gboolean v6, guint32 seq, gsize data, guint8 extra_flags)
{
	Frame fr = {0};
	gsize ip_hlen = v6 ? 40 : 20;
	struct pbuf *p;
	guint16 sum;

	fr.v6 = v6;
	fr.l3 = 14;
	fr.l4 = 14 + ip_hlen;
	fr.tcp_len = 20 + 12 + data; /* 12 bytes of options (NOP NOP SACK-ish) */
	fr.len = fr.l4 + fr.tcp_len;
	memcpy(fr.f, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02", 12);
	put16(fr.f + 12, v6 ? 0x86DD : 0x0800);
	if (v6) {
		fr.f[14] = 0x60;
		put16(fr.f + 18, (guint16)fr.tcp_len);
		fr.f[20] = 6;
		fr.f[21] = 64;
		fr.f[22] = 0xFE;
		fr.f[23] = 0x80;
		fr.f[37] = 1;
		fr.f[38] = 0xFE;
		fr.f[39] = 0x80;
		fr.f[53] = 2;
	} else {
		fr.f[14] = 0x45;
		put16(fr.f + 16, (guint16)(20 + fr.tcp_len));
		put16(fr.f + 18, (guint16)seq); /* an ID that changes */
		put16(fr.f + 20, 0x4000);
		fr.f[22] = 64;
		fr.f[23] = 6;
		memcpy(fr.f + 26, "\xC0\xA8\x4D\x02\xC0\xA8\x4D\x03", 8);
		sum = inet_chksum(fr.f + 14, 20);
		memcpy(fr.f + 24, &sum, 2);
	}
	put16(fr.f + fr.l4, 5288);
	put16(fr.f + fr.l4 + 2, 40000);
	fr.f[fr.l4 + 4] = (guint8)(seq >> 24);
	fr.f[fr.l4 + 5] = (guint8)(seq >> 16);
	fr.f[fr.l4 + 6] = (guint8)(seq >> 8);
	fr.f[fr.l4 + 7] = (guint8)seq;
	memcpy(fr.f + fr.l4 + 8, "\x11\x22\x33\x44", 4);
	fr.f[fr.l4 + 12] = 8 << 4;
	fr.f[fr.l4 + 13] = (guint8)(0x10 | extra_flags);
	put16(fr.f + fr.l4 + 14, 4321);
	memcpy(fr.f + fr.l4 + 20, "\x01\x01\x08\x0a\x00\x00\x00\x01\x00\x00\x00\x02", 12);
	for (gsize i = 0; i < data; i++)
		fr.f[fr.l4 + 32 + i] = (guint8)(seq + i);
	sum = lwip_sum(&fr);
	memcpy(fr.f + fr.l4 + 16, &sum, 2);
	p = pbuf_alloc(PBUF_RAW, (u16_t)fr.len, PBUF_RAM);
	g_assert_nonnull(p);
	g_assert_true(nlw_rx_copy_check(p->payload, fr.f, fr.len));
	return p;
}

static guint8 *
bytes(struct pbuf *p)
{
	return p->payload;
}

/* A merged frame: its IP lengths and header checksum are right, its data
 * is the flow's bytes from @seq on, @data of them. */
static void
assert_merged(struct pbuf *p, gboolean v6, guint32 seq, gsize data)
{
	gsize hlen = 14 + (v6 ? 40 : 20) + 32;
	guint8 *f = bytes(p);
	guint8 *flat = g_malloc(p->tot_len);

	g_assert_cmpuint(p->tot_len, ==, hlen + data);
	g_assert_cmpuint(pbuf_copy_partial(p, flat, p->tot_len, 0), ==, p->tot_len);
	if (v6) {
		g_assert_cmpuint((guint)(f[18] << 8 | f[19]), ==, p->tot_len - 54);
	} else {
		g_assert_cmpuint((guint)(f[16] << 8 | f[17]), ==, p->tot_len - 14);
		g_assert_cmpuint(inet_chksum(f + 14, 20), ==, 0);
	}
	g_assert_cmpuint((guint32)f[hlen - 28] << 24 | (guint32)f[hlen - 27] << 16 |
	                 (guint32)f[hlen - 26] << 8 | f[hlen - 25], ==, seq);
	for (gsize i = 0; i < data; i++)
		g_assert_cmpuint(flat[hlen + i], ==, (guint8)(seq + i));
	g_free(flat);
}

static void
free_batch(struct pbuf **b, guint n)
{
	for (guint i = 0; i < n; i++)
		pbuf_free(b[i]);
}

/* A run of in-order segments becomes one frame, for both families, with
 * the run's last PSH; the 16-bit pbuf length splits a long run. */
static void
test_gro_run(void)
{
	for (int v6 = 0; v6 <= 1; v6++) {
		struct pbuf *b[64];
		gboolean summed[64];
		guint32 seq = FLOW_SEQ;
		guint64 merged = 0;
		guint n;

		for (guint i = 0; i < 10; i++) {
			gsize len = i == 9 ? 7 : 1448;

			b[i] = segment(v6, seq, len, i == 9 ? 0x08 : 0);
			summed[i] = TRUE;
			seq += (guint32)len;
		}
		n = nlw_gro_merge(b, summed, 10, &merged);
		g_assert_cmpuint(n, ==, 1);
		g_assert_cmpuint(merged, ==, 9);
		g_assert_true(summed[0]);
		assert_merged(b[0], v6, FLOW_SEQ, 9 * 1448 + 7);
		g_assert_cmpuint(bytes(b[0])[14 + (v6 ? 40 : 20) + 13], ==, 0x18);
		free_batch(b, n);

		/* 60 full segments: no frame over 0xFFFF bytes, nothing lost */
		seq = FLOW_SEQ;
		merged = 0;
		for (guint i = 0; i < 60; i++, seq += 1448) {
			b[i] = segment(v6, seq, 1448, 0);
			summed[i] = TRUE;
		}
		n = nlw_gro_merge(b, summed, 60, &merged);
		g_assert_cmpuint(n, ==, 2);
		g_assert_cmpuint(merged, ==, 58);
		seq = FLOW_SEQ;
		for (guint i = 0; i < n; i++) {
			gsize data = b[i]->tot_len - (14 + (v6 ? 40 : 20) + 32);

			g_assert_cmpuint(b[i]->tot_len, <=, 0xFFFF);
			assert_merged(b[i], v6, seq, data);
			seq += (guint32)data;
		}
		g_assert_cmpuint(seq - FLOW_SEQ, ==, 60 * 1448);
		free_batch(b, n);
	}
}

/* Every difference that must end a run does: frames stay as they were. */
static void
test_gro_breaks(void)
{
	enum { GAP, ACKNO, WINDOW, PORT, OPTION, SYN, FIN, URG, UNSUMMED, NO_DATA,
	       ADDR, TTL, PAD, N_BREAKS };

	for (int k = 0; k < N_BREAKS; k++) {
		struct pbuf *b[2];
		gboolean summed[2] = {TRUE, TRUE};
		guint64 merged = 0;
		gboolean v6 = k % 2;
		gsize l4 = 14 + (v6 ? 40 : 20);
		guint8 *g;
		guint n;

		b[0] = segment(v6, FLOW_SEQ, 1000, 0);
		b[1] = segment(v6, FLOW_SEQ + (k == GAP ? 1001 : 1000), k == NO_DATA ? 0 : 1000,
			       k == SYN ? 0x02 : k == FIN ? 0x01 : k == URG ? 0x20 : 0);
		g = bytes(b[1]);
		switch (k) {
		case ACKNO: g[l4 + 11] ^= 1; break;
		case WINDOW: g[l4 + 15] ^= 1; break;
		case PORT: g[l4 + 1] ^= 1; break;
		case OPTION: g[l4 + 31] ^= 1; break;
		case UNSUMMED: summed[1] = FALSE; break;
		case ADDR: g[l4 - 1] ^= 1; break;
		case TTL: g[v6 ? 21 : 22] ^= 1; break;
		case PAD:
			/* a frame longer than its IP length */
			pbuf_realloc(b[1], (u16_t)(b[1]->len - 1));
			if (v6)
				put16(g + 18, (guint16)((g[18] << 8 | g[19]) - 2));
			else
				put16(g + 16, (guint16)((g[16] << 8 | g[17]) - 2));
			break;
		default: break;
		}
		n = nlw_gro_merge(b, summed, 2, &merged);
		if (n != 2)
			g_error("break %d merged", k);
		g_assert_cmpuint(merged, ==, 0);
		g_assert_cmpuint(b[0]->tot_len, ==, b[0]->len);
		free_batch(b, n);
	}
}

/* Runs of two flows interleaved stay apart; a PSH does not end a run (the
 * batch goes to lwIP at once: nothing after it waits) and the merged frame
 * carries it, whether the first or a later segment had it. */
static void
test_gro_mixed(void)
{
	struct pbuf *b[6];
	gboolean summed[6] = {TRUE, TRUE, TRUE, TRUE, TRUE, TRUE};
	guint64 merged = 0;
	guint n;

	b[0] = segment(FALSE, FLOW_SEQ, 100, 0);
	b[1] = segment(FALSE, FLOW_SEQ + 100, 100, 0x08);
	b[2] = segment(FALSE, FLOW_SEQ + 200, 100, 0);
	b[3] = segment(TRUE, FLOW_SEQ, 100, 0);
	b[4] = segment(FALSE, FLOW_SEQ + 300, 100, 0x08);
	b[5] = segment(FALSE, FLOW_SEQ + 400, 100, 0);
	n = nlw_gro_merge(b, summed, 6, &merged);
	g_assert_cmpuint(n, ==, 3);
	g_assert_cmpuint(merged, ==, 3);
	assert_merged(b[0], FALSE, FLOW_SEQ, 300);
	g_assert_cmpuint(bytes(b[0])[14 + 20 + 13], ==, 0x18);
	assert_merged(b[1], TRUE, FLOW_SEQ, 100);
	g_assert_cmpuint(bytes(b[1])[14 + 40 + 13], ==, 0x10);
	assert_merged(b[2], FALSE, FLOW_SEQ + 300, 200);
	g_assert_cmpuint(bytes(b[2])[14 + 20 + 13], ==, 0x18);
	free_batch(b, n);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lwip/rxsum/random", test_random);
	g_test_add_func("/lwip/rxsum/refused", test_refused);
	g_test_add_func("/lwip/gro/run", test_gro_run);
	g_test_add_func("/lwip/gro/breaks", test_gro_breaks);
	g_test_add_func("/lwip/gro/mixed", test_gro_mixed);
	return g_test_run();
}
