/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-retry.h: when failed IN transfers go back to the device: a delay that doubles per round, and the budget of failures in a row (pure C). */
#pragma once

/*
 * A device that fails every IN transfer (STALL, babble, a transfer error)
 * must neither be retried at full speed nor for ever. Failures come in
 * rounds: the first failure with no round pending starts one, and every
 * transfer that fails before the round is due waits for the same moment,
 * so a pipe with 16 transfers queued backs off as one. Each round waits
 * twice as long as the last, from NCM_RETRY_FIRST_US up to
 * NCM_RETRY_MAX_US; a completed transfer starts the schedule over.
 *
 * After NCM_RETRY_BUDGET failures in a row the pipe is given up. A round
 * holds at least one failure, so a device that fails everything is
 * reported within NCM_RETRY_WORST_US of its first failure, plus the time
 * the device itself takes to fail each round.
 *
 * No clock of its own: every call takes @now in microseconds. The caller
 * serialises the calls (libncm: libusb's event lock).
 */

#include <stdbool.h>
#include <stdint.h>

#define NCM_RETRY_FIRST_US 1000
#define NCM_RETRY_MAX_US 128000
#define NCM_RETRY_BUDGET 64
/* The waits of rounds 1..NCM_RETRY_BUDGET-1 when each holds one failure:
 * 1, 2, ... 64 ms, then 56 rounds at the cap: 7.295 s. */
#define NCM_RETRY_WORST_US (127000 + (NCM_RETRY_BUDGET - 8) * (int64_t)NCM_RETRY_MAX_US)

typedef struct {
	unsigned failures;   /* in a row */
	int64_t first_at;    /* when the first of them failed */
	int64_t delay_us;    /* the last round's wait; 0 after a success */
	int64_t due;         /* when the pending round's transfers go back; 0 = none pending */
} NcmRetry;

typedef enum {
	NCM_RETRY_AGAIN,     /* park the transfer until ncm_retry_due() */
	NCM_RETRY_GIVE_UP,   /* this failure spent the budget: report it, drop the transfer */
	NCM_RETRY_DROP,      /* the budget was spent before: drop the transfer quietly */
} NcmRetryVerdict;

void ncm_retry_init(NcmRetry *r);
/* A transfer failed at @now: counts it and starts a round unless one is pending. */
NcmRetryVerdict ncm_retry_failed(NcmRetry *r, int64_t now);
/* A transfer completed: the budget and the delay start over (a pending round stays). */
void ncm_retry_succeeded(NcmRetry *r);
/* When the transfers parked now may go back: the pending round's due
 * time, or 0 (at once) when none is pending, as for a transfer whose
 * round was over before it was ready (a STALL is cleared first). */
int64_t ncm_retry_deadline(const NcmRetry *r);
/* True when parked transfers may go back at @now; the round is then over. */
bool ncm_retry_take(NcmRetry *r, int64_t now);
