/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-tap-codel.c: the TAP queue's delay limit: no drop under target or for less than an interval, then drops ever closer while the delay stands. */
#include "ncm-tap-codel.h"

#define MS 1000

/* Packets leave every @step µs from @t0 to @t1 after @sojourn: how many drops. */
static guint
run(TapCodel *c, gint64 t0, gint64 t1, gint64 step, gint64 sojourn, gsize backlog)
{
	guint n = 0;

	for (gint64 t = t0; t < t1; t += step)
		n += tap_codel_drop(c, t, sojourn, backlog);
	return n;
}

/* Under target, or with no more than a frame behind, nothing drops however long it lasts. */
static void
test_below(void)
{
	TapCodel c;

	tap_codel_init(&c, 5 * MS, 100 * MS);
	g_assert_cmpuint(run(&c, 0, 2000 * MS, 100, 4 * MS, 1 << 20), ==, 0);
	g_assert_cmpuint(run(&c, 2000 * MS, 4000 * MS, 100, 50 * MS, 1514), ==, 0);
	g_assert_cmpuint(c.drops, ==, 0);
}

/* Above target: the first drop one interval in, then at interval / sqrt(count). */
static void
test_standing(void)
{
	TapCodel c;

	tap_codel_init(&c, 5 * MS, 100 * MS);
	g_assert_cmpuint(run(&c, 0, 100 * MS, 100, 10 * MS, 1 << 20), ==, 0);
	/* The first packet past the interval carries the drop. */
	g_assert_true(tap_codel_drop(&c, 100 * MS + 100, 10 * MS, 1 << 20));
	g_assert_true(c.dropping);
	/* Next ones 100 ms, then 100/sqrt(2) = 70 ms, then 57 ms later. */
	g_assert_cmpuint(run(&c, 100 * MS + 200, 200 * MS + 100, 100, 10 * MS, 1 << 20), ==, 0);
	g_assert_cmpuint(run(&c, 200 * MS + 100, 200 * MS + 300, 100, 10 * MS, 1 << 20), ==, 1);
	g_assert_cmpuint(run(&c, 200 * MS + 300, 270 * MS + 100, 100, 10 * MS, 1 << 20), ==, 0);
	g_assert_cmpuint(run(&c, 270 * MS + 100, 271 * MS, 100, 10 * MS, 1 << 20), ==, 1);
	/* Over a second of standing delay the rate keeps rising. */
	g_assert_cmpuint(run(&c, 271 * MS, 1271 * MS, 100, 10 * MS, 1 << 20), >, 20);
}

/* The delay falls under target: dropping stops, and the queue's emptying restarts the interval. */
static void
test_recover(void)
{
	TapCodel c;

	tap_codel_init(&c, 5 * MS, 100 * MS);
	g_assert_cmpuint(run(&c, 0, 300 * MS, 100, 10 * MS, 1 << 20), >=, 2);
	g_assert_false(tap_codel_drop(&c, 300 * MS, 1 * MS, 1 << 20));
	g_assert_false(c.dropping);
	tap_codel_drop(&c, 301 * MS, 10 * MS, 1 << 20);
	tap_codel_empty(&c);
	g_assert_cmpuint(run(&c, 302 * MS, 400 * MS, 100, 10 * MS, 1 << 20), ==, 0);
}

/* Target 0: off. */
static void
test_off(void)
{
	TapCodel c;

	tap_codel_init(&c, 0, 100 * MS);
	g_assert_cmpuint(run(&c, 0, 2000 * MS, 100, 500 * MS, 1 << 20), ==, 0);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/tap-codel/below", test_below);
	g_test_add_func("/tap-codel/standing", test_standing);
	g_test_add_func("/tap-codel/recover", test_recover);
	g_test_add_func("/tap-codel/off", test_off);
	return g_test_run();
}
