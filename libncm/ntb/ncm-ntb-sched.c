/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-sched.c: TX slot pool, flush timer and pacing (see ncm-ntb-sched.h). */
#include <string.h>

#include "ncm-ntb-sched.h"

#define USEC_PER_SEC 1000000
/* -D overrides these for a before/after comparison (tests/bench/ab.sh). */
#ifndef DEFAULT_BYTES_IN_FLIGHT
#define DEFAULT_BYTES_IN_FLIGHT (256u * 1024u)
#endif
#define DEFAULT_MIN_SLOTS 8u
#ifndef DEFAULT_MAX_SLOTS
#define DEFAULT_MAX_SLOTS 16u
#endif

unsigned
ncm_ntb_sched_default_slots(size_t ntb_size)
{
	size_t n = ntb_size ? DEFAULT_BYTES_IN_FLIGHT / ntb_size : DEFAULT_MAX_SLOTS;

	if (n < DEFAULT_MIN_SLOTS)
		return DEFAULT_MIN_SLOTS;
	return n > DEFAULT_MAX_SLOTS ? DEFAULT_MAX_SLOTS : (unsigned)n;
}

void
ncm_ntb_sched_init(NcmNtbSched *s, unsigned n_slots, size_t ntb_size, int64_t flush_us,
		   uint64_t pace, int64_t now)
{
	memset(s, 0, sizeof(*s));
	if (n_slots > NCM_NTB_SCHED_MAX_SLOTS)
		n_slots = NCM_NTB_SCHED_MAX_SLOTS;
	s->n_slots = n_slots;
	for (unsigned i = 0; i < n_slots; i++)
		s->free[i] = i;
	s->n_free = n_slots;
	s->open = -1;
	s->flush_us = flush_us;
	s->ntb_size = ntb_size;
	s->pace = pace;
	s->tokens_at = now;
}

static void
refill(NcmNtbSched *s, int64_t now)
{
	int64_t burst = (int64_t)(2 * s->ntb_size), elapsed, full_us;

	/* Callers read the clock before taking the TX lock, so a later caller
	 * may bring an earlier time: moving tokens_at back would credit the
	 * time in between twice, and the pacer let up to 20 % more than its rate
	 * through (tests/bench/RESULTS.md, session 19). */
	if (!s->pace || now <= s->tokens_at)
		return;
	if ((int64_t)(s->pace / 200) > burst)
		burst = (int64_t)(s->pace / 200);
	/* Past the time that fills the bucket, more idle adds nothing; and
	 * elapsed * pace would overflow after days of it. */
	elapsed = now > s->tokens_at ? now - s->tokens_at : 0;
	full_us = (burst - s->tokens) * USEC_PER_SEC / (int64_t)s->pace + 1;
	if (elapsed > full_us)
		elapsed = full_us;
	s->tokens += elapsed * (int64_t)s->pace / USEC_PER_SEC;
	if (s->tokens > burst)
		s->tokens = burst;
	s->tokens_at = now;
}

/* NCM_NTB_SCHED_QUEUE_US of @rate, at least NCM_NTB_SCHED_QUEUE_MIN_NTBS NTBs. */
static size_t
limit_for(const NcmNtbSched *s, uint64_t rate)
{
	uint64_t bytes = rate * NCM_NTB_SCHED_QUEUE_US / USEC_PER_SEC;
	size_t floor = NCM_NTB_SCHED_QUEUE_MIN_NTBS * s->ntb_size;

	return bytes > floor ? (size_t)bytes : floor;
}

size_t
ncm_ntb_sched_queue_limit(const NcmNtbSched *s)
{
	size_t limit = s->pace ? limit_for(s, s->pace) : SIZE_MAX;

	if (s->bus_rate && limit_for(s, s->bus_rate) < limit)
		limit = limit_for(s, s->bus_rate);
	return limit;
}

void
ncm_ntb_sched_set_bus_rate(NcmNtbSched *s, uint64_t bytes_per_sec)
{
	s->bus_rate = bytes_per_sec;
}

int
ncm_ntb_sched_open(NcmNtbSched *s, int64_t now)
{
	if (s->open >= 0)
		return s->open;
	/* Something queued comes back (a completion, the pacer's timer) and
	 * wakes the producer this turns away. */
	if (s->n_free == 0 || (s->queued && s->queued >= ncm_ntb_sched_queue_limit(s)))
		return -1;
	s->open = (int)s->free[--s->n_free];
	s->open_since = now;
	return s->open;
}

int
ncm_ntb_sched_close(NcmNtbSched *s, size_t len, int64_t now)
{
	int slot = s->open;

	if (slot < 0)
		return -1;
	s->open = -1;
	s->len[slot] = len;
	s->queued += len;
	if (s->pace) {
		refill(s, now);
		/* Behind held ones, or out of tokens: in order, never ahead. */
		if (s->n_held || s->tokens <= 0) {
			s->held[(s->held_head + s->n_held) % s->n_slots] = (unsigned)slot;
			s->n_held++;
			return -1;
		}
	}
	s->tokens -= (int64_t)len;
	return slot;
}

int
ncm_ntb_sched_next(NcmNtbSched *s, int64_t now)
{
	unsigned slot;

	refill(s, now);
	if (!s->n_held || (s->pace && s->tokens <= 0))
		return -1;
	slot = s->held[s->held_head];
	s->held_head = (s->held_head + 1) % s->n_slots;
	s->n_held--;
	s->tokens -= (int64_t)s->len[slot];
	return (int)slot;
}

void
ncm_ntb_sched_release(NcmNtbSched *s, unsigned slot)
{
	s->queued -= s->len[slot] < s->queued ? s->len[slot] : s->queued;
	s->len[slot] = 0;
	if (s->n_free < s->n_slots)
		s->free[s->n_free++] = slot;
}

bool
ncm_ntb_sched_flush_due(const NcmNtbSched *s, unsigned datagrams, int64_t now)
{
	return s->open >= 0 && datagrams > 0 && now >= s->open_since + s->flush_us;
}

int64_t
ncm_ntb_sched_pace_deadline(NcmNtbSched *s, int64_t now)
{
	refill(s, now);
	if (!s->pace || s->tokens > 0)
		return now;
	return now + (-s->tokens + 1) * USEC_PER_SEC / (int64_t)s->pace + 1;
}

int64_t
ncm_ntb_sched_deadline(NcmNtbSched *s, unsigned datagrams, int64_t now)
{
	int64_t next = INT64_MAX;

	if (s->open >= 0 && datagrams > 0)
		next = s->open_since + s->flush_us;
	if (s->n_held) {
		int64_t pace = ncm_ntb_sched_pace_deadline(s, now);

		if (pace < next)
			next = pace;
	}
	return next;
}

void
ncm_ntb_sched_set_pace(NcmNtbSched *s, uint64_t pace, int64_t now)
{
	s->pace = pace;
	s->tokens = 0;
	s->tokens_at = now;
}

void
ncm_ntb_sched_cancel(NcmNtbSched *s)
{
	while (s->n_held) {
		ncm_ntb_sched_release(s, s->held[s->held_head]);
		s->held_head = (s->held_head + 1) % s->n_slots;
		s->n_held--;
	}
	if (s->open >= 0) {
		ncm_ntb_sched_release(s, (unsigned)s->open);
		s->open = -1;
	}
}
