/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ntb-wake.c: who hears writable when: per OUT completion or once per event batch, and never a refused producer left waiting. */
#include <glib.h>

#include "ncm-ntb-sched.h"
#include "ncm-ntb-wake.h"

#define NTB 16384
#define SLOTS 8

/* Per completion (the default): the completion that follows a refusal
 * tells, once; completions with no refusal before them tell nothing. */
static void
test_per_completion(void)
{
	NcmNtbWake w;

	ncm_ntb_wake_init(&w);
	g_assert_false(ncm_ntb_wake_completed(&w, false));
	ncm_ntb_wake_refused(&w);
	ncm_ntb_wake_refused(&w);
	g_assert_true(ncm_ntb_wake_completed(&w, false));
	g_assert_false(ncm_ntb_wake_completed(&w, false));
	g_assert_false(ncm_ntb_wake_batch_end(&w));
}

/* Batched: a burst of completions after a refusal tells nothing itself,
 * the batch's end tells once, the next batch's end nothing. */
static void
test_batched_once(void)
{
	NcmNtbWake w;

	ncm_ntb_wake_init(&w);
	ncm_ntb_wake_refused(&w);
	for (int i = 0; i < 5; i++)
		g_assert_false(ncm_ntb_wake_completed(&w, true));
	g_assert_true(ncm_ntb_wake_batch_end(&w));
	g_assert_false(ncm_ntb_wake_batch_end(&w));
	/* A batch with completions but no refusal: nothing. */
	g_assert_false(ncm_ntb_wake_completed(&w, true));
	g_assert_false(ncm_ntb_wake_batch_end(&w));
	/* Refused again after the batch's completions, before its end (the
	 * room went to another sender): the end tells for the first refusal,
	 * and the next completion is due for the second. */
	ncm_ntb_wake_refused(&w);
	g_assert_false(ncm_ntb_wake_completed(&w, true));
	ncm_ntb_wake_refused(&w);
	g_assert_true(ncm_ntb_wake_batch_end(&w));
	g_assert_false(ncm_ntb_wake_batch_end(&w));
	g_assert_false(ncm_ntb_wake_completed(&w, true));
	g_assert_true(ncm_ntb_wake_batch_end(&w));
}

/*
 * The driver's TX as ncm-usb-tx.c drives it, on the real slot pool: a
 * producer with an endless queue (lwIP's txq) sends until refused, then
 * waits for writable and refills inside it; another sender (ACKs from the
 * receive path) sends now and then, whether the producer waits or not.
 * Completions and batch ends come in random order.
 */
typedef struct {
	NcmNtbSched sched;
	NcmNtbWake wake;
	bool batched;
	bool waiting;           /* the producer was refused and heard nothing since */
	int in_flight[SLOTS];
	guint n_in_flight;
	guint tells;            /* writable calls */
	guint tells_in_batch;
	guint max_tells_per_batch;
	guint tells_in_completion;
} Tx;

/* One frame per NTB, closed at once: each send takes one slot. */
static bool
tx_send(Tx *t)
{
	int slot = ncm_ntb_sched_open(&t->sched, 0);

	if (slot < 0) {
		ncm_ntb_wake_refused(&t->wake);
		return false;
	}
	g_assert_cmpint(ncm_ntb_sched_close(&t->sched, 1500, 0), ==, slot);
	t->in_flight[t->n_in_flight++] = slot;
	return true;
}

static void
producer_fill(Tx *t)
{
	while (tx_send(t))
		;
	t->waiting = true;
}

static void
writable(Tx *t)
{
	t->tells++;
	t->tells_in_batch++;
	t->max_tells_per_batch = MAX(t->max_tells_per_batch, t->tells_in_batch);
	t->waiting = false;
	producer_fill(t);
}

static void
tx_complete(Tx *t, guint i)
{
	int slot = t->in_flight[i];

	t->in_flight[i] = t->in_flight[--t->n_in_flight];
	ncm_ntb_sched_release(&t->sched, (unsigned)slot);
	if (ncm_ntb_wake_completed(&t->wake, t->batched)) {
		t->tells_in_completion++;
		writable(t);
	}
}

static void
tx_batch_end(Tx *t)
{
	if (ncm_ntb_wake_batch_end(&t->wake))
		writable(t);
	t->tells_in_batch = 0;
}

/* What is in flight completes in one batch and the event loop comes
 * round (what the producer refills meanwhile stays in flight): a producer
 * waiting with nothing in flight now would wait for good. */
static void
tx_settle(Tx *t)
{
	for (guint n = t->n_in_flight; n > 0; n--)
		tx_complete(t, 0);
	tx_batch_end(t);
	g_assert_false(t->waiting && t->n_in_flight == 0);
}

static void
run_random(bool batched, guint32 seed)
{
	GRand *r = g_rand_new_with_seed(seed);
	Tx t = { .batched = batched };

	ncm_ntb_sched_init(&t.sched, SLOTS, NTB, 2000, 0, 0);
	ncm_ntb_wake_init(&t.wake);
	producer_fill(&t);
	for (int step = 0; step < 20000; step++) {
		guint op = g_rand_int_range(r, 0, 100);

		if (op < 60 && t.n_in_flight)
			tx_complete(&t, g_rand_int_range(r, 0, (gint32)t.n_in_flight));
		else if (op < 85)
			tx_batch_end(&t);
		else if (op < 97)
			tx_send(&t);
		else
			tx_settle(&t);
		/* Liveness at every step: a waiting producer has a completion
		 * still to come, or a told-but-unsaid writable due at batch end. */
		g_assert_true(!t.waiting || t.n_in_flight > 0 || t.wake.pending);
	}
	tx_settle(&t);
	g_assert_cmpuint(t.tells, >, 0);
	if (batched) {
		g_assert_cmpuint(t.tells_in_completion, ==, 0);
		g_assert_cmpuint(t.max_tells_per_batch, ==, 1);
	} else {
		g_assert_cmpuint(t.tells_in_completion, ==, t.tells);
	}
	g_rand_free(r);
}

static void
test_random_per_completion(void)
{
	for (guint32 seed = 1; seed <= 50; seed++)
		run_random(false, seed);
}

static void
test_random_batched(void)
{
	for (guint32 seed = 1; seed <= 50; seed++)
		run_random(true, seed);
}

/* A burst of completions that frees the whole pool, as dummy_hcd's frame
 * timer reaps it: per completion the producer is told once per slot and
 * refills one each time; batched once, and it refills all of them. */
static void
test_burst(void)
{
	for (int b = 0; b < 2; b++) {
		Tx t = { .batched = b };

		ncm_ntb_sched_init(&t.sched, SLOTS, NTB, 2000, 0, 0);
		ncm_ntb_wake_init(&t.wake);
		producer_fill(&t);
		g_assert_cmpuint(t.n_in_flight, ==, SLOTS);
		for (int i = 0; i < SLOTS; i++)
			tx_complete(&t, 0);
		tx_batch_end(&t);
		g_assert_cmpuint(t.tells, ==, b ? 1 : SLOTS);
		g_assert_cmpuint(t.n_in_flight, ==, SLOTS);
		g_assert_true(t.waiting);
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/ntb-wake/per-completion", test_per_completion);
	g_test_add_func("/ntb-wake/batched-once", test_batched_once);
	g_test_add_func("/ntb-wake/burst", test_burst);
	g_test_add_func("/ntb-wake/random/per-completion", test_random_per_completion);
	g_test_add_func("/ntb-wake/random/batched", test_random_batched);
	return g_test_run();
}
