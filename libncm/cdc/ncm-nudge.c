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
learn_peer_mac(NcmNudge *nudge, const NcmEthView *eth, const NcmArpView *arp)
{
	if (!nudge->have_peer_ip4 || memcmp(arp->spa, nudge->peer_ip4, NCM_IP4_ALEN) != 0)
		return;
	if (memcmp(eth->src, arp->sha, NCM_ETH_ALEN) != 0 || ncm_eth_is_multicast(arp->sha) ||
	    memcmp(arp->sha, zero, NCM_ETH_ALEN) == 0)
		return;
	if (arp->op == NCM_ARP_REPLY &&
	    (!nudge->have_host_mac || memcmp(arp->tha, nudge->host_mac, NCM_ETH_ALEN) != 0))
		return;
	if (arp->op != NCM_ARP_REQUEST && arp->op != NCM_ARP_REPLY)
		return;
	memcpy(nudge->peer_mac, arp->sha, NCM_ETH_ALEN);
	nudge->have_peer_mac = true;
}

void
ncm_nudge_learn(NcmNudge *nudge, const uint8_t *frame, size_t len)
{
	NcmEthView eth;
	NcmArpView arp;
	bool is_arp;

	if (!ncm_eth_view(&eth, frame, len))
		return;
	is_arp = ncm_eth_arp(&eth, &arp);
	if (!is_arp) {
		nudge->other = true;
		nudge->other_datagrams++;
		nudge->other_bytes += len;
	}
	if (is_arp)
		learn_peer_mac(nudge, &eth, &arp);
}

NcmNudgeTxKind
ncm_nudge_learn_tx(NcmNudgeTx *tx, const uint8_t *frame, size_t len)
{
	NcmEthView eth;
	NcmArpView arp;

	/* A request or a reply from a unicast address that names both ends. */
	if (!ncm_eth_view(&eth, frame, len) || !ncm_eth_arp(&eth, &arp) ||
	    (arp.op != NCM_ARP_REQUEST && arp.op != NCM_ARP_REPLY) ||
	    ncm_eth_is_multicast(arp.sha) ||
	    memcmp(arp.sha, zero, NCM_ETH_ALEN) == 0 || memcmp(arp.spa, zero, NCM_IP4_ALEN) == 0 ||
	    memcmp(arp.tpa, zero, NCM_IP4_ALEN) == 0 ||
	    memcmp(arp.spa, arp.tpa, NCM_IP4_ALEN) == 0)
		return NCM_NUDGE_TX_OTHER;
	/* A request not yet merged says more than an answer after it. */
	if (arp.op == NCM_ARP_REPLY && tx->fresh && !tx->answer)
		return NCM_NUDGE_TX_ANSWER;
	memcpy(tx->host_mac, arp.sha, NCM_ETH_ALEN);
	memcpy(tx->host_ip4, arp.spa, NCM_IP4_ALEN);
	memcpy(tx->peer_ip4, arp.tpa, NCM_IP4_ALEN);
	tx->fresh = true;
	tx->answer = arp.op == NCM_ARP_REPLY;
	return tx->answer ? NCM_NUDGE_TX_ANSWER : NCM_NUDGE_TX_ASK;
}

void
ncm_nudge_merge_tx(NcmNudge *nudge, NcmNudgeTx *tx)
{
	if (tx->fresh && (!tx->answer || !nudge->have_peer_ip4 || nudge->peer_from_answer)) {
		/* A MAC learned for another address is not this one's. */
		if (!nudge->have_peer_ip4 || memcmp(nudge->peer_ip4, tx->peer_ip4, 4) != 0)
			nudge->have_peer_mac = false;
		memcpy(nudge->host_mac, tx->host_mac, 6);
		memcpy(nudge->host_ip4, tx->host_ip4, 4);
		memcpy(nudge->peer_ip4, tx->peer_ip4, 4);
		nudge->have_host_mac = nudge->have_host_ip4 = nudge->have_peer_ip4 = true;
		nudge->peer_from_answer = tx->answer;
	}
	tx->fresh = false;
	/* Answered already if anything arrived since. */
	if (tx->asked_at > nudge->last_rx)
		nudge->asked_at = tx->asked_at;
	tx->asked_at = 0;
}

void
ncm_nudge_carry(NcmNudge *nudge, const NcmNudge *last)
{
	memcpy(nudge->host_mac, last->host_mac, 6);
	memcpy(nudge->host_ip4, last->host_ip4, 4);
	memcpy(nudge->peer_mac, last->peer_mac, 6);
	memcpy(nudge->peer_ip4, last->peer_ip4, 4);
	nudge->have_host_mac = last->have_host_mac;
	nudge->have_host_ip4 = last->have_host_ip4;
	nudge->have_peer_mac = last->have_peer_mac;
	nudge->have_peer_ip4 = last->have_peer_ip4;
	nudge->peer_from_answer = last->peer_from_answer;
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
	return nudge->have_peer_ip4 && nudge->have_host_ip4 && nudge->have_host_mac;
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

bool
ncm_nudge_frame(const NcmNudge *nudge, uint8_t out[NCM_NUDGE_FRAME_LEN])
{
	/* htype, ptype, hlen, plen, op: network order */
	static const uint8_t arp_head[NCM_ARP_OFF_SHA] = {
		0, NCM_ARP_HTYPE_ETHER,
		NCM_ETH_P_IPV4 >> 8, NCM_ETH_P_IPV4 & 0xff,
		NCM_ETH_ALEN, NCM_IP4_ALEN,
		0, NCM_ARP_REQUEST,
	};
	uint8_t *arp = out + NCM_ETH_HLEN;

	if (!can_nudge(nudge))
		return false;
	memset(out, 0, NCM_NUDGE_FRAME_LEN);
	/* Unicast when the device's MAC is known, as Linux re-checks a neighbour. */
	memcpy(out, nudge->have_peer_mac ? nudge->peer_mac : broadcast, NCM_ETH_ALEN);
	memcpy(out + NCM_ETH_ALEN, nudge->host_mac, NCM_ETH_ALEN);
	out[2 * NCM_ETH_ALEN] = NCM_ETH_P_ARP >> 8; /* EtherType */
	out[2 * NCM_ETH_ALEN + 1] = NCM_ETH_P_ARP & 0xff;
	memcpy(arp, arp_head, sizeof(arp_head));
	/* the target MAC stays zero: it is what the request asks for */
	memcpy(arp + NCM_ARP_OFF_SHA, nudge->host_mac, NCM_ETH_ALEN);
	memcpy(arp + NCM_ARP_OFF_SPA, nudge->host_ip4, NCM_IP4_ALEN);
	memcpy(arp + NCM_ARP_OFF_TPA, nudge->peer_ip4, NCM_IP4_ALEN);
	return true;
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
