/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-nudge.c: the tail nudge (see ncm-nudge.h): stream-end detection, ARP learning, the request. */
#include <string.h>

#include "ncm-eth.h"
#include "ncm-nudge.h"

static const uint8_t zero[NCM_ETH_ALEN];
static const uint8_t broadcast[NCM_ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

void
ncm_nudge_init(NcmNudge *nudge)
{
	memset(nudge, 0, sizeof(*nudge));
}

/*
 * What the device sends teaches only its own MAC, and only for the address
 * the host itself asked about: its ARP packet from that address, sent from
 * the MAC it names. Every other address comes from the host's own frames
 * (ncm_nudge_merge_tx()). A gadget that bridges a LAN forwards other hosts'
 * ARP: learning from those made the nudge ask in their name, poisoning the
 * LAN's neighbour caches with our MAC.
 */
static void
learn_peer_mac(NcmNudgeAddrs *v4, const NcmEthView *eth, const NcmArpView *arp)
{
	if (!v4->have || memcmp(arp->spa, v4->peer_ip, NCM_IP4_ALEN) != 0)
		return;
	if (memcmp(eth->src, arp->sha, NCM_ETH_ALEN) != 0 || ncm_eth_is_multicast(arp->sha) ||
	    memcmp(arp->sha, zero, NCM_ETH_ALEN) == 0)
		return;
	if (arp->op == NCM_ARP_REPLY && memcmp(arp->tha, v4->host_mac, NCM_ETH_ALEN) != 0)
		return;
	if (arp->op != NCM_ARP_REQUEST && arp->op != NCM_ARP_REPLY)
		return;
	memcpy(v4->peer_mac, arp->sha, NCM_ETH_ALEN);
	v4->have_peer_mac = true;
}

/* The same for IPv6: the device's solicitation from the address, or its
 * advertisement of it to the host's MAC. */
static void
learn_peer_mac6(NcmNudgeAddrs *v6, const NcmEthView *eth, const NcmNdView *nd)
{
	if (!v6->have || memcmp(nd->src, v6->peer_ip, 16) != 0 || nd->hop_limit != 255 ||
	    ncm_eth_is_multicast(eth->src) || memcmp(eth->src, zero, NCM_ETH_ALEN) == 0)
		return;
	if (nd->type == NCM_ND_NA &&
	    (memcmp(nd->target, v6->peer_ip, 16) != 0 ||
	     memcmp(eth->dst, v6->host_mac, NCM_ETH_ALEN) != 0))
		return;
	if (nd->type != NCM_ND_NS && nd->type != NCM_ND_NA)
		return;
	memcpy(v6->peer_mac, eth->src, NCM_ETH_ALEN);
	v6->have_peer_mac = true;
}

void
ncm_nudge_learn(NcmNudge *nudge, const uint8_t *frame, size_t len)
{
	NcmEthView eth;
	NcmArpView arp;
	NcmNdView nd;

	if (!ncm_eth_view(&eth, frame, len))
		return;
	if (ncm_eth_arp(&eth, &arp)) {
		learn_peer_mac(&nudge->v4, &eth, &arp);
		return;
	}
	/* Not data: 32 advertisements answering a nudge must not make a
	 * stream that arms the next nudge. */
	if (ncm_eth_nd(&eth, &nd)) {
		learn_peer_mac6(&nudge->v6, &eth, &nd);
		return;
	}
	nudge->other = true;
	nudge->other_datagrams++;
	nudge->other_bytes += len;
}

/*
 * An IPv6 solicitation or advertisement the host sent, in @said. Like an
 * ARP packet, it must name both ends and come from a unicast MAC: a
 * solicitation from a real address (not duplicate address detection's ::)
 * for another one; an advertisement of the host's own address to the one
 * that asked (an unsolicited one to all nodes names no peer).
 */
static bool
said_nd(NcmNudgeSaid *said, const NcmEthView *eth, bool *answer)
{
	NcmNdView nd;
	const uint8_t *peer;

	if (!ncm_eth_nd(eth, &nd) || nd.hop_limit != 255 || nd.code != 0 ||
	    ncm_ip6_is_unspecified(nd.src) || ncm_ip6_is_multicast(nd.src))
		return false;
	if (nd.type == NCM_ND_NS)
		peer = nd.target;
	else if (nd.type == NCM_ND_NA && memcmp(nd.target, nd.src, 16) == 0)
		peer = nd.dst;
	else
		return false;
	if (ncm_ip6_is_unspecified(peer) || ncm_ip6_is_multicast(peer) ||
	    memcmp(peer, nd.src, 16) == 0)
		return false;
	*answer = nd.type == NCM_ND_NA;
	memcpy(said->host_ip, nd.src, 16);
	memcpy(said->peer_ip, peer, 16);
	return true;
}

/* An ARP request or reply the host sent, in @said (see said_nd()). */
static bool
said_arp(NcmNudgeSaid *said, const NcmEthView *eth, bool *answer)
{
	NcmArpView arp;

	if (!ncm_eth_arp(eth, &arp) || (arp.op != NCM_ARP_REQUEST && arp.op != NCM_ARP_REPLY) ||
	    memcmp(arp.sha, eth->src, NCM_ETH_ALEN) != 0 ||
	    memcmp(arp.spa, zero, NCM_IP4_ALEN) == 0 || memcmp(arp.tpa, zero, NCM_IP4_ALEN) == 0 ||
	    memcmp(arp.spa, arp.tpa, NCM_IP4_ALEN) == 0)
		return false;
	*answer = arp.op == NCM_ARP_REPLY;
	memcpy(said->host_ip, arp.spa, NCM_IP4_ALEN);
	memcpy(said->peer_ip, arp.tpa, NCM_IP4_ALEN);
	return true;
}

NcmNudgeTxKind
ncm_nudge_learn_tx(NcmNudgeTx *tx, const uint8_t *frame, size_t len)
{
	NcmEthView eth;
	NcmNudgeSaid got, *said;
	bool answer = false, v6;

	/* Every frame the host sends comes here: data leaves at the type. */
	if (!ncm_eth_view(&eth, frame, len) ||
	    (eth.type != NCM_ETH_P_ARP && eth.type != NCM_ETH_P_IPV6) ||
	    ncm_eth_is_multicast(eth.src) || memcmp(eth.src, zero, NCM_ETH_ALEN) == 0)
		return NCM_NUDGE_TX_OTHER;
	v6 = eth.type == NCM_ETH_P_IPV6;
	/* IPv4 fills 4 of the 16 bytes; merges compare all 16. */
	memset(&got, 0, sizeof(got));
	if (!(v6 ? said_nd : said_arp)(&got, &eth, &answer))
		return NCM_NUDGE_TX_OTHER;
	said = v6 ? &tx->v6 : &tx->v4;
	/* A request not yet merged says more than an answer after it. */
	if (answer && said->fresh && !said->answer)
		return NCM_NUDGE_TX_ANSWER;
	memcpy(got.host_mac, eth.src, NCM_ETH_ALEN);
	got.fresh = true;
	got.answer = answer;
	*said = got;
	if (answer)
		return NCM_NUDGE_TX_ANSWER;
	tx->asked_v6 = v6;
	return NCM_NUDGE_TX_ASK;
}

static void
merge_said(NcmNudgeAddrs *addrs, NcmNudgeSaid *said)
{
	if (said->fresh && (!said->answer || !addrs->have || addrs->peer_from_answer)) {
		/* A MAC learned for another address is not this one's. */
		if (!addrs->have || memcmp(addrs->peer_ip, said->peer_ip, 16) != 0)
			addrs->have_peer_mac = false;
		memcpy(addrs->host_mac, said->host_mac, 6);
		memcpy(addrs->host_ip, said->host_ip, 16);
		memcpy(addrs->peer_ip, said->peer_ip, 16);
		addrs->have = true;
		addrs->peer_from_answer = said->answer;
	}
	said->fresh = false;
}

void
ncm_nudge_merge_tx(NcmNudge *nudge, NcmNudgeTx *tx)
{
	merge_said(&nudge->v4, &tx->v4);
	merge_said(&nudge->v6, &tx->v6);
	/* Answered already if anything arrived since. */
	if (tx->asked_at > nudge->last_rx)
		nudge->asked_at = tx->asked_at;
	tx->asked_at = 0;
}

void
ncm_nudge_carry(NcmNudge *nudge, const NcmNudge *last)
{
	nudge->v4 = last->v4;
	nudge->v6 = last->v6;
}

void
ncm_nudge_ntb_begin(NcmNudge *nudge, int64_t now)
{
	nudge->last_rx = nudge->ntb_at = now;
	nudge->other = false;
	nudge->other_datagrams = 0;
	nudge->other_bytes = 0;
	/* The link delivers: whatever was asked is answered or on its way. */
	nudge->asked_at = 0;
	nudge->backoff = 0;
	nudge->not_before = 0;
}

/* Only NTBs with data count: the replies to a nudge must not make a stream. */
static void
count_data_ntb(NcmNudge *nudge, int64_t at, bool full)
{
	if (full)
		nudge->stream_at = at;
	nudge->times[nudge->head] = at;
	nudge->head = (nudge->head + 1) % NCM_NUDGE_STREAM_NTBS;
	if (nudge->seen < NCM_NUDGE_STREAM_NTBS)
		nudge->seen++;
	/* times[head] is now the oldest of the last NCM_NUDGE_STREAM_NTBS. */
	if (nudge->seen == NCM_NUDGE_STREAM_NTBS &&
	    at - nudge->times[nudge->head] <= NCM_NUDGE_STREAM_US)
		nudge->stream_at = at;
	nudge->last_data = at;
}

bool
ncm_nudge_ntb_end(NcmNudge *nudge)
{
	bool freed = nudge->sent && nudge->other;

	if (nudge->other)
		count_data_ntb(nudge, nudge->ntb_at,
			       nudge->other_datagrams >= NCM_NUDGE_FULL_DATAGRAMS ||
			       nudge->other_bytes >= NCM_NUDGE_FULL_BYTES);
	nudge->sent = false;
	return freed;
}

/*
 * Not only the end of the stream itself: a nudge in a pause mid-burst must
 * not use up the one its real end needs, so data that follows within
 * NCM_NUDGE_TAIL_US arms it again.
 */
bool
ncm_nudge_armed(const NcmNudge *nudge)
{
	return nudge->stream_at && nudge->last_data - nudge->stream_at <= NCM_NUDGE_TAIL_US &&
	       nudge->nudged_for != nudge->last_data;
}

static bool
can_nudge(const NcmNudge *nudge)
{
	return nudge->v4.have || nudge->v6.have;
}

int64_t
ncm_nudge_due(const NcmNudge *nudge, int64_t quiet_us)
{
	int64_t due = INT64_MAX;

	if (!can_nudge(nudge))
		return INT64_MAX;
	if (ncm_nudge_armed(nudge))
		due = nudge->last_data + quiet_us;
	if (nudge->asked_at && nudge->asked_at + quiet_us < due)
		due = nudge->asked_at + quiet_us;
	if (due != INT64_MAX && due < nudge->not_before)
		due = nudge->not_before;
	return due;
}

static size_t
frame_arp(const NcmNudgeAddrs *v4, uint8_t *out)
{
	/* htype, ptype, hlen, plen, op: network order */
	static const uint8_t arp_head[NCM_ARP_OFF_SHA] = {
		0, NCM_ARP_HTYPE_ETHER,
		NCM_ETH_P_IPV4 >> 8, NCM_ETH_P_IPV4 & 0xff,
		NCM_ETH_ALEN, NCM_IP4_ALEN,
		0, NCM_ARP_REQUEST,
	};
	uint8_t *arp = out + NCM_ETH_HLEN;

	memset(out, 0, NCM_NUDGE_FRAME_ARP_LEN);
	/* Unicast when the device's MAC is known, as Linux re-checks a neighbour. */
	memcpy(out, v4->have_peer_mac ? v4->peer_mac : broadcast, NCM_ETH_ALEN);
	memcpy(out + NCM_ETH_ALEN, v4->host_mac, NCM_ETH_ALEN);
	out[2 * NCM_ETH_ALEN] = NCM_ETH_P_ARP >> 8; /* EtherType */
	out[2 * NCM_ETH_ALEN + 1] = NCM_ETH_P_ARP & 0xff;
	memcpy(arp, arp_head, sizeof(arp_head));
	/* the target MAC stays zero: it is what the request asks for */
	memcpy(arp + NCM_ARP_OFF_SHA, v4->host_mac, NCM_ETH_ALEN);
	memcpy(arp + NCM_ARP_OFF_SPA, v4->host_ip, NCM_IP4_ALEN);
	memcpy(arp + NCM_ARP_OFF_TPA, v4->peer_ip, NCM_IP4_ALEN);
	return NCM_NUDGE_FRAME_ARP_LEN;
}

/*
 * A neighbour solicitation for the device's address (RFC 4861 7.2.2):
 * unicast when its MAC is known, else to its solicited-node group; hop
 * limit 255, or the device drops it; the host's MAC as the source
 * link-layer option, so the device answers without asking back.
 */
static size_t
frame_ns(const NcmNudgeAddrs *v6, uint8_t *out)
{
	enum { IP = NCM_ETH_HLEN, MSG = IP + NCM_IP6_HLEN, MSG_LEN = 32 };
	uint8_t *ip = out + IP, *msg = out + MSG;
	uint16_t sum;

	memset(out, 0, NCM_NUDGE_FRAME_NS_LEN);
	memcpy(ip + 24, v6->peer_ip, 16);
	if (v6->have_peer_mac) {
		memcpy(out, v6->peer_mac, NCM_ETH_ALEN);
	} else {
		static const uint8_t solicited[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

		memcpy(ip + 24, solicited, sizeof(solicited));
		ncm_eth_ip6_multicast_mac(out, ip + 24);
	}
	memcpy(out + NCM_ETH_ALEN, v6->host_mac, NCM_ETH_ALEN);
	out[2 * NCM_ETH_ALEN] = NCM_ETH_P_IPV6 >> 8;
	out[2 * NCM_ETH_ALEN + 1] = NCM_ETH_P_IPV6 & 0xff;
	ip[0] = 0x60;
	ip[5] = MSG_LEN;
	ip[6] = NCM_IP6_NEXT_ICMP6;
	ip[7] = 255;
	memcpy(ip + 8, v6->host_ip, 16);
	msg[0] = NCM_ND_NS;
	memcpy(msg + 8, v6->peer_ip, 16);
	msg[24] = 1; /* source link-layer address, 8 bytes */
	msg[25] = 1;
	memcpy(msg + 26, v6->host_mac, NCM_ETH_ALEN);
	sum = ncm_icmp6_checksum(ip, msg, MSG_LEN);
	msg[2] = sum >> 8;
	msg[3] = sum & 0xff;
	return NCM_NUDGE_FRAME_NS_LEN;
}

size_t
ncm_nudge_frame(const NcmNudge *nudge, uint8_t out[NCM_NUDGE_FRAME_MAX])
{
	if (nudge->v4.have)
		return frame_arp(&nudge->v4, out);
	if (nudge->v6.have)
		return frame_ns(&nudge->v6, out);
	return 0;
}

void
ncm_nudge_sent(NcmNudge *nudge, int64_t now)
{
	nudge->nudged_for = nudge->last_data;
	nudge->asked_at = 0;
	nudge->sent = true;
	/* Any RX resets this; only a device that never answers meets it. */
	nudge->backoff = nudge->backoff ? nudge->backoff * 2 : NCM_NUDGE_BACKOFF_US;
	if (nudge->backoff > NCM_NUDGE_BACKOFF_MAX_US)
		nudge->backoff = NCM_NUDGE_BACKOFF_MAX_US;
	nudge->not_before = now + nudge->backoff;
}
