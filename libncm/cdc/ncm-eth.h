/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-eth.h: a length-checked view of an Ethernet frame and the ARP or IPv6 neighbour discovery inside it. */
#pragma once

/*
 * Every reader of link-layer addresses (the tail nudge, the lwIP netif's
 * peer learning, the TAP backend's ARP and NDP answers) goes through these
 * views, so each offset is checked once, here, and fuzzed (fuzz-eth). A
 * view's pointers point into the frame and are valid while it is; every
 * field they name lies wholly inside it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NCM_ETH_HLEN 14
#define NCM_ETH_ALEN 6
#define NCM_ETH_P_IPV4 0x0800
#define NCM_ETH_P_ARP 0x0806
#define NCM_ETH_P_IPV6 0x86dd
#define NCM_ARP_LEN 28          /* Ethernet/IPv4 ARP */
#define NCM_ARP_HTYPE_ETHER 1
#define NCM_IP4_ALEN 4
#define NCM_ARP_REQUEST 1
#define NCM_ARP_REPLY 2
/* Where the fields of an Ethernet/IPv4 ARP packet lie, for those who write one. */
#define NCM_ARP_OFF_OP 6
#define NCM_ARP_OFF_SHA 8
#define NCM_ARP_OFF_SPA 14
#define NCM_ARP_OFF_THA 18
#define NCM_ARP_OFF_TPA 24
#define NCM_IP6_HLEN 40
#define NCM_IP6_NEXT_ICMP6 58

typedef struct {
	const uint8_t *dst;       /* NCM_ETH_ALEN bytes */
	const uint8_t *src;       /* NCM_ETH_ALEN bytes */
	uint16_t type;            /* EtherType, host order */
	const uint8_t *payload;   /* after the 14-byte header (no VLAN tags) */
	size_t payload_len;
} NcmEthView;

/* False when @len is shorter than an Ethernet header. */
bool ncm_eth_view(NcmEthView *ret, const uint8_t *frame, size_t len);

static inline bool
ncm_eth_is_multicast(const uint8_t mac[NCM_ETH_ALEN])
{
	return mac[0] & 1;
}

/* An ARP packet for IPv4 over Ethernet (htype 1, ptype 0x0800, 6/4). */
typedef struct {
	uint16_t op;              /* NCM_ARP_REQUEST, NCM_ARP_REPLY, or other */
	const uint8_t *sha;       /* sender MAC, 6 bytes */
	const uint8_t *spa;       /* sender IPv4, 4 bytes */
	const uint8_t *tha;       /* target MAC, 6 bytes */
	const uint8_t *tpa;       /* target IPv4, 4 bytes */
} NcmArpView;

/* False unless @eth carries a whole Ethernet/IPv4 ARP packet. */
bool ncm_eth_arp(const NcmEthView *eth, NcmArpView *ret);

/* An ICMPv6 neighbour discovery message (types 133-137) right after the
 * IPv6 header, with the IPv6 payload length checked against the frame and
 * the message at least as long as its type's fixed part (RFC 4861). */
typedef struct {
	const uint8_t *ip6;       /* the IPv6 header, NCM_IP6_HLEN bytes */
	const uint8_t *src;       /* 16 bytes */
	const uint8_t *dst;       /* 16 bytes */
	uint8_t hop_limit;
	uint8_t type;             /* 133 RS, 134 RA, 135 NS, 136 NA, 137 redirect */
	uint8_t code;
	const uint8_t *msg;       /* the ICMPv6 message, @msg_len bytes */
	size_t msg_len;
	const uint8_t *target;    /* NS, NA and redirect: the target address (16 bytes, never
	                           * NULL), RS and RA: NULL */
} NcmNdView;

#define NCM_ND_RS 133
#define NCM_ND_RA 134
#define NCM_ND_NS 135
#define NCM_ND_NA 136
#define NCM_ND_REDIRECT 137

/* False unless @eth carries IPv6 whose next header is ICMPv6 neighbour discovery. */
bool ncm_eth_nd(const NcmEthView *eth, NcmNdView *ret);

/* The ICMPv6 checksum of the @len-byte message @msg (its checksum field
 * zero) sent in the IPv6 header @ip6, whose addresses the pseudo-header
 * takes (RFC 8200 8.1): network order, ready to store. */
uint16_t ncm_icmp6_checksum(const uint8_t ip6[NCM_IP6_HLEN], const uint8_t *msg, size_t len);

/* True for an IPv6 multicast address (ff00::/8). */
static inline bool
ncm_ip6_is_multicast(const uint8_t addr[16])
{
	return addr[0] == 0xff;
}

/* The MAC an IPv6 multicast address goes to (RFC 2464, 7): 33:33 and the
 * address's last 32 bits. */
static inline void
ncm_eth_ip6_multicast_mac(uint8_t mac[NCM_ETH_ALEN], const uint8_t addr[16])
{
	mac[0] = mac[1] = 0x33;
	memcpy(mac + 2, addr + 12, 4);
}

/* True when the 16-byte address is :: (unspecified). */
bool ncm_ip6_is_unspecified(const uint8_t addr[16]);
