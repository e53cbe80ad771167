/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-csum.c: lwIP's checksum routines (LWIP_CHKSUM, LWIP_CHKSUM_COPY) on libncm's 64-bit sum. */

/*
 * Why: lwIP sums every segment it sends (tcp_write()'s checksum-on-copy)
 * and every non-TCP packet it receives with its own 32-bit loop, which
 * tests for a carry on every word: under QEMU's TCG, where the VM
 * benchmarks run, it costs 2-3x ncm-csum.h's whole 64-bit words with the
 * carries counted apart, natively 3x (tests/bench/bench-csum.c). The copy
 * and its sum are one pass (ncm_csum64_copy()): each word loaded once,
 * half of memcpy() and a second read under TCG.
 * Both return what lwIP's routines return: the folded, not inverted, sum
 * of the bytes as 16-bit words in memory order, whatever the alignment.
 */

#include "lwip/opt.h"

#include "ncm-csum.h"

u16_t
ncm_lwip_chksum(const void *data, int len)
{
	return len > 0 ? ncm_csum64_fold(ncm_csum64_add(0, data, (size_t)len)) : 0;
}

u16_t
ncm_lwip_chksum_copy(void *dst, const void *src, u16_t len)
{
	return ncm_csum64_fold(ncm_csum64_copy(dst, src, len, 0));
}
