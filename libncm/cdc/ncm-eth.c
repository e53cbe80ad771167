/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-eth.c: the checked Ethernet, ARP and neighbour discovery views (see ncm-eth.h). */
#include <stdint.h>
#include <string.h>

#include "ncm-eth.h"
#include "ncm-le.h"

bool
ncm_eth_view(NcmEthView *ret, const uint8_t *frame, size_t len)
{
	if (!ncm_le_fits(len, 0, NCM_ETH_HLEN))
		return false;
	ret->dst = frame;
	ret->src = frame + NCM_ETH_ALEN;
	ret->type = ncm_be16_at(frame, len, 12);
	ret->payload = frame + NCM_ETH_HLEN;
	ret->payload_len = len - NCM_ETH_HLEN;
	return true;
}

bool
ncm_eth_arp(const NcmEthView *eth, NcmArpView *ret)
{
	const uint8_t *a = eth->payload;
	size_t len = eth->payload_len;

	/* Ethernet (1) over IPv4 (0x0800), 6- and 4-byte addresses. */
	if (eth->type != NCM_ETH_P_ARP || !ncm_le_fits(len, 0, NCM_ARP_LEN) ||
	    ncm_be16_at(a, len, 0) != NCM_ARP_HTYPE_ETHER ||
	    ncm_be16_at(a, len, 2) != NCM_ETH_P_IPV4 ||
	    ncm_le8_at(a, len, 4) != NCM_ETH_ALEN || ncm_le8_at(a, len, 5) != NCM_IP4_ALEN)
		return false;
	ret->op = ncm_be16_at(a, len, NCM_ARP_OFF_OP);
	ret->sha = ncm_bytes_at(a, len, NCM_ARP_OFF_SHA, NCM_ETH_ALEN);
	ret->spa = ncm_bytes_at(a, len, NCM_ARP_OFF_SPA, NCM_IP4_ALEN);
	ret->tha = ncm_bytes_at(a, len, NCM_ARP_OFF_THA, NCM_ETH_ALEN);
	ret->tpa = ncm_bytes_at(a, len, NCM_ARP_OFF_TPA, NCM_IP4_ALEN);
	return true;
}

/*
 * The fixed part of each message (RFC 4861 6.1, 7.1, 8.1: shorter ones are
 * discarded), or SIZE_MAX for a type that is not neighbour discovery.
 */
static size_t
nd_min_len(uint8_t type)
{
	switch (type) {
	case NCM_ND_RS:
		return 8;
	case NCM_ND_RA:
		return 16;
	case NCM_ND_NS:
	case NCM_ND_NA:
		return 24;
	case NCM_ND_REDIRECT:
		return 40;
	default:
		return SIZE_MAX;
	}
}

bool
ncm_eth_nd(const NcmEthView *eth, NcmNdView *ret)
{
	const uint8_t *ip = eth->payload, *msg;
	size_t len = eth->payload_len, plen;
	uint8_t type;

	if (eth->type != NCM_ETH_P_IPV6 || !ncm_le_fits(len, 0, NCM_IP6_HLEN) ||
	    ncm_le8_at(ip, len, 0) >> 4 != 6 || ncm_le8_at(ip, len, 6) != NCM_IP6_NEXT_ICMP6)
		return false;
	/* The payload length, not the frame's: frames may carry padding. */
	plen = ncm_be16_at(ip, len, 4);
	msg = ncm_bytes_at(ip, len, NCM_IP6_HLEN, plen);
	if (!msg)
		return false;
	type = ncm_le8_at(msg, plen, 0);
	/* Also keeps @target non-NULL for the types that have one. */
	if (plen < nd_min_len(type))
		return false;
	ret->ip6 = ip;
	ret->src = ncm_bytes_at(ip, len, 8, 16);
	ret->dst = ncm_bytes_at(ip, len, 24, 16);
	ret->hop_limit = ncm_le8_at(ip, len, 7);
	ret->type = type;
	ret->code = ncm_le8_at(msg, plen, 1);
	ret->msg = msg;
	ret->msg_len = plen;
	/* NS and NA: 4 bytes reserved/flags then the target; redirect the same. */
	ret->target = type >= NCM_ND_NS ? ncm_bytes_at(msg, plen, 8, 16) : NULL;
	return true;
}

uint16_t
ncm_icmp6_checksum(const uint8_t ip6[NCM_IP6_HLEN], const uint8_t *msg, size_t len)
{
	uint32_t sum = (uint32_t)len + NCM_IP6_NEXT_ICMP6;

	/* The pseudo-header's source and destination addresses. */
	for (size_t i = 8; i < NCM_IP6_HLEN; i += 2)
		sum += ncm_be16_at(ip6, NCM_IP6_HLEN, i);
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += ncm_be16_at(msg, len, i);
	if (len & 1)
		sum += (uint32_t)msg[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

bool
ncm_ip6_is_unspecified(const uint8_t addr[16])
{
	static const uint8_t zero[16];

	return memcmp(addr, zero, 16) == 0;
}
