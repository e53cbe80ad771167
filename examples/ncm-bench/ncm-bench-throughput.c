/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-throughput.c: the throughput tests' shared machinery: repetitions, measured intervals, costs per MB, the server's reports. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ncm-bench-throughput.h"
#include "ncm-bench-proto.h"

void
bench_probe_take(BenchSpan *span, BenchProbe *p, guint64 bytes)
{
	BenchTransport *t = span->t;

	p->t_us = g_get_monotonic_time();
	p->cpu_ok = bench_cpu_ticks_read(&p->cpu);
	p->usb = t->ops->usb_mark ? t->ops->usb_mark(t) : 0;
	p->bytes = bytes;
	p->taken = TRUE;
}

/* ---- The server's reports ------------------------------------------------------- */

void
bench_sink_report_init(BenchSinkReport *r)
{
	memset(r, 0, sizeof(*r));
	r->samples = g_array_new(FALSE, FALSE, sizeof(BenchSample));
}

void
bench_sink_report_clear(BenchSinkReport *r)
{
	if (r->samples)
		g_array_unref(r->samples);
	memset(r, 0, sizeof(*r));
}

/* Parses one "S ..." line into @r. */
static void
sink_parse(BenchSinkReport *r, const char *line)
{
	gint64 t = 0, omin = 0, omax = 0, gap = 0;
	guint64 bytes = 0, frames = 0;
	BenchSample s;

	if (sscanf(line, "S %" G_GINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT
		   " %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT, &t, &bytes, &omin, &omax, &frames, &gap) != 6)
		return;
	r->gap_max = MAX(r->gap_max, gap);
	if (r->samples->len == 0)
		r->start_us = t - BENCH_REPORT_US;
	s.t_us = t;
	s.bytes = bytes;
	g_array_append_val(r->samples, s);
	r->end_us = t;
	if (frames > 0) {
		if (r->frames == 0 || omin < r->owd_min)
			r->owd_min = omin;
		if (r->frames == 0 || omax > r->owd_max)
			r->owd_max = omax;
		r->frames += frames;
	}
}

static guint64
sink_bytes(const BenchSinkReport *r)
{
	return r->samples->len ? g_array_index(r->samples, BenchSample, r->samples->len - 1).bytes : 0;
}

static void
sink_probe(const BenchSinkReport *r, BenchSpan *span, gboolean end)
{
	const BenchSample *last;

	if (!span || !r->samples->len)
		return;
	last = &g_array_index(r->samples, BenchSample, r->samples->len - 1);
	if (!span->a.taken && last->t_us >= r->start_us + G_USEC_PER_SEC)
		bench_probe_take(span, &span->a, last->bytes);
	else if (end && span->a.taken)
		bench_probe_take(span, &span->b, last->bytes);
}

gboolean
bench_sink_read(GDataInputStream *lines, BenchSinkReport *r, guint64 until_bytes, BenchSpan *span,
		GError **error)
{
	for (;;) {
		g_autofree char *line = g_data_input_stream_read_line(lines, NULL, NULL, error);

		if (!line) {
			if (error && !*error)
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "the server closed early");
			return FALSE;
		}
		if (line[0] == 'E') {
			sink_probe(r, span, TRUE);
			return TRUE;
		}
		if (line[0] == 'S') {
			sink_parse(r, line);
			sink_probe(r, span, FALSE);
		}
		if (until_bytes && sink_bytes(r) >= until_bytes)
			return TRUE;
	}
}

/* ---- Repetitions ----------------------------------------------------------------- */

/* Mbit/s after the first second of a series. */
static double
series_mbit(const GArray *samples, gint64 start_us, gint64 end_us)
{
	return bench_rate_between((const BenchSample *)(const void *)samples->data, samples->len,
				  start_us + G_USEC_PER_SEC, end_us);
}

static void
rep_span_bytes(BenchRep *rep)
{
	if (rep->span.b.taken && rep->span.b.bytes > rep->span.a.bytes)
		rep->span_bytes = rep->span.b.bytes - rep->span.a.bytes;
}

gboolean
bench_rep_received(BenchCtx *ctx, BenchRep *rep, BenchSeriesFunc recv, GArray **ret_samples,
		   GError **error)
{
	GArray *s = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	gboolean ok = recv(ctx, s, &rep->span, error) && s->len > 0;

	if (ok) {
		gint64 t0 = g_array_index(s, BenchSample, 0).t_us;

		rep->mbit = series_mbit(s, t0, g_array_index(s, BenchSample, s->len - 1).t_us);
		rep_span_bytes(rep);
		if (ret_samples && !*ret_samples)
			*ret_samples = g_array_ref(s);
	}
	g_array_unref(s);
	return ok;
}

void
bench_rep_reported(BenchRep *rep, BenchSinkReport *r, GArray **ret_samples)
{
	rep->mbit = series_mbit(r->samples, r->start_us, r->end_us);
	rep_span_bytes(rep);
	if (ret_samples && !*ret_samples) {
		/* Rebased so plots of both directions start at the same place. */
		*ret_samples = g_array_ref(r->samples);
		for (guint i = 0; i < r->samples->len; i++)
			g_array_index(r->samples, BenchSample, i).t_us -= r->start_us;
	}
}

typedef struct {
	BenchCtx *ctx;
	BenchSeriesFunc down;
	GArray *samples;
	GError *error;
	gboolean ok;
} DownJob;

static gpointer
down_job(gpointer data)
{
	DownJob *j = data;

	j->ok = j->down(j->ctx, j->samples, NULL, &j->error) && j->samples->len > 0;
	return NULL;
}

gboolean
bench_rep_bidir(BenchCtx *ctx, BenchRep *rep, BenchRepFunc up, BenchSeriesFunc down, GError **error)
{
	g_autoptr(GArray) samples = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	DownJob j = {ctx, down, samples, NULL, FALSE};
	GThread *th = g_thread_new("bench-down", down_job, &j);
	gboolean ok = up(ctx, rep, NULL, error);
	const BenchSample *d;

	g_thread_join(th);
	if (ok && !j.ok)
		g_propagate_error(error, j.error);
	else
		g_clear_error(&j.error);
	if (!ok || !j.ok)
		return FALSE;
	d = (const BenchSample *)(const void *)samples->data;
	rep->mbit += series_mbit(samples, d[0].t_us, d[samples->len - 1].t_us);
	if (rep->span.b.taken)
		rep->span_bytes += (guint64)bench_count_between(d, samples->len, rep->span.a.t_us,
								rep->span.b.t_us);
	return TRUE;
}

/* ---- Costs per MB ----------------------------------------------------------------- */

void
bench_cost_now(BenchTransport *t, BenchCost *c)
{
	c->cpu_s = bench_cpu_seconds();
	c->child_cpu_s = t->ops->child_cpu_seconds ? t->ops->child_cpu_seconds(t) : 0;
	c->dispatches = t->ops->main_dispatches ? t->ops->main_dispatches(t) : 0;
	c->lock_wait_us = t->ops->core_lock_wait_us ? t->ops->core_lock_wait_us(t) : 0;
	c->switches = bench_context_switches();
}

/* @c becomes what was done since @before. */
static void
cost_since(BenchTransport *t, const BenchCost *before, BenchCost *c)
{
	bench_cost_now(t, c);
	c->cpu_s -= before->cpu_s;
	c->child_cpu_s -= before->child_cpu_s;
	c->dispatches -= before->dispatches;
	c->lock_wait_us -= before->lock_wait_us;
	c->switches -= before->switches;
}

static void
cost_add(BenchCost *sum, const BenchCost *c)
{
	sum->cpu_s += c->cpu_s;
	sum->child_cpu_s += c->child_cpu_s;
	sum->dispatches += c->dispatches;
	sum->lock_wait_us += c->lock_wait_us;
	sum->switches += c->switches;
}

/* @c: what the path did while @mbytes moved. */
static void
cost_json(BenchTransport *t, GString *json, const BenchCost *c, double mbytes)
{
	if (mbytes <= 0)
		return;
	bench_json_num(json, "cpu_s_per_mb", c->cpu_s / mbytes);
	if (t->ops->child_cpu_seconds)
		bench_json_num(json, "ncm_tun_cpu_s_per_mb", c->child_cpu_s / mbytes);
	if (t->ops->main_dispatches)
		bench_json_num(json, "main_dispatches_per_mb", (double)c->dispatches / mbytes);
	if (t->ops->core_lock_wait_us)
		bench_json_num(json, "core_lock_wait_ms_per_mb", (double)c->lock_wait_us / 1000.0 / mbytes);
	bench_json_num(json, "context_switches_per_mb", (double)c->switches / mbytes);
}

void
bench_cost_json(BenchCtx *ctx, BenchResult *r, const BenchCost *before, double mbytes)
{
	BenchCost c;

	cost_since(ctx->transport, before, &c);
	cost_json(ctx->transport, r->json, &c, mbytes);
}

/*
 * A throughput test's runs, in the order they ran, over every round
 * (--rounds): per run its Mbit/s, and over its measured interval the
 * whole system's CPU and the USB transfers each way, per MB.
 */
typedef struct {
	GArray *mbit;       /* double, as every array here */
	GArray *round;      /* the round each run belongs to */
	GArray *sys_cpu;    /* busy CPU-s per MB */
	GArray *busy_pct;   /* busy share of all CPUs */
	GArray *usb_rx;     /* IN transfers (NTBs) per MB */
	GArray *usb_tx;     /* OUT transfers (NTBs) per MB */
	double mbytes;      /* over whole tests, for the path's own costs */
	BenchCost cost;     /* summed over the rounds */
	gboolean failed;    /* a round failed: later rounds leave the test alone */
} RunAcc;

static void
run_acc_free(gpointer data)
{
	RunAcc *a = data;

	g_array_unref(a->mbit);
	g_array_unref(a->round);
	g_array_unref(a->sys_cpu);
	g_array_unref(a->busy_pct);
	g_array_unref(a->usb_rx);
	g_array_unref(a->usb_tx);
	g_free(a);
}

static RunAcc *
run_acc(BenchResult *r)
{
	RunAcc *a = r->acc;

	if (a)
		return a;
	a = g_new0(RunAcc, 1);
	a->mbit = g_array_new(FALSE, FALSE, sizeof(double));
	a->round = g_array_new(FALSE, FALSE, sizeof(double));
	a->sys_cpu = g_array_new(FALSE, FALSE, sizeof(double));
	a->busy_pct = g_array_new(FALSE, FALSE, sizeof(double));
	a->usb_rx = g_array_new(FALSE, FALSE, sizeof(double));
	a->usb_tx = g_array_new(FALSE, FALSE, sizeof(double));
	r->acc = a;
	r->acc_free = run_acc_free;
	return a;
}

/* One run's figures; a run whose interval was not measured adds only its Mbit/s. */
static void
run_add(BenchTransport *t, const BenchRep *rep, gint round, RunAcc *a)
{
	const BenchProbe *pa = &rep->span.a, *pb = &rep->span.b;
	double mb = (double)rep->span_bytes / 1e6, v, r = round;
	guint64 arx, atx, brx, btx;

	g_array_append_val(a->mbit, rep->mbit);
	g_array_append_val(a->round, r);
	if (!pb->taken || rep->span_bytes == 0)
		return;
	if (pa->cpu_ok && pb->cpu_ok) {
		v = bench_cpu_s_per_mb(&pa->cpu, &pb->cpu, sysconf(_SC_CLK_TCK), rep->span_bytes);
		g_array_append_val(a->sys_cpu, v);
		v = 100 * bench_cpu_busy_share(&pa->cpu, &pb->cpu);
		g_array_append_val(a->busy_pct, v);
	}
	if (t->ops->usb_count && t->ops->usb_count(t, pa->usb, &arx, &atx) &&
	    t->ops->usb_count(t, pb->usb, &brx, &btx) && brx >= arx && btx >= atx) {
		v = (double)(brx - arx) / mb;
		g_array_append_val(a->usb_rx, v);
		v = (double)(btx - atx) / mb;
		g_array_append_val(a->usb_tx, v);
	}
}

/* Summarises a copy: the arrays keep the order the runs ran in. */
static void
summarize(const GArray *v, BenchSummary *ret)
{
	g_autofree double *sorted = g_memdup2(v->data, v->len * sizeof(double));

	bench_summarize(sorted, v->len, ret);
}

static void
summary_json(GString *json, const char *key, const GArray *v, BenchSummary *ret)
{
	BenchSummary s;

	if (v->len == 0)
		return;
	summarize(v, ret ? ret : &s);
	bench_json_summary(json, key, ret ? ret : &s, FALSE);
}

/*
 * The result's JSON and cell, made anew from all runs so far, so that
 * after every round the result is whole. "runs" lists each run's figures
 * in the order they ran, with its round: drift over time and the order of
 * the paths show there.
 */
static void
result_build(BenchTransport *t, const BenchOptions *o, BenchResult *r, RunAcc *a)
{
	g_autoptr(GString) json = g_string_new(NULL);
	g_autoptr(GString) runs = g_string_new(NULL);

	summary_json(json, "mbit_s", a->mbit, &r->mbit);
	bench_json_num(json, "reps", (double)a->mbit->len);
	bench_json_num(json, "secs", o->secs);
	summary_json(json, "system_cpu_s_per_mb", a->sys_cpu, &r->sys_cpu);
	summary_json(json, "system_cpu_busy_pct", a->busy_pct, NULL);
	summary_json(json, "usb_rx_ntbs_per_mb", a->usb_rx, NULL);
	summary_json(json, "usb_tx_ntbs_per_mb", a->usb_tx, NULL);
	cost_json(t, json, &a->cost, a->mbytes);
	bench_json_array(runs, "mbit_s", (const double *)(const void *)a->mbit->data, a->mbit->len);
	bench_json_array(runs, "round", (const double *)(const void *)a->round->data, a->round->len);
	/* Only when every run has it: the arrays line up with mbit_s. */
	if (a->sys_cpu->len == a->mbit->len)
		bench_json_array(runs, "system_cpu_s_per_mb", (const double *)(const void *)a->sys_cpu->data,
				 a->sys_cpu->len);
	g_string_append_printf(json, ",\"runs\":{%s}", runs->str + 1);
	g_string_assign(r->json, json->str);
	g_free(r->cell);
	r->cell = g_strdup_printf("%.1f Mbit/s (%.1f-%.1f)", r->mbit.median, r->mbit.min, r->mbit.max);
}

/*
 * NCM_BENCH_SPANS=FILE appends each measured interval (CLOCK_MONOTONIC
 * microseconds, as g_get_monotonic_time) and its bytes, so that a profiler
 * recording with that clock (perf record -k mono) can keep exactly the
 * samples the Mbit/s and CPU per MB were computed over.
 */
void
bench_span_log(const BenchTransport *t, const char *test, const BenchProbe *a,
	       const BenchProbe *b, guint64 bytes)
{
	const char *path = g_getenv("NCM_BENCH_SPANS");
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "a");
	if (!f) {
		bench_progress("NCM_BENCH_SPANS: cannot open %s: %s", path, g_strerror(errno));
		return;
	}
	fprintf(f, "%s %s %" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %" G_GUINT64_FORMAT "\n", t->name,
		test, a->t_us, b->t_us, bytes);
	fclose(f);
}

void
bench_throughput_test(BenchCtx *ctx, const char *test, BenchRepFunc rep_fn)
{
	g_autoptr(GArray) samples = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GArray) reps = g_array_new(FALSE, FALSE, sizeof(BenchRep));
	BenchTransport *t = ctx->transport;
	double mbytes = 0;
	BenchResult *r;
	BenchCost before, cost;
	RunAcc *a;

	if (!bench_test_selected(ctx->opt, test))
		return;
	bench_progress("%s: %s", t->name, test);
	r = bench_result_add(ctx, test);
	a = run_acc(r);
	if (a->failed) {
		bench_progress("%s: %s failed in an earlier round; not run again", t->name, test);
		return;
	}
	bench_cost_now(t, &before);
	for (gint n = 0; n < ctx->opt->reps; n++) {
		BenchRep rep = {.span.t = t};

		if (!rep_fn(ctx, &rep, &samples, &error)) {
			/* The runs of this round are dropped; earlier rounds' stay. */
			bench_results_lock();
			a->failed = TRUE;
			bench_result_fail(r, error);
			bench_results_unlock();
			return;
		}
		g_array_append_val(reps, rep);
		mbytes += rep.mbit / 8 * ctx->opt->secs;
		if (rep.span.b.taken && rep.span_bytes > 0)
			bench_span_log(t, test, &rep.span.a, &rep.span.b, rep.span_bytes);
	}
	cost_since(t, &before, &cost);
	bench_results_lock();
	for (guint i = 0; i < reps->len; i++)
		run_add(t, &g_array_index(reps, BenchRep, i), ctx->opt->round, a);
	a->mbytes += mbytes;
	cost_add(&a->cost, &cost);
	result_build(t, ctx->opt, r, a);
	/* The plot's over-time panel: the first run's series. */
	if (!r->rates && samples && samples->len > 0)
		r->rates = bench_series_rates(samples, g_array_index(samples, BenchSample, 0).t_us,
					      g_array_index(samples, BenchSample, samples->len - 1).t_us);
	bench_results_unlock();
}
