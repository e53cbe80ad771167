/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-tests.c: the --tests list, read and checked against the tests ncm-bench has. */
#include "ncm-bench-tests.h"

/* Every test's name, or the stem its variants share (udp_rtt_64_10hz...). */
static const char *const known[] = {
    "tcp_down",           "tcp_up",      "tcp_bidir",       "bulk_stalls",      "burst_64k",
    "burst_256k",         "burst_1m",    "burst_4m",        "paced_500kB_s",    "paced_1MB_s",
    "paced_2MB_s",        "paced_4MB_s", "udp_rtt_64_10hz", "udp_rtt_64_500hz", "udp_rtt_1400_10hz",
    "udp_rtt_1400_500hz", "soak",        "udp_autorate",    "raw_down",         "raw_up",
    "raw_bidir",          "rtt_under_up",
};

gboolean
bench_tests_known(const char *test)
{
	for (gsize i = 0; i < G_N_ELEMENTS(known); i++) {
		if (g_str_equal(known[i], test))
			return TRUE;
	}
	return FALSE;
}

char *
bench_tests_list(void)
{
	GString *s = g_string_new(NULL);

	for (gsize i = 0; i < G_N_ELEMENTS(known); i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "", known[i]);
	return g_string_free(s, FALSE);
}

gboolean
bench_tests_match(gchar *const *tests, const char *test)
{
	for (gchar *const *t = tests; t && *t; t++) {
		if (g_str_has_prefix(test, *t))
			return TRUE;
	}
	return FALSE;
}

gchar **
bench_tests_parse(const char *list, GError **error)
{
	g_auto(GStrv) parts = g_strsplit_set(list, ", ", -1);
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);

	for (gchar **p = parts; *p; p++) {
		gboolean found = FALSE;

		if (!**p)
			continue;
		for (gsize i = 0; i < G_N_ELEMENTS(known) && !found; i++)
			found = g_str_has_prefix(known[i], *p);
		if (!found) {
			g_autofree char *tests = bench_tests_list();

			g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			            "--tests: '%s' is no test and no test's prefix (tests: %s)", *p, tests);
			return NULL;
		}
		g_ptr_array_add(out, g_strdup(*p));
	}
	if (out->len == 0) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
		            "--tests: '%s' names no test (give names or prefixes, comma-separated)",
		            list);
		return NULL;
	}
	g_ptr_array_add(out, NULL);
	return (gchar **)g_ptr_array_free(g_steal_pointer(&out), FALSE);
}
