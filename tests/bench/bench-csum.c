/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-csum.c: CPU time per MB of tap_csum_add, the TAP backend's Internet checksum. */
#include <stdio.h>
#include <stdlib.h>

#include "ncm-tap-gso.h"

/*
 * What matters is its cost under QEMU's TCG, where the VM benchmarks run
 * (tests/bench/csum-vm.sh runs this in the guest): code that is cheap
 * natively can be several times dearer there (tests/bench/RESULTS.md,
 * session 14). The payload starts 2 bytes past an 8-byte boundary, as a
 * segment's payload does behind Ethernet, IPv4 and TCP with timestamps.
 */
int
main(int argc, char **argv)
{
	static const gsize sizes[] = {1448, 65536};
	gdouble mb = argc > 1 ? g_ascii_strtod(argv[1], NULL) : 64;
	guint8 *buf = g_malloc(65536 + 16);
	guint32 sink = 0;

	for (gsize i = 0; i < 65536 + 16; i++)
		buf[i] = (guint8)(i * 131 + 7);
	for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
		gsize len = sizes[s], n = (gsize)(mb * 1e6 / len) + 1;
		gint64 t0 = g_get_monotonic_time();

		for (gsize i = 0; i < n; i++) {
			buf[2 + i % len] ^= 1; /* nothing to hoist out of the loop */
			sink += tap_csum_add(sink & 0xffff, buf + 2, len);
		}
		printf("tap_csum_add len %5zu: %.3f ms per MB\n", len,
		       (gdouble)(g_get_monotonic_time() - t0) / 1000.0 / ((gdouble)n * len / 1e6));
	}
	g_free(buf);
	return sink == 1; /* keeps the sums alive */
}
