/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-latch.c: the TAP reader's wake-up latch on a Linux futex. */
#include "ncm-tap-latch.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum {
	TAP_LATCH_EMPTY,
	TAP_LATCH_SET,
	TAP_LATCH_SLEEPING, /* empty, and the waiter is (about to be) in FUTEX_WAIT */
};

static long
futex(gint *word, int op, int val, const struct timespec *timeout)
{
	return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

void
tap_latch_init(TapLatch *l)
{
	__atomic_store_n(&l->state, TAP_LATCH_EMPTY, __ATOMIC_RELAXED);
	__atomic_store_n(&l->wakes, 0, __ATOMIC_RELAXED);
}

void
tap_latch_post(TapLatch *l)
{
	/* Only a waiter that announced its sleep needs the syscall. */
	if (__atomic_exchange_n(&l->state, TAP_LATCH_SET, __ATOMIC_ACQ_REL) != TAP_LATCH_SLEEPING)
		return;
	__atomic_fetch_add(&l->wakes, 1, __ATOMIC_RELAXED);
	futex(&l->state, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void
tap_latch_reset(TapLatch *l)
{
	__atomic_store_n(&l->state, TAP_LATCH_EMPTY, __ATOMIC_RELEASE);
}

/* The timeout passed: FALSE unless a post came in the meantime (then taken). */
static gboolean
timed_out(TapLatch *l)
{
	gint sleeping = TAP_LATCH_SLEEPING;

	if (__atomic_compare_exchange_n(&l->state, &sleeping, TAP_LATCH_EMPTY, FALSE,
	                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return FALSE;
	return __atomic_exchange_n(&l->state, TAP_LATCH_EMPTY, __ATOMIC_ACQ_REL) == TAP_LATCH_SET;
}

gboolean
tap_latch_wait(TapLatch *l, gint64 timeout_us)
{
	struct timespec ts = {timeout_us / G_USEC_PER_SEC, (timeout_us % G_USEC_PER_SEC) * 1000};

	for (;;) {
		gint empty = TAP_LATCH_EMPTY;

		/* Takes a post; a SLEEPING left by a spurious wake-up reads as empty. */
		if (__atomic_exchange_n(&l->state, TAP_LATCH_EMPTY, __ATOMIC_ACQ_REL) ==
		    TAP_LATCH_SET)
			return TRUE;
		/* A post between the two steps leaves SET: take it on the next turn. */
		if (!__atomic_compare_exchange_n(&l->state, &empty, TAP_LATCH_SLEEPING, FALSE,
		                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		/* Returns at once (EAGAIN) when a post changed the word first. A
		 * relative timeout restarts after a spurious wake-up: the reader's
		 * only timed wait is in tests. */
		if (futex(&l->state, FUTEX_WAIT_PRIVATE, TAP_LATCH_SLEEPING,
		          timeout_us < 0 ? NULL : &ts) < 0 &&
		    errno == ETIMEDOUT)
			return timed_out(l);
	}
}
