/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-udp.c: ncm-bench's UDP tests: round trips at fixed rates, the soak, and the auto-rate probe. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ncm-bench.h"
#include "ncm-bench-proto.h"

#define UDP_BUF 65536
#define UDP_DRAIN_US 1000000

/* Opens a UDP mode on the server: the control stream stays open for its duration. */
static BenchUdp *
udp_control(BenchCtx *ctx, const char *cmd, GIOStream **ret_io, GDataInputStream **ret_lines,
	    GError **error)
{
	BenchTransport *t = ctx->transport;
	g_autoptr(GDataInputStream) lines = NULL;
	g_autoptr(GIOStream) io = bench_open_command(ctx, cmd, &lines, error);
	g_autofree char *line = NULL;
	guint port = 0;
	BenchUdp *u;

	if (!io)
		return NULL;
	line = g_data_input_stream_read_line(lines, NULL, NULL, error);
	if (!line || sscanf(line, "P %u", &port) != 1 || port == 0 || port > 65535) {
		if (error && !*error)
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "bad server reply to %s", cmd);
		return NULL;
	}
	u = t->ops->udp_open(t, (guint16)port, error);
	if (!u)
		return NULL;
	*ret_io = g_steal_pointer(&io);
	*ret_lines = g_steal_pointer(&lines);
	return u;
}

/* The largest datagram the path carries unfragmented (1500 B MTU when unknown). */
static gsize
udp_fit(const BenchCtx *ctx, const BenchUdp *u)
{
	gboolean v6 = g_inet_address_get_family(ctx->transport->server) == G_SOCKET_FAMILY_IPV6;
	guint mtu = u->mtu ? u->mtu : 1500;
	guint hdr = (v6 ? 40 : 20) + 8;

	return CLAMP(mtu > hdr ? mtu - hdr : 0, BENCH_DGRAM_HDR, 65507);
}

/* ---- Round trips ------------------------------------------------------------- */

/* Round-trip series intervals: enough probes in each for a p99 at the fast
 * rates (125 at 500/s), whole seconds at the slow ones. */
#define RTT_INTERVAL_FAST_US 250000
#define RTT_INTERVAL_SLOW_US 1000000
#define RTT_FAST_HZ 100

typedef struct {
	GArray *rtt_ms; /* double, one per unique echo */
	GArray *sent_us; /* gint64, one per probe sent */
	GArray *echoes;  /* BenchRttSample, one per unique echo */
	gint64 start_us;
	BenchSeqTracker seq;
	guint64 sent;
	guint64 skipped; /* probe slots missed while the sender was not scheduled */
	gint64 longest_silence_us;
	gsize size;
	guint mtu;
} RttRun;

static void
rtt_receive(RttRun *run, const guint8 *buf, gssize n, gint64 *last_rx)
{
	gint64 now = g_get_monotonic_time();
	guint64 dups = run->seq.duplicates, late = run->seq.late;
	BenchDgram d;
	double ms;

	if (!bench_dgram_read(buf, (gsize)n, &d) || d.seq >= run->sent)
		return;
	bench_seq_add(&run->seq, d.seq);
	if (run->seq.duplicates != dups || run->seq.late != late)
		return;
	ms = (double)(now - d.send_us) / 1000.0;
	g_array_append_val(run->rtt_ms, ms);
	g_array_append_val(run->echoes, ((BenchRttSample){d.send_us, ms}));
	run->longest_silence_us = MAX(run->longest_silence_us, now - *last_rx);
	*last_rx = now;
}

static gboolean
rtt_loop(BenchUdp *u, RttRun *run, double hz, gint secs, GError **error)
{
	g_autofree guint8 *buf = g_malloc0(UDP_BUF);
	gint64 start = g_get_monotonic_time(), end = start + secs * G_USEC_PER_SEC;
	gint64 next = start, last_rx = start, now, period = (gint64)(1e6 / hz);

	run->start_us = start;
	while ((now = g_get_monotonic_time()) < end + UDP_DRAIN_US) {
		gssize n;

		if (now >= next && now < end) {
			BenchDgram d = {0, run->sent, now, 0};

			memset(buf, 0, run->size);
			bench_dgram_write(buf, &d);
			if (u->send(u, buf, run->size, error) < 0)
				return FALSE;
			run->sent++;
			g_array_append_val(run->sent_us, now);
			next = bench_slot_next(next, now, period, &run->skipped);
			continue;
		}
		n = u->recv(u, buf, UDP_BUF, (now < end ? next : end + UDP_DRAIN_US) - now, error);
		if (n < 0)
			return FALSE;
		if (n > 0)
			rtt_receive(run, buf, n, &last_rx);
	}
	run->longest_silence_us = MAX(run->longest_silence_us, end - last_rx);
	return TRUE;
}

static gboolean
rtt_run(BenchCtx *ctx, RttRun *run, double hz, gint secs, GError **error)
{
	g_autoptr(GIOStream) io = NULL;
	g_autoptr(GDataInputStream) lines = NULL;
	BenchUdp *u = udp_control(ctx, "UDP_REFLECT", &io, &lines, error);
	gboolean ok;

	if (!u)
		return FALSE;
	run->mtu = u->mtu;
	run->size = MIN(run->size, udp_fit(ctx, u));
	ok = rtt_loop(u, run, hz, secs, error);
	u->close(u);
	g_io_stream_close(io, NULL, NULL);
	return ok;
}

/* "rtt_series": one array per figure, an element per interval, and the
 * series kept on @r for the plot. */
static void
rtt_series_json(BenchResult *r, RttRun *run, double hz)
{
	gint64 width = hz >= RTT_FAST_HZ ? RTT_INTERVAL_FAST_US : RTT_INTERVAL_SLOW_US;
	GArray *iv = bench_rtt_intervals((const gint64 *)(const void *)run->sent_us->data,
					 run->sent_us->len,
					 (const BenchRttSample *)(const void *)run->echoes->data,
					 run->echoes->len, run->start_us, width);
	static const char *const keys[] = {"sent", "received", "p50_ms", "p99_ms", "max_ms"};

	g_string_append_printf(r->json, ",\"rtt_series\":{\"interval_ms\":%.0f", (double)width / 1000.0);
	for (gsize k = 0; k < G_N_ELEMENTS(keys); k++) {
		g_string_append_printf(r->json, ",\"%s\":[", keys[k]);
		for (guint i = 0; i < iv->len; i++) {
			const BenchRttInterval *v = &g_array_index(iv, BenchRttInterval, i);
			double x = k == 0 ? v->sent : k == 1 ? v->received : v->received == 0 ? NAN
				   : k == 2 ? v->p50_ms : k == 3 ? v->p99_ms : v->max_ms;

			if (i > 0)
				g_string_append_c(r->json, ',');
			bench_json_double(r->json, x);
		}
		g_string_append_c(r->json, ']');
	}
	g_string_append_c(r->json, '}');
	r->rtt_series = iv;
	r->rtt_interval_s = (double)width / 1e6;
}

static void
rtt_json(BenchResult *r, RttRun *run, double hz, gint secs)
{
	guint64 lost = run->sent > run->seq.unique ? run->sent - run->seq.unique : 0;
	BenchSummary sum;

	bench_summarize((double *)(void *)run->rtt_ms->data, run->rtt_ms->len, &sum);
	bench_json_num(r->json, "bytes", (double)run->size);
	bench_json_num(r->json, "rate_hz", hz);
	bench_json_num(r->json, "secs", secs);
	bench_json_num(r->json, "sent", (double)run->sent);
	bench_json_num(r->json, "skipped", (double)run->skipped);
	bench_json_num(r->json, "received", (double)run->seq.unique);
	bench_json_num(r->json, "lost", (double)lost);
	bench_json_num(r->json, "loss_pct", run->sent ? 100.0 * (double)lost / (double)run->sent : 0);
	bench_json_num(r->json, "duplicates", (double)run->seq.duplicates);
	bench_json_num(r->json, "reordered", (double)run->seq.reordered);
	if (run->mtu)
		bench_json_num(r->json, "mtu", run->mtu);
	bench_json_summary(r->json, "rtt_ms", &sum, TRUE);
	rtt_series_json(r, run, hz);
	r->cell = g_strdup_printf("%.2f/%.2f/%.2f ms, %.1f%% lost", sum.median, sum.p99, sum.max,
				  run->sent ? 100.0 * (double)lost / (double)run->sent : 0);
}

static void
rtt_test(BenchCtx *ctx, const char *test, gsize size, double hz, gint secs)
{
	g_autoptr(GError) error = NULL;
	RttRun run = {0};
	BenchResult *r;

	if (!bench_test_selected(ctx->opt, test))
		return;
	bench_progress("%s: %s", ctx->transport->name, test);
	r = bench_result_add(ctx, test);
	run.rtt_ms = g_array_new(FALSE, FALSE, sizeof(double));
	run.sent_us = g_array_new(FALSE, FALSE, sizeof(gint64));
	run.echoes = g_array_new(FALSE, FALSE, sizeof(BenchRttSample));
	run.size = size;
	bench_seq_init(&run.seq);
	if (rtt_run(ctx, &run, hz, secs, &error)) {
		rtt_json(r, &run, hz, secs);
		if (g_str_equal(test, "soak")) {
			bench_json_num(r->json, "longest_silence_ms", (double)run.longest_silence_us / 1000.0);
			g_autofree char *cell = r->cell;
			r->cell = g_strdup_printf("%s, silence %.0f ms", cell,
						  (double)run.longest_silence_us / 1000.0);
		}
	} else {
		bench_result_fail(r, error);
	}
	g_array_unref(run.rtt_ms);
	g_array_unref(run.sent_us);
	g_array_unref(run.echoes);
}

/* ---- Auto-rate ------------------------------------------------------------------- */

/* The receiver's latest counts for stream 0, kept by a reader thread. */
typedef struct {
	GDataInputStream *lines;
	GCancellable *cancel;
	GMutex lock;
	guint64 unique, dups, reordered, late;
	gint64 highest;
} Feedback;

static gpointer
feedback_main(gpointer data)
{
	Feedback *f = data;
	char *line;

	while ((line = g_data_input_stream_read_line(f->lines, NULL, f->cancel, NULL))) {
		guint64 unique, dups, reord, late;
		gint64 t, highest;
		guint stream;

		if (sscanf(line, "U %" G_GINT64_FORMAT " %u %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
			   " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT,
			   &t, &stream, &unique, &dups, &reord, &late, &highest) == 7 && stream == 0) {
			ncm_mutex_lock(&f->lock);
			f->unique = unique;
			f->dups = dups;
			f->reordered = reord;
			f->late = late;
			f->highest = highest;
			ncm_mutex_unlock(&f->lock);
		}
		g_free(line);
	}
	return NULL;
}

typedef struct {
	BenchRateCtl ctl;
	gsize size;
	guint64 seq;           /* datagrams sent */
	guint64 fb_expected;   /* at the last interval's end */
	guint64 fb_unique;
	guint64 sent_mark;
	GArray *delivered;     /* double Mbit/s per interval */
} AutoRate;

static void
autorate_interval(AutoRate *a, Feedback *f, gint64 interval_us)
{
	BenchRateFeedback fb = {interval_us, a->seq - a->sent_mark, 0, 0, 0};
	guint64 expected, unique;
	double mbit;

	ncm_mutex_lock(&f->lock);
	expected = (guint64)(f->highest + 1);
	unique = f->unique;
	ncm_mutex_unlock(&f->lock);
	fb.expected = expected - a->fb_expected;
	fb.delivered = unique - a->fb_unique;
	fb.in_flight = a->seq > expected ? a->seq - expected : 0;
	a->fb_expected = expected;
	a->fb_unique = unique;
	a->sent_mark = a->seq;
	mbit = (double)fb.delivered * (double)a->size * 8 / (double)interval_us;
	g_array_append_val(a->delivered, mbit);
	bench_rate_update(&a->ctl, &fb);
}

static gboolean
autorate_loop(BenchUdp *u, AutoRate *a, Feedback *f, gint secs, GError **error)
{
	g_autofree guint8 *buf = g_malloc0(a->size);
	gint64 start = g_get_monotonic_time(), end = start + secs * G_USEC_PER_SEC, istart = start;
	gint64 now;

	while ((now = g_get_monotonic_time()) < end) {
		double due = a->ctl.rate_pps * (double)(now - istart) / 1e6;

		if (now - istart >= BENCH_REPORT_US) {
			autorate_interval(a, f, now - istart);
			istart = now;
			continue;
		}
		while ((double)(a->seq - a->sent_mark) < due) {
			BenchDgram d = {0, a->seq, now, 0};
			gssize n;

			bench_dgram_write(buf, &d);
			n = u->send(u, buf, a->size, error);
			if (n < 0)
				return FALSE;
			if (n == 0)
				break; /* our own queue is full: the path is the limit */
			a->seq++;
		}
		g_usleep(1000);
	}
	return TRUE;
}

static void
autorate_json(BenchResult *r, AutoRate *a, Feedback *f, guint mtu)
{
	guint64 lost = a->seq > f->unique ? a->seq - f->unique : 0;
	double *d = (double *)(void *)a->delivered->data;
	guint half = a->delivered->len / 2;
	BenchSummary tail;
	double best = 0;

	for (guint i = 0; i < a->delivered->len; i++)
		best = MAX(best, d[i]);
	/* The second half: after the probe found its level. */
	bench_summarize(d + half, a->delivered->len - half, &tail);
	bench_json_num(r->json, "datagram_bytes", (double)a->size);
	bench_json_num(r->json, "mtu", mtu);
	bench_json_num(r->json, "final_rate_mbit_s", a->ctl.rate_pps * (double)a->size * 8 / 1e6);
	bench_json_num(r->json, "delivered_mbit_s", tail.median);
	bench_json_num(r->json, "best_mbit_s", best);
	bench_json_num(r->json, "sent", (double)a->seq);
	bench_json_num(r->json, "received", (double)f->unique);
	bench_json_num(r->json, "loss_pct", a->seq ? 100.0 * (double)lost / (double)a->seq : 0);
	bench_json_num(r->json, "duplicates", (double)f->dups);
	bench_json_num(r->json, "reordered", (double)f->reordered);
	bench_json_num(r->json, "late", (double)f->late);
	bench_json_num(r->json, "backoffs", a->ctl.backoffs);
	r->cell = g_strdup_printf("%.1f Mbit/s (best %.1f), %.1f%% lost, %zu B", tail.median, best,
				  a->seq ? 100.0 * (double)lost / (double)a->seq : 0, a->size);
}

static gboolean
autorate_run(BenchCtx *ctx, BenchResult *r, GError **error)
{
	g_autoptr(GIOStream) io = NULL;
	g_autoptr(GDataInputStream) lines = NULL;
	BenchUdp *u = udp_control(ctx, "UDP_RECV", &io, &lines, error);
	Feedback f = {0};
	AutoRate a = {0};
	GThread *th;
	gboolean ok;

	if (!u)
		return FALSE;
	a.size = udp_fit(ctx, u);
	bench_rate_init(&a.ctl, 100, ctx->opt->udp_max_mbit * 1e6 / 8 / (double)a.size);
	a.delivered = g_array_new(FALSE, FALSE, sizeof(double));
	f.lines = lines;
	f.highest = -1;
	f.cancel = g_cancellable_new();
	g_mutex_init(&f.lock);
	th = g_thread_new("bench-feedback", feedback_main, &f);
	ok = autorate_loop(u, &a, &f, ctx->opt->quick ? 5 : 10, error);
	/* The last datagrams' fate arrives with the next reports. */
	g_usleep(2 * BENCH_REPORT_US);
	g_cancellable_cancel(f.cancel);
	g_thread_join(th);
	if (ok)
		autorate_json(r, &a, &f, u->mtu);
	u->close(u);
	g_io_stream_close(io, NULL, NULL);
	g_array_unref(a.delivered);
	g_object_unref(f.cancel);
	g_mutex_clear(&f.lock);
	return ok;
}

static void
autorate_test(BenchCtx *ctx)
{
	g_autoptr(GError) error = NULL;
	BenchResult *r;

	if (!bench_test_selected(ctx->opt, "udp_autorate"))
		return;
	bench_progress("%s: udp_autorate", ctx->transport->name);
	r = bench_result_add(ctx, "udp_autorate");
	if (!autorate_run(ctx, r, &error))
		bench_result_fail(r, error);
}

void
bench_run_udp_tests(BenchCtx *ctx)
{
	gint s = ctx->opt->rtt_secs;

	rtt_test(ctx, "udp_rtt_64_10hz", 64, 10, s);
	rtt_test(ctx, "udp_rtt_64_500hz", 64, 500, s);
	rtt_test(ctx, "udp_rtt_1400_10hz", 1400, 10, s);
	rtt_test(ctx, "udp_rtt_1400_500hz", 1400, 500, s);
	rtt_test(ctx, "soak", 64, 10, ctx->opt->soak_secs);
	autorate_test(ctx);
}
