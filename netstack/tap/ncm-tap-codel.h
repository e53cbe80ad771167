/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-codel.h: a queueing-time limit on the TAP reader's queue (CoDel's control law), so each device's sender sees its own delay (private). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Why (issue 20, uploads at 8 devices): each TAP's reader queue drops only
 * at its byte limit (ncm-tap-queue.h). With eight senders sharing two CPUs
 * that queue stood at 50-86 ms, a drop came as the loss of whole 64 KiB TSO
 * packets (44 segments) and a sender recovered from it over several of those
 * long RTTs: in a 5 s run one flow that happened to lose less kept a larger
 * window and ran at twice the others' rate. CoDel (RFC 8289) instead drops
 * when packets waited longer than @target for a whole @interval, then
 * sooner and sooner (interval / sqrt(count)) while the delay stays: a
 * sender with a standing queue gets one loss per RTT, and the queue (so the
 * RTT, so the time to converge) stays short. The reader loses one segment
 * per decision (ncm-tap.c): one loss event, the gentlest signal TCP has.
 *
 * Time in microseconds, monotonic. Pure: the reader thread's alone.
 */
typedef struct {
	gint64 target;      /* sojourn that counts as a standing queue */
	gint64 interval;    /* how long it may stand before the first drop */
	gint64 first_above; /* when the sojourn went above target + interval; 0: it is below */
	gint64 drop_next;   /* while dropping: the next drop's time */
	guint count;        /* drops in this dropping state */
	guint last_count;
	gboolean dropping;
	guint64 drops;
} TapCodel;

/* CoDel's defaults are 5 ms and 100 ms; a build may set others to compare. */
#ifndef TAP_CODEL_TARGET_US
#define TAP_CODEL_TARGET_US 5000
#endif
#ifndef TAP_CODEL_INTERVAL_US
#define TAP_CODEL_INTERVAL_US 100000
#endif

/* @target 0 turns it off: tap_codel_drop() then never drops. */
void tap_codel_init(TapCodel *c, gint64 target, gint64 interval);

/*
 * A packet leaves the queue at @now after waiting @sojourn, @backlog bytes
 * behind it: TRUE when it carries the drop (the caller loses one segment
 * of it).
 */
gboolean tap_codel_drop(TapCodel *c, gint64 now, gint64 sojourn, gsize backlog);

/* The queue ran empty: the next standing queue starts a new interval. */
void tap_codel_empty(TapCodel *c);

G_END_DECLS
