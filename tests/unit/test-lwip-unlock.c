/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-unlock.c: after the core lock's release, the netifs' sending, then the wakes. */
#include "lwip/sys.h"

#include "ncm-lwip-private.h"

/* What ran after the release, in order: 'd' a drain, 'w' the wake hook;
 * upper case when it ran under the core lock. */
static GString *ran;
static guint drains_due;

static guint
fake_take(gpointer *ret_items, guint max)
{
	guint n = MIN(drains_due, max);

	for (guint i = 0; i < n; i++)
		ret_items[i] = GUINT_TO_POINTER(i + 1);
	drains_due = 0;
	return n;
}

static void
fake_drain(gpointer item)
{
	g_string_append_c(ran, ncm_lwip_core_held() ? 'D' : 'd');
}

static void
fake_wake(void)
{
	g_string_append_c(ran, ncm_lwip_core_held() ? 'W' : 'w');
}

/*
 * A writer woken by a batch wants the core lock next: woken before the
 * release it spins, sleeps on the lock and needs a second wake-up; woken
 * before the netifs' sending it preempts the thread that sends (issue 15).
 */
static void
test_wake_after_release_and_sending(void)
{
	nlw_core_lock();
	nlw_core_on_unlock(fake_take, fake_drain);
	nlw_core_on_unlock_wake(fake_wake);
	drains_due = 2;
	nlw_core_unlock();
	g_assert_cmpstr(ran->str, ==, "ddw");

	/* Nothing to send: the wake still comes, once. */
	g_string_truncate(ran, 0);
	nlw_core_lock();
	nlw_core_unlock();
	g_assert_cmpstr(ran->str, ==, "w");
	g_assert_false(ncm_lwip_core_held());
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	ran = g_string_new(NULL);
	/* Starts lwIP's tcpip thread, which creates the core lock. */
	(void)ncm_lwip_stack_get_default();
	g_test_add_func("/lwip-unlock/wake-after-release-and-sending",
	                test_wake_after_release_and_sending);
	return g_test_run();
}
