/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-rxsum.c: received frames copied into lwIP with their TCP checksum checked on the copy. */

/*
 * Why: lwIP sums every received TCP segment in tcp_input(), a whole batch
 * (up to 64 frames, ~96 KB) after the frame was copied, when the copy has
 * left the L1 cache, and with 32-bit sums that test for a carry on every
 * word. Summing the copy right after memcpy() reads it from L1 in 64-bit
 * words (ncm-csum.h); the netif then tells lwIP (per frame, through its
 * checksum flags) that this frame's TCP checksum was checked. The check
 * itself is kept: the device may forward packets from anywhere, and USB's
 * CRC covers only the wire. A frame that fails here is not dropped here but
 * left to lwIP, which checks it again and counts it (tcp.chkerr), so the
 * drop and its counter stay lwIP's.
 */

#include <string.h>

#include "ncm-csum.h"
#include "ncm-le.h"
#include "ncm-lwip-rxsum.h"

#define ETH_HLEN 14
#define IP4_HLEN 20
#define IP6_HLEN 40
#define TCP_HLEN 20
#define IPPROTO_TCP_NUM 6

/* The TCP segment at @tcp (@tcp_len bytes) with the pseudo-header of
 * @addr_len-byte addresses at @addrs (source then destination). */
static gboolean
tcp_sum_ok(const guint8 *addrs, gsize addr_len, const guint8 *tcp, gsize tcp_len)
{
	/* zero, protocol, then the 16 or 32 bits of TCP length, big-endian;
	 * a zero upper half of a 32-bit length adds nothing. */
	guint8 tail[4] = {0, IPPROTO_TCP_NUM, (guint8)(tcp_len >> 8), (guint8)tcp_len};
	guint64 sum = ncm_csum64_add(0, addrs, 2 * addr_len);

	sum = ncm_csum64_add(sum, tail, sizeof(tail));
	return ncm_csum64_fold(ncm_csum64_add(sum, tcp, tcp_len)) == 0xFFFF;
}

gboolean
nlw_rx_copy_check(guint8 *dst, const guint8 *frame, gsize len)
{
	const guint8 *ip;
	gsize ip_room;

	memcpy(dst, frame, len);
	if (len < ETH_HLEN)
		return FALSE;
	/* From here on only the copy is read: the frame's buffer is the
	 * link's, and the checked bytes must be the ones lwIP gets. */
	ip = dst + ETH_HLEN;
	ip_room = len - ETH_HLEN;
	switch (ncm_be16_at(dst, len, 12)) {
	case 0x0800: {
		gsize ihl, total;

		if (ip_room < IP4_HLEN || ip[0] >> 4 != 4 || ip[9] != IPPROTO_TCP_NUM)
			return FALSE;
		ihl = (gsize)(ip[0] & 0x0F) * 4;
		total = ncm_be16_at(ip, ip_room, 2);
		/* Fragments (MF set or an offset) are left to lwIP, which sums
		 * the datagram after reassembly. */
		if (ihl < IP4_HLEN || total < ihl + TCP_HLEN || total > ip_room ||
		    (ncm_be16_at(ip, ip_room, 6) & 0x3FFF) != 0)
			return FALSE;
		return tcp_sum_ok(ip + 12, 4, ip + ihl, total - ihl);
	}
	case 0x86DD: {
		gsize payload;

		if (ip_room < IP6_HLEN || ip[0] >> 4 != 6 || ip[6] != IPPROTO_TCP_NUM)
			return FALSE;
		payload = ncm_be16_at(ip, ip_room, 4);
		/* A zero payload length means a jumbogram (a hop-by-hop
		 * option), which has no TCP right behind the header. */
		if (payload < TCP_HLEN || payload > ip_room - IP6_HLEN)
			return FALSE;
		return tcp_sum_ok(ip + 8, 16, ip + IP6_HLEN, payload);
	}
	default:
		return FALSE;
	}
}
