/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-retry.c: the IN transfers' retry rounds and failure budget (see ncm-ntb-retry.h). */
#include <string.h>

#include "ncm-ntb-retry.h"

void
ncm_retry_init(NcmRetry *r)
{
	memset(r, 0, sizeof(*r));
}

NcmRetryVerdict
ncm_retry_failed(NcmRetry *r, int64_t now)
{
	if (r->failures == 0)
		r->first_at = now;
	if (r->failures < NCM_RETRY_BUDGET)
		r->failures++;
	else
		return NCM_RETRY_DROP;
	if (r->failures == NCM_RETRY_BUDGET)
		return NCM_RETRY_GIVE_UP;
	if (!r->due) {
		r->delay_us = r->delay_us ? r->delay_us * 2 : NCM_RETRY_FIRST_US;
		if (r->delay_us > NCM_RETRY_MAX_US)
			r->delay_us = NCM_RETRY_MAX_US;
		r->due = now + r->delay_us;
	}
	return NCM_RETRY_AGAIN;
}

void
ncm_retry_succeeded(NcmRetry *r)
{
	r->failures = 0;
	r->delay_us = 0;
}

int64_t
ncm_retry_deadline(const NcmRetry *r)
{
	return r->due;
}

bool
ncm_retry_take(NcmRetry *r, int64_t now)
{
	if (now < r->due)
		return false;
	r->due = 0;
	return true;
}
