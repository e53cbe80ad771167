/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bench-stats.c: ncm-bench's statistics on crafted inputs with exact expected values. */
#include <glib.h>

#include "ncm-bench-stats.h"

static void
test_percentile_nearest_rank(void)
{
	const double v[] = {15, 20, 35, 40, 50};
	double hundred[100];

	g_assert_cmpfloat(bench_percentile(v, 5, 0), ==, 15);
	g_assert_cmpfloat(bench_percentile(v, 5, 5), ==, 15);
	g_assert_cmpfloat(bench_percentile(v, 5, 30), ==, 20);
	g_assert_cmpfloat(bench_percentile(v, 5, 40), ==, 20);
	g_assert_cmpfloat(bench_percentile(v, 5, 50), ==, 35);
	g_assert_cmpfloat(bench_percentile(v, 5, 100), ==, 50);
	g_assert_cmpfloat(bench_percentile(v, 0, 50), ==, 0);
	for (int i = 0; i < 100; i++)
		hundred[i] = i + 1;
	g_assert_cmpfloat(bench_percentile(hundred, 100, 99), ==, 99);
	g_assert_cmpfloat(bench_percentile(hundred, 100, 99.5), ==, 100);
}

static void
test_summarize(void)
{
	double v[] = {4, 1, 3, 2};
	double one[] = {7};
	BenchSummary s;

	bench_summarize(v, 4, &s);
	g_assert_cmpuint(s.n, ==, 4);
	g_assert_cmpfloat(s.min, ==, 1);
	g_assert_cmpfloat(s.max, ==, 4);
	/* Nearest rank: the lower middle of an even count. */
	g_assert_cmpfloat(s.median, ==, 2);
	g_assert_cmpfloat(s.p99, ==, 4);
	g_assert_cmpfloat(s.mean, ==, 2.5);
	g_assert_cmpfloat(v[0], ==, 1); /* sorted in place */
	bench_summarize(one, 1, &s);
	g_assert_cmpfloat(s.median, ==, 7);
	g_assert_cmpfloat(s.p99, ==, 7);
	bench_summarize(NULL, 0, &s);
	g_assert_cmpuint(s.n, ==, 0);
}

/* 100 kB every 100 ms (8 Mbit/s) for 0..1 s, nothing until 2.5 s, then again to 4 s. */
static GArray *
series_with_gap(void)
{
	GArray *a = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	guint64 bytes = 0;

	for (int i = 0; i <= 40; i++) {
		BenchSample s;

		if (i > 0 && (i <= 10 || i > 25))
			bytes += 100000;
		s.t_us = (gint64)i * 100000;
		s.bytes = bytes;
		g_array_append_val(a, s);
	}
	return a;
}

static void
test_windows_gap(void)
{
	g_autoptr(GArray) a = series_with_gap();
	const BenchSample *s = (const BenchSample *)(void *)a->data;
	g_autofree double *rates = NULL;
	BenchWindows w;

	bench_windows(s, a->len, 0, 4000000, 250000, &w, &rates);
	g_assert_cmpuint(w.n_windows, ==, 16);
	/* [1.0, 2.5) holds six whole windows without a byte. */
	g_assert_cmpuint(w.empty_windows, ==, 6);
	g_assert_cmpfloat(w.min_mbit_s, ==, 0);
	g_assert_cmpfloat_with_epsilon(w.max_mbit_s, 8.0, 1e-9);
	g_assert_cmpfloat_with_epsilon(rates[0], 8.0, 1e-9);
	g_assert_cmpfloat(rates[4], ==, 0);
	g_assert_cmpfloat(rates[9], ==, 0);
	g_assert_cmpfloat(rates[10], >, 0);
	/* Last raise before the gap at 1.0 s, next raise at 2.6 s. */
	g_assert_cmpint(w.longest_stall_us, ==, 1600000);
	g_assert_cmpfloat_with_epsilon(bench_rate_between(s, a->len, 50000, 950000), 8.0, 1e-9);
	g_assert_cmpfloat(bench_rate_between(s, a->len, 1100000, 2400000), ==, 0);
	/* Bytes over the same spans: 0.9 s at 1 MB/s, then nothing; from 0.95 s to 3.0 s, 50 kB + 500 kB. */
	g_assert_cmpfloat_with_epsilon(bench_count_between(s, a->len, 50000, 950000), 900000, 1e-6);
	g_assert_cmpfloat(bench_count_between(s, a->len, 1100000, 2400000), ==, 0);
	g_assert_cmpfloat_with_epsilon(bench_count_between(s, a->len, 950000, 3000000), 550000, 1e-6);
	/* A trailing partial window is left out. */
	bench_windows(s, a->len, 0, 1100000, 250000, &w, NULL);
	g_assert_cmpuint(w.n_windows, ==, 4);
}

/* Reports every 250 ms, alternately 20 ms late: no window may look empty. */
static void
test_windows_jitter(void)
{
	g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	BenchWindows w;

	for (int k = 1; k <= 20; k++) {
		BenchSample s = {(gint64)k * 250000 + (k % 2 ? 20000 : 0), (guint64)k * 250000};

		g_array_append_val(a, s);
	}
	bench_windows((const BenchSample *)(void *)a->data, a->len, 270000, 5000000, 250000, &w, NULL);
	g_assert_cmpuint(w.n_windows, ==, 18);
	g_assert_cmpuint(w.empty_windows, ==, 0);
	g_assert_cmpfloat(w.min_mbit_s, >, 6.0);
	g_assert_cmpfloat(w.max_mbit_s, <, 10.0);
}

/* A link that went silent for good: the stall runs to the end of the interval. */
static void
test_stall_to_end(void)
{
	const BenchSample s[] = {{0, 0}, {100, 10}, {200, 20}, {300, 20}, {400, 20}};

	g_assert_cmpint(bench_longest_stall(s, G_N_ELEMENTS(s), 0, 2200), ==, 2000);
	g_assert_cmpint(bench_longest_stall(s, G_N_ELEMENTS(s), 0, 200), ==, 100);
}

static void
test_seq_in_order_and_loss(void)
{
	BenchSeqTracker t;

	bench_seq_init(&t);
	g_assert_cmpuint(bench_seq_expected(&t), ==, 0);
	for (guint64 i = 0; i < 4; i++)
		bench_seq_add(&t, i);
	g_assert_cmpuint(t.unique, ==, 4);
	g_assert_cmpuint(bench_seq_lost(&t), ==, 0);
	bench_seq_add(&t, 9);
	g_assert_cmpuint(bench_seq_expected(&t), ==, 10);
	g_assert_cmpuint(bench_seq_lost(&t), ==, 5);
	g_assert_cmpuint(t.reordered, ==, 0);
}

static void
test_seq_reorder_and_duplicates(void)
{
	BenchSeqTracker t;
	const guint64 seqs[] = {0, 2, 1, 1, 2, 0, 5, 3, 4, 4};

	bench_seq_init(&t);
	for (gsize i = 0; i < G_N_ELEMENTS(seqs); i++)
		bench_seq_add(&t, seqs[i]);
	g_assert_cmpuint(t.unique, ==, 6);
	g_assert_cmpuint(t.duplicates, ==, 4);
	/* 1 after 2, 3 and 4 after 5: late but within the window, not lost. */
	g_assert_cmpuint(t.reordered, ==, 3);
	g_assert_cmpuint(t.late, ==, 0);
	g_assert_cmpuint(bench_seq_lost(&t), ==, 0);
}

static void
test_seq_window_edges(void)
{
	BenchSeqTracker t;
	guint64 top = BENCH_SEQ_WINDOW + 10;

	bench_seq_init(&t);
	bench_seq_add(&t, 0);
	bench_seq_add(&t, top);
	/* The oldest number still inside the window is delivered late... */
	bench_seq_add(&t, top - BENCH_SEQ_WINDOW + 1);
	g_assert_cmpuint(t.reordered, ==, 1);
	/* ...one older is beyond it: late, not delivered, still lost, not a duplicate. */
	bench_seq_add(&t, top - BENCH_SEQ_WINDOW);
	bench_seq_add(&t, 0);
	g_assert_cmpuint(t.late, ==, 2);
	g_assert_cmpuint(t.duplicates, ==, 0);
	g_assert_cmpuint(t.unique, ==, 3);
	g_assert_cmpuint(bench_seq_lost(&t), ==, top + 1 - 3);
	/* After a jump, the numbers just below the new top are unseen, not duplicates. */
	bench_seq_add(&t, top + 3 * BENCH_SEQ_WINDOW);
	bench_seq_add(&t, top + 3 * BENCH_SEQ_WINDOW - 1);
	bench_seq_add(&t, top + 3 * BENCH_SEQ_WINDOW);
	g_assert_cmpuint(t.duplicates, ==, 1);
	g_assert_cmpuint(t.reordered, ==, 2);
}

/* The window's bits are reused as it slides: every number twice, over several laps. */
static void
test_seq_sliding_duplicates(void)
{
	BenchSeqTracker t;
	guint64 n = 3 * BENCH_SEQ_WINDOW + 77;

	bench_seq_init(&t);
	for (guint64 i = 0; i < n; i++) {
		bench_seq_add(&t, i);
		if (i >= 100)
			bench_seq_add(&t, i - 100);
	}
	g_assert_cmpuint(t.unique, ==, n);
	g_assert_cmpuint(t.duplicates, ==, n - 100);
	g_assert_cmpuint(t.late, ==, 0);
	g_assert_cmpuint(bench_seq_lost(&t), ==, 0);
}

/*
 * Probes every 10 us from 900 (one before the series' start at 1000) to
 * 2190: intervals of 250 us hold 25 probes each, the last (from 2000) a
 * partial 20. Echoes are filed by their probe's send time, in any order.
 */
static void
test_rtt_intervals(void)
{
	g_autoptr(GArray) sent = g_array_new(FALSE, FALSE, sizeof(gint64));
	g_autoptr(GArray) rx = g_array_new(FALSE, FALSE, sizeof(BenchRttSample));
	g_autoptr(GArray) iv = NULL;
	g_autoptr(GArray) none = NULL;
	const BenchRttInterval *v;

	for (gint64 t = 900; t < 2200; t += 10)
		g_array_append_val(sent, t);
	/* Interval 0: round trips of 1..25 ms, and one probe before the start. */
	for (int i = 0; i < 25; i++)
		g_array_append_val(rx, ((BenchRttSample){1000 + 10 * i, i + 1}));
	g_array_append_val(rx, ((BenchRttSample){900, 1000}));
	/* Interval 1: nothing came back. Interval 2: a normal echo and a late
	 * one whose probe left at its very start. */
	g_array_append_val(rx, ((BenchRttSample){1510, 2}));
	g_array_append_val(rx, ((BenchRttSample){1500, 500}));
	/* Interval 3: 100 ms down to 1 ms; more echoes than probes cannot
	 * happen, but the figures must not depend on counts matching. */
	for (int i = 100; i >= 1; i--)
		g_array_append_val(rx, ((BenchRttSample){1750 + (i % 25) * 10, i}));
	/* Interval 4, partial; and an echo of a probe never sent, after the last. */
	g_array_append_val(rx, ((BenchRttSample){2190, 7}));
	g_array_append_val(rx, ((BenchRttSample){3000, 9999}));

	iv = bench_rtt_intervals((const gint64 *)(const void *)sent->data, sent->len,
				 (const BenchRttSample *)(const void *)rx->data, rx->len, 1000, 250);
	g_assert_cmpuint(iv->len, ==, 5);
	v = &g_array_index(iv, BenchRttInterval, 0);
	g_assert_cmpuint(v->sent, ==, 25);
	g_assert_cmpuint(v->received, ==, 25);
	g_assert_cmpfloat(v->p50_ms, ==, 13);
	g_assert_cmpfloat(v->p99_ms, ==, 25);
	g_assert_cmpfloat(v->max_ms, ==, 25);
	v = &g_array_index(iv, BenchRttInterval, 1);
	g_assert_cmpuint(v->sent, ==, 25);
	g_assert_cmpuint(v->received, ==, 0);
	g_assert_cmpfloat(v->p50_ms, ==, 0);
	g_assert_cmpfloat(v->max_ms, ==, 0);
	v = &g_array_index(iv, BenchRttInterval, 2);
	g_assert_cmpuint(v->received, ==, 2);
	g_assert_cmpfloat(v->p50_ms, ==, 2);
	g_assert_cmpfloat(v->p99_ms, ==, 500);
	g_assert_cmpfloat(v->max_ms, ==, 500);
	v = &g_array_index(iv, BenchRttInterval, 3);
	g_assert_cmpuint(v->received, ==, 100);
	g_assert_cmpfloat(v->p50_ms, ==, 50);
	g_assert_cmpfloat(v->p99_ms, ==, 99);
	g_assert_cmpfloat(v->max_ms, ==, 100);
	v = &g_array_index(iv, BenchRttInterval, 4);
	g_assert_cmpuint(v->sent, ==, 20);
	g_assert_cmpuint(v->received, ==, 1);
	g_assert_cmpfloat(v->p99_ms, ==, 7);

	/* Nothing sent at or after the start: no intervals. */
	none = bench_rtt_intervals((const gint64 *)(const void *)sent->data, 1,
				   (const BenchRttSample *)(const void *)rx->data, rx->len, 1000, 250);
	g_assert_cmpuint(none->len, ==, 0);
}

/* Slots every 2 us from 0: on time, late by less than a period, and after stalls. */
static void
test_slot_next(void)
{
	guint64 skipped = 0;

	g_assert_cmpint(bench_slot_next(0, 0, 2, &skipped), ==, 2);
	g_assert_cmpint(bench_slot_next(0, 1, 2, &skipped), ==, 2);
	/* Sent at 3 for the slot at 0: the slot at 2 is due, not missed. */
	g_assert_cmpint(bench_slot_next(0, 3, 2, &skipped), ==, 2);
	g_assert_cmpuint(skipped, ==, 0);
	/* Sent at 4 for 0: the slot at 2 is a full period late, 4 is now. */
	g_assert_cmpint(bench_slot_next(0, 4, 2, &skipped), ==, 4);
	g_assert_cmpuint(skipped, ==, 1);
	/* Stalled until 11: 2, 4, 6 and 8 are gone, 10 is still due. */
	g_assert_cmpint(bench_slot_next(0, 11, 2, &skipped), ==, 10);
	g_assert_cmpuint(skipped, ==, 5);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bench-stats/percentile", test_percentile_nearest_rank);
	g_test_add_func("/bench-stats/summarize", test_summarize);
	g_test_add_func("/bench-stats/windows-gap", test_windows_gap);
	g_test_add_func("/bench-stats/windows-jitter", test_windows_jitter);
	g_test_add_func("/bench-stats/stall-to-end", test_stall_to_end);
	g_test_add_func("/bench-stats/seq-loss", test_seq_in_order_and_loss);
	g_test_add_func("/bench-stats/seq-reorder-dups", test_seq_reorder_and_duplicates);
	g_test_add_func("/bench-stats/seq-window-edges", test_seq_window_edges);
	g_test_add_func("/bench-stats/seq-sliding-dups", test_seq_sliding_duplicates);
	g_test_add_func("/bench-stats/rtt-intervals", test_rtt_intervals);
	g_test_add_func("/bench-stats/slot-next", test_slot_next);
	return g_test_run();
}
