/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ntb-sched.c: TX scheduling without libusb: slot accounting, the flush timer and pacing, on a fake clock. */
#include <glib.h>

#include "ncm-ntb-sched.h"

#define NTB 16384
#define FLUSH_US 2000

/* Every slot opens once, then the pool is empty until one is released. */
static void
test_slots(void)
{
	NcmNtbSched s;
	gboolean seen[8] = { FALSE };
	int slot;

	ncm_ntb_sched_init(&s, 8, NTB, FLUSH_US, 0, 0);
	for (int i = 0; i < 8; i++) {
		slot = ncm_ntb_sched_open(&s, 0);
		g_assert_cmpint(slot, >=, 0);
		g_assert_cmpint(slot, <, 8);
		g_assert_false(seen[slot]);
		seen[slot] = TRUE;
		/* Opening again while open gives the same slot. */
		g_assert_cmpint(ncm_ntb_sched_open(&s, 0), ==, slot);
		g_assert_cmpint(ncm_ntb_sched_close(&s, 100, 0), ==, slot);
		g_assert_cmpint(ncm_ntb_sched_open_slot(&s), ==, -1);
	}
	g_assert_cmpint(ncm_ntb_sched_open(&s, 0), ==, -1);
	g_assert_cmpuint(ncm_ntb_sched_in_flight(&s), ==, 8);
	ncm_ntb_sched_release(&s, 5);
	g_assert_cmpuint(ncm_ntb_sched_in_flight(&s), ==, 7);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 0), ==, 5);
	/* Closing with nothing open gives nothing to send. */
	g_assert_cmpint(ncm_ntb_sched_close(&s, 100, 0), ==, 5);
	g_assert_cmpint(ncm_ntb_sched_close(&s, 100, 0), ==, -1);
}

/* An NTB with data goes out FLUSH_US after it opened; an empty one never
 * asks the event thread to wake (it would spin). */
static void
test_flush_timer(void)
{
	NcmNtbSched s;

	ncm_ntb_sched_init(&s, 4, NTB, FLUSH_US, 0, 1000);
	g_assert_cmpint(ncm_ntb_sched_deadline(&s, 0, 1000), ==, G_MAXINT64);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 1000), >=, 0);
	g_assert_cmpint(ncm_ntb_sched_deadline(&s, 0, 1000), ==, G_MAXINT64);
	g_assert_false(ncm_ntb_sched_flush_due(&s, 0, 1000 + FLUSH_US));
	g_assert_cmpint(ncm_ntb_sched_deadline(&s, 3, 1500), ==, 1000 + FLUSH_US);
	g_assert_false(ncm_ntb_sched_flush_due(&s, 3, 1000 + FLUSH_US - 1));
	g_assert_true(ncm_ntb_sched_flush_due(&s, 3, 1000 + FLUSH_US));
	ncm_ntb_sched_close(&s, 300, 1000 + FLUSH_US);
	g_assert_false(ncm_ntb_sched_flush_due(&s, 3, 1000 + 10 * FLUSH_US));
}

/* 1 MB/s: the bucket holds two NTBs; the third waits for its tokens,
 * held NTBs leave in order, and the deadline says when. */
static void
test_pacing(void)
{
	const guint64 pace = 1000000;
	NcmNtbSched s;
	int a, b, c, d;
	gint64 due, now = 0;

	ncm_ntb_sched_init(&s, 8, NTB, FLUSH_US, pace, now);
	/* The bucket starts empty: wait for the first tokens. */
	a = ncm_ntb_sched_open(&s, now);
	g_assert_cmpint(ncm_ntb_sched_close(&s, NTB, now), ==, -1);
	g_assert_cmpuint(ncm_ntb_sched_held(&s), ==, 1);
	g_assert_cmpint(ncm_ntb_sched_next(&s, now), ==, -1);
	due = ncm_ntb_sched_pace_deadline(&s, now);
	g_assert_cmpint(due, >, now);
	g_assert_cmpint(due, <=, now + 2);
	g_assert_cmpint(ncm_ntb_sched_next(&s, due), ==, a);
	/* Its transfer completes: four NTBs more may queue (the floor of
	 * test_queue_limit()'s limit). */
	ncm_ntb_sched_release(&s, (unsigned)a);

	/* Tokens for two NTBs after a long idle: the burst cap. */
	now = 10 * G_USEC_PER_SEC;
	b = ncm_ntb_sched_open(&s, now);
	g_assert_cmpint(ncm_ntb_sched_close(&s, NTB, now), ==, b);
	c = ncm_ntb_sched_open(&s, now);
	g_assert_cmpint(ncm_ntb_sched_close(&s, NTB, now), ==, c);
	d = ncm_ntb_sched_open(&s, now);
	g_assert_cmpint(ncm_ntb_sched_close(&s, NTB, now), ==, -1);
	/* The two NTBs emptied the bucket: the third goes with the next token. */
	due = ncm_ntb_sched_deadline(&s, 0, now);
	g_assert_cmpint(due, >, now);
	g_assert_cmpint(due, <=, now + 2);
	g_assert_cmpint(ncm_ntb_sched_next(&s, now), ==, -1);
	/* A fourth closed once tokens have come still waits behind the third:
	 * NTBs leave in the order they were packed. */
	now = due;
	g_assert_cmpint(ncm_ntb_sched_open(&s, now), >=, 0);
	g_assert_cmpint(ncm_ntb_sched_close(&s, 100, now), ==, -1);
	g_assert_cmpuint(ncm_ntb_sched_held(&s), ==, 2);
	g_assert_cmpint(ncm_ntb_sched_next(&s, now), ==, d);
	/* The third left the bucket an NTB in debt: the fourth waits for it. */
	g_assert_cmpint(ncm_ntb_sched_next(&s, now), ==, -1);
	due = ncm_ntb_sched_deadline(&s, 0, now);
	g_assert_cmpint(due, >=, now + (gint64)(NTB - 1) * G_USEC_PER_SEC / (gint64)pace);
	g_assert_cmpint(due, <=, now + (gint64)(NTB + 2) * G_USEC_PER_SEC / (gint64)pace);
	g_assert_cmpint(ncm_ntb_sched_next(&s, due - 10), ==, -1);
	g_assert_cmpuint(ncm_ntb_sched_held(&s), ==, 1);

	/* Pacing off: what is held goes at once, without waiting for tokens. */
	ncm_ntb_sched_set_pace(&s, 0, due);
	g_assert_cmpint(ncm_ntb_sched_next(&s, due), >=, 0);
	g_assert_cmpuint(ncm_ntb_sched_held(&s), ==, 0);
}

/* Cancel returns held and open slots to the pool: all 4 open again. */
static void
test_cancel(void)
{
	NcmNtbSched s;

	ncm_ntb_sched_init(&s, 4, NTB, FLUSH_US, 1000, 0);
	for (int i = 0; i < 3; i++) {
		g_assert_cmpint(ncm_ntb_sched_open(&s, 0), >=, 0);
		g_assert_cmpint(ncm_ntb_sched_close(&s, NTB, 0), ==, -1);
	}
	g_assert_cmpint(ncm_ntb_sched_open(&s, 0), >=, 0);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 0), >=, 0);
	ncm_ntb_sched_cancel(&s);
	g_assert_cmpuint(ncm_ntb_sched_held(&s), ==, 0);
	g_assert_cmpint(ncm_ntb_sched_open_slot(&s), ==, -1);
	for (int i = 0; i < 4; i++) {
		g_assert_cmpint(ncm_ntb_sched_open(&s, 0), >=, 0);
		ncm_ntb_sched_cancel(&s);
	}
	g_assert_cmpuint(s.n_free, ==, 4);
}

/* Issue 16: after a long idle, (now - then) * pace overflowed and the
 * bucket went negative, holding the next NTB for hours. Idle only fills it. */
static void
test_pacing_long_idle(void)
{
	const guint64 pace = 40 * 1000 * 1000;      /* 40 MB/s */
	const gint64 idle = (gint64)100 * 24 * 3600 * G_USEC_PER_SEC;   /* 100 days */
	NcmNtbSched s;
	int slot;

	ncm_ntb_sched_init(&s, 4, NTB, FLUSH_US, pace, 0);
	slot = ncm_ntb_sched_open(&s, idle);
	g_assert_cmpint(ncm_ntb_sched_close(&s, NTB, idle), ==, slot);
	/* The bucket was full (200 KB, 5 ms of 40 MB/s), no more. */
	g_assert_cmpint(s.tokens, ==, (gint64)(pace / 200) - NTB);
	/* And again after an idle that ends in the far future. */
	slot = ncm_ntb_sched_open(&s, G_MAXINT64 / 2);
	g_assert_cmpint(ncm_ntb_sched_close(&s, NTB, G_MAXINT64 / 2), ==, slot);
	g_assert_cmpint(s.tokens, ==, (gint64)(pace / 200) - NTB);
}

/* Callers read the clock before they take the TX lock: a time older than
 * the last refill's must not move the bucket's clock back, which credited
 * the time in between twice and let more than the rate through. */
static void
test_pacing_stale_clock(void)
{
	const guint64 pace = 1000000;   /* 1 byte per us */
	const gint64 t = 10 * G_USEC_PER_SEC;
	NcmNtbSched s;
	gint64 due;

	ncm_ntb_sched_init(&s, 8, NTB, FLUSH_US, pace, 0);
	/* A full bucket (two NTBs) goes at t; the third is held, then sent in
	 * debt at t + 1000. */
	for (int i = 0; i < 3; i++) {
		g_assert_cmpint(ncm_ntb_sched_open(&s, t), >=, 0);
		ncm_ntb_sched_close(&s, NTB, t);
	}
	g_assert_cmpint(ncm_ntb_sched_open(&s, t), >=, 0);
	g_assert_cmpint(ncm_ntb_sched_close(&s, NTB, t), ==, -1);
	g_assert_cmpint(ncm_ntb_sched_next(&s, t + 1000), >=, 0);
	due = ncm_ntb_sched_pace_deadline(&s, t + 1000);
	g_assert_cmpint(due, ==, t + 1000 + (NTB - 1000 + 1) + 1);
	/* A caller that read the clock at t + 500 changes nothing. */
	g_assert_cmpint(ncm_ntb_sched_next(&s, t + 500), ==, -1);
	g_assert_cmpint(ncm_ntb_sched_pace_deadline(&s, t + 1000), ==, due);
	g_assert_cmpint(ncm_ntb_sched_next(&s, due - 2), ==, -1);
	g_assert_cmpint(ncm_ntb_sched_next(&s, due), >=, 0);
}

/* 256 KiB in flight: 16 of f_ncm's 16 KiB NTBs, never fewer than 8, never more than 16. */
/* Opening on an idle pipe arms the flush timer at once, unless the sender
 * promised to flush; with transfers in flight their completions arm it. */
static void
test_wake_on_open(void)
{
	NcmNtbSched s;

	ncm_ntb_sched_init(&s, 4, NTB, FLUSH_US, 0, 0);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 0), >=, 0);
	g_assert_true(ncm_ntb_sched_wake_on_open(&s, false));
	g_assert_false(ncm_ntb_sched_wake_on_open(&s, true));
	g_assert_cmpint(ncm_ntb_sched_close(&s, 100, 0), >=, 0);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 0), >=, 0);
	g_assert_false(ncm_ntb_sched_wake_on_open(&s, false));
	g_assert_false(ncm_ntb_sched_wake_on_open(&s, true));
}

static void
test_default_slots(void)
{
	g_assert_cmpuint(ncm_ntb_sched_default_slots(NTB), ==, 16);
	g_assert_cmpuint(ncm_ntb_sched_default_slots(2048), ==, 16);
	g_assert_cmpuint(ncm_ntb_sched_default_slots(0), ==, 16);
	g_assert_cmpuint(ncm_ntb_sched_default_slots(24576), ==, 10);
	g_assert_cmpuint(ncm_ntb_sched_default_slots(32768), ==, 8);
	g_assert_cmpuint(ncm_ntb_sched_default_slots(65536), ==, 8);
	g_assert_cmpuint(ncm_ntb_sched_default_slots(1u << 20), ==, 8);
}

/*
 * Paced at 6 MB/s, no more than 16 ms of it (96 kB) queues, held or in
 * flight: the slot that would pass it is refused until a completion frees
 * bytes; unpaced, only the pool limits. Cancelled and failed slots leave
 * the count.
 */
static void
test_queue_limit(void)
{
	const size_t ntb = 16384;
	NcmNtbSched s;
	int slot, sent[8];
	guint n = 0;

	ncm_ntb_sched_init(&s, 8, ntb, FLUSH_US, 0, 0);
	g_assert_cmpuint(ncm_ntb_sched_queue_limit(&s), ==, G_MAXSIZE);
	for (guint i = 0; i < 8; i++) {
		g_assert_cmpint(ncm_ntb_sched_open(&s, 0), >=, 0);
		g_assert_cmpint(ncm_ntb_sched_close(&s, ntb, 0), >=, 0);
	}
	g_assert_cmpuint(s.queued, ==, 8 * ntb);
	for (guint i = 0; i < 8; i++)
		ncm_ntb_sched_release(&s, i);
	g_assert_cmpuint(s.queued, ==, 0);

	ncm_ntb_sched_init(&s, 8, ntb, FLUSH_US, 6000000, 0);
	g_assert_cmpuint(ncm_ntb_sched_queue_limit(&s), ==, 96000);
	/* The pacer's bucket starts with two NTBs' worth after a while. */
	for (gint64 now = 1000000;; now += 1) {
		slot = ncm_ntb_sched_open(&s, now);
		if (slot < 0)
			break;
		slot = ncm_ntb_sched_close(&s, ntb, now);
		if (slot < 0)
			slot = ncm_ntb_sched_next(&s, now + 1000000);
		g_assert_cmpint(slot, >=, 0);
		sent[n++] = slot;
		g_assert_cmpuint(n, <=, 8);
	}
	/* 96000 / 16384: the sixth NTB passes the limit, the seventh waits. */
	g_assert_cmpuint(n, ==, 6);
	g_assert_cmpuint(s.queued, ==, 6 * ntb);
	ncm_ntb_sched_release(&s, (unsigned)sent[0]);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 2000000), >=, 0);
	ncm_ntb_sched_cancel(&s);
	g_assert_cmpuint(s.queued, ==, 5 * ntb);
	/* A slower rate: never below four NTBs. */
	ncm_ntb_sched_set_pace(&s, 100000, 0);
	g_assert_cmpuint(ncm_ntb_sched_queue_limit(&s), ==, 4 * ntb);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 3000000), ==, -1);
	for (guint i = 1; i < 6; i++)
		ncm_ntb_sched_release(&s, (unsigned)sent[i]);
	g_assert_cmpuint(s.queued, ==, 0);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 3000000), >=, 0);
}

/*
 * A full-speed bus (1.5 MB/s) bounds the queue unpaced: 16 ms of it is
 * 24000 bytes, above the floor of four 3200-byte NTBs, so eight go and the
 * ninth waits; a pacing rate takes over when its limit is the lower.
 */
static void
test_bus_rate(void)
{
	const size_t ntb = 3200; /* TinyUSB's default NTB size */
	NcmNtbSched s;
	int sent[16];
	guint n = 0;

	ncm_ntb_sched_init(&s, 16, ntb, FLUSH_US, 0, 0);
	ncm_ntb_sched_set_bus_rate(&s, 1500000);
	g_assert_cmpuint(ncm_ntb_sched_queue_limit(&s), ==, 24000);
	while (ncm_ntb_sched_open(&s, 0) >= 0) {
		g_assert_cmpuint(n, <, 16);
		sent[n] = ncm_ntb_sched_close(&s, ntb, 0);
		g_assert_cmpint(sent[n++], >=, 0);
	}
	/* 24000 / 3200: the eighth NTB passes the limit, the ninth waits, with
	 * eight of the sixteen slots still free. */
	g_assert_cmpuint(n, ==, 8);
	g_assert_cmpuint(s.n_free, ==, 8);
	ncm_ntb_sched_release(&s, (unsigned)sent[0]);
	g_assert_cmpint(ncm_ntb_sched_open(&s, 0), >=, 0);
	ncm_ntb_sched_cancel(&s);

	/* Paced below the bus: the pacing rate's limit (four NTBs here). */
	ncm_ntb_sched_set_pace(&s, 100000, 0);
	g_assert_cmpuint(ncm_ntb_sched_queue_limit(&s), ==, 4 * ntb);
	/* Paced above it: the bus's. */
	ncm_ntb_sched_set_pace(&s, 6000000, 0);
	g_assert_cmpuint(ncm_ntb_sched_queue_limit(&s), ==, 24000);
	/* No bus bound (high speed and above): the pool alone, as before. */
	ncm_ntb_sched_set_pace(&s, 0, 0);
	ncm_ntb_sched_set_bus_rate(&s, 0);
	g_assert_cmpuint(ncm_ntb_sched_queue_limit(&s), ==, G_MAXSIZE);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/ntb-sched/slots", test_slots);
	g_test_add_func("/ntb-sched/flush-timer", test_flush_timer);
	g_test_add_func("/ntb-sched/pacing", test_pacing);
	g_test_add_func("/ntb-sched/pacing-long-idle", test_pacing_long_idle);
	g_test_add_func("/ntb-sched/pacing-stale-clock", test_pacing_stale_clock);
	g_test_add_func("/ntb-sched/cancel", test_cancel);
	g_test_add_func("/ntb-sched/default-slots", test_default_slots);
	g_test_add_func("/ntb-sched/wake-on-open", test_wake_on_open);
	g_test_add_func("/ntb-sched/queue-limit", test_queue_limit);
	g_test_add_func("/ntb-sched/bus-rate", test_bus_rate);
	return g_test_run();
}
