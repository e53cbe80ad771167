/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-tap-latch.c: the TAP reader's latch: posts kept, sleepers woken, no wake-up lost. */
#include "ncm-tap-latch.h"

/* Long enough that only a lost wake-up reaches it, short enough not to hang the suite. */
#define LOST_US (5 * G_USEC_PER_SEC)

static guint64
wakes(TapLatch *l)
{
	return __atomic_load_n(&l->wakes, __ATOMIC_RELAXED);
}

/* A post before the wait is kept, and costs no FUTEX_WAKE: nobody slept. */
static void
test_post_first(void)
{
	TapLatch l;
	gint64 t0;

	tap_latch_init(&l);
	tap_latch_post(&l);
	tap_latch_post(&l);
	t0 = g_get_monotonic_time();
	g_assert_true(tap_latch_wait(&l, LOST_US));
	g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);
	g_assert_cmpuint(wakes(&l), ==, 0);
	/* Taken: the next wait finds it empty (two posts are one). */
	g_assert_false(tap_latch_wait(&l, 20000));
}

static void
test_timeout_then_post(void)
{
	TapLatch l;
	gint64 t0;

	tap_latch_init(&l);
	t0 = g_get_monotonic_time();
	g_assert_false(tap_latch_wait(&l, 30000));
	g_assert_cmpint(g_get_monotonic_time() - t0, >=, 30000);
	/* The timed-out waiter left no sleeper behind: a post is free again. */
	tap_latch_post(&l);
	g_assert_cmpuint(wakes(&l), ==, 0);
	g_assert_true(tap_latch_wait(&l, 0));
}

static void
test_reset(void)
{
	TapLatch l;

	tap_latch_init(&l);
	tap_latch_post(&l);
	tap_latch_reset(&l);
	g_assert_false(tap_latch_wait(&l, 10000));
}

static gpointer
post_later(gpointer data)
{
	g_usleep(50000);
	tap_latch_post(data);
	return NULL;
}

/* A sleeping waiter is woken by the post, with one FUTEX_WAKE. */
static void
test_wakes_sleeper(void)
{
	TapLatch l;
	GThread *t;
	gint64 t0;

	tap_latch_init(&l);
	t0 = g_get_monotonic_time();
	t = g_thread_new("post", post_later, &l);
	g_assert_true(tap_latch_wait(&l, LOST_US));
	/* Woken, not found set when the timeout ran out. */
	g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);
	g_thread_join(t);
	g_assert_cmpuint(wakes(&l), ==, 1);
}

typedef struct {
	TapLatch ping, pong;
	guint rounds;
	gint lost; /* atomic */
} PingPong;

static gpointer
ponger(gpointer data)
{
	PingPong *p = data;

	for (guint i = 0; i < p->rounds; i++) {
		if (!tap_latch_wait(&p->ping, LOST_US)) {
			g_atomic_int_set(&p->lost, 1);
			break;
		}
		tap_latch_post(&p->pong);
	}
	return NULL;
}

/* Two threads hand a token back and forth: every wake-up must arrive, whatever the interleaving. */
static void
test_ping_pong(void)
{
	PingPong p = {.rounds = 20000};
	GThread *t;
	guint i;

	tap_latch_init(&p.ping);
	tap_latch_init(&p.pong);
	t = g_thread_new("pong", ponger, &p);
	for (i = 0; i < p.rounds && !g_atomic_int_get(&p.lost); i++) {
		tap_latch_post(&p.ping);
		if (!tap_latch_wait(&p.pong, LOST_US))
			break;
	}
	tap_latch_post(&p.ping); /* frees a ponger that lost one */
	g_thread_join(t);
	g_assert_false(g_atomic_int_get(&p.lost));
	g_assert_cmpuint(i, ==, p.rounds);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/tap-latch/post-first", test_post_first);
	g_test_add_func("/tap-latch/timeout-then-post", test_timeout_then_post);
	g_test_add_func("/tap-latch/reset", test_reset);
	g_test_add_func("/tap-latch/wakes-sleeper", test_wakes_sleeper);
	g_test_add_func("/tap-latch/ping-pong", test_ping_pong);
	return g_test_run();
}
