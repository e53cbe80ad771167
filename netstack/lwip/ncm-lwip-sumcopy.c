/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-sumcopy.c: LWIP_CHKSUM_COPY in one pass: tcp_write() copies and sums what it sends at once. */

/*
 * Why: lwIP's own lwip_chksum_copy() is memcpy() followed by a second pass
 * over the destination. This copies and sums 8 bytes per step. The end-
 * around carry makes every step depend on the last, so compilers keep it
 * scalar: vectorised sums lost under QEMU's TCG (RESULTS.md, session 7).
 */

#include <stdint.h>
#include <string.h>

#include "lwipopts.h"

static uint64_t
add_carry(uint64_t sum, uint64_t w)
{
	sum += w;
	return sum + (sum < w);
}

uint16_t
nlw_chksum_copy(void *dst, const void *src, uint16_t len)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	uint64_t sum = 0, w;

	for (; len >= 8; d += 8, s += 8, len -= 8) {
		memcpy(&w, s, 8);
		memcpy(d, &w, 8);
		sum = add_carry(sum, w);
	}
	if (len > 0) {
		/* Zero-padded: an odd last byte is the first of its 16-bit word. */
		uint8_t tail[8] = {0};

		memcpy(tail, s, len);
		memcpy(d, tail, len);
		memcpy(&w, tail, 8);
		sum = add_carry(sum, w);
	}
	/* Words are summed in memory order, as lwIP's own algorithms do. */
	sum = (sum & 0xFFFFFFFFu) + (sum >> 32);
	sum = (sum & 0xFFFFFFFFu) + (sum >> 32);
	sum = (sum & 0xFFFFu) + (sum >> 16);
	sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)sum;
}
