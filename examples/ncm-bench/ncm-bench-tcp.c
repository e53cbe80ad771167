/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-tcp.c: ncm-bench's TCP tests: throughput each way, stalls under bulk, bursts, paced streams. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ncm-bench.h"
#include "ncm-bench-cpu.h"
#include "ncm-bench-proto.h"

#define TCP_BUF (128 * 1024)
/* Client-side samples of received bytes: finer than the report windows. */
#define SAMPLE_US 10000

/* Writes on its own thread while the caller reads the server's reports. */
typedef struct {
	GIOStream *io;
	double frame_hz;   /* > 0: one frame of frame_len every 1/frame_hz s */
	guint32 frame_len;
	gint stop;
	guint64 frames;
} Writer;

static gpointer
writer_main(gpointer data)
{
	Writer *w = data;
	GOutputStream *out = g_io_stream_get_output_stream(w->io);
	gsize len = w->frame_hz > 0 ? MAX(w->frame_len, BENCH_FRAME_HDR) : TCP_BUF;
	g_autofree guint8 *buf = g_malloc0(len);
	gint64 next = g_get_monotonic_time();

	while (!g_atomic_int_get(&w->stop)) {
		if (w->frame_hz <= 0) {
			if (g_output_stream_write(out, buf, len, NULL, NULL) <= 0)
				break;
			continue;
		}
		gint64 now = g_get_monotonic_time();

		if (now < next)
			g_usleep((gulong)(next - now));
		next += (gint64)(1e6 / w->frame_hz);
		/* Stamped before the write: time blocked in it is queueing too. */
		bench_frame_write(buf, (guint32)len, g_get_monotonic_time());
		if (!g_output_stream_write_all(out, buf, len, NULL, NULL, NULL))
			break;
		w->frames++;
	}
	return NULL;
}

/* What the server reported about one SINK session, in its clock. */
typedef struct {
	GArray *samples; /* BenchSample */
	gint64 start_us;
	gint64 end_us;
	gint64 owd_min, owd_max;
	guint64 frames;
	gint64 gap_max; /* the longest time the server received nothing */
} SinkReport;

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
} Probe;

typedef struct {
	BenchTransport *t;
	Probe a, b;
} Span;

static void
probe_take(Span *span, Probe *p, guint64 bytes)
{
	BenchTransport *t = span->t;

	p->t_us = g_get_monotonic_time();
	p->cpu_ok = bench_cpu_ticks_read(&p->cpu);
	p->usb = t->ops->usb_mark ? t->ops->usb_mark(t) : 0;
	p->bytes = bytes;
	p->taken = TRUE;
}

static void
sink_report_clear(SinkReport *r)
{
	if (r->samples)
		g_array_unref(r->samples);
	memset(r, 0, sizeof(*r));
}

/* Parses one "S ..." line into @r. */
static void
sink_parse(SinkReport *r, const char *line)
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
sink_bytes(const SinkReport *r)
{
	return r->samples->len ? g_array_index(r->samples, BenchSample, r->samples->len - 1).bytes : 0;
}

/*
 * The server's reports mark the interval in its clock: @span (when not
 * NULL) starts at the first report at or after the first second and ends
 * at "E", which follows the last report at once.
 */
static void
sink_probe(const SinkReport *r, Span *span, gboolean end)
{
	const BenchSample *last;

	if (!span || !r->samples->len)
		return;
	last = &g_array_index(r->samples, BenchSample, r->samples->len - 1);
	if (!span->a.taken && last->t_us >= r->start_us + G_USEC_PER_SEC)
		probe_take(span, &span->a, last->bytes);
	else if (end && span->a.taken)
		probe_take(span, &span->b, last->bytes);
}

/* Reads reports until "E" (TRUE) or until @until_bytes is confirmed. */
static gboolean
sink_read(GDataInputStream *lines, SinkReport *r, guint64 until_bytes, Span *span, GError **error)
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

static gboolean
sink_session(BenchCtx *ctx, const char *cmd, Writer *w, SinkReport *r, Span *span, GError **error)
{
	g_autoptr(GDataInputStream) lines = NULL;
	g_autoptr(GIOStream) io = bench_open_command(ctx, cmd, &lines, error);
	GThread *th;
	gboolean ok;

	r->samples = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	if (!io)
		return FALSE;
	w->io = io;
	th = g_thread_new("bench-writer", writer_main, w);
	ok = sink_read(lines, r, 0, span, error);
	g_atomic_int_set(&w->stop, 1);
	/* The server drains after "E" until we close, so the last write returns. */
	g_thread_join(th);
	g_io_stream_close(io, NULL, NULL);
	return ok && r->samples->len > 0;
}

/*
 * Counts what arrives from a SOURCE session, sampling every SAMPLE_US, and
 * at the last arrival before each longer gap, so pauses show in the series.
 * @span, when not NULL, starts at the first arrival at or after the first
 * second and ends at the end of the stream, right after the last arrival.
 */
static gboolean
source_session(BenchCtx *ctx, gint secs, GArray *samples, gint64 *ret_gap, Span *span,
	       GError **error)
{
	g_autofree char *cmd = g_strdup_printf("SOURCE secs=%d", secs);
	g_autoptr(GIOStream) io = bench_open_command(ctx, cmd, NULL, error);
	g_autofree guint8 *buf = g_malloc(TCP_BUF);
	BenchSample s = {0, 0}, prev = {0, 0};
	gint64 last = 0;
	gssize n;

	if (!io)
		return FALSE;
	while ((n = g_input_stream_read(g_io_stream_get_input_stream(io), buf, TCP_BUF, NULL, error)) > 0) {
		s.t_us = g_get_monotonic_time();
		s.bytes += (guint64)n;
		if (prev.t_us && s.t_us - prev.t_us >= SAMPLE_US && last != prev.t_us)
			g_array_append_val(samples, prev);
		if (prev.t_us && ret_gap)
			*ret_gap = MAX(*ret_gap, s.t_us - prev.t_us);
		if (s.t_us - last >= SAMPLE_US) {
			g_array_append_val(samples, s);
			last = s.t_us;
		}
		prev = s;
		if (span && !span->a.taken &&
		    s.t_us >= g_array_index(samples, BenchSample, 0).t_us + G_USEC_PER_SEC)
			probe_take(span, &span->a, s.bytes);
	}
	if (span && span->a.taken)
		probe_take(span, &span->b, s.bytes);
	if (s.bytes > 0)
		g_array_append_val(samples, s);
	g_io_stream_close(io, NULL, NULL);
	return n == 0 && samples->len > 0;
}

/* Mbit/s after the first second of a series. */
static double
series_mbit(const GArray *samples, gint64 start_us, gint64 end_us)
{
	return bench_rate_between((const BenchSample *)(const void *)samples->data, samples->len,
				  start_us + G_USEC_PER_SEC, end_us);
}

/* One repetition: its Mbit/s, and its measured interval with what the receivers confirmed in it. */
typedef struct {
	double mbit;
	Span span;
	guint64 span_bytes;
} Rep;

static void
rep_span_bytes(Rep *rep)
{
	if (rep->span.b.taken && rep->span.b.bytes > rep->span.a.bytes)
		rep->span_bytes = rep->span.b.bytes - rep->span.a.bytes;
}

static gboolean
rep_down(BenchCtx *ctx, Rep *rep, GArray **ret_samples, GError **error)
{
	GArray *s = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	gboolean ok = source_session(ctx, ctx->opt->secs, s, NULL, &rep->span, error);

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

static gboolean
rep_up(BenchCtx *ctx, Rep *rep, GArray **ret_samples, GError **error)
{
	g_autofree char *cmd = g_strdup_printf("SINK secs=%d", ctx->opt->secs);
	Writer w = {0};
	SinkReport r = {0};
	gboolean ok = sink_session(ctx, cmd, &w, &r, &rep->span, error);

	if (ok) {
		rep->mbit = series_mbit(r.samples, r.start_us, r.end_us);
		rep_span_bytes(rep);
		if (ret_samples && !*ret_samples) {
			/* Rebased so plots of both directions start at the same place. */
			*ret_samples = g_array_ref(r.samples);
			for (guint i = 0; i < r.samples->len; i++)
				g_array_index(r.samples, BenchSample, i).t_us -= r.start_us;
		}
	}
	sink_report_clear(&r);
	return ok;
}

typedef struct {
	BenchCtx *ctx;
	GArray *samples;
	GError *error;
	gboolean ok;
} DownJob;

static gpointer
down_job(gpointer data)
{
	DownJob *j = data;

	j->ok = source_session(j->ctx, j->ctx->opt->secs, j->samples, NULL, NULL, &j->error);
	return NULL;
}

/*
 * The up direction's reports mark the interval; the down direction's bytes
 * in it are counted in our clock, between the moments its ends were taken.
 */
static gboolean
rep_bidir(BenchCtx *ctx, Rep *rep, GArray **ret_samples, GError **error)
{
	g_autoptr(GArray) down = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	DownJob j = {ctx, down, NULL, FALSE};
	GThread *th = g_thread_new("bench-down", down_job, &j);
	gboolean ok = rep_up(ctx, rep, NULL, error);
	const BenchSample *d;

	g_thread_join(th);
	if (ok && !j.ok)
		g_propagate_error(error, j.error);
	else
		g_clear_error(&j.error);
	if (!ok || !j.ok)
		return FALSE;
	d = (const BenchSample *)(const void *)down->data;
	rep->mbit += series_mbit(down, d[0].t_us, d[down->len - 1].t_us);
	if (rep->span.b.taken)
		rep->span_bytes += (guint64)bench_count_between(d, down->len, rep->span.a.t_us,
								rep->span.b.t_us);
	return TRUE;
}

typedef gboolean (*RepFunc)(BenchCtx *ctx, Rep *rep, GArray **ret_samples, GError **error);

/* What the path cost per MB moved over the whole test; each figure only for paths that have it. */
typedef struct {
	double cpu_s;       /* this process */
	double child_cpu_s; /* the path's helper process (ncm-tun) */
	guint64 dispatches;
} Cost;

static void
cost_now(BenchTransport *t, Cost *c)
{
	c->cpu_s = bench_cpu_seconds();
	c->child_cpu_s = t->ops->child_cpu_seconds ? t->ops->child_cpu_seconds(t) : 0;
	c->dispatches = t->ops->main_dispatches ? t->ops->main_dispatches(t) : 0;
}

static void
add_cost(BenchCtx *ctx, BenchResult *r, const Cost *before, double mbytes)
{
	BenchTransport *t = ctx->transport;
	Cost now;

	if (mbytes <= 0)
		return;
	cost_now(t, &now);
	bench_json_num(r->json, "cpu_s_per_mb", (now.cpu_s - before->cpu_s) / mbytes);
	if (t->ops->child_cpu_seconds)
		bench_json_num(r->json, "ncm_tun_cpu_s_per_mb",
			       (now.child_cpu_s - before->child_cpu_s) / mbytes);
	if (t->ops->main_dispatches)
		bench_json_num(r->json, "main_dispatches_per_mb",
			       (double)(now.dispatches - before->dispatches) / mbytes);
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
span_cost(BenchTransport *t, const Rep *rep, SpanCosts *c)
{
	const Probe *a = &rep->span.a, *b = &rep->span.b;
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
static void
span_log(const BenchTransport *t, const char *test, const Rep *rep)
{
	const char *path = g_getenv("NCM_BENCH_SPANS");
	FILE *f;

	if (!path || !rep->span.b.taken || rep->span_bytes == 0)
		return;
	f = fopen(path, "a");
	if (!f) {
		bench_progress("NCM_BENCH_SPANS: cannot open %s: %s", path, g_strerror(errno));
		return;
	}
	fprintf(f, "%s %s %" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %" G_GUINT64_FORMAT "\n", t->name,
		test, rep->span.a.t_us, rep->span.b.t_us, rep->span_bytes);
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

static void
throughput_test(BenchCtx *ctx, const char *test, RepFunc rep_fn)
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
	Cost cost;
	gsize n = 0;

	if (!bench_test_selected(ctx->opt, test))
		return;
	bench_progress("%s: %s", t->name, test);
	r = bench_result_add(ctx, test);
	cost_now(t, &cost);
	for (; n < reps; n++) {
		Rep rep = {.span.t = t};

		if (!rep_fn(ctx, &rep, &samples, &error))
			break;
		v[n] = rep.mbit;
		mbytes += v[n] / 8 * ctx->opt->secs;
		span_cost(t, &rep, &sc);
		span_log(t, test, &rep);
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
	add_cost(ctx, r, &cost, mbytes);
	if (samples && samples->len > 0)
		r->rates = bench_series_rates(samples, g_array_index(samples, BenchSample, 0).t_us,
					      g_array_index(samples, BenchSample, samples->len - 1).t_us);
	r->cell = g_strdup_printf("%.1f Mbit/s (%.1f-%.1f)", r->mbit.median, r->mbit.min, r->mbit.max);
}

/* ---- Stalls under unpaced bulk ---------------------------------------------- */

/* @ret's longest_stall_us comes in from the receiver and is kept. */
static void
stall_json(GString *s, const char *dir, const GArray *samples, gint64 from, gint64 to,
	   BenchWindows *ret)
{
	g_autoptr(GString) o = g_string_new(NULL);
	gint64 gap = ret->longest_stall_us;

	bench_windows((const BenchSample *)(const void *)samples->data, samples->len, from, to,
		      BENCH_REPORT_US, ret, NULL);
	ret->longest_stall_us = gap;
	bench_json_num(o, "min_mbit_s", ret->min_mbit_s);
	bench_json_num(o, "max_mbit_s", ret->max_mbit_s);
	bench_json_num(o, "windows", ret->n_windows);
	bench_json_num(o, "empty_windows", ret->empty_windows);
	bench_json_num(o, "longest_stall_ms", (double)ret->longest_stall_us / 1000.0);
	g_string_append_printf(s, ",\"%s\":{%s}", dir, o->str + 1);
}

static void
bulk_stalls_test(BenchCtx *ctx)
{
	g_autoptr(GArray) down = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	g_autoptr(GError) error = NULL;
	g_autofree char *cmd = g_strdup_printf("SINK secs=%d", ctx->opt->secs);
	Writer w = {0};
	SinkReport up = {0};
	BenchWindows wu, wd;
	gint64 down_gap = 0;
	BenchResult *r;

	if (!bench_test_selected(ctx->opt, "bulk_stalls"))
		return;
	bench_progress("%s: bulk_stalls", ctx->transport->name);
	r = bench_result_add(ctx, "bulk_stalls");
	if (!sink_session(ctx, cmd, &w, &up, NULL, &error) ||
	    !source_session(ctx, ctx->opt->secs, down, &down_gap, NULL, &error)) {
		bench_result_fail(r, error);
		sink_report_clear(&up);
		return;
	}
	/* The receivers' own longest silences: exact, where the samples are not. */
	wu.longest_stall_us = up.gap_max;
	wd.longest_stall_us = down_gap;
	/* The first report window is connection start-up, not a stall. */
	stall_json(r->json, "up", up.samples, up.start_us + BENCH_REPORT_US, up.end_us, &wu);
	stall_json(r->json, "down", down, g_array_index(down, BenchSample, 0).t_us,
		   g_array_index(down, BenchSample, down->len - 1).t_us, &wd);
	r->cell = g_strdup_printf("stall up %.0f / down %.0f ms, empty %u/%u",
				  (double)wu.longest_stall_us / 1000.0, (double)wd.longest_stall_us / 1000.0,
				  wu.empty_windows, wd.empty_windows);
	sink_report_clear(&up);
}

/* ---- Bursts after idle --------------------------------------------------------- */

static gboolean
burst_tries(BenchCtx *ctx, guint64 size, double *ms, GError **error)
{
	g_autofree char *cmd = g_strdup_printf("SINK mark=%" G_GUINT64_FORMAT, size);
	g_autoptr(GDataInputStream) lines = NULL;
	g_autoptr(GIOStream) io = bench_open_command(ctx, cmd, &lines, error);
	g_autofree guint8 *buf = g_malloc0(size);
	SinkReport r = {0};
	gboolean ok = io != NULL;

	r.samples = g_array_new(FALSE, FALSE, sizeof(BenchSample));
	for (gint i = 0; ok && i < ctx->opt->burst_tries; i++) {
		gint64 t0;

		g_usleep(G_USEC_PER_SEC);
		t0 = g_get_monotonic_time();
		ok = g_output_stream_write_all(g_io_stream_get_output_stream(io), buf, size, NULL, NULL, error) &&
		     sink_read(lines, &r, size * (guint64)(i + 1), NULL, error);
		ms[i] = (double)(g_get_monotonic_time() - t0) / 1000.0;
	}
	if (io)
		g_io_stream_close(io, NULL, NULL);
	sink_report_clear(&r);
	return ok;
}

static void
burst_test(BenchCtx *ctx, const char *test, guint64 size)
{
	g_autofree double *ms = g_new0(double, (gsize)ctx->opt->burst_tries);
	g_autoptr(GError) error = NULL;
	BenchSummary sum;
	BenchResult *r;

	if (!bench_test_selected(ctx->opt, test))
		return;
	bench_progress("%s: %s", ctx->transport->name, test);
	r = bench_result_add(ctx, test);
	if (!burst_tries(ctx, size, ms, &error)) {
		bench_result_fail(r, error);
		return;
	}
	bench_summarize(ms, (gsize)ctx->opt->burst_tries, &sum);
	bench_json_num(r->json, "bytes", (double)size);
	bench_json_num(r->json, "tries", (double)sum.n);
	g_string_append_printf(r->json, ",\"completion_ms\":{\"p50\":%.3f,\"min\":%.3f,\"max\":%.3f}",
			       sum.median, sum.min, sum.max);
	bench_json_num(r->json, "mbit_s_p50", (double)size * 8 / (sum.median * 1000.0));
	r->cell = g_strdup_printf("%.1f ms (%.1f-%.1f)", sum.median, sum.min, sum.max);
}

/* ---- Paced streams -------------------------------------------------------------- */

static void
paced_test(BenchCtx *ctx, const char *test, double mbyte_s)
{
	g_autofree char *cmd = g_strdup_printf("SINK secs=%d framed=1", ctx->opt->secs);
	g_autoptr(GError) error = NULL;
	Writer w = {0};
	SinkReport rep = {0};
	BenchResult *r;
	double delivered, queue_ms;

	if (!bench_test_selected(ctx->opt, test))
		return;
	bench_progress("%s: %s", ctx->transport->name, test);
	r = bench_result_add(ctx, test);
	w.frame_hz = 30;
	w.frame_len = (guint32)(mbyte_s * 1e6 / w.frame_hz);
	if (!sink_session(ctx, cmd, &w, &rep, NULL, &error)) {
		bench_result_fail(r, error);
		sink_report_clear(&rep);
		return;
	}
	delivered = bench_rate_between((const BenchSample *)(const void *)rep.samples->data,
				       rep.samples->len, rep.start_us, rep.end_us);
	/* One-way delay above the smallest one seen: the clocks' offset cancels. */
	queue_ms = (double)(rep.owd_max - rep.owd_min) / 1000.0;
	bench_json_num(r->json, "target_mbit_s", mbyte_s * 8);
	bench_json_num(r->json, "delivered_mbit_s", delivered);
	bench_json_num(r->json, "frames_sent", (double)w.frames);
	bench_json_num(r->json, "frames_delivered", (double)rep.frames);
	bench_json_num(r->json, "worst_queue_ms", queue_ms);
	r->cell = g_strdup_printf("%.2f/%.1f Mbit/s, queue %.0f ms", delivered, mbyte_s * 8, queue_ms);
	sink_report_clear(&rep);
}

void
bench_run_tcp_tests(BenchCtx *ctx)
{
	static const struct { const char *name; guint64 size; } bursts[] = {
		{"burst_64k", 64 << 10}, {"burst_256k", 256 << 10}, {"burst_1m", 1 << 20}, {"burst_4m", 4 << 20},
	};
	static const struct { const char *name; double mbyte_s; } paced[] = {
		{"paced_500kB_s", 0.5}, {"paced_1MB_s", 1}, {"paced_2MB_s", 2}, {"paced_4MB_s", 4},
	};

	throughput_test(ctx, "tcp_down", rep_down);
	throughput_test(ctx, "tcp_up", rep_up);
	throughput_test(ctx, "tcp_bidir", rep_bidir);
	bulk_stalls_test(ctx);
	for (gsize i = 0; i < G_N_ELEMENTS(bursts); i++)
		burst_test(ctx, bursts[i].name, bursts[i].size);
	for (gsize i = 0; i < G_N_ELEMENTS(paced); i++)
		paced_test(ctx, paced[i].name, paced[i].mbyte_s);
}
