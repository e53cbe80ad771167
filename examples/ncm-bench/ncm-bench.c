/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench: the same workload over several network paths (cdc_ncm, ncm-tun, lwIP) side by side. */
#include <libusb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <ncm-version.h>

#include "ncm-bench.h"
#include "ncm-bench-ceiling.h"
#include "ncm-bench-order.h"
#include "ncm-bench-proto.h"
#include "ncm-bench-tests.h"

static gboolean opt_server;
static gchar *opt_bind;
static gint opt_port = BENCH_DEFAULT_PORT;
static gchar **opt_paths;
static gboolean opt_multi;
static gboolean opt_quick;
static gchar *opt_tests;
static gint opt_reps = -1;
static gint opt_secs = -1;
static gint opt_soak_secs = -1;
static gdouble opt_pace;
static gdouble opt_udp_max = 1000;
static gchar *opt_json;
static gchar *opt_env_json;
static gchar *opt_plot;
static gint opt_rounds = 1;
static gchar **opt_setup;

/*
 * What the output is made of. The main thread fills it; the watchdog
 * thread writes it out when a test hangs.
 */
static struct {
	GMutex lock;            /* guards the fields below and the watchdog's deadline */
	BenchOptions opt;
	GPtrArray *results;     /* BenchResult */
	GPtrArray *names;       /* the paths' names, in order: the table's columns */
	GString *paths;         /* the env's "paths" array members */
	BenchTransport *current; /* the path being opened, measured or closed, or NULL */
	gboolean current_in_env;
	guint n_final;          /* results below this index are complete */
	GString *round_order;   /* the env's "round_order": each round's paths as they ran */
} run;

static const GOptionEntry entries[] = {
	{"server", 's', 0, G_OPTION_ARG_NONE, &opt_server,
	 "Serve the tests (run this on the device side)", NULL},
	{"bind", 0, 0, G_OPTION_ARG_STRING, &opt_bind, "Server: listen on this address only", "ADDR"},
	{"port", 'p', 0, G_OPTION_ARG_INT, &opt_port, "Control port (default 5288)", "P"},
	{"path", 'P', 0, G_OPTION_ARG_STRING_ARRAY, &opt_paths,
	 "A path to measure: NAME=SERVER[%IFACE] over kernel sockets (IFACE forces the interface); "
	 "ncm-tun=SERVER,ipv4=ADDR/PREFIX[,dev=SELECTOR...][,exec=PATH][,name=IFNAME][,acks=all] through an "
	 "ncm-tun that ncm-bench starts and stops (interface ncmbench0 by default; any NAME "
	 "starting with ncm-tun); lwip=SERVER,ipv4=ADDR/PREFIX[,dev=SELECTOR][,tap=IF][,acks=all] through "
	 "libncm and the in-process lwIP stack (any NAME starting with lwip); "
	 "ncm-proxy=SERVER,ipv4=ADDR/PREFIX[,dev=SELECTOR...][,exec=PATH][,lport=PORT][,acks=all] "
	 "through an ncm-proxy that ncm-bench starts: loopback sockets to its -L forward (TCP) and "
	 "its SOCKS5 UDP ASSOCIATE (any NAME starting with ncm-proxy); or raw=SERVER,"
	 "ipv4=ADDR/PREFIX[,dev=SELECTOR][,tap=IF]: the usbfs ceiling, frames with no netstack "
	 "(lwIP carries only the control connections; any NAME starting with raw; runs only the "
	 "raw_ tests). acks=all turns off libncm's ACK merging. "
	 "NAME=DEV+DEV+... (each DEV what follows NAME= above, one device each) is a multi path: "
	 "its devices run tcp_down, tcp_up and tcp_bidir at once, one stream each, and report the "
	 "aggregate, the per-device min, median and max and min/max fairness; lwip devices share one "
	 "context, ncm-tun ones one process (each DEV with its own dev=, name=PATTERN%d). "
	 "Repeatable; the paths run in the order given", "NAME=ADDR[%IF]"},
	{"multi", 'm', 0, G_OPTION_ARG_NONE, &opt_multi,
	 "Run every path as a multi path, also one of a single device: a scaling series then "
	 "starts at 1 with the same figures (per-device summary, fairness, event thread CPU)", NULL},
	{"quick", 'q', 0, G_OPTION_ARG_NONE, &opt_quick,
	 "A short run: 1 repetition, 3 s per throughput run, 5 s soak", NULL},
	{"tests", 't', 0, G_OPTION_ARG_STRING, &opt_tests,
	 "Tests or prefixes (listed below), separated by commas or spaces; default all", "LIST"},
	{"reps", 'r', 0, G_OPTION_ARG_INT, &opt_reps,
	 "Repetitions per throughput test and round (default 3)", "N"},
	{"rounds", 0, 0, G_OPTION_ARG_INT, &opt_rounds,
	 "Run all paths N times and pool each throughput test's runs: a path's figures then come "
	 "from all through the run, not from one stretch of it. Round 1 runs the paths as given, "
	 "the next ones in orders where, over as many rounds as paths (twice as many for an odd "
	 "count), each path runs once in each place and right after each other path equally "
	 "often. The round trips pool their echoes over the rounds too; the other tests run in "
	 "the first round only. Not with multi paths (default 1)",
	 "N"},
	{"setup", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_setup,
	 "Before each opening of path NAME, run CMD with /bin/sh -c and wait for it; the path "
	 "fails that round if CMD does. For a kernel path over the function a libncm path "
	 "takes: libncm gives the function back to cdc_ncm on close, whose new netdev needs its "
	 "address again unless a network manager gives it. Repeatable", "NAME=CMD"},
	{"secs", 0, 0, G_OPTION_ARG_INT, &opt_secs, "Seconds per throughput run (default 10)", "S"},
	{"soak-secs", 0, 0, G_OPTION_ARG_INT, &opt_soak_secs, "Length of the soak (default 30)", "S"},
	{"pace", 0, 0, G_OPTION_ARG_DOUBLE, &opt_pace,
	 "Pacing rate for libncm paths in Mbit/s, a plain number (recorded in the JSON; ncm-tun's "
	 "and ncm-proxy's --pace take bytes/s: 40 Mbit/s is --pace 5M there)", "RATE"},
	{"udp-max-mbit", 0, 0, G_OPTION_ARG_DOUBLE, &opt_udp_max,
	 "Cap of the UDP auto-rate probe (default 1000)", "RATE"},
	{"json", 'j', 0, G_OPTION_ARG_FILENAME, &opt_json, "Write results as JSON", "FILE"},
	{"env-json", 0, 0, G_OPTION_ARG_FILENAME, &opt_env_json,
	 "Merge this JSON object's fields into the output's env", "FILE"},
	{"plot", 0, 0, G_OPTION_ARG_FILENAME, &opt_plot, "Write throughput over time as SVG", "FILE.svg"},
	G_OPTION_ENTRY_NULL,
};

void
bench_progress(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ncm-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Seconds a test is meant to take, for its deadline. */
static double
planned_secs(const BenchOptions *o, const char *test)
{
	if (g_str_has_prefix(test, "tcp_") || g_str_has_prefix(test, "raw_"))
		return o->reps * o->secs;
	if (g_str_equal(test, "bulk_stalls"))
		return 2.0 * o->secs;
	if (g_str_has_prefix(test, "burst_"))
		return 2.0 * o->burst_tries;
	if (g_str_has_prefix(test, "udp_rtt"))
		return o->rtt_secs + 1;
	if (g_str_equal(test, "rtt_under_up"))
		return o->rtt_secs + 3;
	if (g_str_equal(test, "soak"))
		return o->soak_secs + 1;
	if (g_str_equal(test, "udp_autorate"))
		return o->quick ? 5 : 10;
	return o->secs;
}

/* Holds the lock: everything added before is final from now on. */
static BenchResult *
result_add_locked(const char *path, const char *test)
{
	BenchResult *r = bench_result_new(path, test);

	run.n_final = run.results->len;
	g_ptr_array_add(run.results, r);
	return r;
}

static const BenchResult *find_result(GPtrArray *results, const char *test, const char *path);

BenchResult *
bench_result_add(BenchCtx *ctx, const char *test)
{
	BenchResult *r;

	ncm_mutex_lock(&run.lock);
	/* A later round extends the first round's result, which stays in the output meanwhile. */
	r = ctx->opt->round > 0 ? (BenchResult *)find_result(run.results, test, ctx->transport->name)
				: NULL;
	if (r)
		run.n_final = run.results->len;
	else
		r = result_add_locked(ctx->transport->name, test);
	bench_watchdog_arm(r->path, test, planned_secs(ctx->opt, test));
	ncm_mutex_unlock(&run.lock);
	return r;
}

void
bench_results_lock(void)
{
	ncm_mutex_lock(&run.lock);
}

void
bench_results_unlock(void)
{
	ncm_mutex_unlock(&run.lock);
}

void
bench_result_fail(BenchResult *r, const GError *error)
{
	const char *msg = error ? error->message : "failed";

	bench_json_str(r->json, "error", msg);
	g_free(r->cell);
	r->cell = g_strdup_printf("error: %s", msg);
	bench_progress("%s: %s: %s", r->path, r->test, msg);
}

/* The tests a later round runs again: the ones that pool their runs (the
 * round trips their echoes). */
static gboolean
pooled_test(const char *test)
{
	return g_str_has_prefix(test, "tcp_") || g_str_has_prefix(test, "raw_") ||
	       g_str_has_prefix(test, "udp_rtt_") || g_str_equal(test, "rtt_under_up");
}

gboolean
bench_test_selected(const BenchOptions *opt, const char *test)
{
	if (opt->round > 0 && !pooled_test(test))
		return FALSE;
	g_warn_if_fail(bench_tests_known(test));
	return !opt->tests || bench_tests_match(opt->tests, test);
}

static BenchTransport *path_parse_one(const char *name, const char *spec, GError **error);

/*
 * NAME=DEV+DEV+...: a multi path, each DEV a path spec of its own, all
 * measured at once. cdc_ncm-like and lwip paths open one transport per
 * device (lwip ones share one context); ncm-tun runs one process for all.
 */
static BenchTransport *
group_parse(const char *name, const char *devs, GError **error)
{
	g_auto(GStrv) spec = g_strsplit(devs, "+", -1);
	g_autoptr(GPtrArray) members = g_ptr_array_new_with_free_func((GDestroyNotify)bench_transport_free);
	BenchTransport *owner = NULL;

	if (g_str_has_prefix(name, "ncm-proxy") || g_str_has_prefix(name, "raw")) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--path %s: a multi path (DEV+DEV...) is cdc_ncm-like, ncm-tun or lwip", name);
		return NULL;
	}
	for (guint i = 0; spec[i]; i++) {
		if (!*spec[i]) {
			g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
				    "--path %s: device %u of the multi path is empty", name, i);
			return NULL;
		}
	}
	if (g_str_has_prefix(name, "ncm-tun")) {
		owner = bench_transport_tun_group_new(name, spec, (guint16)opt_port, opt_pace, members,
						      error);
		if (!owner)
			return NULL;
	} else {
		for (guint i = 0; spec[i]; i++) {
			g_autofree char *one = g_strdup_printf("%s#%u", name, i);
			BenchTransport *t = path_parse_one(one, spec[i], error);

			if (!t)
				return NULL;
			g_ptr_array_add(members, t);
		}
	}
	return bench_group_new(name, g_steal_pointer(&members), owner);
}

/* NAME=SERVER[%IFACE], ncm-tun...=SPEC, ncm-proxy...=SPEC, lwip...=SPEC or raw...=SPEC, or DEV+DEV... of them. */
static BenchTransport *
path_parse(const char *spec, GError **error)
{
	g_auto(GStrv) kv = g_strsplit(spec, "=", 2);

	if (!kv[0] || !kv[1] || !*kv[0]) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--path %s: expected NAME=ADDRESS[%%IFACE]", spec);
		return NULL;
	}
	if (opt_multi || strchr(kv[1], '+'))
		return group_parse(kv[0], kv[1], error);
	return path_parse_one(kv[0], kv[1], error);
}

/* One device: what followed NAME= in --path. */
static BenchTransport *
path_parse_one(const char *name, const char *spec, GError **error)
{
	const char *kv[] = {name, spec};
	g_autofree char *addr = NULL;
	g_autoptr(GInetAddress) server = NULL;
	char *pct;

	if (g_str_has_prefix(kv[0], "ncm-tun"))
		return bench_transport_tun_new(kv[0], kv[1], (guint16)opt_port, opt_pace, error);
	if (g_str_has_prefix(kv[0], "ncm-proxy"))
		return bench_transport_proxy_new(kv[0], kv[1], (guint16)opt_port, opt_pace, error);
	if (g_str_has_prefix(kv[0], "lwip") || g_str_has_prefix(kv[0], "raw"))
		return bench_transport_lwip_new(kv[0], kv[1], (guint16)opt_port, opt_pace,
						g_str_has_prefix(kv[0], "raw"), error);
	addr = g_strdup(kv[1]);
	pct = strrchr(addr, '%');
	if (pct)
		*pct++ = '\0';
	server = g_inet_address_new_from_string(addr);
	if (!server) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--path %s: %s is not an IP address", spec, addr);
		return NULL;
	}
	return bench_transport_kernel_new(kv[0], server, (guint16)opt_port, pct && *pct ? pct : NULL);
}

/* --tests, checked by main(); NULL = all. */
static gchar **tests_wanted;

static void
options_fill(BenchOptions *o)
{
	memset(o, 0, sizeof(*o));
	o->quick = opt_quick;
	o->reps = opt_reps > 0 ? opt_reps : opt_quick ? 1 : 3;
	o->secs = opt_secs > 0 ? opt_secs : opt_quick ? 3 : 10;
	o->soak_secs = opt_soak_secs > 0 ? opt_soak_secs : opt_quick ? 5 : 30;
	o->rtt_secs = opt_quick ? 2 : 10;
	o->burst_tries = opt_quick ? 2 : 5;
	o->pace_mbit = opt_pace;
	o->udp_max_mbit = opt_udp_max > 0 ? opt_udp_max : 1000;
	o->tests = tests_wanted;
	o->rounds = MAX(opt_rounds, 1);
}

void
bench_env_path(GString *paths, BenchTransport *t)
{
	g_autoptr(GString) o = g_string_new(NULL);
	g_autofree char *server = t->server ? g_inet_address_to_string(t->server) : NULL;

	bench_json_str(o, "name", t->name);
	if (server)
		bench_json_str(o, "server", server);
	if (t->iface)
		bench_json_str(o, "iface", t->iface);
	if (t->mtu)
		bench_json_num(o, "mtu", t->mtu);
	if (t->ops->env && t->ops->env(t))
		g_string_append(o, t->ops->env(t));
	g_string_append_printf(paths, "%s{%s}", paths->len ? "," : "", o->str + 1);
}

static GString *
env_json(const BenchOptions *o, const GString *paths)
{
	GString *e = g_string_new(NULL);
	g_autofree char *glib = g_strdup_printf("%u.%u.%u", glib_major_version, glib_minor_version,
						glib_micro_version);
	g_autofree char *usb = NULL;
	const struct libusb_version *lv = libusb_get_version();
	struct utsname u;

	if (uname(&u) == 0) {
		g_autofree char *k = g_strdup_printf("%s %s %s", u.sysname, u.release, u.machine);

		bench_json_str(e, "kernel", k);
		bench_json_str(e, "host", u.nodename);
	}
	usb = g_strdup_printf("%u.%u.%u", lv->major, lv->minor, lv->micro);
	bench_json_str(e, "libusb", usb);
	bench_json_str(e, "glib", glib);
	bench_json_str(e, "libncm", G_STRINGIFY(NCM_MAJOR_VERSION) "." G_STRINGIFY(NCM_MINOR_VERSION)
			    "." G_STRINGIFY(NCM_MICRO_VERSION));
#ifdef NCM_BENCH_LWIP_VERSION
	bench_json_str(e, "lwip", NCM_BENCH_LWIP_VERSION);
#endif
	bench_json_num(e, "quick", o->quick);
	bench_json_num(e, "reps", o->reps);
	bench_json_num(e, "rounds", o->rounds);
	bench_json_num(e, "secs", o->secs);
	bench_json_num(e, "pace_mbit_s", o->pace_mbit);
	/* What system_cpu_s_per_mb adds up: every online CPU, in ticks of this size. */
	bench_json_num(e, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
	bench_json_num(e, "user_hz", (double)sysconf(_SC_CLK_TCK));
	g_string_append_printf(e, ",\"paths\":[%s]", paths->str);
	if (run.round_order)
		g_string_append_printf(e, ",\"round_order\":[%s]", run.round_order->str);
	return e;
}

static const BenchResult *
find_result(GPtrArray *results, const char *test, const char *path)
{
	for (guint j = 0; j < results->len; j++) {
		BenchResult *r = results->pdata[j];

		if (g_str_equal(r->test, test) && g_str_equal(r->path, path))
			return r;
	}
	return NULL;
}

/* " 0.93x": @v against the first path's @ref; nothing for the first path itself or without both. */
static char *
ratio_text(const BenchResult *r, const BenchResult *first, const BenchSummary *v,
	   const BenchSummary *ref)
{
	if (r == first || !first || v->n == 0 || ref->n == 0 || ref->median <= 0)
		return g_strdup("");
	return g_strdup_printf(" %.2fx", v->median / ref->median);
}

/* A test's rows: its results, then for throughput tests CPU per MB and the fraction of the ceiling. */
typedef enum {
	ROW_RESULT,
	ROW_CPU,
	ROW_CEILING,
	N_ROWS,
} RowKind;

static const char *const row_suffix[N_ROWS] = {"", " cpu s/MB", " of ceiling"};

/*
 * Each path's cell in one of a test's rows. A throughput test's own row
 * and its CPU row add the ratio to the first path.
 */
static char *
table_cell(GPtrArray *results, GPtrArray *names, const char *test, guint p, RowKind kind)
{
	const BenchResult *r = find_result(results, test, names->pdata[p]);
	const BenchResult *first = find_result(results, test, names->pdata[0]);
	g_autofree char *ratio = NULL;

	if (!r)
		return g_strdup("-");
	if (!r->cell)
		return g_strdup("?");
	switch (kind) {
	case ROW_RESULT:
		ratio = ratio_text(r, first, &r->mbit, first ? &first->mbit : NULL);
		return g_strconcat(r->cell, ratio, NULL);
	case ROW_CPU:
		if (r->sys_cpu.n == 0)
			return g_strdup("-");
		ratio = ratio_text(r, first, &r->sys_cpu, first ? &first->sys_cpu : NULL);
		return g_strdup_printf("%#.3g (%#.3g-%#.3g)%s", r->sys_cpu.median, r->sys_cpu.min,
				       r->sys_cpu.max, ratio);
	default:
		if (r->ceiling.n == 0)
			return g_strdup("-");
		return g_strdup_printf("%.2f (%.2f-%.2f)", r->ceiling.median, r->ceiling.min,
				       r->ceiling.max);
	}
}

/* Whether some path's result of @test has what row @kind shows. */
static gboolean
row_wanted(GPtrArray *results, GPtrArray *names, const char *test, RowKind kind)
{
	for (guint p = 0; p < names->len; p++) {
		const BenchResult *r = find_result(results, test, names->pdata[p]);

		if (r && (kind == ROW_RESULT || (kind == ROW_CPU && r->sys_cpu.n > 0) ||
			  (kind == ROW_CEILING && r->ceiling.n > 0)))
			return TRUE;
	}
	return FALSE;
}

/* The rows: one per test, and more for throughput tests (see RowKind). */
static GPtrArray *
table_rows(GPtrArray *results, GPtrArray *names, gboolean *ret_ratios, gboolean *ret_ceiling)
{
	GPtrArray *rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	g_autoptr(GPtrArray) tests = g_ptr_array_new();

	*ret_ratios = *ret_ceiling = FALSE;
	for (guint i = 0; i < results->len; i++) {
		const BenchResult *r = results->pdata[i];

		if (!g_ptr_array_find_with_equal_func(tests, r->test, g_str_equal, NULL))
			g_ptr_array_add(tests, (gpointer)r->test);
		*ret_ratios |= r->mbit.n > 0;
	}
	for (guint i = 0; i < tests->len; i++) {
		for (RowKind k = ROW_RESULT; k < N_ROWS; k++) {
			char **row;

			if (!row_wanted(results, names, tests->pdata[i], k))
				continue;
			*ret_ceiling |= k == ROW_CEILING;
			row = g_new0(char *, names->len + 2);
			row[0] = g_strconcat(tests->pdata[i], row_suffix[k], NULL);
			for (guint p = 0; p < names->len; p++)
				row[p + 1] = table_cell(results, names, tests->pdata[i], p, k);
			g_ptr_array_add(rows, row);
		}
	}
	return rows;
}

/* One row per test, one column per path, each column as wide as its widest cell. */
static void
print_table(GPtrArray *results, GPtrArray *names)
{
	gboolean ratios, ceiling;
	g_autoptr(GPtrArray) rows = table_rows(results, names, &ratios, &ceiling);
	g_autofree int *width = g_new0(int, names->len + 1);

	for (guint p = 0; p < names->len; p++) {
		width[p] = (int)strlen(names->pdata[p]);
		for (guint i = 0; i < rows->len; i++)
			width[p] = MAX(width[p], (int)strlen(((char **)rows->pdata[i])[p + 1]));
	}
	printf("%-20s", "test");
	for (guint p = 0; p < names->len; p++)
		printf(" | %-*s", width[p], (const char *)names->pdata[p]);
	printf("\n");
	for (guint i = 0; i < rows->len; i++) {
		char **row = rows->pdata[i];

		printf("%-20s", row[0]);
		for (guint p = 0; p < names->len; p++)
			printf(" | %-*s", width[p], row[p + 1]);
		printf("\n");
	}
	if (!ratios)
		return;
	if (names->len > 1)
		printf("Nx: median against %s's. ", (const char *)names->pdata[0]);
	printf("cpu s/MB: busy CPU seconds of the whole system (all CPUs, /proc/stat) per MB the "
	       "receiver confirmed, after each run's first second; median (min-max).\n");
	if (ceiling)
		printf("of ceiling: Mbit/s, median (min-max), over the raw path's median for the same "
		       "direction (raw_down, raw_up, raw_bidir: Ethernet frames with no netstack).\n");
}

static int
write_outputs(const BenchOptions *o, GPtrArray *results, GPtrArray *names, const GString *paths)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) env = env_json(o, paths);

	bench_ceiling_apply(results);
	print_table(results, names);
	if (opt_json && !bench_json_write(opt_json, env, opt_env_json, results, &error)) {
		g_printerr("ncm-bench: %s\n", error->message);
		return 1;
	}
	if (opt_plot && !bench_plot_write(opt_plot, results, &error)) {
		g_printerr("ncm-bench: %s\n", error->message);
		return 1;
	}
	return 0;
}

/* Under the lock: the path's column exists from the start, so a failed open or a hang shows in it. */
static void
name_add_locked(const char *name)
{
	if (!g_ptr_array_find_with_equal_func(run.names, name, g_str_equal, NULL))
		g_ptr_array_add(run.names, g_strdup(name));
}

/* Whether @spec (NAME=..., as --path and --setup take) names the @len bytes at @name. */
static gboolean
spec_named(const char *spec, const char *name, gsize len)
{
	return strncmp(spec, name, len) == 0 && spec[len] == '=';
}

/* --setup's command for path @name, or NULL. */
static const char *
setup_command(const char *name)
{
	gsize len = strlen(name);

	for (gchar **s = opt_setup; s && *s; s++) {
		if (spec_named(*s, name, len))
			return *s + len + 1;
	}
	return NULL;
}

/* Runs --setup's command for path @name, if any; FALSE with @error when it fails. */
static gboolean
path_setup(const char *name, GError **error)
{
	const char *cmd = setup_command(name);
	const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	int status;

	if (!cmd)
		return TRUE;
	bench_progress("%s: setup: %s", name, cmd);
	if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_CHILD_INHERITS_STDIN, NULL, NULL, NULL,
			  NULL, &status, error))
		return FALSE;
	if (!g_spawn_check_wait_status(status, error)) {
		g_prefix_error(error, "--setup %s=%s: ", name, cmd);
		return FALSE;
	}
	return TRUE;
}

/*
 * NULL when the path cannot be opened; its error is then the path's "open"
 * result (a later round's failure replaces it).
 */
static BenchTransport *
path_open(const char *spec, const char *name)
{
	g_autoptr(GError) error = NULL;
	BenchTransport *t = NULL;
	gboolean ok;

	ncm_mutex_lock(&run.lock);
	name_add_locked(name);
	/* A setup that waits for a netdev, its carrier and its address takes seconds. */
	bench_watchdog_arm(name, "setup", 60);
	ncm_mutex_unlock(&run.lock);
	ok = path_setup(name, &error);
	ncm_mutex_lock(&run.lock);
	/* ncm-tun's own start-up deadline and its stop fit in this one. */
	bench_watchdog_arm(name, "open", 10);
	ncm_mutex_unlock(&run.lock);
	if (ok) {
		bench_progress("%s: opening", name);
		t = path_parse(spec, &error);
	}
	ncm_mutex_lock(&run.lock);
	bench_watchdog_disarm();
	run.current = t;
	/* A path goes into the env once, as the first round saw it. */
	run.current_in_env = run.opt.round > 0;
	if (!t) {
		BenchResult *r = (BenchResult *)find_result(run.results, "open", name);

		if (!r)
			r = result_add_locked(name, "open");
		bench_result_fail(r, error);
		run.n_final = run.results->len;
	}
	ncm_mutex_unlock(&run.lock);
	return t;
}

static void
path_close(BenchTransport *t)
{
	ncm_mutex_lock(&run.lock);
	run.n_final = run.results->len;
	if (!run.current_in_env)
		bench_env_path(run.paths, t);
	run.current_in_env = TRUE;
	/* No abort while it is being freed: the watchdog only reports. */
	run.current = NULL;
	bench_watchdog_arm(t->name, "close", 10);
	ncm_mutex_unlock(&run.lock);
	bench_transport_free(t);
	ncm_mutex_lock(&run.lock);
	bench_watchdog_disarm();
	ncm_mutex_unlock(&run.lock);
}

/*
 * On the watchdog thread, with the lock held, while the main thread is
 * stuck: the output gets every final result plus one that names the hang.
 * The stuck test's own result may be half written, so it is left out.
 */
static void
on_hung(const char *path, const char *what, double limit_s)
{
	g_autoptr(GPtrArray) done = g_ptr_array_new();
	g_autoptr(GString) paths = g_string_new(run.paths->str);
	g_autoptr(GError) error = NULL;
	BenchResult *r = bench_result_new(path, what);

	g_set_error(&error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
		    "hung: not done after %.0f s; the watchdog stopped the run", limit_s);
	bench_result_fail(r, error);
	for (guint i = 0; i < run.n_final && i < run.results->len; i++)
		g_ptr_array_add(done, run.results->pdata[i]);
	g_ptr_array_add(done, r);
	if (run.current && !run.current_in_env)
		bench_env_path(paths, run.current);
	write_outputs(&run.opt, done, run.names, paths);
	if (run.current && run.current->ops->describe) {
		g_printerr("ncm-bench: %s: what the driver counted at the hang:\n", path);
		run.current->ops->describe(run.current, stderr);
	}
	if (run.current && run.current->ops->abort)
		run.current->ops->abort(run.current);
}

/*
 * Each path is opened just before its tests and closed after them: a
 * libncm path takes the USB function from cdc_ncm, and gives it back on
 * close, so paths over the same function can follow each other. The
 * rounds' order is bench_round_order()'s (round 1 as given).
 */
static int
run_round(gint round)
{
	guint n = g_strv_length(opt_paths);
	g_autofree guint *place = g_new(guint, n);
	g_autoptr(GString) order = g_string_new(NULL);
	int rc = 0;

	ncm_mutex_lock(&run.lock);
	run.opt.round = round;
	ncm_mutex_unlock(&run.lock);
	if (run.opt.rounds > 1)
		bench_progress("round %d of %d", round + 1, run.opt.rounds);
	bench_round_order(n, (guint)round, place);
	for (guint i = 0; i < n; i++) {
		const char *spec = opt_paths[place[i]];
		g_autofree char *name = g_strndup(spec, strcspn(spec, "="));
		BenchTransport *t;

		g_string_append_printf(order, "%s\"%s\"", order->len ? "," : "", name);
		t = path_open(spec, name);
		if (!t) {
			rc = 1;
			continue;
		}
		BenchCtx ctx = {&run.opt, t, run.results};

		if (t->members) {
			bench_run_multi_tests(&ctx);
		} else if (t->raw) {
			bench_run_raw_tests(&ctx);
		} else {
			bench_run_tcp_tests(&ctx);
			bench_run_udp_tests(&ctx);
		}
		path_close(t);
	}
	ncm_mutex_lock(&run.lock);
	if (run.round_order)
		g_string_append_printf(run.round_order, "%s[%s]", round ? "," : "", order->str);
	ncm_mutex_unlock(&run.lock);
	return rc;
}

static int
run_client(void)
{
	int rc = 0, out_rc;

	run.results = g_ptr_array_new_with_free_func((GDestroyNotify)bench_result_free);
	run.names = g_ptr_array_new_with_free_func(g_free);
	run.paths = g_string_new(NULL);
	options_fill(&run.opt);
	if (run.opt.rounds > 1)
		run.round_order = g_string_new(NULL);
	bench_watchdog_start(&run.lock, on_hung);
	for (gint round = 0; round < run.opt.rounds; round++) {
		int round_rc = run_round(round);

		rc = MAX(rc, round_rc);
	}
	ncm_mutex_lock(&run.lock);
	bench_watchdog_disarm();
	/* Not inside MAX(): it would evaluate the call twice and print the table twice. */
	out_rc = write_outputs(&run.opt, run.results, run.names, run.paths);
	rc = MAX(rc, out_rc);
	g_clear_pointer(&run.results, g_ptr_array_unref);
	g_clear_pointer(&run.names, g_ptr_array_unref);
	g_string_free(g_steal_pointer(&run.paths), TRUE);
	if (run.round_order)
		g_string_free(g_steal_pointer(&run.round_order), TRUE);
	g_clear_pointer(&run.opt.tests, g_strfreev);
	ncm_mutex_unlock(&run.lock);
	return rc;
}

int
main(int argc, char **argv)
{
	g_autoptr(GOptionContext) oc = g_option_context_new("- compare network paths to an ncm-bench --server");
	g_autoptr(GError) error = NULL;
	g_autofree char *tests = bench_tests_list();
	g_autofree char *description = g_strdup_printf(
		"Tests (raw_* on raw paths only): %s.\n"
		"Example: ncm-bench --path cdc_ncm=192.168.77.1%%usb0 --path ncm-tun=192.168.77.1,ipv4=192.168.77.4/24 "
		"--quick --json out.json\n"
		"Results go to stdout as a table, progress to stderr.\n"
		"Exit status: 0 all paths opened, 1 a path failed to open or an output failed, "
		"2 bad options, 3 a test hung (not done after max(4 x its planned time, 30 s)): "
		"the table and files then hold the results so far.",
		tests);

	g_option_context_add_main_entries(oc, entries, NULL);
	g_option_context_set_description(oc, description);
	if (!g_option_context_parse(oc, &argc, &argv, &error)) {
		g_printerr("ncm-bench: %s\n", error->message);
		return 2;
	}
	if (opt_port <= 0 || opt_port > 65535) {
		g_printerr("ncm-bench: --port must be 1..65535\n");
		return 2;
	}
	if (opt_server)
		return bench_server_run(opt_bind, (guint16)opt_port);
	if (!opt_paths) {
		g_printerr("ncm-bench: give at least one --path NAME=ADDRESS (or --server)\n");
		return 2;
	}
	if (opt_rounds < 1) {
		g_printerr("ncm-bench: --rounds must be 1 or more\n");
		return 2;
	}
	if (opt_tests && !(tests_wanted = bench_tests_parse(opt_tests, &error))) {
		g_printerr("ncm-bench: %s\n", error->message);
		return 2;
	}
	for (gchar **s = opt_setup; s && *s; s++) {
		gsize len = strcspn(*s, "=");
		gboolean named = FALSE;

		for (gchar **p = opt_paths; *p; p++)
			named |= spec_named(*p, *s, len);
		if (!(*s)[len] || len == 0 || !named) {
			g_printerr("ncm-bench: --setup %s: expected NAME=COMMAND, NAME one of the --path names\n",
				   *s);
			return 2;
		}
	}
	for (gchar **p = opt_paths; opt_rounds > 1 && *p; p++) {
		if (opt_multi || strchr(*p, '+')) {
			g_printerr("ncm-bench: --rounds: multi paths run their scaling series once "
				   "(tests/vm/guest-multi-scale.sh repeats whole series)\n");
			return 2;
		}
	}
	return run_client();
}
