/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bench-cpu.c: ncm-bench's whole-system CPU per MB from two /proc/stat snapshots given as text. */
#include <math.h>

#include <glib.h>

#include "ncm-bench-cpu.h"

/* Two snapshots of a 2-CPU machine, 2 s apart (400 ticks of all CPUs' time at USER_HZ 100). */
static const char before[] =
	"cpu  1000 20 500 8000 40 10 300 5 7 1\n"
	"cpu0 500 10 250 4000 20 5 150 3 4 1\n"
	"cpu1 500 10 250 4000 20 5 150 2 3 0\n"
	"intr 123456 0 1 2 3\n"
	"ctxt 99999\n";
/*
 * Busy grew by user 100 + nice 0 + system 60 + irq 4 + softirq 80 +
 * steal 6 = 250 ticks; idle 140 and iowait 10 make the 400. guest (+50)
 * and guest_nice (+1) are inside user and nice already: not added again.
 */
static const char after[] =
	"cpu  1100 20 560 8140 50 14 380 11 57 2\n"
	"cpu0 550 10 280 4070 25 7 190 6 29 1\n"
	"cpu1 550 10 280 4070 25 7 190 5 28 1\n"
	"intr 234567 0 1 2 3\n"
	"ctxt 199999\n";

static void
test_two_snapshots(void)
{
	BenchCpuTicks a, b;

	g_assert_true(bench_cpu_ticks_parse(before, &a));
	g_assert_true(bench_cpu_ticks_parse(after, &b));
	g_assert_cmpuint(a.busy, ==, 1000 + 20 + 500 + 10 + 300 + 5);
	g_assert_cmpuint(a.total, ==, a.busy + 8000 + 40);
	g_assert_cmpuint(b.busy - a.busy, ==, 250);
	g_assert_cmpuint(b.total - a.total, ==, 400);
	g_assert_cmpfloat_with_epsilon(bench_cpu_busy_seconds(&a, &b, 100), 2.5, 1e-12);
	g_assert_cmpfloat_with_epsilon(bench_cpu_busy_share(&a, &b), 0.625, 1e-12);
	/* 2.5 busy seconds over 50 MB received: 0.05 s per MB. */
	g_assert_cmpfloat_with_epsilon(bench_cpu_s_per_mb(&a, &b, 100, 50000000), 0.05, 1e-12);
	/* Nothing received: no figure, rather than an infinite one. */
	g_assert_true(isnan(bench_cpu_s_per_mb(&a, &b, 100, 0)));
	/* Snapshots the wrong way round give nothing, not a huge unsigned difference. */
	g_assert_cmpfloat(bench_cpu_busy_seconds(&b, &a, 100), ==, 0);
	g_assert_cmpfloat(bench_cpu_busy_share(&b, &a), ==, 0);
}

static void
test_line_not_first_and_old_kernels(void)
{
	BenchCpuTicks t;

	/* Only the all-CPU line counts, wherever it is; 8 columns are enough. */
	g_assert_true(bench_cpu_ticks_parse("cpu0 1 2 3 4 5 6 7 8\ncpu  10 0 10 70 5 1 2 2\n", &t));
	g_assert_cmpuint(t.busy, ==, 25);
	g_assert_cmpuint(t.total, ==, 100);
	g_assert_false(bench_cpu_ticks_parse("cpu  10 0 10 70\n", &t));
	g_assert_false(bench_cpu_ticks_parse("cpu0 1 2 3 4 5 6 7 8\n", &t));
	g_assert_false(bench_cpu_ticks_parse("", &t));
	g_assert_cmpuint(t.busy, ==, 0);
}

static void
test_read_live(void)
{
	BenchCpuTicks a, b;

	if (!g_file_test("/proc/stat", G_FILE_TEST_EXISTS)) {
		g_test_skip("no /proc/stat");
		return;
	}
	g_assert_true(bench_cpu_ticks_read(&a));
	g_assert_true(bench_cpu_ticks_read(&b));
	g_assert_cmpuint(a.total, >, 0);
	g_assert_cmpuint(b.busy, >=, a.busy);
	g_assert_cmpuint(b.total, >=, a.total);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bench-cpu/two-snapshots", test_two_snapshots);
	g_test_add_func("/bench-cpu/line-not-first", test_line_not_first_and_old_kernels);
	g_test_add_func("/bench-cpu/read-live", test_read_live);
	return g_test_run();
}
