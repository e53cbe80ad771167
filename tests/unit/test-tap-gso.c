/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-tap-gso.c: TAP offloads: TSO segmentation, checksum filling, coalescing, against a byte-wise reference. */
#include <string.h>

#include "ncm-tap-gso.h"

#define ETH 14
#define MSS 1448

/* RFC 1071, one 16-bit word at a time: the reference the fast sum must match. */
static guint16
ref_sum(const guint8 *p, gsize len, guint32 seed)
{
	guint32 s = seed;

	for (gsize i = 0; i + 1 < len; i += 2)
		s += (guint32)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		s += (guint32)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (guint16)s;
}

static guint16
rd16(const guint8 *p)
{
	return (guint16)(p[0] << 8 | p[1]);
}

static guint32
rd32(const guint8 *p)
{
	return (guint32)rd16(p) << 16 | rd16(p + 2);
}

static void
wr16(guint8 *p, guint v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

static void
wr32(guint8 *p, guint32 v)
{
	wr16(p, v >> 16);
	wr16(p + 2, v & 0xffff);
}

static guint32
ref_pseudo(const guint8 *ip, gboolean v6, gsize l4len)
{
	guint32 s = 6 + (guint32)l4len;

	if (v6)
		return ref_sum(ip + 8, 32, s);
	return ref_sum(ip + 12, 8, s);
}

/* TRUE when the TCP checksum of @pkt (IP at @l3off, no IPv4 options) is right. */
static gboolean
ref_tcp_ok(const guint8 *pkt, gsize len, guint l3off)
{
	gboolean v6 = (pkt[l3off] >> 4) == 6;
	guint l4 = l3off + (v6 ? 40 : 20);

	return ref_sum(pkt + l4, len - l4, ref_pseudo(pkt + l3off, v6, len - l4)) == 0xffff;
}

typedef struct {
	gboolean v6;
	guint l3off;
	guint16 sport, dport;
	guint32 seq, ack;
	guint8 flags;
	guint16 win;
	guint16 ipid;
	guint optlen;     /* TCP options (NOPs + timestamp-like bytes) */
	guint ts;         /* optlen 12 as a real timestamp: 1 NOP, NOP, TS; 2 TS, NOP, NOP */
	guint32 tsval, tsecr;
} Seg;

/* Builds a checksummed TCP segment with @plen bytes of payload @pl; returns its length. */
static gsize
build(guint8 *out, const Seg *s, const guint8 *pl, gsize plen)
{
	guint8 *ip = out + s->l3off, *tcp;
	guint ihl = s->v6 ? 40 : 20, thl = 20 + s->optlen;
	gsize len = s->l3off + ihl + thl + plen;

	memset(out, 0, s->l3off + ihl + thl);
	if (s->l3off) {
		memcpy(out, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
		wr16(out + 12, s->v6 ? 0x86dd : 0x0800);
	}
	if (s->v6) {
		ip[0] = 0x60;
		wr16(ip + 4, thl + (guint)plen);
		ip[6] = 6;
		ip[7] = 64;
		ip[23] = 1;  /* fd00::1 → fd00::2 */
		ip[8] = ip[24] = 0xfd;
		ip[39] = 2;
	} else {
		ip[0] = 0x45;
		wr16(ip + 2, ihl + thl + (guint)plen);
		wr16(ip + 4, s->ipid);
		ip[6] = 0x40;
		ip[8] = 64;
		ip[9] = 6;
		memcpy(ip + 12, "\xc0\xa8\x4d\x01\xc0\xa8\x4d\x04", 8);
		wr16(ip + 10, (guint16)~ref_sum(ip, 20, 0));
	}
	tcp = ip + ihl;
	wr16(tcp, s->sport);
	wr16(tcp + 2, s->dport);
	wr32(tcp + 4, s->seq);
	wr32(tcp + 8, s->ack);
	tcp[12] = (guint8)((thl / 4) << 4);
	tcp[13] = s->flags;
	wr16(tcp + 14, s->win);
	for (guint i = 0; i < s->optlen; i++)
		tcp[20 + i] = i < 2 ? 1 : (guint8)(0x40 + i);
	if (s->ts) {
		guint8 *o = tcp + 20 + (s->ts == 1 ? 2 : 0);

		g_assert_cmpuint(s->optlen, ==, 12);
		tcp[20] = tcp[21] = tcp[30] = tcp[31] = 1;
		o[0] = 8;
		o[1] = 10;
		wr32(o + 2, s->tsval);
		wr32(o + 6, s->tsecr);
	}
	memcpy(tcp + thl, pl, plen);
	wr16(tcp + 16, (guint16)~ref_sum(tcp, thl + plen, ref_pseudo(ip, s->v6, thl + plen)));
	return len;
}

static guint8 *
random_payload(gsize n)
{
	guint8 *p = g_malloc(n);

	for (gsize i = 0; i < n; i++)
		p[i] = (guint8)g_random_int();
	return p;
}

static void
test_csum_reference(void)
{
	guint8 buf[3000];

	for (gsize i = 0; i < sizeof(buf); i++)
		buf[i] = (guint8)g_random_int();
	for (guint t = 0; t < 2000; t++) {
		gsize off = g_random_int_range(0, 64), len = g_random_int_range(0, 2900);
		guint32 seed = g_random_int_range(0, 0x40000);

		g_assert_cmpuint(ncm_gso_csum_fold(ncm_gso_csum_add(seed, buf + off, len)), ==,
				 ref_sum(buf + off, len, seed));
	}
}

/* The host-order sum against the largest inputs: 64 KiB of 0xff, seeds to 2^32 - 1. */
static void
test_csum_extremes(void)
{
	static const guint32 seeds[] = { 0, 1, 0xffff, 0x10000, 0xfffffffeu, 0xffffffffu };
	gsize n = 65535;
	guint8 *buf = g_malloc(n + 1);

	memset(buf, 0xff, n + 1);
	for (guint i = 0; i < G_N_ELEMENTS(seeds); i++) {
		for (gsize len = n - 9; len <= n; len++) {
			guint64 s = seeds[i];

			for (gsize k = 0; k + 1 < len; k += 2)
				s += 0xffff;
			if (len & 1)
				s += 0xff00;
			while (s >> 16)
				s = (s & 0xffff) + (s >> 16);
			g_assert_cmpuint(
			    ncm_gso_csum_fold(ncm_gso_csum_add(seeds[i], buf + (len & 1), len)), ==, s);
		}
	}
	memset(buf, 0, n + 1);
	g_assert_cmpuint(ncm_gso_csum_add(0, buf, n), ==, 0);
	g_free(buf);
}

/* ---- segmentation ----------------------------------------------------------- */

typedef struct {
	GPtrArray *frames;
	guint stop_after;  /* 0: never */
} Sink;

static gboolean
collect(gpointer user_data, const guint8 *hdr, gsize hdr_len, const guint8 *payload,
	gsize payload_len)
{
	Sink *k = user_data;
	guint8 *f = g_malloc(hdr_len + payload_len);

	memcpy(f, hdr, hdr_len);
	memcpy(f + hdr_len, payload, payload_len);
	g_ptr_array_add(k->frames, g_bytes_new_take(f, hdr_len + payload_len));
	return !k->stop_after || k->frames->len < k->stop_after;
}

static void
check_segments(gboolean v6)
{
	const gsize plen = 10000;
	g_autofree guint8 *pl = random_payload(plen);
	g_autofree guint8 *pkt = g_malloc(70000), *scratch = g_malloc(70000);
	Seg s = { .v6 = v6, .l3off = ETH, .sport = 5001, .dport = 40000, .seq = 0xfffff000u,
		  .ack = 77, .flags = 0x10 | 0x08 | 0x01 | (v6 ? 0 : 0x80), .win = 500,
		  .ipid = 0xfffe, .optlen = 12 };
	gsize len = build(pkt, &s, pl, plen), hdr = ETH + (v6 ? 40 : 20) + 32, got = 0;
	TapVnetHdr h = { .flags = TAP_VNET_F_NEEDS_CSUM,
			 .gso_type = v6 ? TAP_VNET_GSO_TCPV6 : TAP_VNET_GSO_TCPV4,
			 .gso_size = MSS, .hdr_len = (guint16)hdr, .csum_start = (guint16)(hdr - 32),
			 .csum_offset = 16 };
	Sink k = { g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref), 0 };

	/* The kernel's TSO packets carry a partial checksum; it must not matter. */
	wr16(pkt + hdr - 32 + 16, 0x1234);
	g_assert_cmpint(tap_gso_segment(&h, ETH, pkt, len, scratch, 70000, collect, &k), ==,
			TAP_GSO_OK);
	g_assert_cmpuint(k.frames->len, ==, (plen + MSS - 1) / MSS);
	for (guint i = 0; i < k.frames->len; i++) {
		gsize flen;
		const guint8 *f = g_bytes_get_data(k.frames->pdata[i], &flen);
		const guint8 *ip = f + ETH, *tcp = f + hdr - 32;
		gsize seg = flen - hdr;
		gboolean last = i + 1 == k.frames->len;

		g_assert_cmpuint(seg, ==, last ? plen - i * MSS : MSS);
		g_assert_cmpmem(f, ETH, pkt, ETH);
		if (v6) {
			g_assert_cmpuint(rd16(ip + 4), ==, flen - ETH - 40);
		} else {
			g_assert_cmpuint(rd16(ip + 2), ==, flen - ETH);
			g_assert_cmpuint(rd16(ip + 4), ==, (guint16)(0xfffe + i));
			g_assert_cmpuint(ref_sum(ip, 20, 0), ==, 0xffff);
		}
		g_assert_cmpuint(rd32(tcp + 4), ==, (guint32)(s.seq + i * MSS));
		g_assert_cmpuint(rd32(tcp + 8), ==, 77);
		g_assert_cmpuint(tcp[13] & 0x09, ==, last ? 0x09 : 0); /* PSH, FIN: last only */
		g_assert_cmpuint(tcp[13] & 0x80, ==, (!v6 && i == 0) ? 0x80 : 0); /* CWR: first only */
		g_assert_cmpmem(tcp + 20, 12, pkt + hdr - 12, 12);
		g_assert_true(ref_tcp_ok(f, flen, ETH));
		g_assert_cmpmem(f + hdr, seg, pl + got, seg);
		got += seg;
	}
	g_assert_cmpuint(got, ==, plen);

	/* A link that goes away stops the cutting. */
	g_ptr_array_set_size(k.frames, 0);
	k.stop_after = 2;
	build(pkt, &s, pl, plen);
	g_assert_cmpint(tap_gso_segment(&h, ETH, pkt, len, scratch, 70000, collect, &k), ==,
			TAP_GSO_STOPPED);
	g_assert_cmpuint(k.frames->len, ==, 2);
	g_ptr_array_unref(k.frames);
}

static void
test_segment_v4(void)
{
	check_segments(FALSE);
}

static void
test_segment_v6(void)
{
	check_segments(TRUE);
}

static void
test_segment_invalid(void)
{
	g_autofree guint8 *pl = random_payload(4000);
	guint8 pkt[5000], scratch[5000];
	Seg s = { .l3off = ETH, .seq = 1, .flags = 0x10 };
	gsize len = build(pkt, &s, pl, 4000);
	Sink k = { g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref), 0 };
	TapVnetHdr h = { .gso_type = TAP_VNET_GSO_TCPV4, .gso_size = MSS };

	h.gso_size = 0;
	g_assert_cmpint(tap_gso_segment(&h, ETH, pkt, len, scratch, sizeof(scratch), collect, &k),
			==, TAP_GSO_INVALID);
	h.gso_size = MSS;
	h.gso_type = TAP_VNET_GSO_TCPV6;  /* an IPv4 packet */
	g_assert_cmpint(tap_gso_segment(&h, ETH, pkt, len, scratch, sizeof(scratch), collect, &k),
			==, TAP_GSO_INVALID);
	h.gso_type = TAP_VNET_GSO_TCPV4;
	g_assert_cmpint(tap_gso_segment(&h, ETH, pkt, 50, scratch, sizeof(scratch), collect, &k),
			==, TAP_GSO_INVALID);
	/* A scratch shorter than the 54 bytes of headers. */
	g_assert_cmpint(tap_gso_segment(&h, ETH, pkt, len, scratch, 53, collect, &k), ==,
			TAP_GSO_INVALID);
	pkt[ETH + 20 + 12] = 0xf0;  /* a 60-byte TCP header in a 54-byte packet */
	g_assert_cmpint(tap_gso_segment(&h, ETH, pkt, ETH + 40 + 10, scratch, sizeof(scratch),
					collect, &k), ==, TAP_GSO_INVALID);
	pkt[ETH + 20 + 12] = 0x50;
	pkt[ETH + 9] = 17;  /* UDP */
	g_assert_cmpint(tap_gso_segment(&h, ETH, pkt, len, scratch, sizeof(scratch), collect, &k),
			==, TAP_GSO_INVALID);
	g_assert_cmpuint(k.frames->len, ==, 0);
	g_ptr_array_unref(k.frames);
}

static void
test_fill_csum(void)
{
	guint8 pkt[ETH + 20 + 8 + 301];
	guint8 *ip = pkt + ETH, *udp = ip + 20;
	TapVnetHdr h = { .flags = TAP_VNET_F_NEEDS_CSUM, .csum_start = ETH + 20, .csum_offset = 6 };

	memset(pkt, 0, sizeof(pkt));
	ip[0] = 0x45;
	ip[9] = 17;
	memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
	wr16(udp + 4, 8 + 301);
	for (guint i = 0; i < 301; i++)
		udp[8 + i] = (guint8)(i * 7);
	/* As the kernel leaves it: the pseudo-header's sum, not inverted. */
	wr16(udp + 6, ref_sum(ip + 12, 8, 17 + 309));
	g_assert_true(tap_gso_fill_csum(&h, pkt, sizeof(pkt)));
	g_assert_cmpuint(ref_sum(udp, 309, ref_sum(ip + 12, 8, 17 + 309)), ==, 0xffff);
	g_assert_cmpuint(rd16(udp + 6), !=, 0);

	h.csum_offset = 400;
	g_assert_false(tap_gso_fill_csum(&h, pkt, sizeof(pkt)));
	h.flags = 0;  /* nothing asked: nothing touched */
	g_assert_true(tap_gso_fill_csum(&h, pkt, sizeof(pkt)));
}

/* ---- coalescing ------------------------------------------------------------- */

typedef struct {
	TapVnetHdr h;
	GBytes *pkt;
	guint segs;
} Written;

static void
written_free(gpointer p)
{
	Written *w = p;

	g_bytes_unref(w->pkt);
	g_free(w);
}

static void
record(gpointer user_data, const TapVnetHdr *h, const guint8 *pkt, gsize len, guint segs)
{
	Written *w = g_new0(Written, 1);

	w->h = *h;
	w->pkt = g_bytes_new(pkt, len);
	w->segs = segs;
	g_ptr_array_add(user_data, w);
}

typedef struct {
	TapGro g;
	GPtrArray *out;
	guint8 buf[2000];
} Rig;

static void
rig_init(Rig *r)
{
	tap_gro_init(&r->g);
	r->out = g_ptr_array_new_with_free_func(written_free);
}

static void
rig_clear(Rig *r)
{
	tap_gro_clear(&r->g);
	g_ptr_array_unref(r->out);
}

static void
push_seg(Rig *r, const Seg *s, const guint8 *pl, gsize plen)
{
	gsize len = build(r->buf, s, pl, plen);

	tap_gro_push(&r->g, s->l3off, r->buf, len, record, r->out);
}

static Written *
out_at(Rig *r, guint i)
{
	g_assert_cmpuint(i, <, r->out->len);
	return r->out->pdata[i];
}

static const guint8 *
out_data(Rig *r, guint i)
{
	return g_bytes_get_data(out_at(r, i)->pkt, NULL);
}

static void
assert_plain(Written *w, guint segs)
{
	TapVnetHdr zero = { 0 };

	g_assert_cmpmem(&w->h, sizeof(zero), &zero, sizeof(zero));
	g_assert_cmpuint(w->segs, ==, segs);
}

/*
 * A coalesced packet, checked the way the kernel would: header fields, the
 * IP lengths, and the TCP checksum once completed from the pseudo-header sum.
 */
static void
assert_super(Written *w, const Seg *first, guint segs, const guint8 *pl, gsize plen)
{
	gsize len;
	const guint8 *p = g_bytes_get_data(w->pkt, &len);
	g_autofree guint8 *c = g_memdup2(p, len);
	guint l4 = first->l3off + (first->v6 ? 40 : 20), hdr = l4 + 20 + first->optlen;
	TapVnetHdr h = { .flags = TAP_VNET_F_NEEDS_CSUM, .csum_start = (guint16)l4,
			 .csum_offset = 16 };

	g_assert_cmpuint(w->segs, ==, segs);
	g_assert_cmpuint(w->h.flags, ==, TAP_VNET_F_NEEDS_CSUM);
	g_assert_cmpuint(w->h.gso_type, ==, first->v6 ? TAP_VNET_GSO_TCPV6 : TAP_VNET_GSO_TCPV4);
	g_assert_cmpuint(w->h.gso_size, ==, MSS);
	g_assert_cmpuint(w->h.hdr_len, ==, hdr);
	g_assert_cmpuint(w->h.csum_start, ==, l4);
	g_assert_cmpuint(w->h.csum_offset, ==, 16);
	g_assert_cmpuint(len, ==, hdr + plen);
	g_assert_cmpmem(p + hdr, plen, pl, plen);
	g_assert_cmpuint(rd32(p + l4 + 4), ==, first->seq);
	if (first->v6) {
		g_assert_cmpuint(rd16(p + first->l3off + 4), ==, len - first->l3off - 40);
	} else {
		g_assert_cmpuint(rd16(p + first->l3off + 2), ==, len - first->l3off);
		g_assert_cmpuint(ref_sum(p + first->l3off, 20, 0), ==, 0xffff);
	}
	g_assert_true(tap_gso_fill_csum(&h, c, len));
	g_assert_true(ref_tcp_ok(c, len, first->l3off));
}

static void
check_merge(gboolean v6, guint l3off)
{
	const gsize plen = 5 * MSS + 500;
	g_autofree guint8 *pl = random_payload(plen);
	Seg s = { .v6 = v6, .l3off = l3off, .sport = 5288, .dport = 41000, .seq = 0xfffffa00u,
		  .ack = 9, .flags = 0x10, .win = 300, .ipid = 7, .optlen = 12 };
	Seg first = s;
	Rig r;

	rig_init(&r);
	for (gsize off = 0; off < plen; off += MSS) {
		gsize n = MIN(MSS, plen - off);

		push_seg(&r, &s, pl + off, n);
		s.seq += (guint32)n;
		s.ipid++;
	}
	/* The short last segment ends the run at once, before the NTB does. */
	g_assert_cmpuint(r.out->len, ==, 1);
	assert_super(out_at(&r, 0), &first, 6, pl, plen);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 1);
	g_assert_cmpuint(r.g.merged, ==, 5);

	/* Cut again by the kernel's rules, it gives back the very same frames. */
	{
		gsize len;
		const guint8 *p = g_bytes_get_data(out_at(&r, 0)->pkt, &len);
		g_autofree guint8 *c = g_memdup2(p, len), *scratch = g_malloc(70000);
		Sink k = { g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref), 0 };
		guint8 orig[2000];

		g_assert_cmpint(tap_gso_segment(&out_at(&r, 0)->h, l3off, c, len, scratch, 70000,
						collect, &k), ==, TAP_GSO_OK);
		g_assert_cmpuint(k.frames->len, ==, 6);
		s = first;
		for (guint i = 0; i < 6; i++) {
			gsize n = MIN(MSS, plen - i * MSS), flen;
			const guint8 *f = g_bytes_get_data(k.frames->pdata[i], &flen);

			g_assert_cmpmem(f, flen, orig, build(orig, &s, pl + i * MSS, n));
			s.seq += (guint32)n;
			s.ipid++;
		}
		g_ptr_array_unref(k.frames);
	}
	rig_clear(&r);
}

static void
test_gro_merge_v4(void)
{
	check_merge(FALSE, ETH);
}

static void
test_gro_merge_v6(void)
{
	check_merge(TRUE, ETH);
}

static void
test_gro_merge_tun(void)
{
	check_merge(FALSE, 0);
}

/* Pushes one full segment and advances @s. */
static void
push_next(Rig *r, Seg *s, const guint8 *pl)
{
	push_seg(r, s, pl, MSS);
	s->seq += MSS;
	s->ipid++;
}

static void
test_gro_boundaries(void)
{
	g_autofree guint8 *pl = random_payload(MSS);
	Seg s = { .l3off = ETH, .sport = 1, .dport = 2, .seq = 1000, .ack = 5, .flags = 0x10,
		  .win = 100, .optlen = 12 };
	Seg other;
	Rig r;

	rig_init(&r);

	/* A gap in the sequence: two packets. */
	push_next(&r, &s, pl);
	push_next(&r, &s, pl);
	s.seq += 1;
	push_next(&r, &s, pl);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 2);
	g_assert_cmpuint(out_at(&r, 0)->segs, ==, 2);
	assert_plain(out_at(&r, 1), 1);  /* a lone segment goes as it came */
	g_ptr_array_set_size(r.out, 0);

	/* Another flow in between: order kept, nothing mixed. */
	other = s;
	other.sport = 99;
	push_next(&r, &s, pl);
	push_next(&r, &other, pl);
	push_next(&r, &s, pl);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 3);
	g_assert_cmpuint(rd16(out_data(&r, 1) + ETH + 20), ==, 99);
	g_ptr_array_set_size(r.out, 0);

	/* PSH does not end a run (a sender short of send buffer sets it on
	 * every other segment): the super-packet carries it. */
	s.flags = 0x18;
	push_next(&r, &s, pl);
	s.flags = 0x10;
	push_next(&r, &s, pl);
	s.flags = 0x18;
	push_next(&r, &s, pl);
	s.flags = 0x10;
	push_next(&r, &s, pl);
	g_assert_cmpuint(r.out->len, ==, 0);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 1);
	g_assert_cmpuint(out_at(&r, 0)->segs, ==, 4);
	g_assert_cmpuint(out_data(&r, 0)[ETH + 20 + 13], ==, 0x18);
	g_ptr_array_set_size(r.out, 0);

	/* A new ACK number, other options, a FIN, a SYN: never merged. */
	push_next(&r, &s, pl);
	s.ack++;
	push_next(&r, &s, pl);
	s.optlen = 8;
	push_next(&r, &s, pl);
	s.flags = 0x11;
	push_next(&r, &s, pl);
	s.flags = 0x02;
	push_next(&r, &s, pl);
	s.flags = 0x10;
	s.optlen = 12;
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 5);
	for (guint i = 0; i < 5; i++)
		assert_plain(out_at(&r, i), 1);
	g_ptr_array_set_size(r.out, 0);

	/* Not TCP over IP: passes through, in order. */
	push_next(&r, &s, pl);
	{
		guint8 arp[60] = { [12] = 0x08, [13] = 0x06 };

		tap_gro_push(&r.g, ETH, arp, sizeof(arp), record, r.out);
	}
	push_next(&r, &s, pl);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 3);
	g_assert_cmpuint(g_bytes_get_size(out_at(&r, 1)->pkt), ==, 60);
	g_assert_cmpuint(r.g.merged, ==, 4);
	/* What ended each run (the stats say where runs stay short); plain flushes are not counted. */
	g_assert_cmpuint(r.g.ends[TAP_GRO_END_GAP], ==, 1);
	g_assert_cmpuint(r.g.ends[TAP_GRO_END_HEADER], ==, 4);
	g_assert_cmpuint(r.g.ends[TAP_GRO_END_FRAME], ==, 2);
	g_assert_cmpuint(r.g.ends[TAP_GRO_END_SHORT] + r.g.ends[TAP_GRO_END_FULL] +
			 r.g.ends[TAP_GRO_END_FLUSH], ==, 0);
	tap_gro_flush(&r.g, record, r.out);
	g_ptr_array_set_size(r.out, 0);

	/* A run as long as one packet holds ends full at the next segment;
	 * a short segment ends its run at once. */
	while (r.g.len + MSS <= ETH + TAP_GRO_MAX_IP)
		push_next(&r, &s, pl);
	g_assert_cmpuint(r.out->len, ==, 0);
	push_next(&r, &s, pl);
	g_assert_cmpuint(r.out->len, ==, 1);
	g_assert_cmpuint(r.g.ends[TAP_GRO_END_FULL], ==, 1);
	push_seg(&r, &s, pl, MSS / 2);
	g_assert_cmpuint(r.out->len, ==, 2);
	g_assert_cmpuint(out_at(&r, 1)->segs, ==, 2);
	g_assert_cmpuint(r.g.ends[TAP_GRO_END_SHORT], ==, 1);
	rig_clear(&r);
}

/*
 * Linux's timestamps (NOP, NOP, TS) may move forward inside a run, TSval
 * and TSecr, across the 32-bit wrap: the run carries the newest. Going
 * back, or another layout, ends it.
 */
static void
test_gro_timestamps(void)
{
	const gsize plen = 4 * MSS;
	g_autofree guint8 *pl = random_payload(plen);
	Seg s = { .l3off = ETH, .sport = 5288, .dport = 41000, .seq = 77, .ack = 5, .flags = 0x10,
		  .win = 100, .optlen = 12, .ts = 1, .tsval = 0xfffffffeu, .tsecr = 1000 };
	Seg first = s;
	const guint8 *p;
	Rig r;

	rig_init(&r);
	for (guint i = 0; i < 4; i++) {
		push_seg(&r, &s, pl + i * MSS, MSS);
		s.seq += MSS;
		s.tsval += 1;  /* ..., 0xffffffff, 0, 1 */
		s.tsecr += i;
	}
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 1);
	assert_super(out_at(&r, 0), &first, 4, pl, plen);
	p = out_data(&r, 0) + ETH + 20 + 20;
	g_assert_cmpmem(p, 4, "\x01\x01\x08\x0a", 4);
	g_assert_cmpuint(rd32(p + 4), ==, 1);
	g_assert_cmpuint(rd32(p + 8), ==, 1003);
	g_ptr_array_set_size(r.out, 0);

	/* An older TSval, then an older TSecr: three runs. */
	push_next(&r, &s, pl);
	s.tsval -= 1;
	push_next(&r, &s, pl);
	s.tsecr -= 1;
	push_next(&r, &s, pl);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 3);
	g_ptr_array_set_size(r.out, 0);

	/* The timestamp first, NOPs after: merged only with identical options. */
	s.ts = 2;
	push_next(&r, &s, pl);
	push_next(&r, &s, pl);
	s.tsval += 1;
	push_next(&r, &s, pl);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 2);
	g_assert_cmpuint(out_at(&r, 0)->segs, ==, 2);
	assert_plain(out_at(&r, 1), 1);
	rig_clear(&r);
}

/* A damaged segment is never hidden inside a super-packet: it goes alone, for the kernel to drop. */
static void
test_gro_bad_checksum(void)
{
	g_autofree guint8 *pl = random_payload(MSS);
	Seg s = { .l3off = ETH, .sport = 1, .dport = 2, .seq = 1, .ack = 5, .flags = 0x10,
		  .win = 100 };
	gsize len;
	Rig r;

	rig_init(&r);
	push_next(&r, &s, pl);
	len = build(r.buf, &s, pl, MSS);
	r.buf[len - 1] ^= 0x40;
	tap_gro_push(&r.g, ETH, r.buf, len, record, r.out);
	s.seq += MSS;
	push_next(&r, &s, pl);
	push_next(&r, &s, pl);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 3);
	assert_plain(out_at(&r, 0), 1);
	assert_plain(out_at(&r, 1), 1);
	g_assert_false(ref_tcp_ok(out_data(&r, 1), len, ETH));
	g_assert_cmpuint(out_at(&r, 2)->segs, ==, 2);
	g_assert_cmpuint(r.g.bad_csum, ==, 1);
	g_ptr_array_set_size(r.out, 0);

	/* The first of a run damaged: found when the second arrives. */
	len = build(r.buf, &s, pl, MSS);
	r.buf[ETH + 20 + 20] ^= 1;
	tap_gro_push(&r.g, ETH, r.buf, len, record, r.out);
	s.seq += MSS;
	push_next(&r, &s, pl);
	push_next(&r, &s, pl);
	tap_gro_flush(&r.g, record, r.out);
	g_assert_cmpuint(r.out->len, ==, 2);
	assert_plain(out_at(&r, 0), 1);
	g_assert_cmpuint(out_at(&r, 1)->segs, ==, 2);
	g_assert_cmpuint(r.g.bad_csum, ==, 2);
	rig_clear(&r);
}

/* Hostile input: random bytes and mangled segments; every packet comes out once, in order. */
static void
test_gro_hostile(void)
{
	g_autofree guint8 *pl = random_payload(MSS);
	guint pushed = 0, out = 0;
	Seg s = { .l3off = ETH, .sport = 1, .dport = 2, .seq = 1, .ack = 5, .flags = 0x10 };
	Rig r;

	rig_init(&r);
	for (guint i = 0; i < 20000; i++) {
		gsize len = build(r.buf, &s, pl, g_random_int_range(0, MSS + 1));

		for (guint m = g_random_int_range(0, 4); m; m--)
			r.buf[g_random_int_range(0, (gint)len)] = (guint8)g_random_int();
		if (g_random_int_range(0, 8) == 0)
			len = g_random_int_range(0, (gint)len + 1);
		tap_gro_push(&r.g, g_random_boolean() ? ETH : 0, r.buf, len, record, r.out);
		pushed++;
		if (g_random_int_range(0, 3))
			s.seq += MSS;
		if (g_random_int_range(0, 16) == 0)
			tap_gro_flush(&r.g, record, r.out);
	}
	tap_gro_flush(&r.g, record, r.out);
	for (guint i = 0; i < r.out->len; i++)
		out += out_at(&r, i)->segs;
	g_assert_cmpuint(out, ==, pushed);
	rig_clear(&r);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/tap-gso/csum/reference", test_csum_reference);
	g_test_add_func("/tap-gso/csum/extremes", test_csum_extremes);
	g_test_add_func("/tap-gso/segment/v4", test_segment_v4);
	g_test_add_func("/tap-gso/segment/v6", test_segment_v6);
	g_test_add_func("/tap-gso/segment/invalid", test_segment_invalid);
	g_test_add_func("/tap-gso/fill-csum", test_fill_csum);
	g_test_add_func("/tap-gso/gro/merge-v4", test_gro_merge_v4);
	g_test_add_func("/tap-gso/gro/merge-v6", test_gro_merge_v6);
	g_test_add_func("/tap-gso/gro/merge-tun", test_gro_merge_tun);
	g_test_add_func("/tap-gso/gro/boundaries", test_gro_boundaries);
	g_test_add_func("/tap-gso/gro/timestamps", test_gro_timestamps);
	g_test_add_func("/tap-gso/gro/bad-checksum", test_gro_bad_checksum);
	g_test_add_func("/tap-gso/gro/hostile", test_gro_hostile);
	return g_test_run();
}
