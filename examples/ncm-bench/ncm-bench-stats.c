/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-stats.c: ncm-bench's pure statistics (no sockets, no clocks): see ncm-bench-stats.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ncm-bench-stats.h"

double
bench_percentile(const double *sorted, gsize n, double p)
{
	double rank;
	gsize idx;

	if (n == 0)
		return 0;
	rank = ceil(p / 100.0 * (double)n);
	idx = rank < 1 ? 0 : (gsize)rank - 1;
	return sorted[MIN(idx, n - 1)];
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void
bench_summarize(double *values, gsize n, BenchSummary *ret)
{
	double sum = 0;

	memset(ret, 0, sizeof(*ret));
	if (n == 0)
		return;
	qsort(values, n, sizeof(double), cmp_double);
	for (gsize i = 0; i < n; i++)
		sum += values[i];
	ret->n = n;
	ret->min = values[0];
	ret->max = values[n - 1];
	ret->median = bench_percentile(values, n, 50);
	ret->p99 = bench_percentile(values, n, 99);
	ret->mean = sum / (double)n;
}

/*
 * The count at @t_us, linear between the samples around it: report times
 * jitter against any fixed grid, and a step function would show a window
 * as empty whenever a report came a little late. Before the first sample
 * the count is 0, after the last it stays at the last.
 */
static double
count_at(const BenchSample *samples, gsize n, gint64 t_us)
{
	gsize lo = 0, hi = n;
	const BenchSample *a, *b;

	/* The first index whose time is > t_us, by bisection: series are long. */
	while (lo < hi) {
		gsize mid = lo + (hi - lo) / 2;

		if (samples[mid].t_us <= t_us)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	if (lo == n)
		return (double)samples[n - 1].bytes;
	a = &samples[lo - 1];
	b = &samples[lo];
	return (double)a->bytes + (double)(b->bytes - a->bytes) * (double)(t_us - a->t_us) /
				      (double)(b->t_us - a->t_us);
}

static double
mbit_s(double bytes, gint64 us)
{
	return us > 0 && bytes > 0 ? bytes * 8.0 / (double)us : 0;
}

double
bench_count_between(const BenchSample *samples, gsize n, gint64 from_us, gint64 to_us)
{
	return count_at(samples, n, to_us) - count_at(samples, n, from_us);
}

double
bench_rate_between(const BenchSample *samples, gsize n, gint64 from_us, gint64 to_us)
{
	return mbit_s(bench_count_between(samples, n, from_us, to_us), to_us - from_us);
}

gint64
bench_longest_stall(const BenchSample *samples, gsize n, gint64 from_us, gint64 to_us)
{
	double level = count_at(samples, n, from_us);
	gint64 last_raise = from_us, longest = 0;

	for (gsize i = 0; i < n; i++) {
		if (samples[i].t_us <= from_us || samples[i].t_us > to_us)
			continue;
		if ((double)samples[i].bytes > level) {
			longest = MAX(longest, samples[i].t_us - last_raise);
			last_raise = samples[i].t_us;
			level = (double)samples[i].bytes;
		}
	}
	return MAX(longest, to_us - last_raise);
}

void
bench_windows(const BenchSample *samples, gsize n, gint64 from_us, gint64 to_us,
	      gint64 width_us, BenchWindows *ret, double **ret_rates)
{
	guint nw = (width_us > 0 && to_us > from_us) ? (guint)((to_us - from_us) / width_us) : 0;
	double *rates = g_new0(double, nw + 1);

	memset(ret, 0, sizeof(*ret));
	ret->n_windows = nw;
	for (guint k = 0; k < nw; k++) {
		gint64 a = from_us + (gint64)k * width_us;
		double ca = count_at(samples, n, a), cb = count_at(samples, n, a + width_us);
		double r = mbit_s(cb - ca, width_us);

		rates[k] = r;
		if (cb <= ca)
			ret->empty_windows++;
		if (k == 0 || r < ret->min_mbit_s)
			ret->min_mbit_s = r;
		ret->max_mbit_s = MAX(ret->max_mbit_s, r);
	}
	ret->longest_stall_us = bench_longest_stall(samples, n, from_us, to_us);
	if (ret_rates)
		*ret_rates = rates;
	else
		g_free(rates);
}

/* The interval of a time at or after @from_us. */
static gsize
rtt_slot(gint64 t_us, gint64 from_us, gint64 width_us)
{
	return (gsize)((t_us - from_us) / width_us);
}

GArray *
bench_rtt_intervals(const gint64 *sent_us, gsize n_sent, const BenchRttSample *rx, gsize n_rx,
		    gint64 from_us, gint64 width_us)
{
	GArray *out = g_array_new(FALSE, TRUE, sizeof(BenchRttInterval));
	g_autofree gsize *start = NULL;
	g_autofree double *rtt = NULL;
	gint64 last = G_MININT64;
	gsize n = 0;

	g_return_val_if_fail(width_us > 0, out);
	for (gsize i = 0; i < n_sent; i++) {
		if (sent_us[i] >= from_us)
			last = MAX(last, sent_us[i]);
	}
	if (last == G_MININT64)
		return out;
	n = rtt_slot(last, from_us, width_us) + 1;
	g_array_set_size(out, n);
	for (gsize i = 0; i < n_sent; i++) {
		if (sent_us[i] >= from_us)
			g_array_index(out, BenchRttInterval, rtt_slot(sent_us[i], from_us, width_us)).sent++;
	}
	/* Counting sort of the round trips by interval: start[k] is where
	 * interval k's values begin in rtt[], each range then summarised. */
	start = g_new0(gsize, n + 1);
	for (gsize i = 0; i < n_rx; i++) {
		if (rx[i].sent_us >= from_us && rx[i].sent_us <= last)
			start[rtt_slot(rx[i].sent_us, from_us, width_us) + 1]++;
	}
	for (gsize k = 0; k < n; k++)
		start[k + 1] += start[k];
	rtt = g_new(double, MAX(start[n], 1));
	{
		g_autofree gsize *fill = g_memdup2(start, n * sizeof(gsize));

		for (gsize i = 0; i < n_rx; i++) {
			if (rx[i].sent_us >= from_us && rx[i].sent_us <= last)
				rtt[fill[rtt_slot(rx[i].sent_us, from_us, width_us)]++] = rx[i].rtt_ms;
		}
	}
	for (gsize k = 0; k < n; k++) {
		BenchRttInterval *iv = &g_array_index(out, BenchRttInterval, k);
		BenchSummary sum;

		bench_summarize(rtt + start[k], start[k + 1] - start[k], &sum);
		iv->received = (guint)sum.n;
		iv->p50_ms = sum.median;
		iv->p99_ms = sum.p99;
		iv->max_ms = sum.max;
	}
	return out;
}

gint64
bench_slot_next(gint64 next_us, gint64 now_us, gint64 period_us, guint64 *skipped)
{
	next_us += period_us;
	if (now_us - next_us >= period_us) {
		*skipped += (guint64)((now_us - next_us) / period_us);
		next_us += (now_us - next_us) / period_us * period_us;
	}
	return next_us;
}

/* ---- Sequence tracking -------------------------------------------------- */

#define BIT_WORD(s) (((s) % BENCH_SEQ_WINDOW) / 64)
#define BIT_MASK(s) (G_GUINT64_CONSTANT(1) << ((s) % 64))

void
bench_seq_init(BenchSeqTracker *t)
{
	memset(t, 0, sizeof(*t));
}

/* Moves the window's top from t->highest to @seq, forgetting what falls out. */
static void
seq_advance(BenchSeqTracker *t, guint64 seq)
{
	if (seq - t->highest >= BENCH_SEQ_WINDOW) {
		memset(t->bits, 0, sizeof(t->bits));
	} else {
		for (guint64 s = t->highest + 1; s <= seq; s++)
			t->bits[BIT_WORD(s)] &= ~BIT_MASK(s);
	}
	t->highest = seq;
}

void
bench_seq_add(BenchSeqTracker *t, guint64 seq)
{
	if (!t->started || seq > t->highest) {
		if (!t->started) {
			memset(t->bits, 0, sizeof(t->bits));
			t->highest = seq;
			t->started = TRUE;
		} else {
			seq_advance(t, seq);
		}
		t->bits[BIT_WORD(seq)] |= BIT_MASK(seq);
		t->unique++;
		return;
	}
	if (t->highest - seq >= BENCH_SEQ_WINDOW) {
		t->late++;
		return;
	}
	if (t->bits[BIT_WORD(seq)] & BIT_MASK(seq)) {
		t->duplicates++;
		return;
	}
	t->bits[BIT_WORD(seq)] |= BIT_MASK(seq);
	t->unique++;
	if (seq != t->highest)
		t->reordered++;
}

guint64
bench_seq_expected(const BenchSeqTracker *t)
{
	return t->started ? t->highest + 1 : 0;
}

guint64
bench_seq_lost(const BenchSeqTracker *t)
{
	guint64 e = bench_seq_expected(t);

	return e > t->unique ? e - t->unique : 0;
}

/* ---- Auto-rate controller ----------------------------------------------- */

void
bench_rate_init(BenchRateCtl *c, double min_pps, double max_pps)
{
	memset(c, 0, sizeof(*c));
	c->min_pps = MAX(min_pps, 1);
	c->max_pps = MAX(max_pps, c->min_pps);
	c->rate_pps = c->min_pps;
	c->loss_tolerance = 0.02;
	c->queue_us = 250000;
	c->phase = BENCH_RATE_STARTUP;
}

static gboolean
rate_shortfall(const BenchRateCtl *c, const BenchRateFeedback *fb)
{
	double loss;

	if (fb->expected == 0)
		return fb->sent > 0 && fb->in_flight > fb->sent / 2;
	loss = 1.0 - (double)MIN(fb->delivered, fb->expected) / (double)fb->expected;
	if (loss > c->loss_tolerance)
		return TRUE;
	return (double)fb->in_flight > c->rate_pps * (double)c->queue_us / 1e6 + 8;
}

double
bench_rate_update(BenchRateCtl *c, const BenchRateFeedback *fb)
{
	double delivered_pps = fb->interval_us > 0 ? (double)fb->delivered * 1e6 / (double)fb->interval_us : 0;

	c->best_delivered_pps = MAX(c->best_delivered_pps, delivered_pps);
	if (rate_shortfall(c, fb)) {
		c->rate_pps = MIN(c->rate_pps, delivered_pps) * 0.9;
		c->phase = BENCH_RATE_PROBE;
		c->backoffs++;
	} else if (fb->sent == 0) {
		/* Nothing was tried: nothing learnt. */
	} else if (c->phase == BENCH_RATE_STARTUP) {
		c->rate_pps *= 2;
	} else {
		c->rate_pps += MAX(c->rate_pps * 0.05, c->min_pps);
	}
	c->rate_pps = CLAMP(c->rate_pps, c->min_pps, c->max_pps);
	return c->rate_pps;
}
