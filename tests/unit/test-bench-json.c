/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bench-json.c: ncm-bench's JSON shape, parsed back with json-glib, a loopback run end to end, and the raw path over a TAP. */
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ncm-bench-json.h"
#include "ncm-bench-order.h"

static JsonNode *
parse_file(const char *file)
{
	g_autoptr(JsonParser) p = json_parser_new();
	g_autoptr(GError) error = NULL;

	json_parser_load_from_file(p, file, &error);
	g_assert_no_error(error);
	return json_node_copy(json_parser_get_root(p));
}

static void
test_shape_and_escaping(void)
{
	g_autofree char *dir = g_dir_make_tmp("bench-json-XXXXXX", NULL);
	g_autofree char *out = g_build_filename(dir, "out.json", NULL);
	g_autofree char *extra = g_build_filename(dir, "env.json", NULL);
	g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func((GDestroyNotify)bench_result_free);
	g_autoptr(GString) env = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) root = NULL;
	BenchResult *r = bench_result_new("we\"ird\\path\n", "tcp_down");
	double v[] = {30, 10, 20};
	BenchSummary sum;
	JsonObject *o, *e, *m;
	JsonArray *a;

	bench_summarize(v, 3, &sum);
	bench_json_summary(r->json, "mbit_s", &sum, FALSE);
	bench_json_num(r->json, "nan", 0.0 / 0.0);
	g_ptr_array_add(results, r);
	r = bench_result_new("lo", "udp_rtt_64_10hz");
	bench_json_summary(r->json, "rtt_ms", &sum, TRUE);
	g_ptr_array_add(results, r);
	bench_json_str(env, "kernel", "Linux x");
	g_assert_true(g_file_set_contents(extra, " {\"usb_speed\": \"high\", \"ntb\": {\"in_max\": 16384}}\n", -1, NULL));
	g_assert_true(bench_json_write(out, env, extra, results, &error));
	g_assert_no_error(error);

	root = parse_file(out);
	o = json_node_get_object(root);
	e = json_object_get_object_member(o, "env");
	g_assert_cmpstr(json_object_get_string_member(e, "kernel"), ==, "Linux x");
	g_assert_cmpstr(json_object_get_string_member(e, "usb_speed"), ==, "high");
	g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(e, "ntb"), "in_max"), ==, 16384);
	a = json_object_get_array_member(o, "results");
	g_assert_cmpuint(json_array_get_length(a), ==, 2);
	o = json_array_get_object_element(a, 0);
	g_assert_cmpstr(json_object_get_string_member(o, "path"), ==, "we\"ird\\path\n");
	m = json_object_get_object_member(o, "mbit_s");
	g_assert_cmpfloat(json_object_get_double_member(m, "median"), ==, 20);
	g_assert_cmpfloat(json_object_get_double_member(m, "min"), ==, 10);
	g_assert_cmpfloat(json_object_get_double_member(m, "max"), ==, 30);
	g_assert_true(json_object_get_null_member(o, "nan"));
	m = json_object_get_object_member(json_array_get_object_element(a, 1), "rtt_ms");
	g_assert_cmpfloat(json_object_get_double_member(m, "p50"), ==, 20);
	g_assert_cmpfloat(json_object_get_double_member(m, "p99"), ==, 30);

	/* A caller's env that is not one object is refused, not spliced in. */
	g_assert_true(g_file_set_contents(extra, "[1,2]", -1, NULL));
	g_assert_false(bench_json_write(out, env, extra, results, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
	g_remove(out);
	g_remove(extra);
	g_rmdir(dir);
}

#ifdef NCM_BENCH_EXE
static guint16
free_port(void)
{
	g_autoptr(GSocket) s = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
	g_autoptr(GInetAddress) lo = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	g_autoptr(GSocketAddress) a = g_inet_socket_address_new(lo, 0);
	g_autoptr(GSocketAddress) bound = NULL;

	g_assert_true(g_socket_bind(s, a, TRUE, NULL));
	bound = g_socket_get_local_address(s, NULL);
	return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
}

/* Plain GSocket: GSocketClient would resolve on a thread pool TSan cannot see into. */
static void
wait_listening(guint16 port)
{
	g_autoptr(GInetAddress) lo = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	g_autoptr(GSocketAddress) a = g_inet_socket_address_new(lo, port);

	for (int i = 0; i < 200; i++) {
		g_autoptr(GSocket) s = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
						    G_SOCKET_PROTOCOL_TCP, NULL);

		if (g_socket_connect(s, a, NULL, NULL))
			return;
		g_usleep(50000);
	}
	g_assert_not_reached();
}

/*
 * Runs an ncm-bench --server (on @bind only, when not NULL) and a client
 * with @args against it; returns the client's table and its wait status.
 */
static char *
bench_run_status(const char *bind, const char *const *args, int *ret_status)
{
	g_autofree char *port = g_strdup_printf("%u", free_port());
	const char *server[] = {NCM_BENCH_EXE, "--server", "--port", port, bind ? "--bind" : NULL, bind, NULL};
	g_autoptr(GPtrArray) client = g_ptr_array_new();
	g_autoptr(GError) error = NULL;
	char *table = NULL;
	GPid pid;
	int status;

	g_ptr_array_add(client, (gpointer)NCM_BENCH_EXE);
	g_ptr_array_add(client, (gpointer)"--port");
	g_ptr_array_add(client, port);
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(client, (gpointer)*a);
	g_ptr_array_add(client, NULL);
	g_assert_true(g_spawn_async(NULL, (char **)server, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
				    G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &pid, &error));
	wait_listening((guint16)atoi(port));
	g_assert_true(g_spawn_sync(NULL, (char **)client->pdata, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL,
				   NULL, &table, NULL, &status, &error));
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	g_assert_no_error(error);
	g_test_message("%s", table);
	*ret_status = status;
	return table;
}

/* As bench_run_status(); the client must succeed. */
static char *
bench_run(const char *bind, const char *const *args)
{
	int status;
	char *table = bench_run_status(bind, args, &status);

	g_assert_true(g_spawn_check_wait_status(status, NULL));
	return table;
}

/* @path's result of @test, which must have no error. */
static JsonObject *
result_of(JsonArray *a, const char *path, const char *test)
{
	for (guint i = 0; i < json_array_get_length(a); i++) {
		JsonObject *o = json_array_get_object_element(a, i);

		if (g_str_equal(json_object_get_string_member(o, "test"), test) &&
		    g_str_equal(json_object_get_string_member(o, "path"), path)) {
			g_assert_false(json_object_has_member(o, "error"));
			return o;
		}
	}
	g_assert_not_reached();
}

static JsonObject *
result_object(JsonArray *a, const char *test)
{
	return result_of(a, "lo", test);
}

static double
result_member(JsonArray *a, const char *test, const char *obj, const char *key)
{
	JsonObject *o = result_object(a, test);

	if (obj)
		o = json_object_get_object_member(o, obj);
	return json_object_get_double_member(o, key);
}

/*
 * Whole-system CPU per MB on every throughput test: a summary over the
 * repetitions like mbit_s, positive (loopback keeps a CPU busy), ordered,
 * and next to the per-process figure, which stays. The kernel path has no
 * USB work units.
 */
static void
check_system_cpu(JsonArray *a, const char *test)
{
	JsonObject *o = result_object(a, test);
	JsonObject *c = json_object_get_object_member(o, "system_cpu_s_per_mb");
	JsonObject *b = json_object_get_object_member(o, "system_cpu_busy_pct");

	g_assert_nonnull(c);
	g_assert_cmpint(json_object_get_int_member(c, "n"), ==, 1);
	g_assert_cmpfloat(json_object_get_double_member(c, "min"), >, 0);
	g_assert_cmpfloat(json_object_get_double_member(c, "min"), <=, json_object_get_double_member(c, "median"));
	g_assert_cmpfloat(json_object_get_double_member(c, "median"), <=, json_object_get_double_member(c, "max"));
	g_assert_nonnull(b);
	g_assert_cmpfloat(json_object_get_double_member(b, "median"), >, 0);
	g_assert_cmpfloat(json_object_get_double_member(b, "median"), <=, 100);
	g_assert_true(json_object_has_member(o, "cpu_s_per_mb"));
	/* Threads block on the sockets and on each other: never none. */
	g_assert_cmpfloat(json_object_get_double_member(o, "context_switches_per_mb"), >, 0);
	g_assert_false(json_object_has_member(o, "core_lock_wait_ms_per_mb"));
	g_assert_false(json_object_has_member(o, "usb_rx_ntbs_per_mb"));
	g_assert_false(json_object_has_member(o, "usb_tx_ntbs_per_mb"));
}

/* The per-interval series adds up to the run's own counts, one element per
 * interval in every array, figures ordered where anything came back. */
static void
check_rtt_series(JsonObject *o, gint64 interval_ms)
{
	JsonObject *sr = json_object_get_object_member(o, "rtt_series");
	static const char *const keys[] = {"sent", "received", "p50_ms", "p99_ms", "max_ms"};
	JsonArray *col[G_N_ELEMENTS(keys)];
	gint64 sent = 0, received = 0;
	guint n;

	g_assert_nonnull(sr);
	g_assert_cmpint(json_object_get_int_member(sr, "interval_ms"), ==, interval_ms);
	for (gsize k = 0; k < G_N_ELEMENTS(keys); k++)
		col[k] = json_object_get_array_member(sr, keys[k]);
	n = json_array_get_length(col[0]);
	g_assert_cmpuint(n, >=, 1);
	for (gsize k = 1; k < G_N_ELEMENTS(keys); k++)
		g_assert_cmpuint(json_array_get_length(col[k]), ==, n);
	for (guint i = 0; i < n; i++) {
		gint64 got = json_array_get_int_element(col[1], i);

		sent += json_array_get_int_element(col[0], i);
		received += got;
		if (got == 0)
			continue;
		g_assert_cmpfloat(json_array_get_double_element(col[2], i), >, 0);
		g_assert_cmpfloat(json_array_get_double_element(col[2], i), <=,
				  json_array_get_double_element(col[3], i));
		g_assert_cmpfloat(json_array_get_double_element(col[3], i), <=,
				  json_array_get_double_element(col[4], i));
	}
	g_assert_cmpint(sent, ==, json_object_get_int_member(o, "sent"));
	/* Every slot of the run's fixed rate was either sent or skipped. */
	g_assert_cmpint(json_object_get_int_member(o, "sent") + json_object_get_int_member(o, "skipped"), ==,
			json_object_get_int_member(o, "rate_hz") * json_object_get_int_member(o, "secs"));
	g_assert_cmpint(received, ==, json_object_get_int_member(o, "received"));
}

static void
test_loopback_run(void)
{
	g_autofree char *dir = g_dir_make_tmp("bench-run-XXXXXX", NULL);
	g_autofree char *out = g_build_filename(dir, "out.json", NULL);
	g_autofree char *svg = g_build_filename(dir, "out.svg", NULL);
	const char *args[] = {"--path", "lo=127.0.0.1", "--quick", "--secs", "2",
			      "--tests", "tcp_down,tcp_up,tcp_bidir,udp_rtt_64_10hz",
			      "--json", out, "--plot", svg, NULL};
	g_autofree char *table = bench_run("127.0.0.1", args), *plot = NULL;
	g_autoptr(JsonNode) root = NULL;
	JsonArray *a;

	g_assert_nonnull(strstr(table, "tcp_down"));

	root = parse_file(out);
	a = json_object_get_array_member(json_node_get_object(root), "results");
	g_assert_cmpuint(json_array_get_length(a), ==, 4);
	g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(json_node_get_object(root), "env"),
						   "user_hz"), >, 0);
	g_assert_cmpfloat(result_member(a, "tcp_down", "mbit_s", "median"), >, 0);
	g_assert_cmpfloat(result_member(a, "tcp_up", "mbit_s", "median"), >, 0);
	g_assert_cmpfloat(result_member(a, "tcp_bidir", "mbit_s", "median"), >, 0);
	check_system_cpu(a, "tcp_down");
	check_system_cpu(a, "tcp_up");
	check_system_cpu(a, "tcp_bidir");
	g_assert_false(json_object_has_member(result_object(a, "udp_rtt_64_10hz"), "system_cpu_s_per_mb"));
	/* The table's CPU row for each throughput test. */
	g_assert_nonnull(strstr(table, "tcp_up cpu s/MB"));
	g_assert_cmpfloat(result_member(a, "udp_rtt_64_10hz", "rtt_ms", "p50"), >, 0);
	g_assert_cmpfloat(result_member(a, "udp_rtt_64_10hz", NULL, "received"), >, 0);
	check_rtt_series(result_object(a, "udp_rtt_64_10hz"), 1000);
	g_assert_true(g_file_get_contents(svg, &plot, NULL, NULL));
	g_assert_nonnull(strstr(plot, "UDP round trip over time, udp_rtt_64_10hz"));
	g_assert_true(g_str_has_prefix(plot, "<?xml"));
	g_assert_nonnull(strstr(plot, "<polyline"));
	/* Bars for Mbit/s and CPU per MB: one per throughput test each. */
	g_assert_nonnull(strstr(plot, "Whole-system CPU per MB"));
	g_assert_nonnull(strstr(plot, "<path d=\"M"));
	/* No raw path, no ceiling: no fraction anywhere. */
	g_assert_false(json_object_has_member(result_object(a, "tcp_down"), "ceiling_fraction"));
	g_assert_null(strstr(table, "of ceiling"));
	g_remove(out);
	g_remove(svg);
	g_rmdir(dir);
}

static guint
results_of(JsonArray *a, const char *path, const char *test)
{
	guint n = 0;

	for (guint i = 0; i < json_array_get_length(a); i++) {
		JsonObject *o = json_array_get_object_element(a, i);

		n += g_str_equal(json_object_get_string_member(o, "test"), test) &&
		     g_str_equal(json_object_get_string_member(o, "path"), path);
	}
	return n;
}

/* "runs": each run in the order it ran, its round beside it, the summary over them. */
static void
check_runs(JsonObject *o, guint n_rounds)
{
	JsonObject *m = json_object_get_object_member(o, "mbit_s");
	JsonObject *runs = json_object_get_object_member(o, "runs");
	JsonArray *v = json_object_get_array_member(runs, "mbit_s");
	JsonArray *round = json_object_get_array_member(runs, "round");
	double lo = G_MAXDOUBLE, hi = 0;

	g_assert_cmpint(json_object_get_int_member(m, "n"), ==, n_rounds);
	g_assert_cmpint(json_object_get_int_member(o, "reps"), ==, n_rounds);
	g_assert_cmpuint(json_array_get_length(v), ==, n_rounds);
	g_assert_cmpuint(json_array_get_length(round), ==, n_rounds);
	g_assert_cmpuint(json_array_get_length(json_object_get_array_member(runs, "system_cpu_s_per_mb")), ==,
			 n_rounds);
	for (guint i = 0; i < n_rounds; i++) {
		double x = json_array_get_double_element(v, i);

		g_assert_cmpint(json_array_get_int_element(round, i), ==, i);
		lo = MIN(lo, x);
		hi = MAX(hi, x);
	}
	g_assert_cmpfloat(json_object_get_double_member(m, "min"), ==, lo);
	g_assert_cmpfloat(json_object_get_double_member(m, "max"), ==, hi);
	g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(o, "system_cpu_s_per_mb"), "n"),
			==, n_rounds);
}

/* A round trip's echoes pooled over the rounds: a run per round, its counts
 * adding up to the result's, the percentiles over all echoes between the
 * runs' own. */
static void
check_rtt_runs(JsonObject *o, guint n_rounds)
{
	JsonObject *runs = json_object_get_object_member(o, "runs");
	JsonArray *round = json_object_get_array_member(runs, "round");
	JsonArray *sent = json_object_get_array_member(runs, "sent");
	JsonArray *p50 = json_object_get_array_member(runs, "p50_ms");
	JsonObject *m = json_object_get_object_member(o, "rtt_ms");
	double lo = G_MAXDOUBLE, hi = 0;
	gint64 total = 0;

	g_assert_cmpint(json_object_get_int_member(o, "reps"), ==, n_rounds);
	g_assert_cmpuint(json_array_get_length(round), ==, n_rounds);
	g_assert_cmpuint(json_array_get_length(sent), ==, n_rounds);
	g_assert_cmpuint(json_array_get_length(p50), ==, n_rounds);
	for (guint i = 0; i < n_rounds; i++) {
		g_assert_cmpint(json_array_get_int_element(round, i), ==, i);
		g_assert_cmpint(json_array_get_int_element(sent, i), >, 0);
		total += json_array_get_int_element(sent, i);
		lo = MIN(lo, json_array_get_double_element(p50, i));
		hi = MAX(hi, json_array_get_double_element(p50, i));
	}
	g_assert_cmpint(json_object_get_int_member(o, "sent"), ==, total);
	/* Every round's echoes count: a loopback loses none. */
	g_assert_cmpint(json_object_get_int_member(o, "received"), ==, total);
	g_assert_cmpint(json_object_get_int_member(m, "n"), ==, total);
	g_assert_cmpfloat(json_object_get_double_member(m, "p50"), >=, lo);
	g_assert_cmpfloat(json_object_get_double_member(m, "p50"), <=, hi);
}

/*
 * --rounds 3 over two loopback paths: the rounds run in bench_round_order()'s order,
 * each throughput test pools one run per round into one result, the other
 * tests run once, --setup runs before every opening of its path, and the
 * env names the rounds' order. A failing --setup fails that path's opening
 * and the run, with the command in the error.
 */
static void
test_loopback_rounds(void)
{
	g_autofree char *dir = g_dir_make_tmp("bench-rounds-XXXXXX", NULL);
	g_autofree char *out = g_build_filename(dir, "out.json", NULL);
	g_autofree char *log = g_build_filename(dir, "setup.log", NULL);
	g_autofree char *setup = g_strdup_printf("b=echo opened >>'%s'", log);
	const char *args[] = {"--path", "a=127.0.0.1", "--path", "b=127.0.0.1", "--rounds", "3", "--quick",
			      "--reps", "1", "--secs", "2", "--tests", "tcp_down,udp_rtt_64_10hz",
			      "--setup", setup, "--json", out, NULL};
	const char *bad[] = {"--path", "a=127.0.0.1", "--path", "b=127.0.0.1", "--rounds", "2",
			     "--reps", "1", "--secs", "2", "--tests", "tcp_down",
			     "--setup", "b=exit 3", "--json", out, NULL};
	g_autofree char *table = bench_run("127.0.0.1", args), *text = NULL;
	g_autofree char *table2 = NULL;
	g_autoptr(JsonNode) root = NULL, root2 = NULL;
	JsonObject *env;
	JsonArray *a, *order;
	int status;

	g_assert_nonnull(strstr(table, "tcp_down"));
	root = parse_file(out);
	env = json_object_get_object_member(json_node_get_object(root), "env");
	g_assert_cmpint(json_object_get_int_member(env, "rounds"), ==, 3);
	g_assert_cmpuint(json_array_get_length(json_object_get_array_member(env, "paths")), ==, 2);
	order = json_object_get_array_member(env, "round_order");
	g_assert_cmpuint(json_array_get_length(order), ==, 3);
	for (guint r = 0; r < 3; r++) {
		JsonArray *o = json_array_get_array_element(order, r);
		const char *names[] = {"a", "b"};
		guint want[2];

		bench_round_order(2, r, want);
		g_assert_cmpuint(json_array_get_length(o), ==, 2);
		g_assert_cmpstr(json_array_get_string_element(o, 0), ==, names[want[0]]);
		g_assert_cmpstr(json_array_get_string_element(o, 1), ==, names[want[1]]);
	}
	/* Round 3 runs round 1's order backwards. */
	g_assert_cmpstr(json_array_get_string_element(json_array_get_array_element(order, 2), 0), ==, "b");
	a = json_object_get_array_member(json_node_get_object(root), "results");
	g_assert_cmpuint(json_array_get_length(a), ==, 4);
	for (const char *p = "a"; p; p = g_str_equal(p, "a") ? "b" : NULL) {
		g_assert_cmpuint(results_of(a, p, "tcp_down"), ==, 1);
		g_assert_cmpuint(results_of(a, p, "udp_rtt_64_10hz"), ==, 1);
		check_runs(result_of(a, p, "tcp_down"), 3);
		check_rtt_runs(result_of(a, p, "udp_rtt_64_10hz"), 3);
	}
	g_assert_true(g_file_get_contents(log, &text, NULL, NULL));
	g_assert_cmpstr(text, ==, "opened\nopened\nopened\n");

	table2 = bench_run_status("127.0.0.1", bad, &status);
	g_assert_false(g_spawn_check_wait_status(status, NULL));
	g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	g_assert_nonnull(strstr(table2, "error: --setup b=exit 3"));
	root2 = parse_file(out);
	a = json_object_get_array_member(json_node_get_object(root2), "results");
	g_assert_cmpuint(results_of(a, "b", "open"), ==, 1);
	g_assert_cmpuint(results_of(a, "b", "tcp_down"), ==, 0);
	for (guint i = 0; i < json_array_get_length(a); i++) {
		JsonObject *o = json_array_get_object_element(a, i);

		if (g_str_equal(json_object_get_string_member(o, "test"), "open"))
			g_assert_nonnull(strstr(json_object_get_string_member(o, "error"), "--setup b=exit 3"));
	}
	check_runs(result_of(a, "a", "tcp_down"), 2);
	g_remove(out);
	g_remove(log);
	g_rmdir(dir);
}

/* Exit status 2 and a message naming the option, before any path is opened. */
static void
check_refused(const char *const *args, const char *message)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autofree char *err = NULL;
	g_autoptr(GError) error = NULL;
	int status;

	g_ptr_array_add(argv, (gpointer)NCM_BENCH_EXE);
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(argv, (gpointer)*a);
	g_ptr_array_add(argv, NULL);
	g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
				   NULL, &err, &status, &error));
	g_assert_no_error(error);
	g_assert_true(WIFEXITED(status));
	g_assert_cmpint(WEXITSTATUS(status), ==, 2);
	g_assert_nonnull(strstr(err, message));
}

static void
test_rounds_options(void)
{
	const char *zero[] = {"--path", "a=127.0.0.1", "--rounds", "0", NULL};
	const char *unnamed[] = {"--path", "a=127.0.0.1", "--setup", "b=true", NULL};
	const char *bare[] = {"--path", "a=127.0.0.1", "--setup", "a", NULL};
	const char *multi[] = {"--path", "m=127.0.0.1+127.0.0.1", "--rounds", "2", NULL};

	check_refused(zero, "--rounds must be 1 or more");
	check_refused(unnamed, "--setup b=true: expected NAME=COMMAND, NAME one of the --path names");
	check_refused(bare, "--setup a: expected");
	check_refused(multi, "--rounds: multi paths");
}

/*
 * A multi path of three loopback "devices", streaming at once: one result
 * per test for the group, its aggregate the sum of the devices' figures
 * (one repetition), the per-device summary ordered, fairness in (0, 1],
 * the whole system's CPU per MB; its env lists the three members.
 */
static void
test_loopback_multi(void)
{
	g_autofree char *dir = g_dir_make_tmp("bench-multi-XXXXXX", NULL);
	g_autofree char *out = g_build_filename(dir, "out.json", NULL);
	const char *args[] = {"--path", "lo=127.0.0.1+127.0.0.1+127.0.0.1", "--quick", "--secs", "2",
			      "--tests", "tcp_down,tcp_up", "--json", out, NULL};
	g_autofree char *table = bench_run("127.0.0.1", args);
	g_autoptr(JsonNode) root = NULL;
	JsonObject *env_path;
	JsonArray *a;

	g_assert_nonnull(strstr(table, "over 3: min"));
	root = parse_file(out);
	a = json_object_get_array_member(json_node_get_object(root), "results");
	g_assert_cmpuint(json_array_get_length(a), ==, 2);
	for (int t = 0; t < 2; t++) {
		JsonObject *o = result_object(a, t ? "tcp_up" : "tcp_down");
		JsonObject *pd = json_object_get_object_member(o, "per_device_mbit_s");
		JsonArray *dev = json_object_get_array_member(o, "device_mbit_s");
		double sum = 0, fair = json_object_get_double_member(o, "fairness");

		g_assert_cmpint(json_object_get_int_member(o, "devices"), ==, 3);
		g_assert_cmpuint(json_array_get_length(dev), ==, 3);
		for (guint i = 0; i < 3; i++) {
			g_assert_cmpfloat(json_array_get_double_element(dev, i), >, 0);
			sum += json_array_get_double_element(dev, i);
		}
		g_assert_cmpfloat_with_epsilon(json_object_get_double_member(
			json_object_get_object_member(o, "mbit_s"), "median"), sum, sum * 1e-6);
		g_assert_cmpfloat(json_object_get_double_member(pd, "min"), <=, json_object_get_double_member(pd, "median"));
		g_assert_cmpfloat(json_object_get_double_member(pd, "median"), <=, json_object_get_double_member(pd, "max"));
		g_assert_cmpfloat_with_epsilon(fair, json_object_get_double_member(pd, "min") /
					       json_object_get_double_member(pd, "max"), 1e-6);
		g_assert_cmpfloat(fair, >, 0);
		g_assert_cmpfloat(fair, <=, 1);
		check_system_cpu(a, t ? "tcp_up" : "tcp_down");
		/* Kernel sockets: no libusb event thread to weigh, no lwIP lock. */
		g_assert_false(json_object_has_member(o, "event_thread_cpu_pct"));
		g_assert_false(json_object_has_member(o, "lwip_core_lock_waiting"));
	}
	env_path = json_array_get_object_element(json_object_get_array_member(
		json_object_get_object_member(json_node_get_object(root), "env"), "paths"), 0);
	g_assert_cmpint(json_object_get_int_member(env_path, "devices"), ==, 3);
	g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(
		json_object_get_array_member(env_path, "members"), 2), "name"), ==, "lo#2");
	g_remove(out);
	g_rmdir(dir);
}

#ifdef NCM_BENCH_RAW
#define RAW_TAP "nbraw0"

static gboolean
ip(const char *args)
{
	g_autofree char *cmd = g_strconcat("ip ", args, NULL);
	int status;

	return g_spawn_command_line_sync(cmd, NULL, NULL, &status, NULL) &&
	       g_spawn_check_wait_status(status, NULL);
}

/*
 * This thread, and the processes it starts, into a network namespace of
 * their own with lo up and a TAP whose kernel side (192.168.79.1) plays
 * the gadget's netdev. NULL, or why not.
 */
static const char *
raw_network(void)
{
	static gboolean done;

	if (done)
		return NULL;
	if (geteuid() != 0)
		return "needs root for a network namespace and a TAP device";
	if (unshare(CLONE_NEWNET) < 0)
		return "unshare(CLONE_NEWNET) failed";
	if (!ip("link set lo up") || !ip("tuntap add dev " RAW_TAP " mode tap") ||
	    !ip("addr add 192.168.79.1/24 dev " RAW_TAP) || !ip("link set " RAW_TAP " up"))
		return "ip(8) could not set up a TAP device";
	done = TRUE;
	return NULL;
}

/* A TAP test without its network (@why) is skipped, or fails under CI
 * where it must run; either way its @dir goes. */
static gboolean
tap_network_ready(const char *why, const char *dir)
{
	if (!why)
		return TRUE;
	if (g_strcmp0(g_getenv("CI"), "true") == 0)
		g_test_fail_printf("CI=true but no TAP test network: %s", why);
	else
		g_test_skip(why);
	g_rmdir(dir);
	return FALSE;
}

/* A TCP test's fraction: its Mbit/s over the raw test's median, which the JSON names. */
static void
check_fraction(JsonArray *a, const char *test, const char *raw_test)
{
	JsonObject *t = result_of(a, "lo", test);
	JsonObject *m = json_object_get_object_member(t, "mbit_s");
	JsonObject *f = json_object_get_object_member(t, "ceiling_fraction");
	double c = json_object_get_double_member(json_object_get_object_member(result_of(a, "raw", raw_test),
									       "mbit_s"), "median");

	g_assert_nonnull(f);
	g_assert_cmpfloat(json_object_get_double_member(t, "ceiling_mbit_s"), ==, c);
	for (const char *const *k = (const char *const[]){"median", "min", "max", NULL}; *k; k++)
		g_assert_cmpfloat_with_epsilon(json_object_get_double_member(f, *k),
					       json_object_get_double_member(m, *k) / c, 1e-6);
}

/*
 * The raw path with a TAP in place of the USB gadget: the server's flood
 * reaches the raw link's count past lwIP, the frames it sends the TAP's
 * kernel side, which counts them, and each TCP test of the loopback path
 * gets its fraction of that ceiling. 5 Mbit/s is far above what the
 * control connections alone would carry (a few frames a second). 3 s a
 * test: the CPU per MB counts after a run's first second, and under TSan
 * a 2 s raw_bidir once had no sink report in the second left (session 28).
 */
static void
test_raw_over_tap(void)
{
	const char *why = raw_network();
	g_autofree char *dir = g_dir_make_tmp("bench-raw-XXXXXX", NULL);
	g_autofree char *out = g_build_filename(dir, "out.json", NULL);
	g_autofree char *svg = g_build_filename(dir, "out.svg", NULL);
	const char *args[] = {"--path", "lo=127.0.0.1", "--path",
			      "raw=192.168.79.1,ipv4=192.168.79.2/24,tap=" RAW_TAP, "--quick", "--secs", "3",
			      "--tests", "tcp_down,tcp_up,tcp_bidir,raw", "--json", out, "--plot", svg, NULL};
	g_autofree char *table = NULL, *plot = NULL;
	g_auto(GStrv) raw_colour = NULL;
	g_autoptr(JsonNode) root = NULL;
	JsonArray *a;

	if (!tap_network_ready(why, dir))
		return;
	table = bench_run(NULL, args);
	root = parse_file(out);
	a = json_object_get_array_member(json_node_get_object(root), "results");
	/* The raw path runs its own tests only. */
	g_assert_cmpuint(json_array_get_length(a), ==, 6);
	for (const char *const *t = (const char *const[]){"raw_down", "raw_up", "raw_bidir", NULL}; *t; t++) {
		JsonObject *o = result_of(a, "raw", *t);

		g_assert_cmpfloat(json_object_get_double_member(json_object_get_object_member(o, "mbit_s"),
								"median"), >, 5);
		g_assert_true(json_object_has_member(o, "system_cpu_s_per_mb"));
		g_assert_false(json_object_has_member(o, "ceiling_fraction"));
	}
	check_fraction(a, "tcp_down", "raw_down");
	check_fraction(a, "tcp_up", "raw_up");
	check_fraction(a, "tcp_bidir", "raw_bidir");
	g_assert_nonnull(strstr(table, "tcp_bidir of ceiling"));
	/* The raw path's colour (the second path's): its legend, and in each TCP test's
	 * group a bar of the ceiling for that direction, Mbit/s and CPU per MB. */
	g_assert_true(g_file_get_contents(svg, &plot, NULL, NULL));
	raw_colour = g_strsplit(plot, "fill=\"#d62728\"", -1);
	g_assert_cmpuint(g_strv_length(raw_colour) - 1, ==, 1 + 2 * 3);
	g_remove(out);
	g_remove(svg);
	g_rmdir(dir);
}

/*
 * lwIP over the TAP as a multi path of one device: its lwIP stack's core
 * lock is weighed (threads waiting on it, on average), and there is no
 * libusb event thread.
 */
static void
test_lwip_multi_over_tap(void)
{
	const char *why = raw_network();
	g_autofree char *dir = g_dir_make_tmp("bench-lwip-XXXXXX", NULL);
	g_autofree char *out = g_build_filename(dir, "out.json", NULL);
	const char *args[] = {"--multi", "--path", "lwip=192.168.79.1,ipv4=192.168.79.2/24,tap=" RAW_TAP,
			      "--quick", "--secs", "2", "--tests", "tcp_down,tcp_up", "--json", out, NULL};
	g_autofree char *table = NULL;
	g_autoptr(JsonNode) root = NULL;
	JsonArray *a;

	if (!tap_network_ready(why, dir))
		return;
	table = bench_run(NULL, args);
	root = parse_file(out);
	a = json_object_get_array_member(json_node_get_object(root), "results");
	g_assert_cmpuint(json_array_get_length(a), ==, 2);
	for (int t = 0; t < 2; t++) {
		JsonObject *o = result_of(a, "lwip", t ? "tcp_up" : "tcp_down");
		JsonObject *w = json_object_get_object_member(o, "lwip_core_lock_waiting");

		g_assert_cmpint(json_object_get_int_member(o, "devices"), ==, 1);
		g_assert_nonnull(w);
		/* An average count of waiting threads: at least 0, at most the
		 * threads this process has (a handful), never a time in µs. */
		g_assert_cmpfloat(json_object_get_double_member(w, "min"), >=, 0);
		g_assert_cmpfloat(json_object_get_double_member(w, "max"), <, 16);
		g_assert_false(json_object_has_member(o, "event_thread_cpu_pct"));
	}
	g_remove(out);
	g_rmdir(dir);
}
#endif
#endif

int
main(int argc, char **argv)
{
	/* As test-lwip-tap.c, for the ncm-bench processes this starts (they
	 * inherit the environment): GLib < 2.76 recycles GSlice blocks between
	 * threads under its own uninstrumented lock, and under ThreadSanitizer
	 * each of a multi path's stream threads allocating one would be a
	 * report. GLib reads G_SLICE before main(), hence the re-exec. */
	if (g_getenv("G_SLICE") == NULL) {
		g_setenv("G_SLICE", "always-malloc", TRUE);
		execv("/proc/self/exe", argv);
	}
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bench-json/shape", test_shape_and_escaping);
#ifdef NCM_BENCH_EXE
	g_test_add_func("/bench-json/loopback-run", test_loopback_run);
	g_test_add_func("/bench-json/loopback-multi", test_loopback_multi);
	g_test_add_func("/bench-json/loopback-rounds", test_loopback_rounds);
	g_test_add_func("/bench-json/rounds-options", test_rounds_options);
#endif
#ifdef NCM_BENCH_RAW
	/* Last: it moves the test into a network namespace of its own. */
	g_test_add_func("/bench-json/raw-over-tap", test_raw_over_tap);
	g_test_add_func("/bench-json/lwip-multi-over-tap", test_lwip_multi_over_tap);
#endif
	return g_test_run();
}
