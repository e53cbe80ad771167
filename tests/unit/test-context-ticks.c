/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-context-ticks.c: the event thread runs its devices' timeouts starting one further on each round, so no device is always served last (issue 20). */
#include <ncm.h>

/* Linked in from the library's sources: the timeouts are private. */
#include "ncm-usb-context.h"

#include "vmtest-tsan.h"  /* GLib and libusb are not instrumented */

#define N_TICKS 3

typedef struct {
	gint index;
	gint *firsts;          /* [N_TICKS]: rounds in which this one ran first */
	gint *ran;             /* atomic: timeouts run in the current round */
} Tick;

static gint64
tick(gpointer data, gint64 now)
{
	Tick *t = data;

	/* The context's lock is held: rounds do not overlap. */
	if (g_atomic_int_add(t->ran, 1) % N_TICKS == 0)
		g_atomic_int_inc(&t->firsts[t->index]);
	return now + G_TIME_SPAN_MILLISECOND;
}

static void
test_rotates(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = ncm_context_new(&error);
	gint firsts[N_TICKS] = { 0 }, ran = 0;
	Tick t[N_TICKS];
	gint64 end;
	gboolean all;

	if (!ctx) {
		g_test_skip(error->message);
		return;
	}
	for (gint i = 0; i < N_TICKS; i++) {
		t[i] = (Tick){ i, firsts, &ran };
		ncm_context_add_timeout(ctx, tick, &t[i]);
	}
	end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
	do {
		g_usleep(10 * G_TIME_SPAN_MILLISECOND);
		all = TRUE;
		for (gint i = 0; i < N_TICKS; i++)
			all = all && g_atomic_int_get(&firsts[i]) >= 3;
	} while (!all && g_get_monotonic_time() < end);
	for (gint i = 0; i < N_TICKS; i++)
		g_assert_true(ncm_context_remove_timeout(ctx, tick, &t[i]));
	for (gint i = 0; i < N_TICKS; i++)
		g_assert_cmpint(g_atomic_int_get(&firsts[i]), >=, 3);
}

/*
 * A producer asks for a deadline while a round runs, after the timeout has
 * looked at what it needs (an NTB opened, a transfer parked), in a round
 * that began because its deadline had passed. Its wake must interrupt the
 * loop: it used to compare with that passed deadline, not interrupt, and
 * leave the loop to sleep its whole idle ceiling.
 */
typedef struct {
	GMutex lock;
	GCond cond;
	gint64 first_due;  /* what the first round asked for */
	gboolean raced;    /* the round in which the producer came has run */
	gboolean woken;    /* the producer's wake returned */
	gint64 after_at;   /* when the round after that one ran */
} Race;

static gint64
race_tick(gpointer data, gint64 now)
{
	Race *r = data;
	gint64 next = G_MAXINT64;

	g_mutex_lock(&r->lock);
	if (!r->first_due) {
		r->first_due = now + 50 * G_TIME_SPAN_MILLISECOND;
		next = r->first_due;
	} else if (now < r->first_due) {
		next = r->first_due;  /* an early round: not the one wanted */
	} else if (!r->raced) {
		/* Nothing due here; the producer comes now. */
		r->raced = TRUE;
		g_cond_broadcast(&r->cond);
		while (!r->woken)
			g_cond_wait(&r->cond, &r->lock);
	} else if (!r->after_at) {
		r->after_at = now;
		g_cond_broadcast(&r->cond);
	}
	g_mutex_unlock(&r->lock);
	return next;
}

static void
test_wake_during_round(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = ncm_context_new(&error);
	Race r = { 0 };
	gint64 woke_at, end;

	if (!ctx) {
		g_test_skip(error->message);
		return;
	}
	g_mutex_init(&r.lock);
	g_cond_init(&r.cond);
	/* Far beyond the test's wait: only the wake can bring the next round. */
	ncm_context_set_idle_ms(ctx, 60 * 1000);
	ncm_context_add_timeout(ctx, race_tick, &r);
	end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
	g_mutex_lock(&r.lock);
	while (!r.raced)
		g_assert_true(g_cond_wait_until(&r.cond, &r.lock, end));
	woke_at = g_get_monotonic_time();
	ncm_context_wake(ctx, woke_at + 10 * G_TIME_SPAN_MILLISECOND);
	r.woken = TRUE;
	g_cond_broadcast(&r.cond);
	end = woke_at + 3 * G_TIME_SPAN_SECOND;
	while (!r.after_at && g_cond_wait_until(&r.cond, &r.lock, end))
		;
	g_mutex_unlock(&r.lock);
	g_assert_true(ncm_context_remove_timeout(ctx, race_tick, &r));
	g_assert_cmpint(r.after_at, >, 0);
	g_assert_cmpint(r.after_at - woke_at, <, 2 * G_TIME_SPAN_SECOND);
	g_mutex_clear(&r.lock);
	g_cond_clear(&r.cond);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/context-ticks/rotates", test_rotates);
	g_test_add_func("/context-ticks/wake-during-round", test_wake_during_round);
	return g_test_run();
}
