/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-plot.c: ncm-bench's SVG plot of throughput over time, one line per path. */
#include <math.h>
#include <string.h>

#include "ncm-bench.h"
#include "ncm-bench-proto.h"

#define W 800
#define H 420
#define ML 70 /* margins: room for tick labels and the legend */
#define MR 170
#define MT 40
#define MB 50

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

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
	double p = pow(10, floor(log10(MAX(v, 1e-3))));

	for (gsize i = 0; i < G_N_ELEMENTS(steps); i++) {
		if (steps[i] * p >= v)
			return steps[i] * p;
	}
	return 10 * p;
}

static void
plot_axes(GString *s, double ymax, double xmax_s, const char *title)
{
	g_string_append_printf(s, "<text x=\"%d\" y=\"24\" font-size=\"16\">%s</text>\n", ML, title);
	g_string_append_printf(s, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
			       ML, H - MB, W - MR, H - MB);
	g_string_append_printf(s, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
			       ML, MT, ML, H - MB);
	for (int i = 0; i <= 5; i++) {
		double y = H - MB - (double)(H - MT - MB) * i / 5;
		double x = ML + (double)(W - ML - MR) * i / 5;

		g_string_append_printf(s, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
				       "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.6g</text>\n",
				       ML, y, W - MR, y, ML - 6, y + 4, ymax * i / 5);
		g_string_append_printf(s, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%.3g</text>\n",
				       x, H - MB + 16, xmax_s * i / 5);
	}
	g_string_append_printf(s, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">time (s), 250 ms windows</text>\n",
			       (ML + W - MR) / 2, H - 12);
	g_string_append_printf(s, "<text x=\"16\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 16 %d)\" "
			       "text-anchor=\"middle\">Mbit/s</text>\n", (MT + H - MB) / 2, (MT + H - MB) / 2);
}

static void
plot_line(GString *s, const BenchResult *r, guint idx, double ymax, double xmax_s)
{
	const char *c = colours[idx % G_N_ELEMENTS(colours)];
	const double *v = (const double *)(const void *)r->rates->data;
	double step = (double)BENCH_REPORT_US / 1e6;
	g_autofree char *label = g_markup_printf_escaped("%s (%s)", r->path, r->test);

	g_string_append_printf(s, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
	for (guint i = 0; i < r->rates->len; i++) {
		double x = ML + (double)(W - ML - MR) * ((i + 0.5) * step) / xmax_s;
		double y = H - MB - (double)(H - MT - MB) * v[i] / ymax;

		g_string_append_printf(s, "%.1f,%.1f ", x, y);
	}
	g_string_append(s, "\"/>\n");
	g_string_append_printf(s, "<line x1=\"%d\" y1=\"%u\" x2=\"%d\" y2=\"%u\" stroke=\"%s\" stroke-width=\"3\"/>"
			       "<text x=\"%d\" y=\"%u\" font-size=\"12\">%s</text>\n",
			       W - MR + 12, MT + 10 + idx * 20, W - MR + 36, MT + 10 + idx * 20, c,
			       W - MR + 42, MT + 14 + idx * 20, label);
}

gboolean
bench_plot_write(const char *file, GPtrArray *results, GError **error)
{
	g_autoptr(GPtrArray) pick = plot_series(results);
	g_autoptr(GString) s = g_string_new(NULL);
	double ymax = 0, xmax = 0;

	for (guint i = 0; i < pick->len; i++) {
		const BenchResult *r = pick->pdata[i];

		for (guint j = 0; j < r->rates->len; j++)
			ymax = MAX(ymax, g_array_index(r->rates, double, j));
		xmax = MAX(xmax, (double)r->rates->len * BENCH_REPORT_US / 1e6);
	}
	ymax = nice_max(ymax);
	xmax = MAX(xmax, 1);
	g_string_append_printf(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
			       "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
			       W, H);
	plot_axes(s, ymax, xmax, "ncm-bench: TCP throughput over time (first repetition)");
	for (guint i = 0; i < pick->len; i++)
		plot_line(s, pick->pdata[i], i, ymax, xmax);
	g_string_append(s, "</svg>\n");
	return g_file_set_contents(file, s->str, (gssize)s->len, error);
}
