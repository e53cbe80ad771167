/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-timewait.c: at most NCM_LWIP_TIME_WAIT_MAX connections in TIME_WAIT; a peer's new connection drops the oldest past that. */
#include "lwip/priv/tcp_priv.h"

#include "ncm-lwip-hooks.h"

/*
 * A connection our side closes first waits 2 * TCP_MSL (120 s) in
 * TIME_WAIT. lwIP bounds them only through its pcb pool, which
 * MEMP_MEM_MALLOC turns into malloc: a peer that opens connections to a
 * server that closes first (an HTTP/1.0 server, an echo that hangs up)
 * leaves a pcb behind per connection, 120 s each, and tcp_input() walks
 * that list for every segment that matches no live connection. lwIP's
 * own answer, when its pool is exhausted, is to drop the oldest TIME_WAIT
 * pcb (tcp_kill_timewait() in tcp_alloc()); Linux likewise caps them
 * (tcp_max_tw_buckets). Every connection a peer opens starts with a SYN
 * to a listener, so trimming there keeps the list at the cap. A pcb
 * dropped early only loses TIME_WAIT's protection against a late segment
 * of its old connection, as under lwIP's own pool pressure.
 */

static u64_t evictions; /* atomic */

/* Core lock held. */
void
ncm_lwip_timewait_trim(void)
{
	struct tcp_pcb *oldest = NULL;
	unsigned n = 0;

	for (struct tcp_pcb *pcb = tcp_tw_pcbs; pcb != NULL; pcb = pcb->next) {
		n++;
		/* New pcbs are pushed at the head: ties go to the later one. */
		if (oldest == NULL || (u32_t)(tcp_ticks - pcb->tmr) >= (u32_t)(tcp_ticks - oldest->tmr))
			oldest = pcb;
	}
	if (n < NCM_LWIP_TIME_WAIT_MAX)
		return;
	/* A TIME_WAIT pcb is freed without a RST. */
	tcp_abort(oldest);
	__atomic_add_fetch(&evictions, 1, __ATOMIC_RELAXED);
}

u64_t
ncm_lwip_timewait_evictions(void)
{
	return __atomic_load_n(&evictions, __ATOMIC_RELAXED);
}
