/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ntb-retry.c: failed IN transfers' retry rounds and budget on a fake clock: the delay doubles to its cap, a success starts it over, the budget is spent once and in bounded time. */
#include <glib.h>

#include "ncm-ntb-retry.h"

#define T0 1000000

/* One transfer failing at once every time it goes back: each round waits
 * twice the last, 1 ms up to the cap, and the budget is spent after
 * exactly NCM_RETRY_WORST_US. */
static void
test_schedule(void)
{
	NcmRetry r;
	gint64 now = T0, expect = NCM_RETRY_FIRST_US;
	guint spins = 0;

	ncm_retry_init(&r);
	for (guint i = 1; i < NCM_RETRY_BUDGET; i++) {
		g_assert_cmpint(ncm_retry_failed(&r, now), ==, NCM_RETRY_AGAIN);
		g_assert_cmpint(ncm_retry_deadline(&r), ==, now + expect);
		/* Not a microsecond early. */
		g_assert_false(ncm_retry_take(&r, now + expect - 1));
		spins++;
		now += expect;
		g_assert_true(ncm_retry_take(&r, now));
		expect = MIN(expect * 2, NCM_RETRY_MAX_US);
	}
	g_assert_cmpint(ncm_retry_failed(&r, now), ==, NCM_RETRY_GIVE_UP);
	g_assert_cmpint(now - T0, ==, NCM_RETRY_WORST_US);
	/* Within the documented bound of "5 to 10 s". */
	g_assert_cmpint(NCM_RETRY_WORST_US, >=, 5 * G_USEC_PER_SEC);
	g_assert_cmpint(NCM_RETRY_WORST_US, <=, 10 * G_USEC_PER_SEC);
	g_assert_cmpuint(spins, ==, NCM_RETRY_BUDGET - 1);
	/* Past the budget, dropped quietly: the owner hears it once. */
	for (int i = 0; i < 100; i++)
		g_assert_cmpint(ncm_retry_failed(&r, now), ==, NCM_RETRY_DROP);
	g_assert_cmpint(r.first_at, ==, T0);
}

/* Transfers that fail while a round is pending wait for that round: 16
 * failing together make one round, not 16 growing ones. */
static void
test_rounds(void)
{
	NcmRetry r;

	ncm_retry_init(&r);
	for (int i = 0; i < 16; i++)
		g_assert_cmpint(ncm_retry_failed(&r, T0 + i), ==, NCM_RETRY_AGAIN);
	g_assert_cmpint(ncm_retry_deadline(&r), ==, T0 + NCM_RETRY_FIRST_US);
	g_assert_true(ncm_retry_take(&r, T0 + NCM_RETRY_FIRST_US));
	/* Round over: a late transfer (its halt still being cleared) goes at once. */
	g_assert_cmpint(ncm_retry_deadline(&r), ==, 0);
	g_assert_true(ncm_retry_take(&r, T0 + NCM_RETRY_FIRST_US));
	/* The next round waits twice as long. */
	g_assert_cmpint(ncm_retry_failed(&r, T0 + 5000), ==, NCM_RETRY_AGAIN);
	g_assert_cmpint(ncm_retry_deadline(&r), ==, T0 + 5000 + 2 * NCM_RETRY_FIRST_US);
	g_assert_cmpuint(r.failures, ==, 17);
}

/* A transfer that completes starts the budget and the delay over. */
static void
test_success_resets(void)
{
	NcmRetry r;
	gint64 now = T0;

	ncm_retry_init(&r);
	for (guint i = 1; i < NCM_RETRY_BUDGET; i++) {
		g_assert_cmpint(ncm_retry_failed(&r, now), ==, NCM_RETRY_AGAIN);
		now = ncm_retry_deadline(&r);
		g_assert_true(ncm_retry_take(&r, now));
	}
	ncm_retry_succeeded(&r);
	g_assert_cmpint(ncm_retry_failed(&r, now), ==, NCM_RETRY_AGAIN);
	g_assert_cmpint(ncm_retry_deadline(&r), ==, now + NCM_RETRY_FIRST_US);
	g_assert_cmpint(r.first_at, ==, now);
	/* A flaky device that succeeds in between is never given up. */
	for (int i = 0; i < 10 * NCM_RETRY_BUDGET; i++) {
		ncm_retry_succeeded(&r);
		g_assert_cmpint(ncm_retry_failed(&r, now + i), ==, NCM_RETRY_AGAIN);
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/ntb-retry/schedule", test_schedule);
	g_test_add_func("/ntb-retry/rounds", test_rounds);
	g_test_add_func("/ntb-retry/success-resets", test_success_resets);
	return g_test_run();
}
