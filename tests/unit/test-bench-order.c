/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bench-order.c: ncm-bench's round order: each place once, each predecessor equally often. */
#include "ncm-bench-order.h"

#define MAX_PATHS 9

/* Rounds 0..n-1: every round a permutation, every path once in each place, round 0 as given. */
static void
test_places(void)
{
	for (guint n = 1; n <= MAX_PATHS; n++) {
		guint seen[MAX_PATHS][MAX_PATHS] = {{0}};

		for (guint r = 0; r < n; r++) {
			guint order[MAX_PATHS];
			guint once[MAX_PATHS] = {0};

			bench_round_order(n, r, order);
			for (guint j = 0; j < n; j++) {
				g_assert_cmpuint(order[j], <, n);
				once[order[j]]++;
				seen[order[j]][j]++;
				if (r == 0)
					g_assert_cmpuint(order[j], ==, j);
			}
			for (guint p = 0; p < n; p++)
				g_assert_cmpuint(once[p], ==, 1);
		}
		for (guint p = 0; p < n; p++) {
			for (guint j = 0; j < n; j++)
				g_assert_cmpuint(seen[p][j], ==, 1);
		}
	}
}

/*
 * Each ordered pair (a right after b) as often as any other: once over n
 * rounds for an even n, twice over 2n for an odd one. The plain rotation
 * this replaces gives each path a single predecessor and fails here from
 * n = 3.
 */
static void
test_predecessors(void)
{
	for (guint n = 2; n <= MAX_PATHS; n++) {
		guint rounds = n % 2 ? 2 * n : n;
		guint follows[MAX_PATHS][MAX_PATHS] = {{0}};

		for (guint r = 0; r < rounds; r++) {
			guint order[MAX_PATHS];

			bench_round_order(n, r, order);
			for (guint j = 1; j < n; j++)
				follows[order[j - 1]][order[j]]++;
		}
		for (guint a = 0; a < n; a++) {
			for (guint b = 0; b < n; b++)
				g_assert_cmpuint(follows[a][b], ==, a == b ? 0 : rounds / n);
		}
	}
}

/* Past its square the order repeats: a long --rounds keeps both balances block by block. */
static void
test_repeats(void)
{
	for (guint n = 1; n <= MAX_PATHS; n++) {
		for (guint r = 0; r < 2 * n; r++) {
			guint a[MAX_PATHS], b[MAX_PATHS];

			bench_round_order(n, r, a);
			bench_round_order(n, r + 2 * n, b);
			for (guint j = 0; j < n; j++)
				g_assert_cmpuint(a[j], ==, b[j]);
		}
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bench-order/places", test_places);
	g_test_add_func("/bench-order/predecessors", test_predecessors);
	g_test_add_func("/bench-order/repeats", test_repeats);
	return g_test_run();
}
