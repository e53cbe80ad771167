/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-latch.h: a one-waiter wake-up latch on a futex, no syscall unless it sleeps (private). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Why: the TAP reader waits for the link's writable whenever the link is
 * full (6-11 times per MB on ncm-tun's upload). Through an eventfd that cost
 * a write on the event thread, a poll and a read on the reader, even when
 * the room came back before the reader went to sleep. This latch costs one
 * FUTEX_WAKE, and only when the reader sleeps already, and one FUTEX_WAIT
 * when it has to sleep; a post that finds the reader awake is a plain
 * atomic store for both.
 *
 * Like the eventfd it replaces, a post is remembered until the next wait
 * takes it: a post between the link's refusal and the wait is not lost.
 * Any number of threads may post; one thread waits.
 */
typedef struct {
	gint state;    /* TAP_LATCH_*; futex word */
	guint64 wakes; /* FUTEX_WAKE calls made by posts (atomic; tests and stats) */
} TapLatch;

void tap_latch_init(TapLatch *l);

/* Sets the latch; wakes the waiter if it sleeps. Thread: any. */
void tap_latch_post(TapLatch *l);

/*
 * Returns once the latch is set (then clears it), at once when it was set
 * already. @timeout_us < 0 waits for ever; FALSE when it passed unset.
 * Thread: the one waiter.
 */
gboolean tap_latch_wait(TapLatch *l, gint64 timeout_us);

/* Forgets a post nobody waited for. Thread: the waiter's, or while it does not run. */
void tap_latch_reset(TapLatch *l);

G_END_DECLS
