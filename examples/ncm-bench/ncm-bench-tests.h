/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-tests.h: the --tests list, read and checked against the tests ncm-bench has. */
#pragma once

#include <glib.h>

/*
 * @list: test names or prefixes, separated by commas or spaces. Returns them
 * (NULL-terminated), or NULL with @error set when the list names nothing or
 * an entry matches no test: a prefix that selects nothing would run an empty
 * benchmark without a word.
 */
gchar **bench_tests_parse(const char *list, GError **error);

/* Whether @test is one that @tests (from bench_tests_parse()) selects. */
gboolean bench_tests_match(gchar *const *tests, const char *test);

/* Whether @test is in the list --tests is checked against: every test
 * ncm-bench runs must be, or a prefix meant for it would be refused. */
gboolean bench_tests_known(const char *test);

/* The tests, comma-separated, for --help and errors: the list --tests is checked against. */
char *bench_tests_list(void);
