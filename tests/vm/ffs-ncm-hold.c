/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ffs-ncm-hold.c: the holding gadget: host frames drain toward the peer at a fixed rate, and once too many are queued the next ones are held for seconds. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ffs-ncm.h"

/*
 * Field reports describe a gadget that, under unpaced bulk from the host,
 * holds outgoing packets for seconds (256 KB bursts took 12-14 s at p50),
 * and pacing the host to ~90% of its line rate cured it. The model: frames
 * from the host queue toward the peer on a line of --hold's rate; a frame
 * that arrives while more than K are queued is held H ms. The queue is
 * first in, first out, so a held frame holds those behind it.
 *
 * The line is kept on paper: each frame's departure is computed when it
 * arrives, and the queue's length is the number of frames not yet
 * departed by then. The thread that writes them to the TAP only follows
 * that schedule, so its own scheduling (slow under TCG) decides nothing.
 */

#define HOLD_QUEUE 4096u

typedef struct {
	uint8_t data[FRAME_MAX];
	uint16_t len;
	int64_t depart_us;      /* when the line has carried it */
} Queued;

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;  /* guards the block below */
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;
static Queued *ring;
static unsigned head, count;      /* frames the writer has not written yet */
static int64_t line_free_us;      /* when the line takes the next frame */
static int64_t departs[HOLD_QUEUE];  /* departures of the frames on the line, oldest first */
static unsigned dep_head, dep_count;

static int64_t
now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void
sleep_until(int64_t us)
{
	struct timespec t = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
}

/* qlock held: the frames on the line at @now. */
static unsigned
line_queue_locked(int64_t now)
{
	while (dep_count && departs[dep_head] <= now) {
		dep_head = (dep_head + 1) % HOLD_QUEUE;
		dep_count--;
	}
	return dep_count;
}

void
hold_push(const uint8_t *frame, size_t len)
{
	int64_t now = now_us(), start;
	Queued *q;

	if (len > FRAME_MAX)
		len = FRAME_MAX;
	pthread_mutex_lock(&qlock);
	if (count == HOLD_QUEUE || line_queue_locked(now) == HOLD_QUEUE) {
		pthread_mutex_unlock(&qlock);
		COUNT(st_hold_drops, 1);
		return;
	}
	start = line_free_us > now ? line_free_us : now;
	if (dep_count > prof.hold_after) {
		start = start > now + (int64_t)prof.hold_ms * 1000 ? start
								   : now + (int64_t)prof.hold_ms * 1000;
		COUNT(st_holds, 1);
	}
	line_free_us = start + (int64_t)len * 8 * 1000 / (int64_t)prof.drain_kbit;
	departs[(dep_head + dep_count++) % HOLD_QUEUE] = line_free_us;
	q = &ring[(head + count) % HOLD_QUEUE];
	memcpy(q->data, frame, len);
	q->len = (uint16_t)len;
	q->depart_us = line_free_us;
	count++;
	pthread_cond_signal(&qcond);
	pthread_mutex_unlock(&qlock);
}

/* Only this thread takes from the head; pushers write behind it. */
static void *
drain_thread(void *arg)
{
	for (;;) {
		Queued *q;

		pthread_mutex_lock(&qlock);
		while (!count)
			pthread_cond_wait(&qcond, &qlock);
		q = &ring[head];
		pthread_mutex_unlock(&qlock);
		sleep_until(q->depart_us);
		tap_write(q->data, q->len);
		pthread_mutex_lock(&qlock);
		head = (head + 1) % HOLD_QUEUE;
		count--;
		pthread_mutex_unlock(&qlock);
	}
	return arg;
}

void
hold_start(void)
{
	pthread_t th;

	ring = calloc(HOLD_QUEUE, sizeof(*ring));
	if (!ring)
		die("no memory for the hold queue");
	say("holding gadget: draining at %u kbit/s; past %u queued frames the next are held %u ms",
	    prof.drain_kbit, prof.hold_after, prof.hold_ms);
	pthread_create(&th, NULL, drain_thread, NULL);
}
