/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-inq.c: input left to the core lock's holder: order, room, none left behind. */
#include <glib.h>

#include "ncm-lwip-inq.h"
#include "ncm-lwip-private.h"
#include "ncm-lwip.h"

#define ITEMS 200000

static void
free_count(gpointer item)
{
	(*(guint *)item)++;
}

/* FIFO order; a full ring refuses and keeps working after pops. */
static void
test_order(void)
{
	NlwInq q;
	NlwInqItem it;
	guint freed = 0;

	nlw_inq_init(&q, 5); /* rounded up to 8 */
	for (guint i = 0; i < 8; i++)
		g_assert_true(nlw_inq_push(&q, GUINT_TO_POINTER(i + 1), i % 2));
	g_assert_false(nlw_inq_push(&q, GUINT_TO_POINTER(99), 0));
	for (guint i = 0; i < 3; i++) {
		g_assert_true(nlw_inq_pop(&q, &it));
		g_assert_cmpuint(GPOINTER_TO_UINT(it.item), ==, i + 1);
		g_assert_cmpuint(it.tag, ==, i % 2);
	}
	for (guint i = 8; i < 11; i++)
		g_assert_true(nlw_inq_push(&q, GUINT_TO_POINTER(i + 1), 0));
	for (guint i = 3; i < 11; i++) {
		g_assert_true(nlw_inq_pop(&q, &it));
		g_assert_cmpuint(GPOINTER_TO_UINT(it.item), ==, i + 1);
	}
	g_assert_false(nlw_inq_pop(&q, &it));
	/* What is left is freed with the queue. */
	g_assert_true(nlw_inq_push(&q, &freed, 0));
	g_assert_true(nlw_inq_push(&q, &freed, 0));
	nlw_inq_clear(&q, free_count);
	g_assert_cmpuint(freed, ==, 2);
}

/* The hand-over: one link thread pushes and posts, writer threads hold the
 * core lock in turn; the NLW_BATCH_INPUT stage takes items in. */
static NlwInq handq;
static guint taken;           /* core lock */
static guint taken_by_others; /* core lock: items a writer took in */
static GThread *link_thread;
static gint writers_stop; /* atomic */

static void
hand_input(void)
{
	NlwInqItem it;

	if (!nlw_input_take())
		return;
	while (nlw_inq_pop(&handq, &it)) {
		/* In the order pushed, none twice. */
		g_assert_cmpuint(GPOINTER_TO_UINT(it.item), ==, taken + 1);
		taken++;
		if (g_thread_self() != g_atomic_pointer_get(&link_thread))
			taken_by_others++;
	}
}

static gpointer
writer_main(gpointer data)
{
	while (!g_atomic_int_get(&writers_stop)) {
		nlw_core_lock();
		/* A writer's hold: long enough that the link thread finds it busy. */
		g_usleep(20);
		nlw_core_unlock();
		g_thread_yield();
	}
	return NULL;
}

static gpointer
link_main(gpointer data)
{
	g_atomic_pointer_set(&link_thread, g_thread_self());
	for (guint i = 1; i <= ITEMS; i++) {
		/* Full: wait for the lock, as the netif does. */
		while (!nlw_inq_push(&handq, GUINT_TO_POINTER(i), 0))
			nlw_input_post(TRUE);
		if (i % 16 == 0 || i == ITEMS)
			nlw_input_post(FALSE);
	}
	return NULL;
}

static void
test_hand_off(void)
{
	g_autoptr(NcmLwipStack) stack = ncm_lwip_stack_get_default();
	GThread *writers[2], *link;
	NcmLwipStats stats;
	guint got;

	nlw_inq_init(&handq, 64);
	nlw_core_lock();
	nlw_batch_on_end(NLW_BATCH_INPUT, hand_input);
	nlw_core_unlock();
	for (guint i = 0; i < G_N_ELEMENTS(writers); i++)
		writers[i] = g_thread_new("writer", writer_main, NULL);
	link = g_thread_new("link", link_main, NULL);
	g_thread_join(link);
	g_atomic_int_set(&writers_stop, 1);
	for (guint i = 0; i < G_N_ELEMENTS(writers); i++)
		g_thread_join(writers[i]);
	/* Every item was taken in by a release of the lock: nothing waits
	 * for a later holder that may never come. */
	nlw_core_lock();
	got = taken;
	g_test_message("%u of %u items taken in by writers", taken_by_others, taken);
	/* The hand-over happened (else this tested only the free lock). */
	g_assert_cmpuint(taken_by_others, >, 0);
	nlw_batch_on_end(NLW_BATCH_INPUT, NULL);
	nlw_core_unlock();
	g_assert_cmpuint(got, ==, ITEMS);
	ncm_lwip_stack_get_stats(stack, &stats);
	g_test_message("core lock waits %" G_GUINT64_FORMAT, stats.core_lock_waits);
	nlw_inq_clear(&handq, NULL);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lwip-inq/order", test_order);
	g_test_add_func("/lwip-inq/hand-off", test_hand_off);
	return g_test_run();
}
