/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-csum.c: CPU time per MB of the Internet checksums libncm's netstacks run on every byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncm-tap-gso.h"
#ifdef BENCH_CSUM_LWIP
#include "lwip/opt.h"
#endif

/*
 * What matters is their cost under QEMU's TCG, where the VM benchmarks run
 * (tests/bench/csum-vm.sh runs this in the guest): code that is cheap
 * natively can be several times dearer there (tests/bench/RESULTS.md,
 * session 14). The data starts 2 bytes past an 8-byte boundary, as a
 * segment's payload does behind Ethernet, IPv4 and TCP with timestamps.
 */

typedef guint32 (*SumFn)(guint32 sum, guint8 *dst, const guint8 *src, gsize len);

static guint32
tap_sum(guint32 sum, guint8 *dst, const guint8 *src, gsize len)
{
	(void)dst;
	return ncm_gso_csum_add(sum & 0xFFFF, src, len);
}

#ifdef BENCH_CSUM_LWIP
/* lwIP's own loop and copy (memcpy() then the loop), against ours. */
static guint32
lwip_sum(guint32 sum, guint8 *dst, const guint8 *src, gsize len)
{
	(void)dst;
	return sum + lwip_standard_chksum(src, (int)len);
}

static guint32
ncm_sum(guint32 sum, guint8 *dst, const guint8 *src, gsize len)
{
	(void)dst;
	return sum + ncm_lwip_chksum(src, (int)len);
}

static guint32
lwip_copy(guint32 sum, guint8 *dst, const guint8 *src, gsize len)
{
	memcpy(dst, src, len);
	return sum + lwip_standard_chksum(dst, (int)len);
}

static guint32
ncm_copy(guint32 sum, guint8 *dst, const guint8 *src, gsize len)
{
	return sum + ncm_lwip_chksum_copy(dst, src, (u16_t)len);
}

/* The alternative to ncm_lwip_chksum_copy()'s one pass. */
static guint32
memcpy_ncm_sum(guint32 sum, guint8 *dst, const guint8 *src, gsize len)
{
	memcpy(dst, src, len);
	return sum + ncm_lwip_chksum(dst, (int)len);
}
#endif

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		SumFn fn;
		gsize len;
	} runs[] = {
		{"ncm_gso_csum_add", tap_sum, 1448},
		{"ncm_gso_csum_add", tap_sum, 65535},
#ifdef BENCH_CSUM_LWIP
		{"lwip_standard_chksum", lwip_sum, 1448},
		{"ncm_lwip_chksum", ncm_sum, 1448},
		{"memcpy + lwip_standard_chksum", lwip_copy, 1448},
		{"ncm_lwip_chksum_copy (one pass)", ncm_copy, 1448},
		{"memcpy + ncm_lwip_chksum", memcpy_ncm_sum, 1448},
#endif
	};
	gdouble mb = argc > 1 ? g_ascii_strtod(argv[1], NULL) : 64;
	guint8 *buf = g_malloc(65536 + 16), *dst = g_malloc(65536 + 16);
	guint32 sink = 0;

	for (gsize i = 0; i < 65536 + 16; i++)
		buf[i] = (guint8)(i * 131 + 7);
	for (guint r = 0; r < G_N_ELEMENTS(runs); r++) {
		gsize len = runs[r].len, n = (gsize)(mb * 1e6 / len) + 1;
		gint64 t0 = g_get_monotonic_time();

		for (gsize i = 0; i < n; i++) {
			buf[2 + i % len] ^= 1; /* nothing to hoist out of the loop */
			sink = runs[r].fn(sink, dst + 2, buf + 2, len);
		}
		printf("%-30s len %5zu: %.3f ms per MB\n", runs[r].name, len,
		       (gdouble)(g_get_monotonic_time() - t0) / 1000.0 / ((gdouble)n * len / 1e6));
	}
	g_free(dst);
	g_free(buf);
	return sink == 1; /* keeps the sums alive */
}
