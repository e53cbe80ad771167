/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-nudge-ipv6.c: the tail nudge on a link where the host speaks only IPv6: learning from neighbour discovery, the solicitation it sends. */
#include <glib.h>
#include <string.h>

#include "ncm-nudge.h"

static const guint8 peer_mac[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x01 };
static const guint8 host_mac[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x02 };
/* fe80::1:2:3:4 and fe80::2, each written out */
static const guint8 peer_ip[16] = { 0xfe, 0x80, [8] = 0, 1, 0, 2, 0, 3, 0, 4 };
static const guint8 host_ip[16] = { 0xfe, 0x80, [15] = 2 };
static const guint8 all_nodes[16] = { 0xff, 0x02, [15] = 1 };
static const guint8 unspecified[16];
/* ff02::1:ff03:4, the device's solicited-node group, and its MAC */
static const guint8 group[16] = { 0xff, 0x02, [11] = 1, 0xff, 3, 0, 4 };
static const guint8 group_mac[6] = { 0x33, 0x33, 0xff, 3, 0, 4 };

/* The Internet checksum (RFC 1071) over the pseudo-header (RFC 8200 8.1) and the message. */
static guint16
checksum(const guint8 *src, const guint8 *dst, const guint8 *msg, gsize len)
{
	guint32 sum = 0;
	guint8 pseudo[40] = { 0 };

	memcpy(pseudo, src, 16);
	memcpy(pseudo + 16, dst, 16);
	pseudo[34] = (guint8)(len >> 8), pseudo[35] = (guint8)len;
	pseudo[39] = 58;
	for (gsize i = 0; i < sizeof(pseudo); i += 2)
		sum += (guint32)pseudo[i] << 8 | pseudo[i + 1];
	for (gsize i = 0; i < len; i += 2)
		sum += (guint32)msg[i] << 8 | (i + 1 < len ? msg[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (guint16)~sum;
}

/* A neighbour solicitation (135) or advertisement (136) laid out from RFC
 * 4861 4.3/4.4, with a link-layer address option naming @eth_src. */
static gsize
nd(guint8 *f, const guint8 *eth_dst, const guint8 *eth_src, guint8 type, guint8 hop_limit,
   const guint8 *src, const guint8 *dst, const guint8 *target)
{
	guint8 *ip = f + 14, *msg = f + 54;
	guint16 sum;

	memset(f, 0, 86);
	memcpy(f, eth_dst, 6);
	memcpy(f + 6, eth_src, 6);
	f[12] = 0x86, f[13] = 0xdd;
	ip[0] = 0x60;
	ip[5] = 32;                      /* payload length */
	ip[6] = 58;                      /* ICMPv6 */
	ip[7] = hop_limit;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	msg[0] = type;
	if (type == 136)
		msg[4] = 0x60;           /* solicited, override */
	memcpy(msg + 8, target, 16);
	msg[24] = type == 135 ? 1 : 2;   /* source / target link-layer address */
	msg[25] = 1;
	memcpy(msg + 26, eth_src, 6);
	sum = checksum(src, dst, msg, 32);
	msg[2] = (guint8)(sum >> 8), msg[3] = (guint8)sum;
	return 86;
}

static NcmNudgeTxKind
host_sends(NcmNudge *n, NcmNudgeTx *tx, const guint8 *f, gsize len)
{
	NcmNudgeTxKind kind = ncm_nudge_learn_tx(tx, f, len);

	if (kind == NCM_NUDGE_TX_ASK)
		tx->asked_at = 1000;
	ncm_nudge_merge_tx(n, tx);
	return kind;
}

/* The host asks for the device's link-local address, multicast to its solicited-node group. */
static NcmNudgeTxKind
host_solicits(NcmNudge *n, NcmNudgeTx *tx)
{
	guint8 f[86];

	return host_sends(n, tx, f, nd(f, group_mac, host_mac, 135, 255, host_ip, group, peer_ip));
}

/* The solicitation the nudge sends, checked field by field; @unicast: to the device's MAC and address. */
static void
assert_solicitation(const NcmNudge *n, gboolean unicast)
{
	guint8 got[NCM_NUDGE_FRAME_MAX], want[86];

	memset(got, 0xaa, sizeof(got));
	g_assert_cmpuint(ncm_nudge_frame(n, got), ==, NCM_NUDGE_FRAME_NS_LEN);
	nd(want, unicast ? peer_mac : group_mac, host_mac, 135, 255, host_ip,
	   unicast ? peer_ip : group, peer_ip);
	g_assert_cmpmem(got, 86, want, 86);
}

static void
test_solicit(void)
{
	NcmNudgeTx tx = { 0 };
	NcmNudge n;
	guint8 f[86];

	ncm_nudge_init(&n);
	g_assert_cmpuint(ncm_nudge_frame(&n, f), ==, 0);
	g_assert_cmpint(host_solicits(&n, &tx), ==, NCM_NUDGE_TX_ASK);
	g_assert_true(tx.asked_v6);
	/* Unanswered, it is due like an unanswered ARP request. */
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, 101000);
	assert_solicitation(&n, FALSE);
	/* The device's answer gives its MAC: the nudge asks it directly. */
	ncm_nudge_ntb_begin(&n, 2000);
	ncm_nudge_learn(&n, f, nd(f, host_mac, peer_mac, 136, 255, peer_ip, host_ip, peer_ip));
	g_assert_false(ncm_nudge_ntb_end(&n));
	g_assert_true(n.v6.have_peer_mac);
	assert_solicitation(&n, TRUE);
	g_assert_false(n.v4.have);
}

/* A host that only answers the device's solicitation: the answer names the asker. */
static void
test_answer(void)
{
	NcmNudgeTx tx = { 0 };
	NcmNudge n;
	guint8 f[86];

	ncm_nudge_init(&n);
	g_assert_cmpint(host_sends(&n, &tx, f,
				   nd(f, peer_mac, host_mac, 136, 255, host_ip, peer_ip, host_ip)),
			==, NCM_NUDGE_TX_ANSWER);
	g_assert_true(n.v6.have && n.v6.peer_from_answer);
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);
	assert_solicitation(&n, FALSE);
	/* Whom the host asks wins over who asked it, as for ARP. */
	g_assert_cmpint(host_solicits(&n, &tx), ==, NCM_NUDGE_TX_ASK);
	g_assert_false(n.v6.peer_from_answer);
}

/* When the host speaks IPv4 too, the nudge stays ARP. */
static void
test_ipv4_first(void)
{
	static const guint8 ip4_peer[4] = { 192, 168, 77, 1 }, ip4_host[4] = { 192, 168, 77, 2 };
	static const guint8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	NcmNudgeTx tx = { 0 };
	NcmNudge n;
	guint8 f[NCM_NUDGE_FRAME_MAX] = { 0 };

	ncm_nudge_init(&n);
	host_solicits(&n, &tx);
	memcpy(f, bcast, 6);
	memcpy(f + 6, host_mac, 6);
	f[12] = 0x08, f[13] = 0x06, f[15] = 1, f[16] = 0x08, f[18] = 6, f[19] = 4, f[21] = 1;
	memcpy(f + 22, host_mac, 6);
	memcpy(f + 28, ip4_host, 4);
	memcpy(f + 38, ip4_peer, 4);
	g_assert_cmpint(host_sends(&n, &tx, f, 60), ==, NCM_NUDGE_TX_ASK);
	g_assert_false(tx.asked_v6);
	g_assert_true(n.v4.have && n.v6.have);
	g_assert_cmpuint(ncm_nudge_frame(&n, f), ==, NCM_NUDGE_FRAME_ARP_LEN);
	g_assert_cmpmem(f + 38, 4, ip4_peer, 4);
}

/* The 32 advertisements answering a nudge are not data: they make no stream. */
static void
test_replies_not_data(void)
{
	NcmNudgeTx tx = { 0 };
	NcmNudge n;
	guint8 f[86];

	ncm_nudge_init(&n);
	host_solicits(&n, &tx);
	for (guint i = 0; i < 4 * NCM_NUDGE_STREAM_NTBS; i++) {
		ncm_nudge_ntb_begin(&n, 10000 + i);
		for (guint j = 0; j < NCM_NUDGE_FRAMES; j++)
			ncm_nudge_learn(&n, f,
					nd(f, host_mac, peer_mac, 136, 255, peer_ip, host_ip, peer_ip));
		ncm_nudge_ntb_end(&n);
	}
	g_assert_false(ncm_nudge_armed(&n));
	g_assert_cmpint(ncm_nudge_due(&n, 100000), ==, G_MAXINT64);
}

/* What names no two ends, or not the host's, teaches nothing. */
static void
test_ignores(void)
{
	static const guint8 all_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	static const guint8 other_mac[6] = { 0x02, 0, 0, 0, 0, 9 };
	NcmNudgeTx tx = { 0 };
	NcmNudge n;
	guint8 f[86];

	ncm_nudge_init(&n);
	/* duplicate address detection: from :: */
	g_assert_cmpint(host_sends(&n, &tx, f,
				   nd(f, all_mac, host_mac, 135, 255, unspecified, all_nodes, host_ip)),
			==, NCM_NUDGE_TX_OTHER);
	/* a hop limit below 255: no neighbour discovery (RFC 4861 7.1.1) */
	g_assert_cmpint(host_sends(&n, &tx, f,
				   nd(f, peer_mac, host_mac, 135, 64, host_ip, peer_ip, peer_ip)),
			==, NCM_NUDGE_TX_OTHER);
	/* an unsolicited advertisement to all nodes names no peer */
	g_assert_cmpint(host_sends(&n, &tx, f,
				   nd(f, all_mac, host_mac, 136, 255, host_ip, all_nodes, host_ip)),
			==, NCM_NUDGE_TX_OTHER);
	/* a solicitation for a multicast address, or for the host's own */
	g_assert_cmpint(host_sends(&n, &tx, f,
				   nd(f, peer_mac, host_mac, 135, 255, host_ip, peer_ip, all_nodes)),
			==, NCM_NUDGE_TX_OTHER);
	g_assert_cmpint(host_sends(&n, &tx, f,
				   nd(f, peer_mac, host_mac, 135, 255, host_ip, host_ip, host_ip)),
			==, NCM_NUDGE_TX_OTHER);
	/* from a multicast MAC */
	g_assert_cmpint(host_sends(&n, &tx, f,
				   nd(f, peer_mac, all_mac, 135, 255, host_ip, peer_ip, peer_ip)),
			==, NCM_NUDGE_TX_OTHER);
	g_assert_false(n.v6.have);
	/* The device's advertisement to another MAC does not teach its MAC. */
	host_solicits(&n, &tx);
	ncm_nudge_ntb_begin(&n, 2000);
	ncm_nudge_learn(&n, f, nd(f, other_mac, peer_mac, 136, 255, peer_ip, host_ip, peer_ip));
	ncm_nudge_ntb_end(&n);
	g_assert_false(n.v6.have_peer_mac);
	/* Every truncation of a good solicitation teaches nothing and reads no further. */
	for (gsize len = 0; len < 86; len++) {
		NcmNudgeTx t = { 0 };
		guint8 *cut;

		nd(f, peer_mac, host_mac, 135, 255, host_ip, peer_ip, peer_ip);
		cut = g_memdup2(f, len ? len : 1);
		g_assert_cmpint(ncm_nudge_learn_tx(&t, cut, len), ==, NCM_NUDGE_TX_OTHER);
		g_free(cut);
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/nudge-ipv6/solicit", test_solicit);
	g_test_add_func("/nudge-ipv6/answer", test_answer);
	g_test_add_func("/nudge-ipv6/ipv4-first", test_ipv4_first);
	g_test_add_func("/nudge-ipv6/replies-not-data", test_replies_not_data);
	g_test_add_func("/nudge-ipv6/ignores", test_ignores);
	return g_test_run();
}
