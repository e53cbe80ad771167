/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-csum.c: lwIP's checksum hooks (ncm-lwip-csum.c: the sum and tcp_write()'s copy-and-sum) against lwIP's own 32-bit loop. */
#include <string.h>
#include <glib.h>

#include "lwip/opt.h"

#define BUF 4096

/* Every length from 0 to a few segments, at every alignment of source
 * and destination up to 8, over random bytes: the sums and the copy. */
static void
test_against_lwip(void)
{
	g_autofree guint8 *src = g_malloc(BUF + 16), *dst = g_malloc(BUF + 16);
	GRand *rand = g_rand_new_with_seed(15);
	guint checked = 0;

	for (guint round = 0; round < 4; round++) {
		for (gsize i = 0; i < BUF + 16; i++)
			src[i] = (guint8)g_rand_int(rand);
		/* All-ones words make the most carries. */
		if (round == 1)
			memset(src, 0xFF, BUF + 16);
		for (gsize len = 0; len <= 3100; len += (len < 80 ? 1 : 37)) {
			for (guint so = 0; so < 8; so++) {
				guint dof = (so * 3 + round) % 8;
				u16_t want = lwip_standard_chksum(src + so, (int)len);

				g_assert_cmpuint(ncm_lwip_chksum(src + so, (int)len), ==, want);
				memset(dst, 0xA5, BUF + 16);
				g_assert_cmpuint(ncm_lwip_chksum_copy(dst + dof, src + so, (u16_t)len), ==, want);
				g_assert_cmpmem(dst + dof, len, src + so, len);
				/* Nothing written around the copy. */
				for (guint k = 0; k < dof; k++)
					g_assert_cmpuint(dst[k], ==, 0xA5);
				g_assert_cmpuint(dst[dof + len], ==, 0xA5);
				checked++;
			}
		}
	}
	g_assert_cmpuint(checked, >, 1000);
	g_rand_free(rand);
}

/* The longest writes lwIP makes: a u16_t length near 64 KiB. */
static void
test_long(void)
{
	gsize len = 0xFFFF;
	g_autofree guint8 *src = g_malloc(len + 1), *dst = g_malloc(len + 1);

	memset(src, 0xFF, len + 1);
	g_assert_cmpuint(ncm_lwip_chksum(src, (int)len), ==, lwip_standard_chksum(src, (int)len));
	g_assert_cmpuint(ncm_lwip_chksum_copy(dst, src + 1, (u16_t)len), ==,
			 lwip_standard_chksum(src + 1, (int)len));
	g_assert_cmpuint(ncm_lwip_chksum(src, 0), ==, lwip_standard_chksum(src, 0));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lwip-csum/against-lwip", test_against_lwip);
	g_test_add_func("/lwip-csum/long", test_long);
	return g_test_run();
}
