/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-order.h: the order the paths run in, round by round (--rounds). */
#pragma once

#include <glib.h>

/*
 * Fills @order (@n entries) with the indexes of @n paths in the order
 * round @round runs them. Round 0 runs them as given. Rounds 0..n-1 form
 * a Williams square: every path runs once in each place, and each path
 * runs right after every other one equally often (once for an even @n;
 * for an odd @n, over rounds 0..2n-1, whose second half runs the first
 * half backwards). So neither a drift over the run nor the path that ran
 * just before favours one path: a fixed predecessor made a variant of a
 * build run 10-20 % below the build itself (tests/bench/RESULTS.md).
 */
void bench_round_order(guint n, guint round, guint *order);
