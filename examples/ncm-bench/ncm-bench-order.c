/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-order.c: the order the paths run in, round by round (--rounds). */
#include "ncm-bench-order.h"

/* Williams' first row 0, 1, n-1, 2, n-2, ...: its steps 1, -2, 3, -4, ...
 * differ mod n, which is what gives each path every predecessor. */
static guint
williams(guint n, guint j)
{
	return j % 2 ? (j + 1) / 2 : (n - j / 2) % n;
}

void
bench_round_order(guint n, guint round, guint *order)
{
	guint shift;
	gboolean backwards;

	if (n == 0)
		return;
	shift = round % n;
	backwards = (round / n) % 2;

	for (guint j = 0; j < n; j++) {
		guint cell = (williams(n, j) + shift) % n;
		guint place = 0;

		/* Relabel by the first row's inverse, so that round 0 keeps the given order
		 * (relabelling keeps both balances). */
		while (williams(n, place) != cell)
			place++;
		order[backwards ? n - 1 - j : j] = place;
	}
}
