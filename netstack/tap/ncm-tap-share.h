/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-share.h: one byte budget shared by the read-ahead queues of every TAP in a process, so a full one drops from the device over its fair share (private). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Why (issue 20): ncm-tun drives several devices from one process, a TAP
 * and a reader thread each, all on the same CPUs. The host's TCP senders
 * then see the same delay whatever their rate (the CPUs, not a link of
 * their own, are the bottleneck), and a TAP hides their queue from TCP
 * small queues (ncm-tap-queue.h): a sender's rate follows its window, and
 * whichever window grew furthest keeps its lead. At 8 devices one upload
 * ran at 110-160 Mbit/s and seven at 60-79 (fairness 0.38-0.54).
 *
 * A switch or a qdisc gives each flow its signal through a shared buffer:
 * while it has room anyone may queue (a lone device keeps its whole limit,
 * nothing changes at 1 device); once it is full, only a queue under its
 * fair share (the budget over the TAPs attached) may grow. So the device
 * that holds more than its share sees the tail drops, and its sender, not
 * the others, backs off.
 *
 * @bytes and @sharers are atomics, changed by each TAP's reader thread and
 * by attach/detach; a decision may read them a packet late, which moves the
 * line by one packet at most.
 */
typedef struct {
	gsize limit;     /* the budget all queues share, in bulk bytes */
	gsize bytes;     /* atomic: bulk bytes queued over all TAPs */
	gint sharers;    /* atomic: TAPs attached (each a reader that may queue) */
} TapShare;

/*
 * Whether a queue that holds @mine bulk bytes may take one more packet,
 * with @total queued over all of them and @sharers (0 counts as 1) sharing
 * @limit. Pure; tap_share_admit() reads the atomics.
 */
static inline gboolean
tap_share_admit_at(gsize mine, gsize total, gsize limit, guint sharers)
{
	if (total < limit)
		return TRUE;
	return mine < limit / MAX(sharers, 1u);
}

static inline gboolean
tap_share_admit(TapShare *s, gsize mine)
{
	return tap_share_admit_at(mine, __atomic_load_n(&s->bytes, __ATOMIC_RELAXED), s->limit,
				  (guint)MAX(__atomic_load_n(&s->sharers, __ATOMIC_RELAXED), 0));
}

static inline void
tap_share_add(TapShare *s, gsize n)
{
	__atomic_fetch_add(&s->bytes, n, __ATOMIC_RELAXED);
}

static inline void
tap_share_sub(TapShare *s, gsize n)
{
	__atomic_fetch_sub(&s->bytes, n, __ATOMIC_RELAXED);
}

G_END_DECLS
