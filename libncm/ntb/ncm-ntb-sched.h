/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-sched.h: when TX NTBs go out: the slot pool, the last-resort flush timer and the pacing token bucket (pure C). */
#pragma once

/*
 * The driver packs datagrams into one open NTB at a time, in one of a
 * fixed pool of slots (one bulk-OUT transfer each). This module decides,
 * without libusb or a clock of its own (every call takes @now in
 * microseconds), which slot to pack into next, whether a closed NTB goes
 * out now or waits for the pacer, and when the driver must look again.
 * The caller serialises all calls (the device's tx_lock).
 *
 * Pacing is a token bucket in bytes: some gadgets hold packets for seconds
 * under unpaced bulk from the host, and capping the sender at ~90% of the
 * link rate avoids it. The bucket holds two NTBs or 5 ms of the rate,
 * whichever is more, so it never starves the link.
 *
 * A paced device also has its queue cut to NCM_NTB_SCHED_QUEUE_US of the
 * rate (ncm_ntb_sched_queue_limit()). The pool alone lets its slots fill,
 * 1 MiB with 8 transfers of 128 KiB: 170 ms at 50 Mbit/s, which every
 * frame sent behind a bulk upload waits, a DNS query or an ssh keystroke
 * as much as the upload's next segment. Unpaced, the pool stays the only
 * limit: a limit from the rate measured at completions cost the emulated
 * gadgets a fifth of their upload and their fairness at 8 devices, where
 * a transfer's completion time follows the emulation's scheduling, not
 * its size (tests/bench/RESULTS.md, session 25).
 *
 * Below high speed the bus itself caps the queue the same way
 * (ncm_ntb_sched_set_bus_rate()): a full-speed device (a microcontroller's
 * NCM, TinyUSB's or Zephyr's; one behind a USB 1.1 hub) moves at most
 * ~1.2 MB/s, so the pool's 256 KiB to 1 MiB were up to a second that
 * every frame behind an upload waited, paced or not. At high speed and
 * above 16 ms of the bus is as much as the pool or more, so nothing changes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NCM_NTB_SCHED_MAX_SLOTS 64
/* What may queue for a paced device: this long of the rate, at least
 * NCM_NTB_SCHED_QUEUE_MIN_NTBS NTBs. */
#define NCM_NTB_SCHED_QUEUE_US 16000
#define NCM_NTB_SCHED_QUEUE_MIN_NTBS 4u

/*
 * The pool's default size for NTBs of @ntb_size bytes: as many as hold
 * 256 KiB, at least 8 and at most 16. A bulk sender that finds the pool full
 * sleeps and is woken again, which costs syscalls and context switches on
 * two threads; 16 of f_ncm's 16 KiB NTBs cut those per MB by about a quarter
 * against 8 (tests/bench/RESULTS.md, issue 15). Bytes in flight, not slots,
 * are what delays a frame queued behind them, so larger NTBs get no more.
 */
unsigned ncm_ntb_sched_default_slots(size_t ntb_size);

typedef struct {
	unsigned n_slots;
	unsigned free[NCM_NTB_SCHED_MAX_SLOTS];   /* stack of free slot indices */
	unsigned n_free;
	unsigned held[NCM_NTB_SCHED_MAX_SLOTS];   /* ring of closed slots the pacer holds */
	unsigned held_head;
	unsigned n_held;
	size_t len[NCM_NTB_SCHED_MAX_SLOTS];      /* a closed slot's bytes, 0 once released */
	size_t queued;            /* the bytes of closed slots not yet released: held or in flight */
	int open;                 /* slot being packed, or -1 */
	int64_t open_since;
	int64_t flush_us;         /* an open NTB with data goes out after this long */
	size_t ntb_size;
	uint64_t pace;            /* bytes/s, 0 = off */
	uint64_t bus_rate;        /* bytes/s the bus carries when it bounds the queue, else 0 */
	int64_t tokens;           /* bytes the pacer may send now (may go negative) */
	int64_t tokens_at;        /* when tokens were last refilled */
} NcmNtbSched;

void ncm_ntb_sched_init(NcmNtbSched *s, unsigned n_slots, size_t ntb_size, int64_t flush_us,
			uint64_t pace, int64_t now);

/* A slot to pack the next NTB into, now open; -1 when every slot is in
 * flight or held, or a paced device's queue is at its limit (the producer
 * must wait for a completion). */
int ncm_ntb_sched_open(NcmNtbSched *s, int64_t now);

/* The bytes that may queue (held and in flight) before open refuses:
 * NCM_NTB_SCHED_QUEUE_US of the pacing rate or of the bus rate, whichever
 * is lower, at least NCM_NTB_SCHED_QUEUE_MIN_NTBS NTBs; SIZE_MAX with
 * neither. */
size_t ncm_ntb_sched_queue_limit(const NcmNtbSched *s);

/* The bus's rate in bytes/s, for a bus slow enough that the pool would
 * queue far more than NCM_NTB_SCHED_QUEUE_US of it (0 = no such bound). */
void ncm_ntb_sched_set_bus_rate(NcmNtbSched *s, uint64_t bytes_per_sec);

/* The open slot, or -1. */
static inline int
ncm_ntb_sched_open_slot(const NcmNtbSched *s)
{
	return s->open;
}

/* Closes the open NTB of @len bytes. Returns its slot when it may go out
 * now (its bytes are charged to the pacer), or -1 when the pacer holds it:
 * it then comes out of ncm_ntb_sched_next(). */
int ncm_ntb_sched_close(NcmNtbSched *s, size_t len, int64_t now);

/* The oldest held NTB the pacer lets go at @now (charged), or -1. */
int ncm_ntb_sched_next(NcmNtbSched *s, int64_t now);

/* A slot is free again: its transfer completed, or its submission failed. */
void ncm_ntb_sched_release(NcmNtbSched *s, unsigned slot);

static inline unsigned
ncm_ntb_sched_held(const NcmNtbSched *s)
{
	return s->n_held;
}

/* Slots submitted and not yet released: neither free, held nor open. */
static inline unsigned
ncm_ntb_sched_in_flight(const NcmNtbSched *s)
{
	return s->n_slots - s->n_free - s->n_held - (s->open >= 0 ? 1u : 0u);
}

/*
 * Whether an NTB just opened needs the driver to arm its last-resort
 * flush now, by interrupting the thread that runs the timers. Not with
 * transfers in flight: their completions make that thread look at the
 * timers anyway, and this NTB cannot reach the device before them. Not
 * when @sender_flushes, the sender's promise to flush every burst itself:
 * for a lone datagram the interrupt is a syscall on the sender's thread
 * and a wake-up beside it, a quarter of a millisecond of the round trip in
 * the VM (tests/bench/RESULTS.md, session 20), for a timer that never fires.
 */
static inline bool
ncm_ntb_sched_wake_on_open(const NcmNtbSched *s, bool sender_flushes)
{
	return !sender_flushes && ncm_ntb_sched_in_flight(s) == 0;
}

/* Whether the open NTB, holding @datagrams, is due for the last-resort flush. */
bool ncm_ntb_sched_flush_due(const NcmNtbSched *s, unsigned datagrams, int64_t now);

/* When the driver must look again (us): the open NTB's flush, when it holds
 * data, and the pacer's next release, when it holds NTBs; INT64_MAX for
 * neither. An empty open NTB has no deadline: there is nothing to flush. */
int64_t ncm_ntb_sched_deadline(NcmNtbSched *s, unsigned datagrams, int64_t now);

/* When the pacer will have a token for the oldest held NTB. */
int64_t ncm_ntb_sched_pace_deadline(NcmNtbSched *s, int64_t now);

/* A new cap (0 = off); the bucket starts empty. With pacing off, held NTBs
 * come out of ncm_ntb_sched_next() at once. */
void ncm_ntb_sched_set_pace(NcmNtbSched *s, uint64_t pace, int64_t now);

/* Held and open NTBs were never submitted: their slots go back to the pool.
 */
void ncm_ntb_sched_cancel(NcmNtbSched *s);
