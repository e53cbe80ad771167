/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench.h: what ncm-bench's files share: options, results, the tests and socket helpers. */
#pragma once

#include <gio/gio.h>

#include "ncm-bench-json.h"
#include "ncm-bench-stats.h"
#include "ncm-bench-transport.h"
#include "ncm-sync.h"  /* locks TSan can see: bench-json runs ncm-bench under TSan */

G_BEGIN_DECLS

typedef struct {
	gint reps;
	gint secs;          /* per throughput run */
	gint soak_secs;
	gint rtt_secs;      /* per UDP RTT run */
	gint burst_tries;
	gboolean quick;
	gdouble pace_mbit;  /* --pace for libncm paths, 0 = unpaced */
	gdouble udp_max_mbit;
	gchar **tests;      /* prefixes; NULL = all */
	gint rounds;        /* passes over all paths (--rounds), each with @reps per throughput test */
	gint round;         /* the pass under way, from 0: only the first runs the other tests */
} BenchOptions;

typedef struct {
	const BenchOptions *opt;
	BenchTransport *transport;
	GPtrArray *results; /* BenchResult */
} BenchCtx;

/* ncm-bench.c */
/*
 * The path's result of @test: a new one, or in a later round the one the
 * first round made, which the test then extends. Arms the test's watchdog.
 */
BenchResult *bench_result_add(BenchCtx *ctx, const char *test);
/* Held while a result that is already in the output changes: a hang's report reads it. */
void bench_results_lock(void);
void bench_results_unlock(void);
void bench_result_fail(BenchResult *r, const GError *error);
gboolean bench_test_selected(const BenchOptions *opt, const char *test);
void bench_progress(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/* ncm-bench-net.c: blocking helpers over GSocket and GIOStream */
gboolean bench_socket_send_all(GSocket *sock, const void *buf, gsize len, GError **error);
gboolean bench_socket_send_line(GSocket *sock, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
char *bench_socket_read_line(GSocket *sock, GError **error);
GIOStream *bench_open_command(BenchCtx *ctx, const char *cmd, GDataInputStream **ret_lines,
			      GError **error);
/* Closes a stream whose unsent bytes nobody needs: a kernel socket with a reset. */
void bench_io_close_reset(GIOStream *io);
/* Mbit/s per window over the run, as kept for --plot. */
GArray *bench_series_rates(const GArray *samples, gint64 from_us, gint64 to_us);
/* Seconds of CPU this process used so far (user + system). */
double bench_cpu_seconds(void);
/* This process's context switches so far, all threads, voluntary or not. */
guint64 bench_context_switches(void);

/* ncm-bench-server.c */
int bench_server_run(const char *bind_address, guint16 port);

/* ncm-bench-server-raw.c: RAW_FLOOD and RAW_COUNT (ncm-bench-proto.h) on connection @ctl. */
void bench_serve_raw_flood(GSocket *ctl, const char *cmd);
void bench_serve_raw_count(GSocket *ctl, const char *cmd);

/* The path's env object's members (name, server, iface, mtu, its own) as one element of "paths". */
void bench_env_path(GString *paths, BenchTransport *t);

/* ncm-bench-tcp.c */
void bench_run_tcp_tests(BenchCtx *ctx);
/* One TCP upload on a thread of its own, beside another test (rtt_under_up). */
typedef struct _BenchLoad BenchLoad;
BenchLoad *bench_tcp_load_start(BenchCtx *ctx, gint secs);
/* Waits for the upload's end and frees @l: its rate as the peer counted it
 * (Mbit/s), or FALSE with @error. */
gboolean bench_tcp_load_finish(BenchLoad *l, double *ret_mbit, GError **error);

/* ncm-bench-multi.c: a multi path's tests (tcp_down, tcp_up, tcp_bidir), all devices at once. */
void bench_run_multi_tests(BenchCtx *ctx);

/* ncm-bench-udp.c */
void bench_run_udp_tests(BenchCtx *ctx);

/* ncm-bench-raw.c: the usbfs ceiling, on a path with ctx->transport->raw */
void bench_run_raw_tests(BenchCtx *ctx);

/*
 * ncm-bench-watchdog.c: one deadline at a time, max(4 x the planned time,
 * 30 s). When it passes, @hung runs on the watchdog thread with the lock
 * held, then the process exits with status 3. Arm and disarm with the lock
 * given to bench_watchdog_start() held.
 */
typedef void (*BenchHungFunc)(const char *path, const char *what, double limit_s);
void bench_watchdog_start(GMutex *lock, BenchHungFunc hung);
void bench_watchdog_arm(const char *path, const char *what, double planned_s);
void bench_watchdog_disarm(void);

/* ncm-bench-plot.c */
gboolean bench_plot_write(const char *file, GPtrArray *results, GError **error);

G_END_DECLS
