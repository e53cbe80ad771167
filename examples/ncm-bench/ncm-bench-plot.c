/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-plot.c: ncm-bench's SVG plot: per TCP test and path (and the raw path's ceiling), Mbit/s and whole-system CPU per MB as bars; throughput and UDP round trips over time as lines. */
#include <math.h>
#include <string.h>

#include "ncm-bench.h"
#include "ncm-bench-ceiling.h"
#include "ncm-bench-proto.h"

#define W 900
#define H 800
/* With a round-trip series, a third panel below the throughput lines. */
#define H_RTT 1130
#define LEGEND_Y 52
/* The plot areas: two bar panels side by side, the time lines below them. */
#define BAR_Y 90
#define BAR_H 230
#define BAR_W 340
#define BAR1_X 70
#define BAR2_X 520
#define TIME_Y 420
#define TIME_H 320
#define TIME_X 70
#define TIME_W 640
#define RTT_Y 820
#define RTT_H 240
/* The round-trip test whose series is drawn, the first one present. */
static const char *const rtt_tests[] = {"udp_rtt_64_500hz", "udp_rtt_1400_500hz", "udp_rtt_64_10hz",
					"udp_rtt_1400_10hz"};

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
static const char *const tcp_tests[] = {"tcp_down", "tcp_up", "tcp_bidir"};

typedef struct {
	double x, y, w, h; /* the plot area, in SVG pixels */
} Box;

/* The paths in the order they ran: each keeps its colour in every panel. */
static GPtrArray *
plot_paths(GPtrArray *results)
{
	GPtrArray *paths = g_ptr_array_new();

	for (guint i = 0; i < results->len; i++) {
		const char *p = ((BenchResult *)results->pdata[i])->path;

		if (!g_ptr_array_find_with_equal_func(paths, p, g_str_equal, NULL))
			g_ptr_array_add(paths, (gpointer)p);
	}
	return paths;
}

static const char *
path_colour(GPtrArray *paths, const char *path)
{
	guint idx = 0;

	g_ptr_array_find_with_equal_func(paths, path, g_str_equal, &idx);
	return colours[idx % G_N_ELEMENTS(colours)];
}

static const BenchResult *
find(GPtrArray *results, const char *test, const char *path)
{
	for (guint i = 0; i < results->len; i++) {
		const BenchResult *r = results->pdata[i];

		if (g_str_equal(r->test, test) && g_str_equal(r->path, path))
			return r;
	}
	return NULL;
}

/* The series to draw for each path: its tcp_down run, else its tcp_up run. */
static GPtrArray *
plot_series(GPtrArray *results)
{
	GPtrArray *pick = g_ptr_array_new();

	for (const char *const *want = (const char *const[]){"tcp_down", "tcp_up", NULL}; *want; want++) {
		for (guint i = 0; i < results->len; i++) {
			BenchResult *r = results->pdata[i];
			gboolean have = FALSE;

			if (!r->rates || !g_str_equal(r->test, *want))
				continue;
			for (guint j = 0; j < pick->len; j++)
				have |= g_str_equal(((BenchResult *)pick->pdata[j])->path, r->path);
			if (!have)
				g_ptr_array_add(pick, r);
		}
	}
	return pick;
}

/* A round axis maximum: 1, 2 or 5 times a power of ten. */
static double
nice_max(double v)
{
	static const double steps[] = {1, 2, 5, 10};
	double p = pow(10, floor(log10(MAX(v, 1e-6))));

	for (gsize i = 0; i < G_N_ELEMENTS(steps); i++) {
		if (steps[i] * p >= v)
			return steps[i] * p;
	}
	return 10 * p;
}

/* The frame, a title over it, the y grid with its labels and the y axis's name. */
static void
plot_frame(GString *s, const Box *b, double ymax, const char *title, const char *ylabel)
{
	double my = b->y + b->h / 2;

	g_string_append_printf(s, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\">%s</text>\n",
			       b->x, b->y - 12, title);
	for (int i = 0; i <= 5; i++) {
		double y = b->y + b->h - b->h * i / 5;

		g_string_append_printf(s, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
				       "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.6g</text>\n",
				       b->x, y, b->x + b->w, y, b->x - 6, y + 4, ymax * i / 5);
	}
	g_string_append_printf(s, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
			       b->x, b->y + b->h, b->x + b->w, b->y + b->h);
	g_string_append_printf(s, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
			       b->x, b->y, b->x, b->y + b->h);
	g_string_append_printf(s, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" transform=\"rotate(-90 %.0f %.0f)\" "
			       "text-anchor=\"middle\">%s</text>\n", b->x - 52, my, b->x - 52, my, ylabel);
}

/* The whole-system CPU summary, or the Mbit/s one. */
static const BenchSummary *
bar_value(const BenchResult *r, gboolean cpu)
{
	return cpu ? &r->sys_cpu : &r->mbit;
}

/* One bar at the median, a whisker from min to max. */
static void
plot_bar(GString *s, const Box *b, double x, double bw, const BenchSummary *v, double ymax,
	 const char *colour)
{
	double y = b->y + b->h - b->h * v->median / ymax;
	double ylo = b->y + b->h - b->h * v->min / ymax, yhi = b->y + b->h - b->h * v->max / ymax;
	double cx = x + bw / 2;

	g_string_append_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
			       x, y, bw, b->y + b->h - y, colour);
	g_string_append_printf(s, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" stroke=\"black\" "
			       "fill=\"none\"/>\n", cx, ylo, yhi, cx - bw / 4, ylo, cx + bw / 4, cx - bw / 4,
			       yhi, cx + bw / 4);
}

/* The TCP tests that ran, in their order: a group of bars each. */
static GPtrArray *
bar_tests(GPtrArray *results)
{
	GPtrArray *tests = g_ptr_array_new();

	for (gsize t = 0; t < G_N_ELEMENTS(tcp_tests); t++) {
		for (guint i = 0; i < results->len; i++) {
			if (g_str_equal(((BenchResult *)results->pdata[i])->test, tcp_tests[t])) {
				g_ptr_array_add(tests, (gpointer)tcp_tests[t]);
				break;
			}
		}
	}
	return tests;
}

/* A path's bar in @test's group: its own result, or the raw path's ceiling for that direction. */
static const BenchResult *
bar_result(GPtrArray *results, const char *test, const char *path)
{
	const BenchResult *r = find(results, test, path);
	const char *ceiling = bench_ceiling_test(test);

	return r || !ceiling ? r : find(results, ceiling, path);
}

/* Per TCP test a group of bars, one per path that has the figure. */
static void
plot_bars(GString *s, const Box *b, GPtrArray *results, GPtrArray *paths, gboolean cpu,
	  const char *title, const char *ylabel)
{
	g_autoptr(GPtrArray) tests = bar_tests(results);
	double ymax = 0, gw = b->w / MAX(tests->len, 1);
	double bw = gw * 0.8 / MAX(paths->len, 1);

	for (guint t = 0; t < tests->len; t++) {
		for (guint p = 0; p < paths->len; p++) {
			const BenchResult *r = bar_result(results, tests->pdata[t], paths->pdata[p]);

			if (r)
				ymax = MAX(ymax, bar_value(r, cpu)->max);
		}
	}
	ymax = nice_max(ymax);
	plot_frame(s, b, ymax, title, ylabel);
	for (guint t = 0; t < tests->len; t++) {
		double gx = b->x + gw * (double)t;

		g_string_append_printf(s, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
				       gx + gw / 2, b->y + b->h + 16, (const char *)tests->pdata[t]);
		for (guint p = 0; p < paths->len; p++) {
			const BenchResult *r = bar_result(results, tests->pdata[t], paths->pdata[p]);

			if (r && bar_value(r, cpu)->n > 0)
				plot_bar(s, b, gx + gw * 0.1 + bw * p, bw, bar_value(r, cpu), ymax,
					 path_colour(paths, paths->pdata[p]));
		}
	}
}

static void
plot_legend(GString *s, GPtrArray *paths)
{
	double x = BAR1_X;

	for (guint p = 0; p < paths->len; p++) {
		g_autofree char *name = g_markup_escape_text(paths->pdata[p], -1);

		g_string_append_printf(s, "<rect x=\"%.0f\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
				       "<text x=\"%.0f\" y=\"%d\" font-size=\"13\">%s</text>\n",
				       x, LEGEND_Y - 11, path_colour(paths, paths->pdata[p]), x + 20, LEGEND_Y,
				       name);
		x += 40 + 8 * (double)strlen(paths->pdata[p]);
	}
	g_string_append_printf(s, "<text x=\"%.0f\" y=\"%d\" font-size=\"11\" fill=\"#555\">bars: median of the "
			       "repetitions, whiskers: min-max</text>\n", x + 10, LEGEND_Y);
}

static void
plot_line(GString *s, const Box *b, const BenchResult *r, guint idx, const char *c, double ymax,
	  double xmax_s)
{
	const double *v = (const double *)(const void *)r->rates->data;
	double step = (double)BENCH_REPORT_US / 1e6;
	g_autofree char *label = g_markup_printf_escaped("%s (%s)", r->path, r->test);
	double ly = b->y + 10 + idx * 20;

	g_string_append_printf(s, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
	for (guint i = 0; i < r->rates->len; i++) {
		double x = b->x + b->w * ((i + 0.5) * step) / xmax_s;
		double y = b->y + b->h - b->h * v[i] / ymax;

		g_string_append_printf(s, "%.1f,%.1f ", x, y);
	}
	g_string_append(s, "\"/>\n");
	g_string_append_printf(s, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"3\"/>"
			       "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">%s</text>\n",
			       b->x + b->w + 12, ly, b->x + b->w + 36, ly, c, b->x + b->w + 42, ly + 4, label);
}

/* Throughput over time: each path's first tcp_down run (else tcp_up), in 250 ms windows. */
static void
plot_time(GString *s, const Box *b, GPtrArray *results, GPtrArray *paths)
{
	g_autoptr(GPtrArray) pick = plot_series(results);
	double ymax = 0, xmax = 0;

	for (guint i = 0; i < pick->len; i++) {
		const BenchResult *r = pick->pdata[i];

		for (guint j = 0; j < r->rates->len; j++)
			ymax = MAX(ymax, g_array_index(r->rates, double, j));
		xmax = MAX(xmax, (double)r->rates->len * BENCH_REPORT_US / 1e6);
	}
	ymax = nice_max(ymax);
	xmax = MAX(xmax, 1);
	plot_frame(s, b, ymax, "TCP throughput over time (first repetition)", "Mbit/s");
	for (int i = 0; i <= 5; i++)
		g_string_append_printf(s, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">%.3g</text>\n",
				       b->x + b->w * i / 5, b->y + b->h + 16, xmax * i / 5);
	g_string_append_printf(s, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">time (s), 250 ms windows</text>\n",
			       b->x + b->w / 2, b->y + b->h + 36);
	for (guint i = 0; i < pick->len; i++) {
		const BenchResult *r = pick->pdata[i];

		plot_line(s, b, r, i, path_colour(paths, r->path), ymax, xmax);
	}
}

/* Each path's series of @test, in path order. */
static GPtrArray *
rtt_pick(GPtrArray *results, const char **ret_test)
{
	GPtrArray *pick = g_ptr_array_new();

	for (gsize t = 0; t < G_N_ELEMENTS(rtt_tests) && pick->len == 0; t++) {
		for (guint i = 0; i < results->len; i++) {
			BenchResult *r = results->pdata[i];

			if (r->rtt_series && r->rtt_series->len > 0 && g_str_equal(r->test, rtt_tests[t]))
				g_ptr_array_add(pick, r);
		}
		*ret_test = rtt_tests[t];
	}
	return pick;
}

/* One path's p99 per interval (solid) and p50 (dashed); empty intervals break the line. */
static void
rtt_line(GString *s, const Box *b, const BenchResult *r, guint idx, const char *c, double ymax,
	 double xmax_s)
{
	g_autofree char *label = g_markup_printf_escaped("%s", r->path);
	double ly = b->y + 10 + idx * 20;

	for (int p99 = 1; p99 >= 0; p99--) {
		gboolean open = FALSE;

		for (guint i = 0; i < r->rtt_series->len; i++) {
			const BenchRttInterval *v = &g_array_index(r->rtt_series, BenchRttInterval, i);
			double x = b->x + b->w * ((i + 0.5) * r->rtt_interval_s) / xmax_s;
			double y = b->y + b->h - b->h * MIN(p99 ? v->p99_ms : v->p50_ms, ymax) / ymax;

			if (v->received == 0) {
				if (open)
					g_string_append(s, "\"/>\n");
				open = FALSE;
				continue;
			}
			if (!open)
				g_string_append_printf(s, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"",
						       c, p99 ? "2" : "1.5", p99 ? "" : " stroke-dasharray=\"4 3\"");
			open = TRUE;
			g_string_append_printf(s, "%.1f,%.1f ", x, y);
		}
		if (open)
			g_string_append(s, "\"/>\n");
	}
	g_string_append_printf(s, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"3\"/>"
			       "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">%s</text>\n",
			       b->x + b->w + 12, ly, b->x + b->w + 36, ly, c, b->x + b->w + 42, ly + 4, label);
}

/* UDP round trips over time: p99 (solid) and p50 (dashed) per interval, y capped at the largest p99. */
static void
plot_rtt(GString *s, const Box *b, GPtrArray *pick, const char *test, GPtrArray *paths)
{
	g_autofree char *title = g_strdup_printf("UDP round trip over time, %s: "
						 "p99 solid, p50 dashed", test);
	double ymax = 0, xmax = 0;

	for (guint i = 0; i < pick->len; i++) {
		const BenchResult *r = pick->pdata[i];

		for (guint j = 0; j < r->rtt_series->len; j++)
			ymax = MAX(ymax, g_array_index(r->rtt_series, BenchRttInterval, j).p99_ms);
		xmax = MAX(xmax, (double)r->rtt_series->len * r->rtt_interval_s);
	}
	ymax = nice_max(ymax);
	xmax = MAX(xmax, 1);
	plot_frame(s, b, ymax, title, "ms");
	for (int i = 0; i <= 5; i++)
		g_string_append_printf(s, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">%.3g</text>\n",
				       b->x + b->w * i / 5, b->y + b->h + 16, xmax * i / 5);
	g_string_append_printf(s, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">time the probe was sent (s), "
			       "%.0f ms intervals</text>\n", b->x + b->w / 2, b->y + b->h + 36,
			       pick->len > 0 ? ((const BenchResult *)pick->pdata[0])->rtt_interval_s * 1000 : 0);
	for (guint i = 0; i < pick->len; i++) {
		const BenchResult *r = pick->pdata[i];

		rtt_line(s, b, r, i, path_colour(paths, r->path), ymax, xmax);
	}
}

gboolean
bench_plot_write(const char *file, GPtrArray *results, GError **error)
{
	g_autoptr(GPtrArray) paths = plot_paths(results);
	g_autoptr(GString) s = g_string_new(NULL);
	const Box mbit = {BAR1_X, BAR_Y, BAR_W, BAR_H}, cpu = {BAR2_X, BAR_Y, BAR_W, BAR_H};
	const Box time = {TIME_X, TIME_Y, TIME_W, TIME_H}, rtt = {TIME_X, RTT_Y, TIME_W, RTT_H};
	const char *rtt_test = NULL;
	g_autoptr(GPtrArray) rtt_series = rtt_pick(results, &rtt_test);

	g_string_append_printf(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
			       "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
			       W, rtt_series->len > 0 ? H_RTT : H);
	g_string_append_printf(s, "<text x=\"%d\" y=\"24\" font-size=\"17\">ncm-bench: TCP per path</text>\n", BAR1_X);
	plot_legend(s, paths);
	plot_bars(s, &mbit, results, paths, FALSE, "Throughput", "Mbit/s");
	plot_bars(s, &cpu, results, paths, TRUE, "Whole-system CPU per MB (lower is better)",
		  "busy CPU-s per MB");
	plot_time(s, &time, results, paths);
	if (rtt_series->len > 0)
		plot_rtt(s, &rtt, rtt_series, rtt_test, paths);
	g_string_append(s, "</svg>\n");
	return g_file_set_contents(file, s->str, (gssize)s->len, error);
}
