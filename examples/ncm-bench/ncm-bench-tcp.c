/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-tcp.c: ncm-bench's TCP tests: throughput each way, stalls under bulk, bursts, paced streams. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ncm-bench-throughput.h"
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

static gboolean
sink_session(BenchCtx *ctx, const char *cmd, Writer *w, BenchSinkReport *r, BenchSpan *span,
	     GError **error)
{
	g_autoptr(GDataInputStream) lines = NULL;
	g_autoptr(GIOStream) io = bench_open_command(ctx, cmd, &lines, error);
	GThread *th;
	gboolean ok;

	bench_sink_report_init(r);
	if (!io)
		return FALSE;
	w->io = io;
	th = g_thread_new("bench-writer", writer_main, w);
	ok = bench_sink_read(lines, r, 0, span, error);
	g_atomic_int_set(&w->stop, 1);
	/* The server drains after "E" until we close, so the last write returns. */
	g_thread_join(th);
	bench_io_close_reset(io);
	return ok && r->samples->len > 0;
}

/*
 * Counts what arrives from a SOURCE session, sampling every SAMPLE_US, and
 * at the last arrival before each longer gap, so pauses show in the series.
 * @span, when not NULL, starts at the first arrival at or after the first
 * second and ends at the end of the stream, right after the last arrival.
 */
static gboolean
source_session(BenchCtx *ctx, gint secs, GArray *samples, gint64 *ret_gap, BenchSpan *span,
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
			bench_probe_take(span, &span->a, s.bytes);
	}
	if (span && span->a.taken)
		bench_probe_take(span, &span->b, s.bytes);
	if (s.bytes > 0)
		g_array_append_val(samples, s);
	g_io_stream_close(io, NULL, NULL);
	return n == 0 && samples->len > 0;
}

static gboolean
series_tcp(BenchCtx *ctx, GArray *samples, BenchSpan *span, GError **error)
{
	return source_session(ctx, ctx->opt->secs, samples, NULL, span, error);
}

static gboolean
rep_down(BenchCtx *ctx, BenchRep *rep, GArray **ret_samples, GError **error)
{
	return bench_rep_received(ctx, rep, series_tcp, ret_samples, error);
}

static gboolean
rep_up(BenchCtx *ctx, BenchRep *rep, GArray **ret_samples, GError **error)
{
	g_autofree char *cmd = g_strdup_printf("SINK secs=%d", ctx->opt->secs);
	Writer w = {0};
	BenchSinkReport r;
	gboolean ok = sink_session(ctx, cmd, &w, &r, &rep->span, error);

	if (ok)
		bench_rep_reported(rep, &r, ret_samples);
	bench_sink_report_clear(&r);
	return ok;
}

static gboolean
rep_bidir(BenchCtx *ctx, BenchRep *rep, GArray **ret_samples, GError **error)
{
	return bench_rep_bidir(ctx, rep, rep_up, series_tcp, error);
}

BenchRepFunc
bench_tcp_rep_func(const char *test)
{
	return g_str_equal(test, "tcp_down") ? rep_down : g_str_equal(test, "tcp_up") ? rep_up
	       : g_str_equal(test, "tcp_bidir") ? rep_bidir : NULL;
}

/* ---- An upload beside another test ------------------------------------------ */

struct _BenchLoad {
	BenchCtx *ctx;
	gint secs;
	GThread *thread;
	Writer w;
	BenchSinkReport r;
	gboolean ok;
	GError *error;
};

static gpointer
load_main(gpointer data)
{
	BenchLoad *l = data;
	g_autofree char *cmd = g_strdup_printf("SINK secs=%d", l->secs);

	l->ok = sink_session(l->ctx, cmd, &l->w, &l->r, NULL, &l->error);
	return NULL;
}

BenchLoad *
bench_tcp_load_start(BenchCtx *ctx, gint secs)
{
	BenchLoad *l = g_new0(BenchLoad, 1);

	l->ctx = ctx;
	l->secs = secs;
	l->thread = g_thread_new("bench-load", load_main, l);
	return l;
}

gboolean
bench_tcp_load_finish(BenchLoad *l, double *ret_mbit, GError **error)
{
	gboolean ok;

	g_thread_join(l->thread);
	ok = l->ok;
	if (ok) {
		const GArray *s = l->r.samples;
		const BenchSample *v = (const BenchSample *)(const void *)s->data;

		*ret_mbit = bench_rate_between(v, s->len, v[0].t_us, v[s->len - 1].t_us);
	} else {
		g_propagate_error(error, l->error);
	}
	bench_sink_report_clear(&l->r);
	g_free(l);
	return ok;
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
	BenchSinkReport up = {0};
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
		bench_sink_report_clear(&up);
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
	bench_sink_report_clear(&up);
}

/* ---- Bursts after idle --------------------------------------------------------- */

static gboolean
burst_tries(BenchCtx *ctx, guint64 size, double *ms, GError **error)
{
	g_autofree char *cmd = g_strdup_printf("SINK mark=%" G_GUINT64_FORMAT, size);
	g_autoptr(GDataInputStream) lines = NULL;
	g_autoptr(GIOStream) io = bench_open_command(ctx, cmd, &lines, error);
	g_autofree guint8 *buf = g_malloc0(size);
	BenchSinkReport r;
	gboolean ok = io != NULL;

	bench_sink_report_init(&r);
	for (gint i = 0; ok && i < ctx->opt->burst_tries; i++) {
		gint64 t0;

		g_usleep(G_USEC_PER_SEC);
		t0 = g_get_monotonic_time();
		ok = g_output_stream_write_all(g_io_stream_get_output_stream(io), buf, size, NULL, NULL, error) &&
		     bench_sink_read(lines, &r, size * (guint64)(i + 1), NULL, error);
		ms[i] = (double)(g_get_monotonic_time() - t0) / 1000.0;
	}
	if (io)
		g_io_stream_close(io, NULL, NULL);
	bench_sink_report_clear(&r);
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
	BenchSinkReport rep = {0};
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
		bench_sink_report_clear(&rep);
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
	bench_sink_report_clear(&rep);
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

	bench_throughput_test(ctx, "tcp_down", rep_down);
	bench_throughput_test(ctx, "tcp_up", rep_up);
	bench_throughput_test(ctx, "tcp_bidir", rep_bidir);
	bulk_stalls_test(ctx);
	for (gsize i = 0; i < G_N_ELEMENTS(bursts); i++)
		burst_test(ctx, bursts[i].name, bursts[i].size);
	for (gsize i = 0; i < G_N_ELEMENTS(paced); i++)
		paced_test(ctx, paced[i].name, paced[i].mbyte_s);
}
