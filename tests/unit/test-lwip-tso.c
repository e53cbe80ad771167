/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-tso.c: lwIP's large segments cut to the link's frames, its SYNs' MSS, IPv4 fragments. */
#include <string.h>

#include <glib.h>

#include "ncm-lwip-tso.h"

#define ETH 14
#define MTU 1500

static const guint8 mac_hdr[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};

static guint
rd16(const guint8 *p)
{
	return (guint)p[0] << 8 | p[1];
}

static guint32
rd32(const guint8 *p)
{
	return (guint32)rd16(p) << 16 | rd16(p + 2);
}

/* An IPv4 packet of @proto behind an Ethernet header, @l4 (@l4_len bytes) its payload;
 * header checksum right, DF as asked. Returns the frame's length. */
static gsize
ipv4(guint8 *f, guint proto, const guint8 *l4, gsize l4_len, gboolean df)
{
	guint8 *ip = f + ETH;

	memcpy(f, mac_hdr, 12);
	ncm_gso_put_be16(f + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ncm_gso_put_be16(ip + 2, (guint)(20 + l4_len));
	ncm_gso_put_be16(ip + 4, 0x1234);
	ncm_gso_put_be16(ip + 6, df ? 0x4000 : 0);
	ip[8] = 64;
	ip[9] = (guint8)proto;
	memcpy(ip + 12, (guint8[]){192, 168, 100, 1, 192, 168, 100, 2}, 8);
	ncm_gso_put_be16(ip + 10, (guint16)~ncm_gso_csum_fold(ncm_gso_csum_add(0, ip, 20)));
	memcpy(ip + 20, l4, l4_len);
	return ETH + 20 + l4_len;
}

/* An IPv6 packet of @nh behind an Ethernet header, @l4 its payload. */
static gsize
ipv6(guint8 *f, guint nh, const guint8 *l4, gsize l4_len)
{
	guint8 *ip = f + ETH;

	memcpy(f, mac_hdr, 12);
	ncm_gso_put_be16(f + 12, 0x86dd);
	memset(ip, 0, 40);
	ip[0] = 0x60;
	ncm_gso_put_be16(ip + 4, (guint)l4_len);
	ip[6] = (guint8)nh;
	ip[7] = 64;
	ip[8] = ip[24] = 0xfe;
	ip[9] = ip[25] = 0x80;
	ip[23] = 1;
	ip[39] = 2;
	memcpy(ip + 40, l4, l4_len);
	return ETH + 40 + l4_len;
}

/* A TCP header with @opts, then @data; checksum left 0 (lwIP's are off). */
static gsize
tcp(guint8 *t, guint8 flags, const guint8 *opts, gsize opts_len, const guint8 *data,
    gsize data_len)
{
	memset(t, 0, 20);
	ncm_gso_put_be16(t, 40000);
	ncm_gso_put_be16(t + 2, 5201);
	t[4] = 0x10; /* seq 0x10000000 */
	t[11] = 1;   /* ack 1 */
	t[12] = (guint8)(((20 + opts_len) / 4) << 4);
	t[13] = flags;
	ncm_gso_put_be16(t + 14, 65535);
	memcpy(t + 20, opts, opts_len);
	memcpy(t + 20 + opts_len, data, data_len);
	return 20 + opts_len + data_len;
}

static void
tcp_fill_sum(guint8 *f, gsize len)
{
	NcmGsoTcp t;

	g_assert_true(ncm_gso_parse_tcp(ETH, f, len, &t));
	ncm_gso_tcp_fill_csum(&t, f, len);
}

typedef struct {
	guint8 frames[64][ETH + MTU];
	gsize lens[64];
	guint n;
	gint refuse_at; /* refuse the piece of this index once; -1: never */
} Pieces;

static gboolean
collect(gpointer user_data, const guint8 *hdr, gsize hdr_len, const guint8 *payload,
	gsize payload_len)
{
	Pieces *k = user_data;

	if (k->refuse_at == (gint)k->n) {
		k->refuse_at = -1;
		return FALSE;
	}
	g_assert_cmpuint(k->n, <, G_N_ELEMENTS(k->frames));
	g_assert_cmpuint(hdr_len + payload_len, <=, ETH + MTU);
	memcpy(k->frames[k->n], hdr, hdr_len);
	memcpy(k->frames[k->n] + hdr_len, payload, payload_len);
	k->lens[k->n++] = hdr_len + payload_len;
	return TRUE;
}

static guint8 *
pattern(gsize len)
{
	guint8 *d = g_malloc(len);

	for (gsize i = 0; i < len; i++)
		d[i] = (guint8)(i * 7 + i / 251);
	return d;
}

/* lwIP's 8-segment TCP packet leaves as 8 full frames: sequence, ID, flags, sums, data. */
static void
test_cut_tcp(void)
{
	gsize data_len = 8 * 1460, len, next = 0, off = 0;
	guint8 *data = pattern(data_len), *seg = g_malloc(20 + data_len);
	guint8 *f = g_malloc(ETH + 20 + 20 + data_len);
	guint8 scratch[NLW_TSO_HDR_MAX];
	Pieces *k = g_new0(Pieces, 1);

	k->refuse_at = -1;
	len = ipv4(f, 6, seg, tcp(seg, 0x18 | 0x01, NULL, 0, data, data_len), FALSE);
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==, NLW_TSO_SENT);
	g_assert_cmpuint(k->n, ==, 8);
	g_assert_cmpuint(next, ==, 8);
	for (guint i = 0; i < k->n; i++) {
		const guint8 *p = k->frames[i], *ip = p + ETH, *t = ip + 20;
		NcmGsoTcp pt;

		g_assert_cmpuint(k->lens[i], ==, ETH + MTU);
		g_assert_true(ncm_gso_parse_tcp(ETH, p, k->lens[i], &pt));
		g_assert_true(ncm_gso_tcp_csum_ok(&pt, p, k->lens[i]));
		g_assert_cmpuint(ncm_gso_csum_fold(ncm_gso_csum_add(0, ip, 20)), ==, 0xffff);
		g_assert_cmpuint(rd16(ip + 4), ==, 0x1234 + i);
		g_assert_cmpuint(rd32(t + 4), ==, 0x10000000u + off);
		/* PSH and FIN on the last piece only. */
		g_assert_cmpuint(t[13], ==, i == 7 ? 0x19 : 0x10);
		g_assert_cmpmem(t + 20, 1460, data + off, 1460);
		off += 1460;
	}
	g_free(k);
	g_free(f);
	g_free(seg);
	g_free(data);
}

/* A link that refuses a piece (full): the cut resumes there, nothing twice. */
static void
test_cut_resume(void)
{
	gsize data_len = 5000, len, next = 0;
	guint8 *data = pattern(data_len), *seg = g_malloc(20 + data_len);
	guint8 *f = g_malloc(ETH + 40 + data_len);
	guint8 scratch[NLW_TSO_HDR_MAX];
	Pieces *k = g_new0(Pieces, 1);

	k->refuse_at = 2;
	len = ipv4(f, 6, seg, tcp(seg, 0x10, NULL, 0, data, data_len), FALSE);
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==,
			NLW_TSO_STOPPED);
	g_assert_cmpuint(next, ==, 2);
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==, NLW_TSO_SENT);
	g_assert_cmpuint(k->n, ==, 4);
	for (guint i = 0; i < k->n; i++)
		g_assert_cmpuint(rd32(k->frames[i] + ETH + 20 + 4), ==, 0x10000000u + i * 1460);
	g_assert_cmpuint(k->lens[3], ==, ETH + 40 + 5000 - 3 * 1460);
	g_free(k);
	g_free(f);
	g_free(seg);
	g_free(data);
}

/* This side's SYN announces the link's MSS, not lwIP's large one; a frame
 * that fits is summed in place and goes as it is. */
static void
test_cut_syn(void)
{
	static const guint8 opts[] = {2, 4, 0x2d, 0xa0, 1, 3, 3, 7}; /* MSS 11680, wscale 7 */
	guint8 f[200], seg[100], scratch[NLW_TSO_HDR_MAX];
	Pieces *k = g_new0(Pieces, 1);
	gsize len, next = 0;
	NcmGsoTcp t;

	k->refuse_at = -1;
	len = ipv4(f, 6, seg, tcp(seg, 0x02, opts, sizeof(opts), NULL, 0), FALSE);
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==, NLW_TSO_ASIS);
	g_assert_cmpuint(k->n, ==, 0);
	g_assert_cmpuint(rd16(f + ETH + 20 + 22), ==, 1460);
	g_assert_true(ncm_gso_parse_tcp(ETH, f, len, &t));
	g_assert_true(ncm_gso_tcp_csum_ok(&t, f, len));
	/* A full frame's worth of data, IPv6: the same. */
	len = ipv6(f, 6, seg, tcp(seg, 0x10, NULL, 0, seg + 60, 40));
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==, NLW_TSO_ASIS);
	g_assert_true(ncm_gso_parse_tcp(ETH, f, len, &t));
	g_assert_true(ncm_gso_tcp_csum_ok(&t, f, len));
	g_free(k);
}

/* A UDP datagram over the MTU (lwIP no longer fragments below its large
 * MTU) leaves as IPv4 fragments; with DF it cannot leave. */
static void
test_cut_fragments(void)
{
	gsize data_len = 4000, len, next = 0, off = 0;
	guint8 *data = pattern(data_len), *f = g_malloc(ETH + 20 + data_len);
	guint8 scratch[NLW_TSO_HDR_MAX];
	Pieces *k = g_new0(Pieces, 1);

	k->refuse_at = -1;
	len = ipv4(f, 17, data, data_len, FALSE);
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==, NLW_TSO_SENT);
	g_assert_cmpuint(k->n, ==, 3);
	for (guint i = 0; i < k->n; i++) {
		const guint8 *ip = k->frames[i] + ETH;
		gsize piece = rd16(ip + 2) - 20;

		g_assert_cmpuint(ncm_gso_csum_fold(ncm_gso_csum_add(0, ip, 20)), ==, 0xffff);
		g_assert_cmpuint(rd16(ip + 6) & 0x1fff, ==, off / 8);
		g_assert_cmpuint(!!(rd16(ip + 6) & 0x2000), ==, i < 2);
		g_assert_cmpuint(rd16(ip + 4), ==, 0x1234);
		g_assert_cmpuint(k->lens[i], ==, ETH + 20 + piece);
		g_assert_cmpmem(ip + 20, piece, data + off, piece);
		off += piece;
	}
	g_assert_cmpuint(off, ==, data_len);

	next = 0;
	len = ipv4(f, 17, data, data_len, TRUE);
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==,
			NLW_TSO_INVALID);
	/* Within the MTU: as it is. */
	len = ipv4(f, 17, data, 1000, TRUE);
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==, NLW_TSO_ASIS);
	g_free(k);
	g_free(f);
	g_free(data);
}

/*
 * Cuts the IPv6 frame @f, @len bytes, of 4000 bytes of UDP @data: three
 * fragments of it that start at @first, with ID @id, M on all but the last,
 * which has @last_m.
 */
static void
cut_udp6(guint8 *f, gsize len, Pieces *k, const guint8 *data, gsize first, guint32 id,
	 guint last_m)
{
	guint8 scratch[NLW_TSO_HDR_MAX];
	gsize next = 0, off = 0;

	memset(k, 0, sizeof(*k));
	k->refuse_at = -1;
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 0xabcd1234, scratch, &next, collect, k), ==,
			NLW_TSO_SENT);
	g_assert_cmpuint(k->n, ==, 3);
	for (guint i = 0; i < k->n; i++) {
		const guint8 *ip = k->frames[i] + ETH;
		gsize piece = rd16(ip + 4) - 8;

		g_assert_cmpuint(ip[6], ==, 44);
		g_assert_cmpuint(ip[40], ==, 17);
		g_assert_cmpuint(rd16(ip + 42), ==, (first + off) | (i < 2 ? 1 : last_m));
		g_assert_cmpuint(rd32(ip + 44), ==, id);
		g_assert_cmpuint(k->lens[i], ==, ETH + 48 + piece);
		g_assert_cmpuint(i < 2 ? piece % 8 : 0, ==, 0);
		g_assert_cmpmem(ip + 48, piece, data + off, piece);
		off += piece;
	}
	g_assert_cmpuint(off, ==, 4000);
}

/* IPv6: TCP cut at the link's IPv6 MSS, and other packets over the MTU
 * fragmented with a Fragment header. */
static void
test_cut_ipv6(void)
{
	gsize data_len = 8 * 1440, len, next = 0;
	guint8 *data = pattern(data_len), *seg = g_malloc(20 + data_len);
	guint8 *f = g_malloc(ETH + 40 + 20 + data_len);
	guint8 scratch[NLW_TSO_HDR_MAX];
	Pieces *k = g_new0(Pieces, 1);

	k->refuse_at = -1;
	len = ipv6(f, 6, seg, tcp(seg, 0x10, NULL, 0, data, data_len));
	g_assert_cmpint(nlw_tso_cut(f, len, MTU, 7, scratch, &next, collect, k), ==, NLW_TSO_SENT);
	g_assert_cmpuint(k->n, ==, 8);
	for (guint i = 0; i < k->n; i++) {
		NcmGsoTcp t;

		g_assert_cmpuint(k->lens[i], ==, ETH + MTU);
		g_assert_true(ncm_gso_parse_tcp(ETH, k->frames[i], k->lens[i], &t));
		g_assert_true(ncm_gso_tcp_csum_ok(&t, k->frames[i], k->lens[i]));
		g_assert_cmpmem(k->frames[i] + ETH + 60, 1440, data + i * 1440, 1440);
	}

	len = ipv6(f, 17, data, 4000);
	cut_udp6(f, len, k, data, 0, 0xabcd1234, 0);

	/* lwIP's own fragment of a UDP datagram over its large MTU: cut
	 * again, keeping its ID (not the one given) and place; the last piece
	 * keeps its M. Before, it was dropped, and IPv6 UDP over ~11.5 KB
	 * never left. */
	for (guint m = 0; m < 2; m++) {
		guint8 *fp = g_malloc(8 + 4000);

		fp[0] = 17;
		fp[1] = 0;
		ncm_gso_put_be16(fp + 2, (guint16)(11520 | m));
		ncm_gso_put_be32(fp + 4, 0x5eed);
		memcpy(fp + 8, data, 4000);
		len = ipv6(f, 44, fp, 8 + 4000);
		cut_udp6(f, len, k, data, 11520, 0x5eed, m);
		g_free(fp);
	}
	g_free(k);
	g_free(f);
	g_free(seg);
	g_free(data);
}

/* A peer's SYN: its MSS is raised when it allows full frames, and nothing
 * else is touched. */
static void
test_rx_syn(void)
{
	static const guint8 mss1460[] = {1, 1, 2, 4, 0x05, 0xb4, 1, 3, 3, 7, 0, 0};
	static const guint8 mss1400[] = {2, 4, 0x05, 0x78, 1, 3, 3, 7};
	static const guint8 mss1440[] = {2, 4, 0x05, 0xa0, 1, 3, 3, 7};
	static const guint8 bad_len[] = {1, 3, 9, 7, 2, 4, 0x05, 0xb4}; /* runs past the header */
	static const guint8 no_mss[] = {1, 3, 3, 7};
	guint8 f[200], before[200], seg[100];
	gsize len;
	NcmGsoTcp t;

	len = ipv4(f, 6, seg, tcp(seg, 0x12, mss1460, sizeof(mss1460), NULL, 0), FALSE);
	tcp_fill_sum(f, len);
	g_assert_true(nlw_tso_rx_syn(f, len, MTU, 8, 11680));
	g_assert_cmpuint(rd16(f + ETH + 20 + 24), ==, 11680);
	g_assert_true(ncm_gso_parse_tcp(ETH, f, len, &t));
	g_assert_true(ncm_gso_tcp_csum_ok(&t, f, len));
	/* Ethernet padding behind the packet is left out of the sum. */
	len = ipv4(f, 6, seg, tcp(seg, 0x02, mss1460, sizeof(mss1460), NULL, 0), FALSE);
	tcp_fill_sum(f, len);
	memset(f + len, 0xee, 8);
	g_assert_true(nlw_tso_rx_syn(f, len + 8, MTU, 8, 11680));
	g_assert_true(ncm_gso_tcp_csum_ok(&t, f, len));

	/* IPv6: the link's IPv6 MSS (1440) becomes 8 of them. */
	len = ipv6(f, 6, seg, tcp(seg, 0x12, mss1440, sizeof(mss1440), NULL, 0));
	tcp_fill_sum(f, len);
	g_assert_true(nlw_tso_rx_syn(f, len, MTU, 8, 11680));
	g_assert_cmpuint(rd16(f + ETH + 40 + 22), ==, 8 * 1440);
	g_assert_true(ncm_gso_parse_tcp(ETH, f, len, &t));
	g_assert_true(ncm_gso_tcp_csum_ok(&t, f, len));
	/* One segment per lwIP segment: nothing to raise. */
	len = ipv4(f, 6, seg, tcp(seg, 0x02, mss1460, sizeof(mss1460), NULL, 0), FALSE);
	tcp_fill_sum(f, len);
	g_assert_false(nlw_tso_rx_syn(f, len, MTU, 1, 1460));

	/* Below the link's MSS, no option, broken options, not a SYN, a bad sum. */
	const struct {
		const guint8 *opts;
		gsize opts_len;
		guint8 flags;
		gboolean bad_sum;
	} keep[] = {
	    {mss1400, sizeof(mss1400), 0x02, FALSE}, {no_mss, sizeof(no_mss), 0x02, FALSE},
	    {bad_len, sizeof(bad_len), 0x02, FALSE}, {mss1460, sizeof(mss1460), 0x10, FALSE},
	    {mss1460, sizeof(mss1460), 0x02, TRUE},
	};
	for (guint i = 0; i < G_N_ELEMENTS(keep); i++) {
		gsize tcp_len = tcp(seg, keep[i].flags, keep[i].opts, keep[i].opts_len, NULL, 0);

		len = ipv4(f, 6, seg, tcp_len, FALSE);
		tcp_fill_sum(f, len);
		if (keep[i].bad_sum)
			f[len - 1] ^= 1;
		memcpy(before, f, len);
		g_assert_false(nlw_tso_rx_syn(f, len, MTU, 8, 11680));
		g_assert_cmpmem(f, len, before, len);
	}
	/* Truncated frames. */
	len = ipv4(f, 6, seg, tcp(seg, 0x02, mss1460, sizeof(mss1460), NULL, 0), FALSE);
	tcp_fill_sum(f, len);
	for (gsize cut = 0; cut < len; cut++)
		g_assert_false(nlw_tso_rx_syn(f, cut, MTU, 8, 11680));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lwip-tso/cut/tcp", test_cut_tcp);
	g_test_add_func("/lwip-tso/cut/resume", test_cut_resume);
	g_test_add_func("/lwip-tso/cut/syn", test_cut_syn);
	g_test_add_func("/lwip-tso/cut/fragments", test_cut_fragments);
	g_test_add_func("/lwip-tso/cut/ipv6", test_cut_ipv6);
	g_test_add_func("/lwip-tso/rx-syn", test_rx_syn);
	return g_test_run();
}
