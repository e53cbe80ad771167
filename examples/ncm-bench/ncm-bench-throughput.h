/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-throughput.h: what the throughput tests (TCP and raw) share: repetitions, their measured intervals and costs, the server's reports. */
#pragma once

#include "ncm-bench.h"
#include "ncm-bench-cpu.h"

G_BEGIN_DECLS

/*
 * What the whole system and the path had done at one moment: taken where a
 * throughput run's measured interval starts (the receiver's first count at
 * or after its first second) and where it ends (its last count), so CPU and
 * USB work cover the interval the Mbit/s count.
 */
typedef struct {
	gboolean taken;
	gboolean cpu_ok;
	gint64 t_us;            /* our clock */
	guint64 bytes;          /* the receiver's count then, in the direction that took it */
	BenchCpuTicks cpu;
	guint usb;              /* the path's mark of its USB counts */
} BenchProbe;

typedef struct {
	BenchTransport *t;
	BenchProbe a, b;
} BenchSpan;

void bench_probe_take(BenchSpan *span, BenchProbe *p, guint64 bytes);
/* NCM_BENCH_SPANS=FILE: appends the interval from @a to @b and its bytes (a profiler keeps those samples). */
void bench_span_log(const BenchTransport *t, const char *test, const BenchProbe *a,
		    const BenchProbe *b, guint64 bytes);

/* One repetition: its Mbit/s, and its measured interval with what the receivers confirmed in it. */
typedef struct {
	double mbit;
	BenchSpan span;
	guint64 span_bytes;
} BenchRep;

typedef gboolean (*BenchRepFunc)(BenchCtx *ctx, BenchRep *rep, GArray **ret_samples, GError **error);

/*
 * A direction this side receives: fills @samples (BenchSample, our clock)
 * from the first arrival on, and @span (when not NULL) from the first
 * arrival at or after the first second to the last.
 */
typedef gboolean (*BenchSeriesFunc)(BenchCtx *ctx, GArray *samples, BenchSpan *span, GError **error);

/* What the server reported about one SINK-like session, in its clock. */
typedef struct {
	GArray *samples; /* BenchSample */
	gint64 start_us;
	gint64 end_us;
	gint64 owd_min, owd_max;
	guint64 frames;
	gint64 gap_max; /* the longest time the server received nothing */
} BenchSinkReport;

void bench_sink_report_init(BenchSinkReport *r);
void bench_sink_report_clear(BenchSinkReport *r);
/*
 * Reads "S" reports until "E" (TRUE) or until @until_bytes is confirmed.
 * @span (when not NULL) starts at the first report at or after the first
 * second and ends at "E", which follows the last report at once.
 */
gboolean bench_sink_read(GDataInputStream *lines, BenchSinkReport *r, guint64 until_bytes,
			 BenchSpan *span, GError **error);

/* One repetition of a direction this side receives, through @recv. */
gboolean bench_rep_received(BenchCtx *ctx, BenchRep *rep, BenchSeriesFunc recv, GArray **ret_samples,
			    GError **error);
/* One repetition of a direction the server counted, from its reports @r. */
void bench_rep_reported(BenchRep *rep, BenchSinkReport *r, GArray **ret_samples);
/*
 * Both directions at once: @up on this thread, @down on another. The up
 * direction's reports mark the interval; the down direction's bytes in it
 * are counted in our clock, between the moments its ends were taken.
 */
gboolean bench_rep_bidir(BenchCtx *ctx, BenchRep *rep, BenchRepFunc up, BenchSeriesFunc down,
			 GError **error);

/* What the path cost per MB moved over the whole test; each figure only for paths that have it. */
typedef struct {
	double cpu_s;       /* this process */
	double child_cpu_s; /* the path's helper process (ncm-tun) */
	guint64 dispatches;
	guint64 lock_wait_us; /* lwIP's core lock, summed over threads (lwip) */
	guint64 switches;     /* this process's context switches, voluntary or not */
} BenchCost;

void bench_cost_now(BenchTransport *t, BenchCost *c);
/* cpu_s_per_mb, context_switches_per_mb (and ncm_tun_cpu_s_per_mb, main_dispatches_per_mb,
 * core_lock_wait_ms_per_mb) since @before, over @mbytes. */
void bench_cost_json(BenchCtx *ctx, BenchResult *r, const BenchCost *before, double mbytes);

/*
 * Runs @rep_fn ctx->opt->reps times as @test (when selected): Mbit/s over
 * the repetitions, whole-system CPU and USB transfers per MB over their
 * measured intervals, this process's CPU per MB over the whole test.
 */
void bench_throughput_test(BenchCtx *ctx, const char *test, BenchRepFunc rep_fn);

/* ncm-bench-tcp.c: the repetition of tcp_down, tcp_up or tcp_bidir; NULL for other tests. */
BenchRepFunc bench_tcp_rep_func(const char *test);

G_END_DECLS
