/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-nudge.c: fuzz target for the tail nudge's learning from device frames and its stream clock. */
#include <string.h>

#include "fuzz.h"
#include "ncm-nudge.h"

/*
 * Input: a sequence of NTBs, each one byte of time step (ms), one byte of
 * frame count (modulo 8; bit 3 set: the frames are the host's, sent, not
 * received), then per frame one length byte followed by that many bytes.
 * Each frame is copied to its own allocation so that reading past it is
 * caught.
 */

static const uint8_t zero[6];

/* The host's own addresses, as each of its ARP packets (sent, not received) named them. */
#define HOST_SAID_MAX 512

typedef struct {
	unsigned n;
	bool overflow;     /* more than HOST_SAID_MAX: the check is skipped */
	uint8_t mac[HOST_SAID_MAX][6];
	uint8_t ip[HOST_SAID_MAX][4];
} HostSaid;

static void
host_said(HostSaid *host, const NcmNudgeTx *tx)
{
	if (host->n == HOST_SAID_MAX) {
		host->overflow = true;
		return;
	}
	memcpy(host->mac[host->n], tx->host_mac, 6);
	memcpy(host->ip[host->n], tx->host_ip4, 4);
	host->n++;
}

static bool
host_named(const HostSaid *host, const uint8_t *mac, const uint8_t *ip)
{
	if (host->overflow)
		return true;
	for (unsigned i = 0; i < host->n; i++)
		if (memcmp(host->mac[i], mac, 6) == 0 && memcmp(host->ip[i], ip, 4) == 0)
			return true;
	return false;
}

static void
check_request(const NcmNudge *n, const HostSaid *host)
{
	uint8_t f[NCM_NUDGE_FRAME_LEN];
	bool all = n->have_peer_ip4 && n->have_host_ip4 && n->have_host_mac;
	int64_t due = ncm_nudge_due(n, 1000);

	FUZZ_CHECK(ncm_nudge_frame(n, f) == all);
	if (!all) {
		FUZZ_CHECK(ncm_nudge_due(n, 1000) == INT64_MAX);
		return;
	}
	/* Issue 16: the nudge speaks only in the host's name, never with an
	 * address a received frame named. */
	FUZZ_CHECK(host_named(host, f + 22, f + 28));
	/* Never a request from or to 0.0.0.0, never from a multicast MAC. */
	FUZZ_CHECK(memcmp(f + 28, zero, 4) != 0 && memcmp(f + 38, zero, 4) != 0);
	FUZZ_CHECK(!(f[6] & 1) && memcmp(f + 6, f + 22, 6) == 0);
	FUZZ_CHECK(f[12] == 0x08 && f[13] == 0x06 && f[21] == 1);
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
				if (kind != NCM_NUDGE_TX_OTHER)
					host_said(&host, &tx);
			}
			free(buf);
			off += len;
		}
		if (!sent)
			(void)ncm_nudge_ntb_end(&n);
		ncm_nudge_merge_tx(&n, &tx);
		FUZZ_CHECK(!tx.fresh);
		check_request(&n, &host);
		if (data[off - 1] & 0x80 && (ncm_nudge_armed(&n) || n.asked_at)) {
			ncm_nudge_sent(&n, now);
			FUZZ_CHECK(!ncm_nudge_armed(&n) && !n.asked_at && ncm_nudge_due(&n, 1000) == INT64_MAX);
			FUZZ_CHECK(n.not_before > now && n.backoff <= NCM_NUDGE_BACKOFF_MAX_US);
		}
	}
	return 0;
}
