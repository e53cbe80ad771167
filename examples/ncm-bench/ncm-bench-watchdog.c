/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-watchdog.c: a deadline per test, so that one hung path ends the run with what was measured. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ncm-bench.h"

/*
 * A hung lwIP or device call cannot be interrupted from outside, and its
 * thread holds state we cannot free safely; so the watchdog does not try
 * to rescue the path. It reports and ends the process instead.
 */
#define WATCHDOG_MIN_S 30.0
#define WATCHDOG_FACTOR 4.0
#define WATCHDOG_EXIT 3

static struct {
	GMutex *lock;          /* the caller's: guards the fields below and the caller's results */
	BenchHungFunc hung;
	char *path;
	char *what;
	gint64 deadline_us;    /* 0 = disarmed */
	double limit_s;
} wd;

static double
watchdog_limit(double planned_s)
{
	return MAX(WATCHDOG_FACTOR * planned_s, WATCHDOG_MIN_S);
}

void
bench_watchdog_arm(const char *path, const char *what, double planned_s)
{
	g_free(wd.path);
	g_free(wd.what);
	wd.path = g_strdup(path);
	wd.what = g_strdup(what);
	wd.limit_s = watchdog_limit(planned_s);
	wd.deadline_us = g_get_monotonic_time() + (gint64)(wd.limit_s * G_USEC_PER_SEC);
}

void
bench_watchdog_disarm(void)
{
	wd.deadline_us = 0;
}

static gpointer
watchdog_main(gpointer data)
{
	for (;;) {
		g_usleep(G_USEC_PER_SEC / 4);
		ncm_mutex_lock(wd.lock);
		if (wd.deadline_us && g_get_monotonic_time() > wd.deadline_us)
			break;
		ncm_mutex_unlock(wd.lock);
	}
	/* The lock stays held: the stuck thread must not add results while we write them. */
	wd.hung(wd.path, wd.what, wd.limit_s);
	/*
	 * A hang seen once in many runs is understood from a core (every
	 * thread's stack and the devices' state): the VM harness asks for one
	 * and keeps it in its result share (tests/vm/README.md).
	 */
	if (g_getenv("NCM_BENCH_HANG_CORE")) {
		fprintf(stderr, "ncm-bench: NCM_BENCH_HANG_CORE: aborting for a core dump\n");
		fflush(stdout);
		fflush(stderr);
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	fflush(stdout);
	fflush(stderr);
	/* exit() would run atexit handlers under the feet of the stuck thread. */
	_exit(WATCHDOG_EXIT);
	return NULL;
}

void
bench_watchdog_start(GMutex *lock, BenchHungFunc hung)
{
	wd.lock = lock;
	wd.hung = hung;
	g_thread_unref(g_thread_new("bench-watchdog", watchdog_main, NULL));
}
