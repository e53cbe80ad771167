/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-json.h: ncm-bench's result lines and its hand-written JSON output. */
#pragma once

#include <glib.h>

#include "ncm-bench-stats.h"

G_BEGIN_DECLS

/*
 * One line of output. @json holds the result's fields after "path" and
 * "test", each preceded by a comma, ready to splice into an object.
 */
typedef struct {
	char *path;
	char *test;
	GString *json;
	char *cell;        /* what the human table shows */
	GArray *rates;     /* double Mbit/s per 250 ms window, for --plot; or NULL */
	GArray *rtt_series; /* BenchRttInterval per rtt_interval_s, UDP round trips; or NULL */
	double rtt_interval_s;
	/* Throughput tests, over the repetitions (n = 0 when not measured), for the
	 * table's ratios and the plot's bars: */
	BenchSummary mbit;
	BenchSummary sys_cpu; /* whole-system busy CPU-s per MB */
	/* Mbit/s over the usbfs ceiling's median, ceiling_mbit (bench_ceiling_apply()); n = 0 when none */
	BenchSummary ceiling;
	double ceiling_mbit;
	/* What a test keeps across --rounds (the throughput tests' runs so far), freed with @acc_free. */
	gpointer acc;
	GDestroyNotify acc_free;
} BenchResult;

/* An empty result of @test on @path. */
BenchResult *bench_result_new(const char *path, const char *test);
void bench_result_free(BenchResult *r);

void bench_json_summary(GString *s, const char *key, const BenchSummary *sum, gboolean pct);
void bench_json_num(GString *s, const char *key, double v);
/* "key":[v0,v1,...]: figures in the order they were measured. */
void bench_json_array(GString *s, const char *key, const double *v, gsize n);
/* A bare JSON number (null when not finite), for arrays. */
void bench_json_double(GString *s, double v);
void bench_json_str(GString *s, const char *key, const char *v);
/* Errors: G_FILE_ERROR reading @env_json_file or writing @file; G_IO_ERROR_INVALID_DATA
 * when @env_json_file does not hold one JSON object. */
gboolean bench_json_write(const char *file, const GString *env, const char *env_json_file,
			  GPtrArray *results, GError **error);

G_END_DECLS
