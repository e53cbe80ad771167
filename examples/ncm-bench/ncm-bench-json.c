/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-json.c: ncm-bench's JSON output, written by hand so the tool needs no JSON library. */
#include <math.h>
#include <string.h>

#include <gio/gio.h>

#include "ncm-bench-json.h"

void
bench_json_double(GString *s, double v)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	/* JSON has no NaN or infinity; the locale must not turn '.' into ','. */
	if (!isfinite(v)) {
		g_string_append(s, "null");
		return;
	}
	g_string_append(s, g_ascii_formatd(buf, sizeof(buf), "%.10g", v));
}

static void
append_string(GString *s, const char *v)
{
	g_string_append_c(s, '"');
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			g_string_append_printf(s, "\\%c", *p);
		else if (*p < 0x20)
			g_string_append_printf(s, "\\u%04x", *p);
		else
			g_string_append_c(s, (char)*p);
	}
	g_string_append_c(s, '"');
}

BenchResult *
bench_result_new(const char *path, const char *test)
{
	BenchResult *r = g_new0(BenchResult, 1);

	r->path = g_strdup(path);
	r->test = g_strdup(test);
	r->json = g_string_new(NULL);
	return r;
}

void
bench_result_free(BenchResult *r)
{
	g_free(r->path);
	g_free(r->test);
	g_string_free(r->json, TRUE);
	g_free(r->cell);
	if (r->rates)
		g_array_unref(r->rates);
	if (r->rtt_series)
		g_array_unref(r->rtt_series);
	if (r->acc && r->acc_free)
		r->acc_free(r->acc);
	g_free(r);
}

void
bench_json_num(GString *s, const char *key, double v)
{
	g_string_append_printf(s, ",\"%s\":", key);
	bench_json_double(s, v);
}

void
bench_json_array(GString *s, const char *key, const double *v, gsize n)
{
	g_string_append_printf(s, ",\"%s\":[", key);
	for (gsize i = 0; i < n; i++) {
		if (i)
			g_string_append_c(s, ',');
		bench_json_double(s, v[i]);
	}
	g_string_append_c(s, ']');
}

void
bench_json_str(GString *s, const char *key, const char *v)
{
	g_string_append_printf(s, ",\"%s\":", key);
	append_string(s, v ? v : "");
}

/* {median,min,max} for rates; {p50,p99,max} (and min) when @pct. */
void
bench_json_summary(GString *s, const char *key, const BenchSummary *sum, gboolean pct)
{
	g_string_append_printf(s, ",\"%s\":{\"%s\":", key, pct ? "p50" : "median");
	bench_json_double(s, sum->median);
	if (pct) {
		g_string_append(s, ",\"p99\":");
		bench_json_double(s, sum->p99);
	}
	g_string_append(s, ",\"min\":");
	bench_json_double(s, sum->min);
	g_string_append(s, ",\"max\":");
	bench_json_double(s, sum->max);
	g_string_append_printf(s, ",\"n\":%" G_GSIZE_FORMAT "}", sum->n);
}

/* The members of the caller's --env-json object, to splice into ours. */
static gboolean
env_members(const char *file, GString *out, GError **error)
{
	g_autofree char *text = NULL;
	char *body;
	gsize len;

	if (!g_file_get_contents(file, &text, &len, error))
		return FALSE;
	body = g_strstrip(text);
	len = strlen(body);
	if (len < 2 || body[0] != '{' || body[len - 1] != '}') {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "%s: --env-json needs one JSON object", file);
		return FALSE;
	}
	body[len - 1] = '\0';
	body = g_strstrip(body + 1);
	if (*body)
		g_string_append_printf(out, ",%s", body);
	return TRUE;
}

/*
 * @env holds our env members, each preceded by a comma. The caller's
 * members come after ours, so where both name a field the caller's wins
 * for parsers that keep the last one.
 */
gboolean
bench_json_write(const char *file, const GString *env, const char *env_json_file,
		 GPtrArray *results, GError **error)
{
	g_autoptr(GString) s = g_string_new("{\"tool\":\"ncm-bench\",\"env\":{");
	g_autoptr(GString) e = g_string_new(env->str);

	if (env_json_file && !env_members(env_json_file, e, error))
		return FALSE;
	g_string_append(s, e->len ? e->str + 1 : "");
	g_string_append(s, "},\"results\":[");
	for (guint i = 0; i < results->len; i++) {
		BenchResult *r = results->pdata[i];

		g_string_append(s, i ? ",\n{" : "\n{");
		g_string_append(s, "\"path\":");
		append_string(s, r->path);
		g_string_append(s, ",\"test\":");
		append_string(s, r->test);
		g_string_append(s, r->json->str);
		if (r->ceiling.n > 0) {
			bench_json_summary(s, "ceiling_fraction", &r->ceiling, FALSE);
			bench_json_num(s, "ceiling_mbit_s", r->ceiling_mbit);
		}
		g_string_append_c(s, '}');
	}
	g_string_append(s, "\n]}\n");
	return g_file_set_contents(file, s->str, (gssize)s->len, error);
}
