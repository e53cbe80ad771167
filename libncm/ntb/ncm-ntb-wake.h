/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-wake.h: when a producer refused TX room hears writable: at the OUT completion that frees it, or once per event batch (pure C). */
#pragma once

/*
 * A producer that got NCM_SEND_WOULD_BLOCK waits for the sink's writable,
 * so every refusal must be followed by exactly one writable once an OUT
 * completion frees a slot: never none (the producer would wait for good),
 * and no more than needed (each costs the producer a round: lwIP takes its
 * core lock, drains its queue, flushes).
 *
 * Told per completion, a producer whose queue outlasts the pool refills
 * one slot per call, because controllers complete OUT transfers in bursts
 * (dummy_hcd on its 1 ms frame timer, real ones under interrupt
 * moderation). Told per batch, at the end of the libusb event batch that
 * reaped them (the device's timeout, beside receive_done), it refills them
 * all in one call. That suits a producer that refills inside the callback
 * (lwIP's netif); one that only wakes another thread (the TAP reader)
 * refills later that way, and lost upload speed (tests/bench/RESULTS.md,
 * 2026-12-04), so each sink chooses (ncm_device_set_writable_batched()).
 *
 * Locking is the caller's: refused() and completed() under the device's
 * tx_lock; completed() and batch_end() under libusb's event lock (both run
 * on whichever thread handles events), which serialises @pending.
 */

#include <stdbool.h>

typedef struct {
	bool refused;   /* a producer was refused since a completion last freed room */
	bool pending;   /* room came back for a refused producer; batch_end tells it */
} NcmNtbWake;

static inline void
ncm_ntb_wake_init(NcmNtbWake *w)
{
	w->refused = false;
	w->pending = false;
}

/* A producer got NCM_SEND_WOULD_BLOCK. */
static inline void
ncm_ntb_wake_refused(NcmNtbWake *w)
{
	w->refused = true;
}

/* An OUT transfer completed and freed its slot. Returns whether to call
 * writable now; when @batched, a refusal is left for batch_end instead. */
static inline bool
ncm_ntb_wake_completed(NcmNtbWake *w, bool batched)
{
	bool was = w->refused;

	w->refused = false;
	if (!was || !batched)
		return was;
	w->pending = true;
	return false;
}

/* The event batch ended: whether to call writable now (at most once per
 * batch, whatever number of completions freed room in it). */
static inline bool
ncm_ntb_wake_batch_end(NcmNtbWake *w)
{
	bool was = w->pending;

	w->pending = false;
	return was;
}
