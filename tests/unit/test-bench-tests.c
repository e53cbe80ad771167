/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bench-tests.c: ncm-bench's --tests list: separators, prefixes, and names that match nothing
 * refused. */
#include <string.h>

#include "ncm-bench-tests.h"

static void
test_separators(void)
{
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) t = bench_tests_parse("tcp_up tcp_down,, tcp_bidir", &error);

	g_assert_no_error(error);
	g_assert_cmpuint(g_strv_length(t), ==, 3);
	g_assert_cmpstr(t[0], ==, "tcp_up");
	g_assert_cmpstr(t[2], ==, "tcp_bidir");
	g_assert_true(bench_tests_match(t, "tcp_down"));
	g_assert_false(bench_tests_match(t, "udp_rtt_64_10hz"));
}

static void
test_prefixes(void)
{
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) t = bench_tests_parse("udp_rtt_64,raw", &error);

	g_assert_no_error(error);
	g_assert_true(bench_tests_match(t, "udp_rtt_64_500hz"));
	g_assert_false(bench_tests_match(t, "udp_rtt_1400_10hz"));
	g_assert_true(bench_tests_match(t, "raw_bidir"));
	g_assert_false(bench_tests_match(t, "tcp_down"));
}

static void
test_refused(void)
{
	const char *bad[] = {"tcp-up", "tcp_up,udp_rtt_65", "", " , ", "tcp_downs"};

	for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) error = NULL;
		g_auto(GStrv) t = bench_tests_parse(bad[i], &error);

		g_assert_null(t);
		g_assert_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
		g_assert_nonnull(strstr(error->message, "--tests"));
	}
}

static void
test_known(void)
{
	g_assert_true(bench_tests_known("tcp_bidir"));
	g_assert_true(bench_tests_known("paced_500kB_s"));
	g_assert_false(bench_tests_known("tcp"));
}

/* The list --help and the refusal show is the one --tests is checked against: every
 * entry is known, and a refused name's message lists them all. */
static void
test_list(void)
{
	g_autofree char *list = bench_tests_list();
	g_auto(GStrv) names = g_strsplit(list, ", ", -1);
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) t = bench_tests_parse("tcp_sideways", &error);

	g_assert_cmpuint(g_strv_length(names), >=, 21);
	for (gchar **n = names; *n; n++)
		g_assert_true(bench_tests_known(*n));
	g_assert_nonnull(strstr(list, "udp_rtt_1400_500hz"));
	g_assert_null(t);
	g_assert_nonnull(strstr(error->message, "'tcp_sideways'"));
	g_assert_nonnull(strstr(error->message, list));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bench-tests/separators", test_separators);
	g_test_add_func("/bench-tests/prefixes", test_prefixes);
	g_test_add_func("/bench-tests/refused", test_refused);
	g_test_add_func("/bench-tests/known", test_known);
	g_test_add_func("/bench-tests/list", test_list);
	return g_test_run();
}
