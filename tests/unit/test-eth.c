/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-eth.c: the checked Ethernet, ARP and neighbour discovery views against hand-laid frames. */
#include <glib.h>
#include <string.h>

#include "ncm-eth.h"

/*
 * Frames are laid out byte by byte from RFC 826 (ARP), RFC 8200 (IPv6) and
 * RFC 4861 (ND), not with ncm-eth.h's names, so a wrong constant there
 * cannot agree with itself here. Each view is taken over a heap copy of
 * exactly the frame's length, so that ASan sees any read past it.
 */

static const guint8 dev_mac[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x01 };
static const guint8 host_mac[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x02 };
static const guint8 dev_ip[4] = { 192, 168, 77, 1 };
static const guint8 host_ip[4] = { 192, 168, 77, 2 };
static const guint8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const guint8 none[6];
/* fe80::1, fe80::2 and ff02::1:ff00:2 (the solicited-node group of ::2) */
static const guint8 ll1[16] = { 0xfe, 0x80, [15] = 1 };
static const guint8 ll2[16] = { 0xfe, 0x80, [15] = 2 };
static const guint8 snm2[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff, [15] = 2 };

typedef struct {
	guint8 *b;
	gsize len;
} Frame;

static Frame
frame_copy(const guint8 *buf, gsize len)
{
	Frame f = { .b = g_malloc(len ? len : 1), .len = len };

	memcpy(f.b, buf, len);
	return f;
}

/* True when @n bytes at @p lie wholly inside @f. */
static gboolean
inside(const Frame *f, const guint8 *p, gsize n)
{
	return p && p >= f->b && n <= f->len && (gsize)(p - f->b) <= f->len - n;
}

static gsize
eth_header(guint8 *b, const guint8 *dst, const guint8 *src, guint16 type)
{
	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	b[12] = (guint8)(type >> 8);
	b[13] = (guint8)type;
	return 14;
}

/* An ARP request or reply, padded to the 60-byte Ethernet minimum. */
static gsize
arp_frame(guint8 *b, guint16 op, const guint8 *tha)
{
	memset(b, 0, 60);
	eth_header(b, op == 1 ? bcast : dev_mac, host_mac, 0x0806);
	b[14] = 0x00, b[15] = 0x01;      /* hardware: Ethernet */
	b[16] = 0x08, b[17] = 0x00;      /* protocol: IPv4 */
	b[18] = 6, b[19] = 4;
	b[20] = (guint8)(op >> 8), b[21] = (guint8)op;
	memcpy(b + 22, host_mac, 6);
	memcpy(b + 28, host_ip, 4);
	memcpy(b + 32, tha, 6);
	memcpy(b + 38, dev_ip, 4);
	return 60;
}

/*
 * IPv6 from fe80::1 carrying @msg_len bytes of ICMPv6 of @type, then @pad
 * bytes of link padding. Type, code, a checksum the view does not check,
 * four bytes of flags/reserved, then (NS, NA, redirect) target fe80::2.
 */
static gsize
nd_frame(guint8 *b, guint8 type, gsize msg_len, gsize pad)
{
	guint8 *ip = b + 14, *m = b + 54;

	g_assert_cmpuint(54 + msg_len + pad, <=, 1514);
	memset(b, 0, 54 + msg_len + pad);
	eth_header(b, bcast, dev_mac, 0x86dd);
	ip[0] = 0x60;                    /* version 6, no traffic class or flow */
	ip[4] = (guint8)(msg_len >> 8), ip[5] = (guint8)msg_len;
	ip[6] = 58;                      /* next header: ICMPv6 */
	ip[7] = 255;
	memcpy(ip + 8, ll1, 16);
	memcpy(ip + 24, snm2, 16);
	if (msg_len >= 4)
		m[0] = type, m[1] = 0, m[2] = 0xab, m[3] = 0xcd;
	if (msg_len >= 24 && type >= 135)
		memcpy(m + 8, ll2, 16);
	if (pad)
		memset(m + msg_len, 0xee, pad);
	return 54 + msg_len + pad;
}

static void
test_view(void)
{
	guint8 b[64];
	NcmEthView eth;
	Frame f;

	eth_header(b, bcast, host_mac, 0x0800);
	f = frame_copy(b, 13);
	g_assert_false(ncm_eth_view(&eth, f.b, f.len));
	g_free(f.b);

	f = frame_copy(b, 14);
	g_assert_true(ncm_eth_view(&eth, f.b, f.len));
	g_assert_true(eth.dst == f.b && eth.src == f.b + 6);
	g_assert_cmpmem(eth.src, 6, host_mac, 6);
	g_assert_cmphex(eth.type, ==, 0x0800);
	g_assert_true(eth.payload == f.b + 14);
	g_assert_cmpuint(eth.payload_len, ==, 0);
	g_free(f.b);

	memset(b + 14, 0x45, 50);
	f = frame_copy(b, 64);
	g_assert_true(ncm_eth_view(&eth, f.b, f.len));
	g_assert_cmpuint(eth.payload_len, ==, 50);
	g_free(f.b);
}

static void
test_multicast(void)
{
	static const guint8 v4mc[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
	static const guint8 v6mc[6] = { 0x33, 0x33, 0xff, 0x00, 0x00, 0x02 };

	g_assert_true(ncm_eth_is_multicast(bcast));
	g_assert_true(ncm_eth_is_multicast(v4mc));
	g_assert_true(ncm_eth_is_multicast(v6mc));
	g_assert_false(ncm_eth_is_multicast(host_mac));
	g_assert_false(ncm_eth_is_multicast(none));
}

static void
check_arp(guint16 op, const guint8 *tha)
{
	guint8 b[60];
	NcmEthView eth;
	NcmArpView arp;
	Frame f = frame_copy(b, arp_frame(b, op, tha));

	g_assert_true(ncm_eth_view(&eth, f.b, f.len));
	g_assert_cmphex(eth.type, ==, 0x0806);
	g_assert_true(ncm_eth_arp(&eth, &arp));
	g_assert_cmpuint(arp.op, ==, op);
	g_assert_true(arp.sha == f.b + 22 && arp.spa == f.b + 28);
	g_assert_true(arp.tha == f.b + 32 && arp.tpa == f.b + 38);
	g_assert_cmpmem(arp.sha, 6, host_mac, 6);
	g_assert_cmpmem(arp.spa, 4, host_ip, 4);
	g_assert_cmpmem(arp.tha, 6, tha, 6);
	g_assert_cmpmem(arp.tpa, 4, dev_ip, 4);
	g_free(f.b);
}

static void
test_arp_request(void)
{
	check_arp(1, none);
}

static void
test_arp_reply(void)
{
	check_arp(2, dev_mac);
	/* other operations (RARP's 3) are passed on for the caller to judge */
	check_arp(3, dev_mac);
}

/* Whether the view takes @len bytes of @b as ARP. */
static gboolean
arp_ok(const guint8 *b, gsize len)
{
	NcmEthView eth;
	NcmArpView arp;
	Frame f = frame_copy(b, len);
	gboolean ok = ncm_eth_view(&eth, f.b, f.len) && ncm_eth_arp(&eth, &arp);

	if (ok)
		g_assert_true(inside(&f, arp.tpa, 4));
	g_free(f.b);
	return ok;
}

/* Each field the view checks, wrong on its own; then one byte short. */
static void
test_arp_rejects(void)
{
	static const struct {
		gsize off;
		guint8 value;
	} wrong[] = {
		{ 12, 0x86 }, { 13, 0x00 },   /* EtherType 0x8606, then IPv4 */
		{ 14, 0x01 }, { 15, 0x06 },   /* htype 0x0101, then IEEE 802 (6) */
		{ 16, 0x86 }, { 17, 0x01 },   /* ptype 0x8600, then 0x0801 */
		{ 18, 8 },                    /* hlen */
		{ 19, 16 },                   /* plen: IPv6 over ARP does not exist */
	};
	guint8 b[60];

	for (gsize i = 0; i < G_N_ELEMENTS(wrong); i++) {
		arp_frame(b, 1, none);
		g_assert_true(arp_ok(b, 60));
		b[wrong[i].off] = wrong[i].value;
		g_assert_false(arp_ok(b, 60));
	}
	arp_frame(b, 1, none);
	g_assert_true(arp_ok(b, 42));
	g_assert_false(arp_ok(b, 41));
	g_assert_false(arp_ok(b, 14));
}

/* The view of @b (@len bytes) as ND, with every pointer checked to lie in the frame. */
static gboolean
nd_ok(const guint8 *b, gsize len, NcmNdView *ret, gsize *ret_off)
{
	NcmEthView eth;
	Frame f = frame_copy(b, len);
	gboolean ok = ncm_eth_view(&eth, f.b, f.len) && ncm_eth_nd(&eth, ret);

	if (ok) {
		g_assert_true(ret->ip6 == f.b + 14 && inside(&f, ret->ip6, 40));
		g_assert_true(ret->src == f.b + 22 && ret->dst == f.b + 38);
		g_assert_true(ret->msg == f.b + 54 && inside(&f, ret->msg, ret->msg_len));
		g_assert_true(!ret->target || inside(&f, ret->target, 16));
		if (ret_off)
			*ret_off = ret->target ? (gsize)(ret->target - f.b) : 0;
	}
	g_free(f.b);
	return ok;
}

static void
check_nd(guint8 type, gsize msg_len, gboolean has_target)
{
	guint8 b[1514];
	gsize len = nd_frame(b, type, msg_len, 0), target_off;
	NcmNdView nd;

	g_assert_true(nd_ok(b, len, &nd, &target_off));
	g_assert_cmpuint(nd.type, ==, type);
	g_assert_cmpuint(nd.code, ==, 0);
	g_assert_cmpuint(nd.hop_limit, ==, 255);
	g_assert_cmpuint(nd.msg_len, ==, msg_len);
	if (has_target) {
		g_assert_nonnull(nd.target);
		g_assert_cmpuint(target_off, ==, 54 + 8);
	} else {
		g_assert_null(nd.target);
	}
	if (has_target)
		g_assert_cmpmem(b + target_off, 16, ll2, 16);
}

/* Minimum lengths from RFC 4861 6.1.1, 6.1.2, 7.1.1, 7.1.2 and 8.1. */
static void
test_nd_types(void)
{
	check_nd(133, 8, FALSE);         /* RS */
	check_nd(134, 16, FALSE);        /* RA */
	check_nd(135, 24, TRUE);         /* NS */
	check_nd(136, 24, TRUE);         /* NA */
	check_nd(137, 40, TRUE);         /* redirect */
	/* with options (a source link-layer address, a prefix) after the fixed part */
	check_nd(133, 16, FALSE);
	check_nd(134, 56, FALSE);
	check_nd(135, 32, TRUE);
}

static void
test_nd_fields(void)
{
	guint8 b[1514];
	gsize len = nd_frame(b, 135, 32, 0);
	NcmNdView nd;

	b[14 + 7] = 64;                  /* hop limit: not 255, the caller's to judge */
	b[55] = 9;                       /* code */
	g_assert_true(nd_ok(b, len, &nd, NULL));
	g_assert_cmpuint(nd.hop_limit, ==, 64);
	g_assert_cmpuint(nd.code, ==, 9);
}

/* A message shorter than its type's fixed part is discarded (RFC 4861). */
static void
test_nd_short_message(void)
{
	static const struct {
		guint8 type;
		gsize min;
	} types[] = { { 133, 8 }, { 134, 16 }, { 135, 24 }, { 136, 24 }, { 137, 40 } };
	guint8 b[1514];
	NcmNdView nd;

	for (gsize i = 0; i < G_N_ELEMENTS(types); i++) {
		gsize len = nd_frame(b, types[i].type, types[i].min - 1, 0);

		g_assert_false(nd_ok(b, len, &nd, NULL));
		/* a padded frame does not make up for it */
		len = nd_frame(b, types[i].type, types[i].min - 1, 40);
		g_assert_false(nd_ok(b, len, &nd, NULL));
	}
	g_assert_false(nd_ok(b, nd_frame(b, 133, 3, 8), &nd, NULL));
	g_assert_false(nd_ok(b, nd_frame(b, 133, 0, 8), &nd, NULL));
}

/* The IPv6 payload length, not the frame, bounds the message. */
static void
test_nd_lengths(void)
{
	guint8 b[1514];
	NcmNdView nd;
	gsize len;

	/* padding after the payload: 60-byte minimum frames and more */
	len = nd_frame(b, 136, 24, 6);
	g_assert_true(nd_ok(b, len, &nd, NULL));
	g_assert_cmpuint(nd.msg_len, ==, 24);
	len = nd_frame(b, 133, 8, 100);
	g_assert_true(nd_ok(b, len, &nd, NULL));
	g_assert_cmpuint(nd.msg_len, ==, 8);

	/* a payload length past the frame's end, by one and by a lot */
	len = nd_frame(b, 135, 24, 0);
	g_assert_false(nd_ok(b, len - 1, &nd, NULL));
	b[14 + 4] = 0xff;
	g_assert_false(nd_ok(b, len, &nd, NULL));
	g_assert_false(nd_ok(b, 53, &nd, NULL));
}

static void
test_nd_rejects(void)
{
	guint8 b[1514];
	NcmNdView nd;
	gsize len;

	len = nd_frame(b, 135, 24, 0);
	g_assert_true(nd_ok(b, len, &nd, NULL));
	b[14 + 6] = 17;                  /* UDP */
	g_assert_false(nd_ok(b, len, &nd, NULL));
	b[14 + 6] = 0;                   /* a hop-by-hop header first: not followed */
	g_assert_false(nd_ok(b, len, &nd, NULL));

	len = nd_frame(b, 135, 24, 0);
	b[14] = 0x40;                    /* version 4 */
	g_assert_false(nd_ok(b, len, &nd, NULL));
	len = nd_frame(b, 135, 24, 0);
	b[12] = 0x08, b[13] = 0x00;      /* EtherType IPv4 */
	g_assert_false(nd_ok(b, len, &nd, NULL));

	/* ICMPv6 that is not neighbour discovery */
	g_assert_false(nd_ok(b, nd_frame(b, 128, 24, 0), &nd, NULL));   /* echo request */
	g_assert_false(nd_ok(b, nd_frame(b, 132, 24, 0), &nd, NULL));   /* MLD done */
	g_assert_false(nd_ok(b, nd_frame(b, 138, 40, 0), &nd, NULL));   /* renumbering */
	/* ARP is not ND */
	g_assert_false(nd_ok(b, arp_frame(b, 1, none), &nd, NULL));
}

static void
test_ip6_unspecified(void)
{
	static const guint8 zero[16];
	guint8 a[16] = { 0 };

	g_assert_true(ncm_ip6_is_unspecified(zero));
	g_assert_false(ncm_ip6_is_unspecified(ll1));
	a[15] = 1;                       /* ::1 */
	g_assert_false(ncm_ip6_is_unspecified(a));
	a[15] = 0, a[0] = 0x80;
	g_assert_false(ncm_ip6_is_unspecified(a));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/eth/view", test_view);
	g_test_add_func("/eth/multicast", test_multicast);
	g_test_add_func("/eth/arp/request", test_arp_request);
	g_test_add_func("/eth/arp/reply", test_arp_reply);
	g_test_add_func("/eth/arp/rejects", test_arp_rejects);
	g_test_add_func("/eth/nd/types", test_nd_types);
	g_test_add_func("/eth/nd/fields", test_nd_fields);
	g_test_add_func("/eth/nd/short-message", test_nd_short_message);
	g_test_add_func("/eth/nd/lengths", test_nd_lengths);
	g_test_add_func("/eth/nd/rejects", test_nd_rejects);
	g_test_add_func("/eth/ip6-unspecified", test_ip6_unspecified);
	return g_test_run();
}
