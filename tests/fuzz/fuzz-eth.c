/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-eth.c: fuzz target for the Ethernet, ARP and ND views (libncm/cdc/ncm-eth.c). */
#include <string.h>

#include "fuzz.h"
#include "ncm-eth.h"

/*
 * Input: one Ethernet frame, as a device or a peer would send it. Beyond
 * memory safety the target checks the views' contract: every pointer lies
 * wholly inside the frame, lengths never exceed it, and a view accepts
 * exactly the frames whose raw bytes say it should.
 */

static const uint8_t *frame_end;
static const uint8_t *frame_start;

/* True when @n bytes at @p lie wholly inside the input. */
static int
inside(const uint8_t *p, size_t n)
{
	return p && p >= frame_start && p <= frame_end && n <= (size_t)(frame_end - p);
}

static void
check_arp(const NcmEthView *eth, const uint8_t *a)
{
	NcmArpView arp;
	/* RFC 826 for Ethernet and IPv4, from the raw bytes */
	int want = eth->type == 0x0806 && eth->payload_len >= 28 && a[0] == 0 && a[1] == 1 &&
		   a[2] == 0x08 && a[3] == 0x00 && a[4] == 6 && a[5] == 4;

	FUZZ_CHECK(ncm_eth_arp(eth, &arp) == want);
	if (!want)
		return;
	FUZZ_CHECK(inside(arp.sha, 6) && inside(arp.spa, 4));
	FUZZ_CHECK(inside(arp.tha, 6) && inside(arp.tpa, 4));
	FUZZ_CHECK(arp.sha == a + 8 && arp.spa == a + 14 && arp.tha == a + 18 && arp.tpa == a + 24);
	FUZZ_CHECK(arp.op == (a[6] << 8 | a[7]));
}

static size_t
nd_min(uint8_t type)
{
	static const size_t min[] = { 8, 16, 24, 24, 40 };

	return type >= 133 && type <= 137 ? min[type - 133] : 0;
}

static void
check_nd_view(const NcmEthView *eth, const NcmNdView *nd)
{
	FUZZ_CHECK(eth->type == 0x86dd && eth->payload_len >= 40);
	FUZZ_CHECK(nd->ip6 == eth->payload && inside(nd->ip6, 40));
	FUZZ_CHECK(nd->src == nd->ip6 + 8 && nd->dst == nd->ip6 + 24);
	FUZZ_CHECK(inside(nd->src, 16) && inside(nd->dst, 16));
	FUZZ_CHECK(nd->ip6[0] >> 4 == 6 && nd->ip6[6] == 58 && nd->hop_limit == nd->ip6[7]);
	/* the message is what the IPv6 header says, never more than the frame */
	FUZZ_CHECK(nd->msg == nd->ip6 + 40 && inside(nd->msg, nd->msg_len));
	FUZZ_CHECK(nd->msg_len == (size_t)(nd->ip6[4] << 8 | nd->ip6[5]));
	FUZZ_CHECK(nd->msg_len <= eth->payload_len - 40);
	FUZZ_CHECK(nd_min(nd->type) && nd->msg_len >= nd_min(nd->type));
	FUZZ_CHECK(nd->type == nd->msg[0] && nd->code == nd->msg[1]);
	if (nd->type >= 135) {
		FUZZ_CHECK(nd->target == nd->msg + 8 && inside(nd->target, 16));
		FUZZ_CHECK((size_t)(nd->target + 16 - nd->msg) <= nd->msg_len);
	} else {
		FUZZ_CHECK(nd->target == NULL);
	}
}

static void
check_nd(const NcmEthView *eth, const uint8_t *ip)
{
	NcmNdView nd;
	size_t plen;
	int want = 0;

	if (eth->type == 0x86dd && eth->payload_len >= 40 && ip[0] >> 4 == 6 && ip[6] == 58) {
		plen = (size_t)(ip[4] << 8 | ip[5]);
		want = plen <= eth->payload_len - 40 && plen >= 1 && nd_min(ip[40]) &&
		       plen >= nd_min(ip[40]);
	}
	FUZZ_CHECK(ncm_eth_nd(eth, &nd) == want);
	if (want)
		check_nd_view(eth, &nd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	NcmEthView eth;
	int zero = 1;

	frame_start = data;
	frame_end = data + size;
	FUZZ_CHECK(ncm_eth_view(&eth, data, size) == (size >= 14));
	if (size < 14)
		return 0;
	FUZZ_CHECK(eth.dst == data && eth.src == data + 6 && inside(eth.src, 6));
	FUZZ_CHECK(eth.type == (data[12] << 8 | data[13]));
	FUZZ_CHECK(eth.payload == data + 14 && eth.payload_len == size - 14);
	FUZZ_CHECK(inside(eth.payload, eth.payload_len));
	FUZZ_CHECK(ncm_eth_is_multicast(eth.dst) == (data[0] & 1));
	check_arp(&eth, eth.payload);
	check_nd(&eth, eth.payload);
	if (size >= 30) {
		for (size_t i = 14; i < 30; i++)
			zero &= data[i] == 0;
		FUZZ_CHECK(ncm_ip6_is_unspecified(data + 14) == zero);
	}
	return 0;
}
