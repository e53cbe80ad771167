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

void
bench_cost_json(BenchCtx *ctx, BenchResult *r, const BenchCost *before, double mbytes)
{
	BenchTransport *t = ctx->transport;
	BenchCost now;

	if (mbytes <= 0)
		return;
	bench_cost_now(t, &now);
	bench_json_num(r->json, "cpu_s_per_mb", (now.cpu_s - before->cpu_s) / mbytes);
	if (t->ops->child_cpu_seconds)
		bench_json_num(r->json, "ncm_tun_cpu_s_per_mb",
			       (now.child_cpu_s - before->child_cpu_s) / mbytes);
	if (t->ops->main_dispatches)
		bench_json_num(r->json, "main_dispatches_per_mb",
			       (double)(now.dispatches - before->dispatches) / mbytes);
	if (t->ops->core_lock_wait_us)
		bench_json_num(r->json, "core_lock_wait_ms_per_mb",
			       (double)(now.lock_wait_us - before->lock_wait_us) / 1000.0 / mbytes);
	bench_json_num(r->json, "context_switches_per_mb",
		       (double)(now.switches - before->switches) / mbytes);
}

/* Per repetition, over its measured interval: whole-system CPU, and USB transfers each way, per MB. */
typedef struct {
	double *sys_cpu;    /* busy CPU-s per MB */
	double *busy_pct;   /* busy share of all CPUs */
	double *usb_rx;     /* IN transfers (NTBs) per MB */
	double *usb_tx;     /* OUT transfers (NTBs) per MB */
	gsize n_cpu, n_usb;
} SpanCosts;

static void
span_cost(BenchTransport *t, const BenchRep *rep, SpanCosts *c)
{
	const BenchProbe *a = &rep->span.a, *b = &rep->span.b;
	double mb = (double)rep->span_bytes / 1e6;
	guint64 arx, atx, brx, btx;

	if (!b->taken || rep->span_bytes == 0)
		return;
	if (a->cpu_ok && b->cpu_ok) {
		c->sys_cpu[c->n_cpu] = bench_cpu_s_per_mb(&a->cpu, &b->cpu, sysconf(_SC_CLK_TCK),
							  rep->span_bytes);
		c->busy_pct[c->n_cpu++] = 100 * bench_cpu_busy_share(&a->cpu, &b->cpu);
	}
	if (t->ops->usb_count && t->ops->usb_count(t, a->usb, &arx, &atx) &&
	    t->ops->usb_count(t, b->usb, &brx, &btx) && brx >= arx && btx >= atx) {
		c->usb_rx[c->n_usb] = (double)(brx - arx) / mb;
		c->usb_tx[c->n_usb++] = (double)(btx - atx) / mb;
	}
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

static void
span_json(BenchResult *r, SpanCosts *c)
{
	BenchSummary s;

	if (c->n_cpu > 0) {
		bench_summarize(c->sys_cpu, c->n_cpu, &r->sys_cpu);
		bench_json_summary(r->json, "system_cpu_s_per_mb", &r->sys_cpu, FALSE);
		bench_summarize(c->busy_pct, c->n_cpu, &s);
		bench_json_summary(r->json, "system_cpu_busy_pct", &s, FALSE);
	}
	if (c->n_usb > 0) {
		bench_summarize(c->usb_rx, c->n_usb, &s);
		bench_json_summary(r->json, "usb_rx_ntbs_per_mb", &s, FALSE);
		bench_summarize(c->usb_tx, c->n_usb, &s);
		bench_json_summary(r->json, "usb_tx_ntbs_per_mb", &s, FALSE);
	}
}

void
bench_throughput_test(BenchCtx *ctx, const char *test, BenchRepFunc rep_fn)
{
	gsize reps = (gsize)ctx->opt->reps;
	g_autofree double *v = g_new0(double, reps);
	g_autofree double *work = g_new0(double, 4 * reps);
	SpanCosts sc = {work, work + reps, work + 2 * reps, work + 3 * reps, 0, 0};
	g_autoptr(GArray) samples = NULL;
	g_autoptr(GError) error = NULL;
	BenchTransport *t = ctx->transport;
	double mbytes = 0;
	BenchResult *r;
	BenchCost cost;
	gsize n = 0;

	if (!bench_test_selected(ctx->opt, test))
		return;
	bench_progress("%s: %s", t->name, test);
	r = bench_result_add(ctx, test);
	bench_cost_now(t, &cost);
	for (; n < reps; n++) {
		BenchRep rep = {.span.t = t};

		if (!rep_fn(ctx, &rep, &samples, &error))
			break;
		v[n] = rep.mbit;
		mbytes += v[n] / 8 * ctx->opt->secs;
		span_cost(t, &rep, &sc);
		if (rep.span.b.taken && rep.span_bytes > 0)
			bench_span_log(t, test, &rep.span.a, &rep.span.b, rep.span_bytes);
	}
	if (n < reps) {
		bench_result_fail(r, error);
		return;
	}
	bench_summarize(v, n, &r->mbit);
	bench_json_summary(r->json, "mbit_s", &r->mbit, FALSE);
	bench_json_num(r->json, "reps", (double)n);
	bench_json_num(r->json, "secs", ctx->opt->secs);
	span_json(r, &sc);
	bench_cost_json(ctx, r, &cost, mbytes);
	if (samples && samples->len > 0)
		r->rates = bench_series_rates(samples, g_array_index(samples, BenchSample, 0).t_us,
					      g_array_index(samples, BenchSample, samples->len - 1).t_us);
	r->cell = g_strdup_printf("%.1f Mbit/s (%.1f-%.1f)", r->mbit.median, r->mbit.min, r->mbit.max);
}
