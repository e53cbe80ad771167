/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-udp.c: ncm-bench's UDP tests: round trips at fixed rates, the soak, and the auto-rate probe. */
#include <errno.h>
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
	double load_mbit; /* rtt_under_up: the upload beside the probes */
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

/* "rtt_series": one array per figure, an element per interval, into
 * @json, and the series kept on @r for the plot. */
static void
rtt_series_json(GString *json, BenchResult *r, RttRun *run, double hz)
{
	gint64 width = hz >= RTT_FAST_HZ ? RTT_INTERVAL_FAST_US : RTT_INTERVAL_SLOW_US;
	GArray *iv = bench_rtt_intervals((const gint64 *)(const void *)run->sent_us->data,
					 run->sent_us->len,
					 (const BenchRttSample *)(const void *)run->echoes->data,
					 run->echoes->len, run->start_us, width);
	static const char *const keys[] = {"sent", "received", "p50_ms", "p99_ms", "max_ms"};

	g_string_append_printf(json, ",\"rtt_series\":{\"interval_ms\":%.0f", (double)width / 1000.0);
	for (gsize k = 0; k < G_N_ELEMENTS(keys); k++) {
		g_string_append_printf(json, ",\"%s\":[", keys[k]);
		for (guint i = 0; i < iv->len; i++) {
			const BenchRttInterval *v = &g_array_index(iv, BenchRttInterval, i);
			double x = k == 0 ? v->sent : k == 1 ? v->received : v->received == 0 ? NAN
				   : k == 2 ? v->p50_ms : k == 3 ? v->p99_ms : v->max_ms;

			if (i > 0)
				g_string_append_c(json, ',');
			bench_json_double(json, x);
		}
		g_string_append_c(json, ']');
	}
	g_string_append_c(json, '}');
	r->rtt_series = iv;
	r->rtt_interval_s = (double)width / 1e6;
}

/*
 * A round-trip test's runs over every round (--rounds): the echoes pooled,
 * so that its percentiles come from all through the run like the
 * throughput tests' medians, not from the first round's few seconds, in
 * which the first path always ran at the start of the run.
 */
typedef struct {
	GArray *rtt_ms;  /* double, every round's echoes */
	GArray *round;   /* per run, as the three below */
	GArray *p50_ms;
	GArray *p99_ms;
	GArray *sent;
	GArray *load_mbit; /* per run of rtt_under_up */
	guint64 n_sent, skipped, unique, duplicates, reordered;
	gsize size;
	guint mtu;
	GString *series; /* the first run's "rtt_series" */
	gboolean failed; /* a round failed: later rounds leave the test alone */
} RttAcc;

static void
rtt_acc_free(gpointer data)
{
	RttAcc *a = data;

	g_array_unref(a->rtt_ms);
	g_array_unref(a->round);
	g_array_unref(a->p50_ms);
	g_array_unref(a->p99_ms);
	g_array_unref(a->sent);
	g_array_unref(a->load_mbit);
	if (a->series)
		g_string_free(a->series, TRUE);
	g_free(a);
}

static RttAcc *
rtt_acc(BenchResult *r)
{
	RttAcc *a = r->acc;

	if (a)
		return a;
	a = g_new0(RttAcc, 1);
	a->rtt_ms = g_array_new(FALSE, FALSE, sizeof(double));
	a->round = g_array_new(FALSE, FALSE, sizeof(double));
	a->p50_ms = g_array_new(FALSE, FALSE, sizeof(double));
	a->p99_ms = g_array_new(FALSE, FALSE, sizeof(double));
	a->sent = g_array_new(FALSE, FALSE, sizeof(double));
	a->load_mbit = g_array_new(FALSE, FALSE, sizeof(double));
	r->acc = a;
	r->acc_free = rtt_acc_free;
	return a;
}

/* The echoes' order counts nowhere (the series uses run->echoes), so the
 * summaries sort the arrays in place. */
static void
rtt_acc_add(RttAcc *a, BenchResult *r, RttRun *run, double hz, gint round)
{
	double v = round;
	BenchSummary sum;

	bench_summarize((double *)(void *)run->rtt_ms->data, run->rtt_ms->len, &sum);
	g_array_append_val(a->round, v);
	g_array_append_val(a->p50_ms, sum.median);
	g_array_append_val(a->p99_ms, sum.p99);
	v = (double)run->sent;
	g_array_append_val(a->sent, v);
	if (run->load_mbit > 0)
		g_array_append_val(a->load_mbit, run->load_mbit);
	g_array_append_vals(a->rtt_ms, run->rtt_ms->data, run->rtt_ms->len);
	a->n_sent += run->sent;
	a->skipped += run->skipped;
	a->unique += run->seq.unique;
	a->duplicates += run->seq.duplicates;
	a->reordered += run->seq.reordered;
	a->size = run->size;
	a->mtu = MAX(a->mtu, run->mtu);
	if (!a->series) {
		a->series = g_string_new(NULL);
		rtt_series_json(a->series, r, run, hz);
	}
}

/* The result's JSON and cell, made anew from all runs so far. */
static void
rtt_json(BenchResult *r, RttAcc *a, double hz, gint secs)
{
	guint64 lost = a->n_sent > a->unique ? a->n_sent - a->unique : 0;
	double loss_pct = a->n_sent ? 100.0 * (double)lost / (double)a->n_sent : 0;
	g_autoptr(GString) runs = g_string_new(NULL);
	BenchSummary sum;

	bench_summarize((double *)(void *)a->rtt_ms->data, a->rtt_ms->len, &sum);
	g_string_truncate(r->json, 0);
	bench_json_num(r->json, "bytes", (double)a->size);
	bench_json_num(r->json, "rate_hz", hz);
	bench_json_num(r->json, "secs", secs);
	bench_json_num(r->json, "reps", a->round->len);
	bench_json_num(r->json, "sent", (double)a->n_sent);
	bench_json_num(r->json, "skipped", (double)a->skipped);
	bench_json_num(r->json, "received", (double)a->unique);
	bench_json_num(r->json, "lost", (double)lost);
	bench_json_num(r->json, "loss_pct", loss_pct);
	bench_json_num(r->json, "duplicates", (double)a->duplicates);
	bench_json_num(r->json, "reordered", (double)a->reordered);
	if (a->mtu)
		bench_json_num(r->json, "mtu", a->mtu);
	bench_json_summary(r->json, "rtt_ms", &sum, TRUE);
	bench_json_array(runs, "round", (const double *)(const void *)a->round->data, a->round->len);
	bench_json_array(runs, "sent", (const double *)(const void *)a->sent->data, a->sent->len);
	bench_json_array(runs, "p50_ms", (const double *)(const void *)a->p50_ms->data, a->p50_ms->len);
	bench_json_array(runs, "p99_ms", (const double *)(const void *)a->p99_ms->data, a->p99_ms->len);
	if (a->load_mbit->len)
		bench_json_array(runs, "load_mbit", (const double *)(const void *)a->load_mbit->data,
				 a->load_mbit->len);
	g_string_append_printf(r->json, ",\"runs\":{%s}", runs->str + 1);
	g_string_append(r->json, a->series->str);
	g_free(r->cell);
	r->cell = g_strdup_printf("%.2f/%.2f/%.2f ms, %.1f%% lost", sum.median, sum.p99, sum.max, loss_pct);
	if (a->load_mbit->len) {
		g_autofree char *cell = r->cell;
		g_autoptr(GArray) load = g_array_copy(a->load_mbit);
		BenchSummary l;

		bench_summarize((double *)(void *)load->data, load->len, &l);
		bench_json_num(r->json, "load_mbit", l.median);
		r->cell = g_strdup_printf("%s, beside %.0f Mbit/s up", cell, l.median);
	}
}

/*
 * NCM_BENCH_ECHOES=FILE appends each echo of a round-trip run: the path,
 * the test, when the probe was sent (CLOCK_MONOTONIC microseconds, as
 * g_get_monotonic_time) and its round trip in microseconds. A trace
 * recorded with that clock (perf record -k mono) can then be cut probe by
 * probe into its hops (tests/bench/rtt-hops.py).
 */
static void
rtt_echo_log(const BenchTransport *t, const char *test, const RttRun *run)
{
	const char *path = g_getenv("NCM_BENCH_ECHOES");
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "a");
	if (!f) {
		bench_progress("NCM_BENCH_ECHOES: cannot open %s: %s", path, g_strerror(errno));
		return;
	}
	for (guint i = 0; i < run->echoes->len; i++) {
		const BenchRttSample *e = &g_array_index(run->echoes, BenchRttSample, i);

		fprintf(f, "%s %s %" G_GINT64_FORMAT " %.0f\n", t->name, test, e->sent_us,
			e->rtt_ms * 1000.0);
	}
	fclose(f);
}

/*
 * rtt_under_up: the probes beside one TCP upload, which starts a second
 * before them, so that they meet the queue it keeps standing, and ends
 * after them. What a bulk upload adds to everything else's round trip is
 * the queue in front of the device: the TAP queue and libncm's for
 * ncm-tun, lwIP's and libncm's for lwip, the qdisc and the driver's for
 * cdc_ncm.
 */
static gboolean
rtt_run_beside_upload(BenchCtx *ctx, RttRun *run, double hz, gint secs, GError **error)
{
	BenchLoad *l = bench_tcp_load_start(ctx, secs + 2);
	gboolean ok;

	g_usleep(G_USEC_PER_SEC);
	ok = rtt_run(ctx, run, hz, secs, error);
	if (!bench_tcp_load_finish(l, &run->load_mbit, ok ? error : NULL))
		ok = FALSE;
	return ok;
}

static void
rtt_test(BenchCtx *ctx, const char *test, gsize size, double hz, gint secs)
{
	g_autoptr(GError) error = NULL;
	RttRun run = {0};
	BenchResult *r;
	RttAcc *a;

	if (!bench_test_selected(ctx->opt, test))
		return;
	bench_progress("%s: %s", ctx->transport->name, test);
	r = bench_result_add(ctx, test);
	a = rtt_acc(r);
	if (a->failed) {
		bench_progress("%s: %s failed in an earlier round; not run again", ctx->transport->name, test);
		return;
	}
	run.rtt_ms = g_array_new(FALSE, FALSE, sizeof(double));
	run.sent_us = g_array_new(FALSE, FALSE, sizeof(gint64));
	run.echoes = g_array_new(FALSE, FALSE, sizeof(BenchRttSample));
	run.size = size;
	bench_seq_init(&run.seq);
	if (g_str_equal(test, "rtt_under_up") ? rtt_run_beside_upload(ctx, &run, hz, secs, &error)
					       : rtt_run(ctx, &run, hz, secs, &error)) {
		rtt_echo_log(ctx->transport, test, &run);
		bench_results_lock();
		rtt_acc_add(a, r, &run, hz, ctx->opt->round);
		rtt_json(r, a, hz, secs);
		if (g_str_equal(test, "soak")) {
			bench_json_num(r->json, "longest_silence_ms", (double)run.longest_silence_us / 1000.0);
			g_autofree char *cell = r->cell;
			r->cell = g_strdup_printf("%s, silence %.0f ms", cell,
						  (double)run.longest_silence_us / 1000.0);
		}
		bench_results_unlock();
	} else {
		bench_results_lock();
		a->failed = TRUE;
		bench_result_fail(r, error);
		bench_results_unlock();
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
	rtt_test(ctx, "rtt_under_up", 64, 100, s);
	autorate_test(ctx);
}
