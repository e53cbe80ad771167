/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-csum.h: the Internet checksum's ones' complement sum, in whole 64-bit words (header-only). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Why one loop, inline: ncm-tun's TAP checksums (every TSO segment's
 * payload) and lwIP's receive check (every received TCP segment) both sum
 * every byte they move, and the lwIP port links no more of libncm than its
 * headers. Why this shape: the vector code compilers make of 32-bit words
 * summed into 64 bits runs several times slower under QEMU's TCG, where
 * the VM benchmarks run, and costs the same as this natively
 * (tests/bench/RESULTS.md, session 14). So: whole 64-bit words, four a
 * turn, each add's carry counted apart (the compiler makes an add and an
 * adc of it), in scalar registers.
 */

static inline void
ncm_csum64_word(uint64_t *sum, uint64_t *carries, uint64_t w)
{
	*carries += __builtin_add_overflow(*sum, w, sum);
}

/*
 * Adds @len bytes at @p to @sum, unfolded: native-order 16-bit words, a
 * last odd byte padded with a zero byte. Byte order does not matter to the
 * ones' complement sum (RFC 1071, 2.B): fold the result to 16 bits and
 * swap it to network order once. Any @sum may come in (an earlier result);
 * the carries wrap around, each worth 1 modulo 2^64 - 1, which 2^16 - 1
 * divides.
 */
static inline uint64_t
ncm_csum64_add(uint64_t sum, const uint8_t *p, size_t len)
{
	uint64_t carries = 0, w0, w1, w2, w3, tail = 0;
	uint32_t w32;
	uint16_t w16;

	for (; len >= 32; p += 32, len -= 32) {
		memcpy(&w0, p, 8);
		memcpy(&w1, p + 8, 8);
		memcpy(&w2, p + 16, 8);
		memcpy(&w3, p + 24, 8);
		ncm_csum64_word(&sum, &carries, w0);
		ncm_csum64_word(&sum, &carries, w1);
		ncm_csum64_word(&sum, &carries, w2);
		ncm_csum64_word(&sum, &carries, w3);
	}
	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w0, p, 8);
		ncm_csum64_word(&sum, &carries, w0);
	}
	if (len >= 4) {
		memcpy(&w32, p, 4);
		tail += w32;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&w16, p, 2);
		tail += w16;
		p += 2;
		len -= 2;
	}
	if (len) {
		const uint8_t last[2] = { p[0], 0 };

		memcpy(&w16, last, 2);
		tail += w16;
	}
	ncm_csum64_word(&sum, &carries, tail);
	sum += carries;
	sum += sum < carries;
	return sum;
}

/*
 * Folds a sum from ncm_csum64_add() or ncm_csum64_copy() to 16 bits, with
 * every carry wrapped around, not inverted, in the data's byte order.
 */
static inline uint16_t
ncm_csum64_fold(uint64_t sum)
{
	sum = (sum & 0xFFFFFFFF) + (sum >> 32);
	sum = (sum & 0xFFFFFFFF) + (sum >> 32);
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)sum;
}

/*
 * Copies @len bytes from @src to @dst and adds them to @sum as
 * ncm_csum64_add() would. For senders that sum what they copy (lwIP's
 * checksum-on-copy): one load per word instead of memcpy()'s and then the
 * sum's: half the cost of the two under TCG (tests/bench/bench-csum.c);
 * natively both are a few hundredths of a millisecond per MB. One word a
 * turn: the compiler keeps it scalar.
 */
static inline uint64_t
ncm_csum64_copy(uint8_t *dst, const uint8_t *src, size_t len, uint64_t sum)
{
	uint64_t carries = 0, w;

	for (; len >= 8; src += 8, dst += 8, len -= 8) {
		memcpy(&w, src, 8);
		memcpy(dst, &w, 8);
		ncm_csum64_word(&sum, &carries, w);
	}
	sum += carries;
	sum += sum < carries;
	memcpy(dst, src, len);
	return ncm_csum64_add(sum, dst, len);
}
