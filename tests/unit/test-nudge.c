/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-nudge.c: the tail nudge: ARP learning, stream-end detection, the request it sends. */
#include <glib.h>
#include <string.h>

#include "ncm-nudge.h"

static const guint8 peer_mac[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x01 };
static const guint8 host_mac[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x02 };
static const guint8 peer_ip[4] = { 192, 168, 77, 1 };
static const guint8 host_ip[4] = { 192, 168, 77, 2 };
static const guint8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const guint8 none[6];

/* An ARP packet as the device would send it, laid out field by field from RFC 826. */
static gsize
arp(guint8 *f, const guint8 *eth_dst, guint16 op, const guint8 *sha, const guint8 *spa,
    const guint8 *tha, const guint8 *tpa)
{
	memset(f, 0, 60);
	memcpy(f, eth_dst, 6);
	memcpy(f + 6, sha, 6);
	f[12] = 0x08, f[13] = 0x06;      /* EtherType ARP */
	f[14] = 0x00, f[15] = 0x01;      /* hardware: Ethernet */
	f[16] = 0x08, f[17] = 0x00;      /* protocol: IPv4 */
	f[18] = 6, f[19] = 4;
	f[20] = (guint8)(op >> 8), f[21] = (guint8)op;
	memcpy(f + 22, sha, 6);
	memcpy(f + 28, spa, 4);
	memcpy(f + 32, tha, 6);
	memcpy(f + 38, tpa, 4);
	return 60;
}

static gsize
ipv4_frame(guint8 *f, const guint8 *eth_dst)
{
	memset(f, 0, 60);
	memcpy(f, eth_dst, 6);
	memcpy(f + 6, peer_mac, 6);
	f[12] = 0x08, f[13] = 0x00;
	f[14] = 0x45;
	return 60;
}

/* @n NTBs, @gap_us apart, each carrying one IPv4 frame to the host. */
static gint64
stream(NcmNudge *n, gint64 t, guint count, gint64 gap_us)
{
	guint8 f[NCM_NUDGE_FRAME_MAX];

	for (guint i = 0; i < count; i++, t += gap_us) {
		ncm_nudge_ntb_begin(n, t);
		ncm_nudge_learn(n, f, ipv4_frame(f, host_mac));
		ncm_nudge_ntb_end(n);
	}
	return t - gap_us;
}

/* The host asks for the device's address: its own ARP request, sent. */
static void
asked(NcmNudge *n)
{
	NcmNudgeTx tx = { 0 };
	guint8 f[NCM_NUDGE_FRAME_MAX];

	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 1, host_mac, host_ip, none, peer_ip)), ==,
			NCM_NUDGE_TX_ASK);
	ncm_nudge_merge_tx(n, &tx);
}

/* ... and the device answers it. */
static void
learned(NcmNudge *n)
{
	guint8 f[NCM_NUDGE_FRAME_MAX];

	asked(n);
	ncm_nudge_learn(n, f, arp(f, host_mac, 2, peer_mac, peer_ip, host_mac, host_ip));
}

static void
test_learn_reply(void)
{
	NcmNudge n;

	ncm_nudge_init(&n);
	learned(&n);
	g_assert_true(n.v4.have_peer_mac && n.v4.have);
	g_assert_cmpmem(n.v4.peer_mac, 6, peer_mac, 6);
	g_assert_cmpmem(n.v4.peer_ip, 4, peer_ip, 4);
	g_assert_cmpmem(n.v4.host_mac, 6, host_mac, 6);
	g_assert_cmpmem(n.v4.host_ip, 4, host_ip, 4);
}

/* What the device sends alone teaches nothing: the host's addresses and the
 * device's IP come from the host's own requests; then the device's request
 * for the host, from the asked address, teaches its MAC. */
static void
test_learn_rx_alone(void)
{
	NcmNudge n;
	guint8 f[NCM_NUDGE_FRAME_MAX];

	ncm_nudge_init(&n);
	ncm_nudge_learn(&n, f, arp(f, bcast, 1, peer_mac, peer_ip, none, host_ip));
	ncm_nudge_learn(&n, f, arp(f, host_mac, 2, peer_mac, peer_ip, host_mac, host_ip));
	ncm_nudge_learn(&n, f, ipv4_frame(f, host_mac));
	g_assert_false(n.v4.have_peer_mac || n.v4.have || n.v4.have || n.v4.have);
	g_assert_cmpuint(ncm_nudge_frame(&n, f), ==, 0);
	asked(&n);
	g_assert_false(n.v4.have_peer_mac);
	ncm_nudge_learn(&n, f, arp(f, bcast, 1, peer_mac, peer_ip, none, host_ip));
	g_assert_true(n.v4.have_peer_mac);
	g_assert_cmpmem(n.v4.peer_mac, 6, peer_mac, 6);
}

/*
 * Issue 16: a Raspberry Pi gadget bridges usb0 to its LAN. A LAN host's
 * broadcast "who has 192.168.1.1? tell .50" and the router's answer cross
 * the bridge. The nudge must still ask only for the host, in its own name,
 * for the address the host asked: never as 192.168.1.1 at our MAC.
 */
static void
test_learn_bridged_lan(void)
{
	static const guint8 lan_mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x50 };
	static const guint8 router_mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x01 };
	static const guint8 lan_ip[4] = { 192, 168, 1, 50 };
	static const guint8 router_ip[4] = { 192, 168, 1, 1 };
	NcmNudge n;
	guint8 f[NCM_NUDGE_FRAME_MAX];

	ncm_nudge_init(&n);
	learned(&n);
	ncm_nudge_learn(&n, f, arp(f, bcast, 1, lan_mac, lan_ip, none, router_ip));
	ncm_nudge_learn(&n, f, arp(f, lan_mac, 2, router_mac, router_ip, lan_mac, lan_ip));
	ncm_nudge_learn(&n, f, arp(f, host_mac, 2, router_mac, router_ip, host_mac, host_ip));
	g_assert_cmpuint(ncm_nudge_frame(&n, f), ==, NCM_NUDGE_FRAME_ARP_LEN);
	g_assert_cmpmem(f + 6, 6, host_mac, 6);     /* Ethernet source */
	g_assert_cmpmem(f + 22, 6, host_mac, 6);    /* ARP sender MAC */
	g_assert_cmpmem(f + 28, 4, host_ip, 4);     /* ARP sender IP */
	g_assert_cmpmem(f + 38, 4, peer_ip, 4);     /* ARP target IP */
	g_assert_cmpmem(f, 6, peer_mac, 6);         /* to the device */
}

static void
test_learn_ignores(void)
{
	static const guint8 zero_ip[4];
	static const guint8 other_ip[4] = { 192, 168, 77, 9 };
	static const guint8 other_mac[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x09 };
	static const guint8 mcast_mac[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	NcmNudge n;
	guint8 f[NCM_NUDGE_FRAME_MAX];

	ncm_nudge_init(&n);
	asked(&n);
	/* A probe: sender 0.0.0.0. */
	ncm_nudge_learn(&n, f, arp(f, bcast, 1, peer_mac, zero_ip, none, peer_ip));
	/* Another address than the one asked for. */
	ncm_nudge_learn(&n, f, arp(f, host_mac, 2, other_mac, other_ip, host_mac, host_ip));
	/* A reply to another MAC than the host's. */
	ncm_nudge_learn(&n, f, arp(f, other_mac, 2, peer_mac, peer_ip, other_mac, host_ip));
	/* A multicast sender MAC. */
	ncm_nudge_learn(&n, f, arp(f, host_mac, 2, mcast_mac, peer_ip, host_mac, host_ip));
	/* Sent from another MAC than the one it names. */
	arp(f, host_mac, 2, peer_mac, peer_ip, host_mac, host_ip);
	memcpy(f + 6, other_mac, 6);
	ncm_nudge_learn(&n, f, 60);
	g_assert_false(n.v4.have_peer_mac);
	g_assert_cmpmem(n.v4.peer_ip, 4, peer_ip, 4);
	g_assert_cmpmem(n.v4.host_ip, 4, host_ip, 4);
	/* Not Ethernet/IPv4 ARP: each header field in turn. */
	for (guint field = 14; field < 20; field++) {
		NcmNudge m;

		ncm_nudge_init(&m);
		asked(&m);
		arp(f, host_mac, 2, peer_mac, peer_ip, host_mac, host_ip);
		f[field] ^= 0x40;
		ncm_nudge_learn(&m, f, 60);
		g_assert_false(m.v4.have_peer_mac);
	}
}

/* Every truncation of a reply: nothing read past the end, no ARP learned short of 42 bytes. */
static void
test_learn_truncated(void)
{
	guint8 full[60];

	arp(full, host_mac, 2, peer_mac, peer_ip, host_mac, host_ip);
	for (gsize len = 0; len <= 60; len++) {
		g_autofree guint8 *f = g_memdup2(full, len ? len : 1);
		NcmNudge n;

		ncm_nudge_init(&n);
		asked(&n);
		ncm_nudge_learn(&n, f, len);
		g_assert_true(n.v4.have_peer_mac == (len >= 42));
		g_assert_true(n.v4.have && n.v4.have && n.v4.have);
	}
}

static void
test_stream_detection(void)
{
	NcmNudge n;
	gint64 last;

	ncm_nudge_init(&n);
	learned(&n);
	/* 7 NTBs close together are not yet a stream. */
	last = stream(&n, 1000000, NCM_NUDGE_STREAM_NTBS - 1, 1000);
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);
	/* The 8th within the window is. */
	last = stream(&n, last + 1000, 1, 1000);
	g_assert_true(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, last + 100000);

	/* 8 NTBs spread wider than the window: interactive traffic, no nudge. */
	ncm_nudge_init(&n);
	learned(&n);
	stream(&n, 0, 3 * NCM_NUDGE_STREAM_NTBS, NCM_NUDGE_STREAM_US / (NCM_NUDGE_STREAM_NTBS - 1) + 1);
	g_assert_false(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);
}

/* @n frames other than ARP, @len bytes each, into the NTB being parsed. */
static void
learn_ipv4(NcmNudge *n, guint count, gsize len)
{
	g_autofree guint8 *f = g_malloc0(len);

	for (guint i = 0; i < count; i++) {
		ipv4_frame(f, host_mac);
		ncm_nudge_learn(n, f, len);
	}
}

/* @count ARP replies from the device, as it answers a nudge. */
static void
learn_replies(NcmNudge *n, guint count)
{
	guint8 f[NCM_NUDGE_FRAME_MAX];

	for (guint i = 0; i < count; i++) {
		arp(f, host_mac, 2, peer_mac, peer_ip, host_mac, host_ip);
		ncm_nudge_learn(n, f, 60);
	}
}

/* One NTB the device filled is a stream's: it had frames queued. */
static void
test_full_ntb(void)
{
	NcmNudge n;

	ncm_nudge_init(&n);
	learned(&n);
	ncm_nudge_ntb_begin(&n, 5000);
	learn_ipv4(&n, NCM_NUDGE_FULL_DATAGRAMS - 1, 60);
	ncm_nudge_ntb_end(&n);
	g_assert_false(ncm_nudge_armed(&n));
	ncm_nudge_ntb_begin(&n, 6000);
	learn_ipv4(&n, NCM_NUDGE_FULL_DATAGRAMS, 60);
	ncm_nudge_ntb_end(&n);
	g_assert_true(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, 106000);
	ncm_nudge_init(&n);
	learned(&n);
	ncm_nudge_ntb_begin(&n, 5000);
	learn_ipv4(&n, 2, NCM_NUDGE_FULL_BYTES / 2);
	ncm_nudge_ntb_end(&n);
	g_assert_true(ncm_nudge_armed(&n));
	/* ARP alone never arms, however full (the replies to a nudge). */
	ncm_nudge_init(&n);
	ncm_nudge_ntb_begin(&n, 5000);
	learned(&n);
	learn_replies(&n, 32);
	ncm_nudge_ntb_end(&n);
	g_assert_false(ncm_nudge_armed(&n));
	/* Nor do they when one other frame shares their NTB: only the other
	 * frames say whether the device had a backlog. Counting the replies
	 * re-armed the nudge after every nudge (4 nudges in a 2.5 s TX test). */
	ncm_nudge_init(&n);
	learned(&n);
	ncm_nudge_ntb_begin(&n, 5000);
	learn_replies(&n, 32);
	learn_ipv4(&n, 1, 90);
	ncm_nudge_ntb_end(&n);
	g_assert_false(ncm_nudge_armed(&n));
}

/* A stream with no addresses learned cannot be nudged: never due. */
static void
test_not_due_unlearned(void)
{
	NcmNudge n;

	ncm_nudge_init(&n);
	stream(&n, 0, 20, 100);
	g_assert_true(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);
}

/* The request, checked against RFC 826's layout byte by byte. */
static void
test_frame(void)
{
	guint8 want[60], got[NCM_NUDGE_FRAME_MAX];
	NcmNudge n;

	ncm_nudge_init(&n);
	learned(&n);
	memset(got, 0xAA, sizeof(got));
	g_assert_cmpuint(ncm_nudge_frame(&n, got), ==, NCM_NUDGE_FRAME_ARP_LEN);
	arp(want, peer_mac, 1, host_mac, host_ip, none, peer_ip);
	memcpy(want + 6, host_mac, 6);
	g_assert_cmpmem(got, 60, want, 60);
}

/* @count NTBs holding only an ARP reply, as the answers to a nudge come. */
static void
replies(NcmNudge *n, gint64 t, guint count)
{
	for (guint i = 0; i < count; i++) {
		ncm_nudge_ntb_begin(n, t + i);
		learned(n);
		ncm_nudge_ntb_end(n);
	}
}

static void
test_after_nudge(void)
{
	guint8 f[NCM_NUDGE_FRAME_MAX];
	NcmNudge n;
	gint64 t;

	ncm_nudge_init(&n);
	learned(&n);
	t = stream(&n, 0, 10, 1000);
	g_assert_true(ncm_nudge_armed(&n));
	ncm_nudge_sent(&n, t + 100000);
	g_assert_false(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);

	/* Replies alone: nothing was held, and they make no stream however many. */
	replies(&n, t + 100100, 3 * NCM_NUDGE_STREAM_NTBS);
	g_assert_false(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);

	/* The first NTB after a nudge holds a held TCP segment and replies: freed. */
	ncm_nudge_sent(&n, t + 150000);
	ncm_nudge_ntb_begin(&n, t + 200000);
	ncm_nudge_learn(&n, f, ipv4_frame(f, host_mac));
	learned(&n);
	g_assert_true(ncm_nudge_ntb_end(&n));
	/* Only the first NTB after a nudge counts. */
	ncm_nudge_ntb_begin(&n, t + 200100);
	ncm_nudge_learn(&n, f, ipv4_frame(f, host_mac));
	g_assert_false(ncm_nudge_ntb_end(&n));
	/* Data within a second of the stream arms it again: that nudge may have
	 * come in a pause mid-burst, and the burst's real end needs one too. */
	g_assert_true(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, t + 200100 + 100000);
	ncm_nudge_sent(&n, t + 300100);
	/* Data long after the stream is not a stream's tail. */
	stream(&n, t + NCM_NUDGE_TAIL_US + 1000, 3, 50000);
	g_assert_false(ncm_nudge_armed(&n));
}

/* The host's own ARP request: what the nudge needs to ask, with no device MAC yet. */
static void
test_learn_tx(void)
{
	guint8 f[NCM_NUDGE_FRAME_MAX], got[NCM_NUDGE_FRAME_MAX], want[60];
	NcmNudgeTx tx = { 0 };
	NcmNudge n;

	ncm_nudge_init(&n);
	/* Gratuitous requests and replies, probes, other opcodes and short frames from the host say nothing. */
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 1, host_mac, host_ip, none, host_ip)), ==,
			NCM_NUDGE_TX_OTHER);
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 2, host_mac, host_ip, none, host_ip)), ==,
			NCM_NUDGE_TX_OTHER);
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 1, host_mac, (const guint8 *)none, none, peer_ip)),
			==, NCM_NUDGE_TX_OTHER);
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, peer_mac, 2, host_mac, host_ip, peer_mac, (const guint8 *)none)),
			==, NCM_NUDGE_TX_OTHER);
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, peer_mac, 3, host_mac, host_ip, peer_mac, peer_ip)), ==,
			NCM_NUDGE_TX_OTHER);
	g_assert_false(tx.v4.fresh);
	for (gsize len = 0; len < 42; len++)
		g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, len), ==, NCM_NUDGE_TX_OTHER);
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 1, host_mac, host_ip, none, peer_ip)), ==,
			NCM_NUDGE_TX_ASK);
	tx.asked_at = 5000;
	ncm_nudge_merge_tx(&n, &tx);
	g_assert_false(tx.v4.fresh);
	g_assert_true(n.v4.have && n.v4.have && n.v4.have);
	g_assert_false(n.v4.have_peer_mac);
	/* Unanswered: due a quiet time after the request, to the broadcast address. */
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, 105000);
	g_assert_cmpuint(ncm_nudge_frame(&n, got), ==, NCM_NUDGE_FRAME_ARP_LEN);
	arp(want, bcast, 1, host_mac, host_ip, none, peer_ip);
	memcpy(want + 6, host_mac, 6);
	g_assert_cmpmem(got, 60, want, 60);
	/* Anything received answers it. */
	ncm_nudge_ntb_begin(&n, 6000);
	ncm_nudge_ntb_end(&n);
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);
	/* A request merged after an NTB that came later was answered already. */
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 1, host_mac, host_ip, none, peer_ip)), ==,
			NCM_NUDGE_TX_ASK);
	tx.asked_at = 5500;
	ncm_nudge_merge_tx(&n, &tx);
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);
}

/*
 * A host stack that learnt the device's MAC from the device's own ARP
 * request only answers and never asks (lwIP does). Its reply names both
 * ends all the same, so the nudge can go out after a stream; on old code it
 * never could, and a held tail stalled a TCP download for good (issue 20's
 * vm-multi-lwip). A request names whom the host talks to, which an answer
 * does not replace.
 */
static void
test_learn_tx_answer(void)
{
	static const guint8 lan_ip[4] = { 192, 168, 77, 9 };
	guint8 f[NCM_NUDGE_FRAME_MAX], got[NCM_NUDGE_FRAME_MAX], want[60];
	NcmNudgeTx tx = { 0 };
	NcmNudge n;
	gint64 t;

	ncm_nudge_init(&n);
	/* The device asks first (the host cannot learn from that), the host answers. */
	ncm_nudge_learn(&n, f, arp(f, bcast, 1, peer_mac, peer_ip, none, host_ip));
	g_assert_false(n.v4.have || n.v4.have);
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, peer_mac, 2, host_mac, host_ip, peer_mac, peer_ip)), ==,
			NCM_NUDGE_TX_ANSWER);
	ncm_nudge_merge_tx(&n, &tx);
	g_assert_true(n.v4.have && n.v4.have && n.v4.have);
	/* An answer is no ask: nothing is due until a stream ends. */
	g_assert_cmpint(n.asked_at, ==, 0);
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);
	t = stream(&n, 1000000, NCM_NUDGE_STREAM_NTBS, 1000);
	g_assert_true(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, t + 100000);
	g_assert_cmpuint(ncm_nudge_frame(&n, got), ==, NCM_NUDGE_FRAME_ARP_LEN);
	arp(want, bcast, 1, host_mac, host_ip, none, peer_ip);
	g_assert_cmpmem(got, 60, want, 60);
	/* The host's own request wins over its answers, and stays. */
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 1, host_mac, host_ip, none, lan_ip)), ==,
			NCM_NUDGE_TX_ASK);
	ncm_nudge_merge_tx(&n, &tx);
	g_assert_cmpmem(n.v4.peer_ip, 4, lan_ip, 4);
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, peer_mac, 2, host_mac, host_ip, peer_mac, peer_ip)), ==,
			NCM_NUDGE_TX_ANSWER);
	ncm_nudge_merge_tx(&n, &tx);
	g_assert_cmpmem(n.v4.peer_ip, 4, lan_ip, 4);
	g_assert_false(tx.v4.fresh);
	/* Between two merges, an answer does not overwrite a request. */
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 1, host_mac, host_ip, none, peer_ip)), ==,
			NCM_NUDGE_TX_ASK);
	g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, peer_mac, 2, host_mac, host_ip, peer_mac, lan_ip)), ==,
			NCM_NUDGE_TX_ANSWER);
	ncm_nudge_merge_tx(&n, &tx);
	g_assert_cmpmem(n.v4.peer_ip, 4, peer_ip, 4);
}

/* A device that never answers: nudges back off, doubling to a minute; any RX resets that. */
static void
test_backoff(void)
{
	guint8 f[NCM_NUDGE_FRAME_MAX];
	NcmNudgeTx tx = { 0 };
	NcmNudge n;
	gint64 now = 1000000, due;

	ncm_nudge_init(&n);
	for (guint i = 0; i < 10; i++) {
		gint64 wait = MIN((gint64)NCM_NUDGE_BACKOFF_US << i, (gint64)NCM_NUDGE_BACKOFF_MAX_US);

		g_assert_cmpint(ncm_nudge_learn_tx(&tx, f, arp(f, bcast, 1, host_mac, host_ip, none, peer_ip)), ==,
				NCM_NUDGE_TX_ASK);
		tx.asked_at = now;
		ncm_nudge_merge_tx(&n, &tx);
		due = ncm_nudge_due(&n, 100000);
		g_assert_cmpint(due, ==, i == 0 ? now + 100000 : MAX(now + 100000, n.not_before));
		ncm_nudge_sent(&n, due);
		g_assert_cmpint(n.not_before, ==, due + wait);
		now = due + 10000;
	}
	g_assert_cmpint(n.backoff, ==, NCM_NUDGE_BACKOFF_MAX_US);
	ncm_nudge_ntb_begin(&n, now);
	ncm_nudge_ntb_end(&n);
	g_assert_cmpint(n.backoff, ==, 0);
	g_assert_cmpint(n.not_before, ==, 0);
}

/* A new session starts from the last one's addresses, and its start is an ask. */
static void
test_carry_and_start(void)
{
	guint8 a[NCM_NUDGE_FRAME_MAX], b[NCM_NUDGE_FRAME_MAX];
	NcmNudgeTx tx = { 0 };
	NcmNudge last, next;

	ncm_nudge_init(&last);
	learned(&last);
	stream(&last, 0, 20, 100);
	ncm_nudge_init(&next);
	/* Nothing learned yet: the session's start alone cannot nudge. */
	tx.asked_at = 7000;
	ncm_nudge_merge_tx(&next, &tx);
	g_assert_cmpint(tx.asked_at, ==, 0);
	g_assert_cmpint(ncm_nudge_due(&next, 100000), ==, G_MAXINT64);

	ncm_nudge_init(&next);
	ncm_nudge_carry(&next, &last);
	/* Addresses only: no stream, no ask, no backoff came along. */
	g_assert_false(ncm_nudge_armed(&next));
	g_assert_cmpint(ncm_nudge_due(&next, 100000), ==, G_MAXINT64);
	tx.asked_at = 7000;
	ncm_nudge_merge_tx(&next, &tx);
	g_assert_cmpint(ncm_nudge_due(&next, 100000), ==, 107000);
	g_assert_true(ncm_nudge_frame(&last, a) && ncm_nudge_frame(&next, b));
	g_assert_cmpmem(a, 60, b, 60);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/nudge/learn/reply", test_learn_reply);
	g_test_add_func("/nudge/learn/rx-alone", test_learn_rx_alone);
	g_test_add_func("/nudge/learn/bridged-lan", test_learn_bridged_lan);
	g_test_add_func("/nudge/learn/ignores", test_learn_ignores);
	g_test_add_func("/nudge/learn/truncated", test_learn_truncated);
	g_test_add_func("/nudge/stream", test_stream_detection);
	g_test_add_func("/nudge/not-due-unlearned", test_not_due_unlearned);
	g_test_add_func("/nudge/full-ntb", test_full_ntb);
	g_test_add_func("/nudge/frame", test_frame);
	g_test_add_func("/nudge/after-nudge", test_after_nudge);
	g_test_add_func("/nudge/learn-tx", test_learn_tx);
	g_test_add_func("/nudge/learn-tx-answer", test_learn_tx_answer);
	g_test_add_func("/nudge/backoff", test_backoff);
	g_test_add_func("/nudge/carry-and-start", test_carry_and_start);
	return g_test_run();
}
