/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-stats.h: ncm-bench's pure statistics: percentiles, stall windows, sequence tracking, auto-rate. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* ---- Percentiles -------------------------------------------------------- */

/*
 * Nearest-rank percentiles: the p-th percentile of n sorted values is the
 * value at rank ceil(p/100 * n) (1-based), so it is always an observed
 * value, never an interpolation; p <= 0 gives the minimum. The median is
 * the 50th percentile by the same rule (the lower middle value of an even
 * count), so "median" and "p50" never disagree in the output.
 */
double bench_percentile(const double *sorted, gsize n, double p);

typedef struct {
	gsize n;
	double min;
	double median;
	double p99;
	double max;
	double mean;
} BenchSummary;

/* Sorts @values in place and summarises them. All zero when @n is 0. */
void bench_summarize(double *values, gsize n, BenchSummary *ret);

/* ---- Delivery over time ------------------------------------------------- */

/* A point of a cumulative count: @bytes delivered by time @t_us. */
typedef struct {
	gint64 t_us;
	guint64 bytes;
} BenchSample;

typedef struct {
	guint n_windows;
	guint empty_windows;    /* windows in which nothing was delivered */
	double min_mbit_s;      /* the slowest full window */
	double max_mbit_s;
	gint64 longest_stall_us; /* longest time the count stood still */
} BenchWindows;

/*
 * Cuts [@from_us, @to_us) into windows of @width_us and counts what was
 * delivered in each. The count between two samples is interpolated
 * linearly (0 before the first, the last one's after it), so a window is
 * empty only when the count stood still over all of it; a series must
 * therefore carry a sample where a pause begins as well as where it ends
 * (the receiver's last arrival before a gap). A trailing partial window
 * is ignored. @ret_rates, when
 * not NULL, receives one Mbit/s value per window (g_free it).
 */
void bench_windows(const BenchSample *samples, gsize n, gint64 from_us, gint64 to_us,
		   gint64 width_us, BenchWindows *ret, double **ret_rates);

/*
 * The longest time between a sample that raised the count and the next
 * sample that raised it again, over samples inside [@from_us, @to_us]
 * (the interval's ends count as raises, so a link that went silent for
 * the rest of the run shows a stall up to @to_us).
 */
gint64 bench_longest_stall(const BenchSample *samples, gsize n, gint64 from_us, gint64 to_us);

/* Bytes delivered between the (interpolated) counts at @from_us and @to_us. */
double bench_count_between(const BenchSample *samples, gsize n, gint64 from_us, gint64 to_us);

/* Mbit/s delivered between the (interpolated) counts at @from_us and @to_us. */
double bench_rate_between(const BenchSample *samples, gsize n, gint64 from_us, gint64 to_us);

/* ---- Round trips over time --------------------------------------------- */

/* One echoed probe: when it was sent and how long its round trip took. */
typedef struct {
	gint64 sent_us;
	double rtt_ms;
} BenchRttSample;

/* One interval of a round-trip series; p50, p99 and max are 0 when nothing came back. */
typedef struct {
	guint sent;
	guint received;
	double p50_ms;
	double p99_ms;
	double max_ms;
} BenchRttInterval;

/*
 * Cuts the run into intervals of @width_us from @from_us, by the time each
 * probe was SENT (an echo that came back late counts where its probe
 * left, so a spike shows when it began, and sent - received is that
 * interval's loss). Probes sent before @from_us are left out. The series
 * ends with the interval of the last probe sent; a trailing partial
 * interval is kept. Percentiles are nearest-rank (bench_percentile()).
 * Returns a GArray of BenchRttInterval (empty when nothing was sent).
 */
GArray *bench_rtt_intervals(const gint64 *sent_us, gsize n_sent, const BenchRttSample *rx,
			    gsize n_rx, gint64 from_us, gint64 width_us);

/*
 * A fixed-rate sender's next send time, after the probe of the slot at
 * @next_us went out at @now_us: one @period_us on, and past every slot
 * that @now_us is already a full period late for (the sender was not
 * scheduled), each added to @skipped. Sending those back to back would
 * measure a burst instead of the rate.
 */
gint64 bench_slot_next(gint64 next_us, gint64 now_us, gint64 period_us, guint64 *skipped);

/* ---- Sequence tracking -------------------------------------------------- */

#define BENCH_SEQ_WINDOW 4096

/*
 * Per-stream receiver accounting for sequence numbers counted from 0.
 * A bounded window of the last BENCH_SEQ_WINDOW numbers below the highest
 * one seen remembers which arrived:
 * - a number seen twice within the window is a duplicate, never counted
 *   as delivered again;
 * - a number below the highest but within the window that arrives for the
 *   first time is "reordered": delivered, and not lost;
 * - a number older than the window is "late": the receiver can no longer
 *   tell it from a duplicate, so it is not counted as delivered, and it
 *   stays counted as lost.
 * Lost = expected - unique, where expected = highest + 1: packets sent
 * after the highest one that arrived are invisible to the receiver, so the
 * sender adds its own count for the tail.
 */
typedef struct {
	gboolean started;
	guint64 highest;
	guint64 unique;
	guint64 duplicates;
	guint64 reordered;
	guint64 late;
	guint64 bits[BENCH_SEQ_WINDOW / 64]; /* bit (seq % WINDOW) for seq in (highest - WINDOW, highest] */
} BenchSeqTracker;

void bench_seq_init(BenchSeqTracker *t);
void bench_seq_add(BenchSeqTracker *t, guint64 seq);
guint64 bench_seq_expected(const BenchSeqTracker *t);
guint64 bench_seq_lost(const BenchSeqTracker *t);

/* ---- Auto-rate controller ----------------------------------------------- */

/*
 * The receiver's feedback over one interval, as deltas: @expected grew by
 * how far the highest sequence number advanced, @delivered by the unique
 * numbers that arrived; @sent is what the sender sent in the interval and
 * @in_flight what it has sent beyond the highest number seen.
 */
typedef struct {
	gint64 interval_us;
	guint64 sent;
	guint64 expected;
	guint64 delivered;
	guint64 in_flight;
} BenchRateFeedback;

typedef enum {
	BENCH_RATE_STARTUP, /* doubles each clean interval */
	BENCH_RATE_PROBE,   /* grows a few percent each clean interval */
} BenchRatePhase;

/*
 * Starts at @min, doubles while the receiver keeps up, and after the first
 * shortfall grows by 5% (at least min) per clean interval. A shortfall is
 * loss above @loss_tolerance among the expected numbers, nothing arriving
 * while the sender sent, or more than @queue_us of sending in flight (the
 * link is queueing, not delivering). On a shortfall the rate drops to 90%
 * of what was delivered. The rate never leaves [@min, @max].
 */
typedef struct {
	double rate_pps;
	double min_pps;
	double max_pps;
	double loss_tolerance;
	gint64 queue_us;
	BenchRatePhase phase;
	guint backoffs;
	double best_delivered_pps;
} BenchRateCtl;

void bench_rate_init(BenchRateCtl *c, double min_pps, double max_pps);
/* Feeds one interval's feedback; returns the rate to send at next. */
double bench_rate_update(BenchRateCtl *c, const BenchRateFeedback *fb);

G_END_DECLS
