/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-nudge.c: fuzz target for the tail nudge's learning from host and device frames, its stream clock and its requests. */
#include <string.h>

#include "fuzz.h"
#include "ncm-eth.h"
#include "ncm-nudge.h"

/*
 * Input: a sequence of NTBs, each one byte of time step (ms), one byte of
 * frame count (modulo 8; bit 3 set: the frames are the host's, sent, not
 * received), then per frame one length byte followed by that many bytes.
 * Each frame is copied to its own allocation so that reading past it is
 * caught.
 */

static const uint8_t zero[6];

/* The host's own addresses, as each of its ARP and neighbour discovery
 * packets (sent, not received) named them. */
#define HOST_SAID_MAX 512

typedef struct {
	unsigned n;
	bool overflow;     /* more than HOST_SAID_MAX: the check is skipped */
	uint8_t mac[HOST_SAID_MAX][6];
	uint8_t ip[HOST_SAID_MAX][16];
	size_t ip_len[HOST_SAID_MAX];
} HostSaid;

static void
host_said(HostSaid *host, const NcmNudgeSaid *said, size_t ip_len)
{
	if (host->n == HOST_SAID_MAX) {
		host->overflow = true;
		return;
	}
	memcpy(host->mac[host->n], said->host_mac, 6);
	memcpy(host->ip[host->n], said->host_ip, ip_len);
	host->ip_len[host->n] = ip_len;
	host->n++;
}

static bool
host_named(const HostSaid *host, const uint8_t *mac, const uint8_t *ip, size_t ip_len)
{
	if (host->overflow)
		return true;
	for (unsigned i = 0; i < host->n; i++)
		if (host->ip_len[i] == ip_len && memcmp(host->mac[i], mac, 6) == 0 &&
		    memcmp(host->ip[i], ip, ip_len) == 0)
			return true;
	return false;
}

/* A solicitation asks the device's unicast address, from the host's, with
 * hop limit 255, a checksum the device accepts and the host's MAC in its
 * option; to the device's MAC or its address's solicited-node group. */
static void
check_solicitation(const uint8_t *f, size_t len, const HostSaid *host)
{
	static const uint8_t solicited[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	NcmEthView eth;
	NcmNdView nd;
	uint32_t sum = NCM_IP6_NEXT_ICMP6;

	FUZZ_CHECK(ncm_eth_view(&eth, f, len) && ncm_eth_nd(&eth, &nd));
	FUZZ_CHECK(nd.type == NCM_ND_NS && nd.code == 0 && nd.hop_limit == 255);
	FUZZ_CHECK(host_named(host, eth.src, nd.src, 16));
	FUZZ_CHECK(!ncm_eth_is_multicast(eth.src) && memcmp(eth.src, zero, 6) != 0);
	FUZZ_CHECK(!ncm_ip6_is_unspecified(nd.src) && nd.src[0] != 0xff);
	FUZZ_CHECK(!ncm_ip6_is_unspecified(nd.target) && nd.target[0] != 0xff &&
		   memcmp(nd.target, nd.src, 16) != 0);
	if (memcmp(nd.dst, nd.target, 16) != 0)
		FUZZ_CHECK(memcmp(nd.dst, solicited, 13) == 0 &&
			   memcmp(nd.dst + 13, nd.target + 13, 3) == 0 && f[0] == 0x33 &&
			   f[1] == 0x33 && memcmp(f + 2, nd.dst + 12, 4) == 0);
	FUZZ_CHECK(nd.msg_len == 32 && nd.msg[24] == 1 && nd.msg[25] == 1 &&
		   memcmp(nd.msg + 26, eth.src, 6) == 0);
	for (size_t i = 0; i < 16; i += 2)
		sum += (uint32_t)(nd.src[i] << 8 | nd.src[i + 1]) +
		       (uint32_t)(nd.dst[i] << 8 | nd.dst[i + 1]);
	sum += (uint32_t)nd.msg_len;
	for (size_t i = 0; i < nd.msg_len; i += 2)
		sum += (uint32_t)(nd.msg[i] << 8 | nd.msg[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	FUZZ_CHECK(sum == 0xffff);
}

/* Issue 16: the nudge speaks only in the host's name, never with an
 * address a received frame named; never from or to 0.0.0.0, never from a
 * multicast MAC. */
static void
check_arp(const uint8_t *f, const HostSaid *host)
{
	FUZZ_CHECK(host_named(host, f + 22, f + 28, 4));
	FUZZ_CHECK(memcmp(f + 28, zero, 4) != 0 && memcmp(f + 38, zero, 4) != 0);
	FUZZ_CHECK(!(f[6] & 1) && memcmp(f + 6, f + 22, 6) == 0);
	FUZZ_CHECK(f[12] == 0x08 && f[13] == 0x06 && f[21] == 1);
}

static void
check_request(const NcmNudge *n, const HostSaid *host)
{
	uint8_t f[NCM_NUDGE_FRAME_MAX];
	size_t len = ncm_nudge_frame(n, f);
	int64_t due = ncm_nudge_due(n, 1000);

	if (!n->v4.have && !n->v6.have) {
		FUZZ_CHECK(len == 0 && due == INT64_MAX);
		return;
	}
	/* IPv4 when the host spoke it, IPv6 only on a link without. */
	if (n->v4.have) {
		FUZZ_CHECK(len == NCM_NUDGE_FRAME_ARP_LEN);
		check_arp(f, host);
	} else {
		FUZZ_CHECK(len == NCM_NUDGE_FRAME_NS_LEN);
		check_solicitation(f, len, host);
	}
	if (!ncm_nudge_armed(n) && !n->asked_at)
		FUZZ_CHECK(due == INT64_MAX);
	else
		FUZZ_CHECK(due >= n->not_before && due != INT64_MAX);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	NcmNudge n;
	NcmNudgeTx tx;
	static HostSaid host;
	int64_t now = 0;
	size_t off = 0;

	ncm_nudge_init(&n);
	memset(&tx, 0, sizeof(tx));
	host.n = 0;
	host.overflow = false;
	while (off + 2 <= size) {
		unsigned frames = data[off + 1] % 8;
		bool sent = data[off + 1] & 8;

		now += (int64_t)data[off] * 1000;
		off += 2;
		if (!sent) {
			ncm_nudge_ntb_begin(&n, now);
			FUZZ_CHECK(n.last_rx == now && n.asked_at == 0);
		}
		unsigned i;

		for (i = 0; i < frames && off < size; i++) {
			size_t len = data[off++];
			uint8_t *buf;

			if (len > size - off)
				len = size - off;
			buf = malloc(len ? len : 1);
			FUZZ_CHECK(buf != NULL);
			memcpy(buf, data + off, len);
			if (!sent)
				ncm_nudge_learn(&n, buf, len);
			else {
				NcmNudgeTxKind kind = ncm_nudge_learn_tx(&tx, buf, len);

				if (kind == NCM_NUDGE_TX_ASK)
					tx.asked_at = now;
				if (kind != NCM_NUDGE_TX_OTHER) {
					bool v6 = len >= 14 && buf[12] == 0x86;

					host_said(&host, v6 ? &tx.v6 : &tx.v4, v6 ? 16 : 4);
				}
			}
			free(buf);
			off += len;
		}
		if (!sent)
			(void)ncm_nudge_ntb_end(&n);
		ncm_nudge_merge_tx(&n, &tx);
		FUZZ_CHECK(!tx.v4.fresh && !tx.v6.fresh);
		check_request(&n, &host);
		if (data[off - 1] & 0x80 && (ncm_nudge_armed(&n) || n.asked_at)) {
			ncm_nudge_sent(&n, now);
			FUZZ_CHECK(!ncm_nudge_armed(&n) && !n.asked_at && ncm_nudge_due(&n, 1000) == INT64_MAX);
			FUZZ_CHECK(n.not_before > now && n.backoff <= NCM_NUDGE_BACKOFF_MAX_US);
		}
	}
	return 0;
}
