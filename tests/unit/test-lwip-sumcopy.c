/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-sumcopy.c: the one-pass copy and checksum tcp_write() uses, against lwIP's own sum. */
#include <string.h>
#include <glib.h>

#include "lwip/inet_chksum.h"

#define MAX_LEN 1600
#define GUARD 8

/* 0 and 0xFFFF are the same one's complement number: lwIP's algorithms may
 * give either for a zero sum. */
static gboolean
same_sum(guint16 a, guint16 b)
{
	return a == b || (a == 0 && b == 0xFFFF) || (a == 0xFFFF && b == 0);
}

static void
check(const guint8 *src, guint16 len, guint dst_off)
{
	guint8 dst[MAX_LEN + 2 * GUARD + 8];
	guint16 got, want;

	memset(dst, 0xA5, sizeof(dst));
	got = nlw_chksum_copy(dst + GUARD + dst_off, src, len);
	/* inet_chksum() is lwIP's sum, complemented. */
	want = (guint16)~inet_chksum(src, len);
	if (!same_sum(got, want))
		g_error("len %u: sum %04x, lwIP's %04x", len, got, want);
	g_assert_cmpmem(dst + GUARD + dst_off, len, src, len);
	/* Nothing written outside the copy. */
	for (guint i = 0; i < GUARD + dst_off; i++)
		g_assert_cmpuint(dst[i], ==, 0xA5);
	for (gsize i = GUARD + dst_off + len; i < sizeof(dst); i++)
		g_assert_cmpuint(dst[i], ==, 0xA5);
}

/* Every length up to a frame, at every source and destination alignment
 * within a word, over random bytes, all ones (carries on every add) and
 * zeros. */
static void
test_against_lwip(void)
{
	static guint8 buf[MAX_LEN + 8];
	GRand *rand = g_rand_new_with_seed(15);

	for (guint fill = 0; fill < 3; fill++) {
		for (guint len = 0; len <= MAX_LEN; len++) {
			guint src_off = len % 8, dst_off = (len / 8) % 8;

			for (guint i = 0; i < len; i++)
				buf[src_off + i] = fill == 0 ? (guint8)g_rand_int(rand) : fill == 1 ? 0xFF : 0;
			check(buf + src_off, (guint16)len, dst_off);
		}
	}
	g_rand_free(rand);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lwip/sumcopy/against-lwip", test_against_lwip);
	return g_test_run();
}
