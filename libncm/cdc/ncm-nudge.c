/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-nudge.c: the tail nudge (see ncm-nudge.h): stream-end detection, ARP learning, the request. */
#include <string.h>

#include "ncm-nudge.h"

#define ETH_HLEN 14
#define ARP_LEN 28

static const uint8_t zero6[6];
static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

void
ncm_nudge_init(NcmNudge *nudge)
{
	memset(nudge, 0, sizeof(*nudge));
}

static bool
is_arp_ipv4(const uint8_t *f, size_t len)
{
	/* EtherType 0x0806; Ethernet (1) over IPv4 (0x0800), 6- and 4-byte addresses. */
	return len >= ETH_HLEN + ARP_LEN && f[12] == 0x08 && f[13] == 0x06 && f[14] == 0 &&
	       f[15] == 1 && f[16] == 0x08 && f[17] == 0 && f[18] == 6 && f[19] == 4;
}

static void
learn_arp(NcmNudge *nudge, const uint8_t *arp)
{
	const uint8_t *sha = arp + 8, *spa = arp + 14, *tha = arp + 18, *tpa = arp + 24;
	unsigned op = (unsigned)(arp[6] << 8 | arp[7]);

	/* Probes (sender 0.0.0.0) and announcements (sender = target) name no host. */
	if (memcmp(spa, zero6, 4) == 0)
		return;
	memcpy(nudge->peer_mac, sha, 6);
	memcpy(nudge->peer_ip4, spa, 4);
	nudge->have_peer_mac = nudge->have_peer_ip4 = true;
	if ((op != 1 && op != 2) || memcmp(tpa, spa, 4) == 0 || memcmp(tpa, zero6, 4) == 0)
		return;
	memcpy(nudge->host_ip4, tpa, 4);
	nudge->have_host_ip4 = true;
	if (op == 2 && memcmp(tha, zero6, 6) != 0 && !(tha[0] & 1)) {
		memcpy(nudge->host_mac, tha, 6);
		nudge->have_host_mac = true;
	}
}

void
ncm_nudge_learn(NcmNudge *nudge, const uint8_t *frame, size_t len)
{
	bool arp;

	if (len < ETH_HLEN)
		return;
	arp = is_arp_ipv4(frame, len);
	if (!arp)
		nudge->other = true;
	/* A unicast frame from the device is addressed to the host. */
	if (!nudge->have_host_mac && !(frame[0] & 1)) {
		memcpy(nudge->host_mac, frame, 6);
		nudge->have_host_mac = true;
	}
	if (arp)
		learn_arp(nudge, frame + ETH_HLEN);
}

bool
ncm_nudge_learn_tx(NcmNudgeTx *tx, const uint8_t *frame, size_t len)
{
	const uint8_t *arp = frame + ETH_HLEN;

	/* A request (1) from a unicast address that names both ends. */
	if (!is_arp_ipv4(frame, len) || arp[6] != 0 || arp[7] != 1 || (arp[8] & 1) ||
	    memcmp(arp + 8, zero6, 6) == 0 || memcmp(arp + 14, zero6, 4) == 0 ||
	    memcmp(arp + 24, zero6, 4) == 0 || memcmp(arp + 14, arp + 24, 4) == 0)
		return false;
	memcpy(tx->host_mac, arp + 8, 6);
	memcpy(tx->host_ip4, arp + 14, 4);
	memcpy(tx->peer_ip4, arp + 24, 4);
	tx->fresh = true;
	return true;
}

void
ncm_nudge_merge_tx(NcmNudge *nudge, NcmNudgeTx *tx)
{
	if (tx->fresh) {
		tx->fresh = false;
		memcpy(nudge->host_mac, tx->host_mac, 6);
		memcpy(nudge->host_ip4, tx->host_ip4, 4);
		memcpy(nudge->peer_ip4, tx->peer_ip4, 4);
		nudge->have_host_mac = nudge->have_host_ip4 = nudge->have_peer_ip4 = true;
	}
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
}

void
ncm_nudge_ntb_begin(NcmNudge *nudge, int64_t now)
{
	nudge->last_rx = nudge->ntb_at = now;
	nudge->other = false;
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
ncm_nudge_ntb_end(NcmNudge *nudge, unsigned datagrams, size_t bytes)
{
	bool freed = nudge->sent && nudge->other;

	if (nudge->other)
		count_data_ntb(nudge, nudge->ntb_at,
			       datagrams >= NCM_NUDGE_FULL_DATAGRAMS || bytes >= NCM_NUDGE_FULL_BYTES);
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
	static const uint8_t arp_head[8] = { 0, 1, 0x08, 0, 6, 4, 0, 1 };
	uint8_t *arp = out + ETH_HLEN;

	if (!can_nudge(nudge))
		return false;
	memset(out, 0, NCM_NUDGE_FRAME_LEN);
	/* Unicast when the device's MAC is known, as Linux re-checks a neighbour. */
	memcpy(out, nudge->have_peer_mac ? nudge->peer_mac : broadcast, 6);
	memcpy(out + 6, nudge->host_mac, 6);
	out[12] = 0x08;
	out[13] = 0x06;
	memcpy(arp, arp_head, sizeof(arp_head));
	memcpy(arp + 8, nudge->host_mac, 6);
	memcpy(arp + 14, nudge->host_ip4, 4);
	memcpy(arp + 24, nudge->peer_ip4, 4);
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
