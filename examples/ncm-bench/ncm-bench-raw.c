/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-raw.c: the usbfs ceiling: Ethernet frames each way with no netstack, counted where they land (libncm's sink, the gadget's netdev). */
#include <string.h>

#include "ncm-bench-throughput.h"
#include "ncm-bench-proto.h"

/* Samples of the sink's count: as fine as the TCP tests' own. */
#define RAW_SAMPLE_US 10000
/* The flood's first frame must arrive within this. */
#define RAW_FIRST_US (5 * G_USEC_PER_SEC)
/* The server stops flooding when we close; it gives up on its own this much later. */
#define RAW_FLOOD_SLACK_S 5
/* After the flood, the count must stand still this long before the next run. */
#define RAW_QUIET_US 100000

/* The server's first line: "<tag> ..." (returned), or "X <why>" (an error). */
static char *
server_reply(GDataInputStream *lines, char tag, GError **error)
{
	char *line = g_data_input_stream_read_line(lines, NULL, NULL, error);

	if (!line) {
		if (error && !*error)
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_CLOSED,
				    "the server closed without answering (an ncm-bench --server too old for raw_ tests?)");
		return NULL;
	}
	if (line[0] == tag && line[1] == ' ')
		return line;
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "the server: %s",
		    line[0] == 'X' && line[1] == ' ' ? line + 2 : line);
	g_free(line);
	return NULL;
}

static guint64
raw_bytes(BenchRaw *raw)
{
	guint64 frames, bytes;

	raw->received(raw, &frames, &bytes);
	return bytes;
}

/* Until nothing more of the flood arrives: the next run must not count its tail. */
static void
raw_quiet(BenchRaw *raw)
{
	gint64 end = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
	guint64 last = raw_bytes(raw), now;

	do {
		g_usleep(RAW_QUIET_US);
		now = raw_bytes(raw);
		if (now == last)
			return;
		last = now;
	} while (g_get_monotonic_time() < end);
}

/* Samples the sink's count from the first flood frame on, for the test's seconds. */
static gboolean
flood_count(BenchCtx *ctx, GArray *samples, BenchSpan *span, GError **error)
{
	BenchRaw *raw = ctx->transport->raw;
	guint64 base = raw_bytes(raw);
	gint64 end = g_get_monotonic_time() + RAW_FIRST_US;
	BenchSample s = {g_get_monotonic_time(), 0};

	while ((s.bytes = raw_bytes(raw) - base) == 0 && s.t_us < end) {
		g_usleep(1000);
		s.t_us = g_get_monotonic_time();
	}
	if (s.bytes == 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
			    "no flood frame arrived within %d s", (int)(RAW_FIRST_US / G_USEC_PER_SEC));
		return FALSE;
	}
	g_array_append_val(samples, s);
	end = s.t_us + ctx->opt->secs * G_USEC_PER_SEC;
	while (s.t_us < end) {
		g_usleep(RAW_SAMPLE_US);
		s.t_us = g_get_monotonic_time();
		s.bytes = raw_bytes(raw) - base;
		g_array_append_val(samples, s);
		if (span && !span->a.taken &&
		    s.t_us >= g_array_index(samples, BenchSample, 0).t_us + G_USEC_PER_SEC)
			bench_probe_take(span, &span->a, s.bytes);
	}
	if (span && span->a.taken)
		bench_probe_take(span, &span->b, s.bytes);
	return TRUE;
}

/* Downlink: the server floods at our MAC; the sink counts what libncm delivers. */
static gboolean
flood_session(BenchCtx *ctx, GArray *samples, BenchSpan *span, GError **error)
{
	BenchRaw *raw = ctx->transport->raw;
	g_autofree char *mac = bench_mac_text(raw->mac);
	g_autofree char *cmd = g_strdup_printf("RAW_FLOOD secs=%d mac=%s len=%u",
					       ctx->opt->secs + RAW_FLOOD_SLACK_S, mac, raw->max_frame);
	g_autoptr(GDataInputStream) lines = NULL;
	g_autoptr(GIOStream) io = bench_open_command(ctx, cmd, &lines, error);
	g_autofree char *reply = io ? server_reply(lines, 'F', error) : NULL;
	gboolean ok = reply && flood_count(ctx, samples, span, error);

	if (io)
		g_io_stream_close(io, NULL, NULL);
	if (reply)
		raw_quiet(raw);
	return ok;
}

static gboolean
rep_raw_down(BenchCtx *ctx, BenchRep *rep, GArray **ret_samples, GError **error)
{
	return bench_rep_received(ctx, rep, flood_session, ret_samples, error);
}

typedef struct {
	BenchRaw *raw;
	guint8 dst[6];
	gint stop;
	gint64 sent;
	GError *error;
} RawWriter;

static gpointer
raw_writer_main(gpointer data)
{
	RawWriter *w = data;

	w->sent = w->raw->send(w->raw, w->dst, &w->stop, &w->error);
	return NULL;
}

/* Uplink: we send to the gadget's MAC; its netdev counts what arrived. */
static gboolean
rep_raw_up(BenchCtx *ctx, BenchRep *rep, GArray **ret_samples, GError **error)
{
	RawWriter w = {ctx->transport->raw, {0}, 0, 0, NULL};
	g_autofree char *cmd = g_strdup_printf("RAW_COUNT secs=%d len=%u", ctx->opt->secs,
					       w.raw->max_frame);
	g_autoptr(GDataInputStream) lines = NULL;
	g_autoptr(GIOStream) io = bench_open_command(ctx, cmd, &lines, error);
	g_autofree char *reply = io ? server_reply(lines, 'M', error) : NULL;
	g_auto(GStrv) words = reply ? g_strsplit(reply, " ", 3) : NULL;
	BenchSinkReport r;
	GThread *th;
	gboolean ok;

	if (!reply)
		return FALSE;
	if (!words[1] || !bench_mac_parse(words[1], w.dst)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "the server's MAC is not one: %s",
			    reply);
		return FALSE;
	}
	bench_sink_report_init(&r);
	th = g_thread_new("bench-raw-tx", raw_writer_main, &w);
	ok = bench_sink_read(lines, &r, 0, &rep->span, error);
	g_atomic_int_set(&w.stop, 1);
	g_thread_join(th);
	g_io_stream_close(io, NULL, NULL);
	if (ok && w.sent < 0) {
		g_propagate_error(error, g_steal_pointer(&w.error));
		ok = FALSE;
	}
	g_clear_error(&w.error);
	ok = ok && r.samples->len > 0;
	if (ok)
		bench_rep_reported(rep, &r, ret_samples);
	bench_sink_report_clear(&r);
	return ok;
}

static gboolean
rep_raw_bidir(BenchCtx *ctx, BenchRep *rep, GArray **ret_samples, GError **error)
{
	return bench_rep_bidir(ctx, rep, rep_raw_up, flood_session, error);
}

void
bench_run_raw_tests(BenchCtx *ctx)
{
	bench_throughput_test(ctx, "raw_down", rep_raw_down);
	bench_throughput_test(ctx, "raw_up", rep_raw_up);
	bench_throughput_test(ctx, "raw_bidir", rep_raw_bidir);
}
