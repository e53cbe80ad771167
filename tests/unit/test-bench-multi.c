/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bench-multi.c: a multi path's figures over its devices (aggregate, per-device min, median, max, fairness) and their JSON, parsed back. */
#include <math.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ncm-bench-json.h"
#include "ncm-bench-multi-stats.h"

/* Four devices, not sorted: the sum, the nearest-rank median (the lower middle of four), min/max. */
static void
test_summary(void)
{
	const double dev[] = {30, 10, 40, 20};
	BenchMultiSummary m;

	bench_multi_summarize(dev, G_N_ELEMENTS(dev), &m);
	g_assert_cmpuint(m.devices, ==, 4);
	g_assert_cmpfloat_with_epsilon(m.aggregate, 100, 1e-9);
	g_assert_cmpfloat_with_epsilon(m.per_device.min, 10, 1e-9);
	g_assert_cmpfloat_with_epsilon(m.per_device.median, 20, 1e-9);
	g_assert_cmpfloat_with_epsilon(m.per_device.max, 40, 1e-9);
	g_assert_cmpuint(m.per_device.n, ==, 4);
	g_assert_cmpfloat_with_epsilon(m.fairness, 0.25, 1e-9);
	/* The caller's order is the devices' order: not sorted behind its back. */
	g_assert_cmpfloat(dev[0], ==, 30);
	g_assert_cmpfloat(dev[1], ==, 10);
}

/* Odd count: the true middle. Equal devices: fairness 1. */
static void
test_summary_odd_and_equal(void)
{
	const double odd[] = {9, 3, 6};
	const double same[] = {5, 5, 5, 5, 5, 5, 5, 5};
	BenchMultiSummary m;

	bench_multi_summarize(odd, 3, &m);
	g_assert_cmpfloat_with_epsilon(m.per_device.median, 6, 1e-9);
	g_assert_cmpfloat_with_epsilon(m.fairness, 1.0 / 3, 1e-9);
	bench_multi_summarize(same, 8, &m);
	g_assert_cmpfloat_with_epsilon(m.aggregate, 40, 1e-9);
	g_assert_cmpfloat_with_epsilon(m.fairness, 1, 1e-9);
}

/* A device that moved nothing makes fairness 0; nothing at all, or no device, too (not NaN). */
static void
test_summary_starved(void)
{
	const double starved[] = {50, 0, 50};
	const double none[] = {0, 0};
	BenchMultiSummary m;

	bench_multi_summarize(starved, 3, &m);
	g_assert_cmpfloat(m.fairness, ==, 0);
	g_assert_cmpfloat_with_epsilon(m.aggregate, 100, 1e-9);
	bench_multi_summarize(none, 2, &m);
	g_assert_cmpfloat(m.fairness, ==, 0);
	g_assert_false(isnan(m.fairness));
	bench_multi_summarize(NULL, 0, &m);
	g_assert_cmpuint(m.devices, ==, 0);
	g_assert_cmpfloat(m.aggregate, ==, 0);
	g_assert_cmpfloat(m.fairness, ==, 0);
}

/* The members as written, read back by a JSON parser: names, values, device order, NaN as null. */
static void
test_json(void)
{
	g_autofree char *dir = g_dir_make_tmp("bench-multi-XXXXXX", NULL);
	g_autofree char *out = g_build_filename(dir, "out.json", NULL);
	g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)bench_result_free);
	g_autoptr(GString) env = g_string_new(NULL);
	g_autoptr(JsonParser) p = json_parser_new();
	g_autoptr(GError) error = NULL;
	const double dev[] = {12.5, 50, 25, NAN};
	BenchResult *r = bench_result_new("lwip", "tcp_down");
	BenchMultiSummary m;
	JsonObject *o, *pd;
	JsonArray *a;

	bench_multi_summarize(dev, 3, &m);
	bench_multi_json(r->json, &m, dev, 4);
	g_ptr_array_add(results, r);
	bench_json_str(env, "kernel", "Linux x");
	g_assert_true(bench_json_write(out, env, NULL, results, &error));
	g_assert_no_error(error);
	json_parser_load_from_file(p, out, &error);
	g_assert_no_error(error);
	o = json_array_get_object_element(
		json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "results"), 0);
	g_assert_cmpint(json_object_get_int_member(o, "devices"), ==, 3);
	g_assert_cmpfloat_with_epsilon(json_object_get_double_member(o, "fairness"), 0.25, 1e-9);
	pd = json_object_get_object_member(o, "per_device_mbit_s");
	g_assert_nonnull(pd);
	g_assert_cmpfloat_with_epsilon(json_object_get_double_member(pd, "min"), 12.5, 1e-9);
	g_assert_cmpfloat_with_epsilon(json_object_get_double_member(pd, "median"), 25, 1e-9);
	g_assert_cmpfloat_with_epsilon(json_object_get_double_member(pd, "max"), 50, 1e-9);
	g_assert_cmpint(json_object_get_int_member(pd, "n"), ==, 3);
	a = json_object_get_array_member(o, "device_mbit_s");
	g_assert_cmpuint(json_array_get_length(a), ==, 4);
	g_assert_cmpfloat(json_array_get_double_element(a, 0), ==, 12.5);
	g_assert_cmpfloat(json_array_get_double_element(a, 1), ==, 50);
	g_assert_cmpfloat(json_array_get_double_element(a, 2), ==, 25);
	g_assert_true(json_array_get_null_element(a, 3));
	g_remove(out);
	g_rmdir(dir);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bench-multi/summary", test_summary);
	g_test_add_func("/bench-multi/odd-and-equal", test_summary_odd_and_equal);
	g_test_add_func("/bench-multi/starved", test_summary_starved);
	g_test_add_func("/bench-multi/json", test_json);
	return g_test_run();
}
