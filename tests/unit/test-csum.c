/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-csum.c: a frame copied in pieces with one checksum over all of them (ncm_csum64_copy_at()), against one sum over the whole. */
#include <glib.h>
#include <string.h>

#include "ncm-csum.h"

/*
 * libncm's sends that fill a checksum (ncm_device_sendv_csum()) copy a
 * frame from the producer's pieces, which may begin at odd offsets of the
 * summed region. The reference is RFC 1071's sum written out byte pair by
 * byte pair over the assembled bytes, in network order.
 */
static guint16
ref_fold(const guint8 *p, gsize len)
{
	guint64 sum = 0;

	for (gsize i = 0; i + 1 < len; i += 2)
		sum += (guint)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (guint)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (guint16)sum;
}

/* Copies @src in three pieces cut at @a and @b, summing as it goes. */
static guint16
pieces_fold(guint8 *dst, const guint8 *src, gsize len, gsize a, gsize b)
{
	gsize cut[4] = { 0, a, b, len };
	guint64 sum = 0;
	guint16 s;

	for (guint i = 0; i < 3; i++)
		sum = ncm_csum64_copy_at(dst + cut[i], src + cut[i], cut[i + 1] - cut[i], sum, cut[i]);
	s = ncm_csum64_fold(sum);
	/* In the data's byte order: read it back the way it would be stored. */
	return (guint16)(((const guint8 *)&s)[0] << 8 | ((const guint8 *)&s)[1]);
}

static void
check_all_cuts(const guint8 *src, gsize len)
{
	g_autofree guint8 *dst = g_malloc(len + 1);
	guint16 want = ref_fold(src, len);

	for (gsize a = 0; a <= len; a++)
		for (gsize b = a; b <= len; b += (b < 40 ? 1 : 7)) {
			memset(dst, 0xa5, len + 1);
			g_assert_cmpuint(pieces_fold(dst, src, len, a, b), ==, want);
			g_assert_cmpmem(dst, len, src, len);
			g_assert_cmpuint(dst[len], ==, 0xa5);
		}
}

static void
test_copy_at_random(void)
{
	static const gsize lens[] = { 1, 2, 3, 7, 8, 9, 31, 32, 33, 65, 120, 257 };
	guint8 src[300];

	for (guint r = 0; r < G_N_ELEMENTS(lens); r++) {
		for (gsize i = 0; i < lens[r]; i++)
			src[i] = (guint8)g_random_int();
		check_all_cuts(src, lens[r]);
	}
}

/* All-ones bytes carry on every add: the carries must not be lost. */
static void
test_copy_at_ones(void)
{
	guint8 src[200];

	memset(src, 0xff, sizeof(src));
	check_all_cuts(src, sizeof(src));
	check_all_cuts(src, 101);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/csum/copy-at/random", test_copy_at_random);
	g_test_add_func("/csum/copy-at/ones", test_copy_at_ones);
	return g_test_run();
}
