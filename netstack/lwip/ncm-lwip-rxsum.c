/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-rxsum.c: received frames copied into lwIP with their TCP checksum checked on the copy. */

/*
 * Why: lwIP sums every received TCP segment in tcp_input(), a whole batch
 * (up to 64 frames, ~96 KB) after the frame was copied, when the copy has
 * left the L1 cache, and with 32-bit sums that test for a carry on every
 * word. Here the segment is summed as it is copied into lwIP's pbuf, each
 * 64-bit word loaded once (ncm_csum64_copy(), as the kernel's
 * csum_partial_copy_generic()); the netif then tells lwIP (per frame,
 * through its checksum flags) that this frame's TCP checksum was checked.
 * The check itself is kept: the device may forward packets from anywhere,
 * and USB's CRC covers only the wire. A frame that fails here is not
 * dropped here but left to lwIP, which checks it again and counts it
 * (tcp.chkerr), so the drop and its counter stay lwIP's.
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

/* The headers are read from the copy: the frame's buffer is the link's, and
 * the bytes checked must be the ones lwIP gets. So Ethernet and the longest
 * IP header are copied first; the TCP segment is then copied again with
 * its sum, which covers only what lands in the copy. */
#define HEAD_COPY (ETH_HLEN + 60)

/* The pseudo-header's sum for a TCP segment of @tcp_len bytes between the
 * @addr_len-byte addresses at @addrs (source then destination). */
static guint64
pseudo_sum(const guint8 *addrs, gsize addr_len, gsize tcp_len)
{
	/* zero, protocol, then the 16 or 32 bits of TCP length, big-endian;
	 * a zero upper half of a 32-bit length adds nothing. */
	guint8 tail[4] = {0, IPPROTO_TCP_NUM, (guint8)(tcp_len >> 8), (guint8)tcp_len};

	return ncm_csum64_add(ncm_csum64_add(0, addrs, 2 * addr_len), tail, sizeof(tail));
}

/* From the copied headers at @dst: where the TCP segment lies and its
 * pseudo-header's sum. FALSE for what lwIP is left to check. */
static gboolean
tcp_segment(const guint8 *dst, gsize len, gsize *ret_l4, gsize *ret_tcp_len, guint64 *ret_sum)
{
	const guint8 *ip = dst + ETH_HLEN;
	gsize ip_room;

	if (len < ETH_HLEN)
		return FALSE;
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
		*ret_l4 = ETH_HLEN + ihl;
		*ret_tcp_len = total - ihl;
		*ret_sum = pseudo_sum(ip + 12, 4, total - ihl);
		return TRUE;
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
		*ret_l4 = ETH_HLEN + IP6_HLEN;
		*ret_tcp_len = payload;
		*ret_sum = pseudo_sum(ip + 8, 16, payload);
		return TRUE;
	}
	default:
		return FALSE;
	}
}

gboolean
nlw_rx_copy_check(guint8 *dst, const guint8 *frame, gsize len)
{
	gsize head = MIN(len, HEAD_COPY), l4, tcp_len, end;
	guint64 sum;

	memcpy(dst, frame, head);
	if (!tcp_segment(dst, len, &l4, &tcp_len, &sum)) {
		memcpy(dst + head, frame + head, len - head);
		return FALSE;
	}
	/* l4 <= HEAD_COPY: the segment's start was copied already and is
	 * copied again with the rest, so nothing is left out between. */
	end = l4 + tcp_len;
	sum = ncm_csum64_copy(dst + l4, frame + l4, tcp_len, sum);
	memcpy(dst + end, frame + end, len - end); /* the Ethernet pad */
	return ncm_csum64_fold(sum) == 0xFFFF;
}
