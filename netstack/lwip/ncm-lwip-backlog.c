/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-backlog.c: a listener whose backlog of half-open connections is full drops its oldest for a new SYN. */
#include "lwip/priv/tcp_priv.h"
#include "lwip/prot/tcp.h"

#include "ncm-lwip-hooks.h"

/*
 * TCP_LISTEN_BACKLOG bounds the half-open (SYN_RCVD) connections of a
 * listener, but lwIP then drops every further SYN, and a half-open
 * connection lives TCP_SYN_RCVD_TIMEOUT (20 s, not configurable). After a
 * burst of spoofed SYNs, whose SYN-ACKs nobody answers, each listener
 * would refuse every real client for 20 s. Here a SYN to a full listener
 * first drops the oldest half-open connection of that listener: the
 * memory stays bounded by the backlog, and a client whose handshake
 * completes before backlog-many newer SYNs arrive gets in during a flood,
 * and at once after it. (What defeats a flood faster than that is SYN
 * cookies, which lwIP does not have.)
 */

static u64_t evictions; /* atomic */

/* Core lock held: the half-open connection of @lpcb that waited longest. */
static struct tcp_pcb *
oldest_half_open(const struct tcp_pcb_listen *lpcb)
{
	struct tcp_pcb *oldest = NULL;

	for (struct tcp_pcb *pcb = tcp_active_pcbs; pcb != NULL; pcb = pcb->next) {
		if (pcb->state != SYN_RCVD || pcb->listener != lpcb)
			continue;
		/* tmr is the slow-timer tick (500 ms) it last heard from its
		 * peer in: for a forged one, its SYN's. Ties go to the later
		 * in the list: new pcbs are pushed at its head, so that is
		 * the older. */
		if (oldest == NULL || (u32_t)(tcp_ticks - pcb->tmr) >= (u32_t)(tcp_ticks - oldest->tmr))
			oldest = pcb;
	}
	return oldest;
}

err_t
ncm_lwip_tcp_inpacket(struct tcp_pcb *pcb, struct tcp_hdr *hdr, u16_t optlen, u16_t opt1len,
		      u8_t *opt2, struct pbuf *p)
{
	struct tcp_pcb_listen *lpcb = (struct tcp_pcb_listen *)pcb;
	struct tcp_pcb *victim;

	(void)optlen, (void)opt1len, (void)opt2, (void)p;
	if (pcb->state != LISTEN || (TCPH_FLAGS(hdr) & (TCP_SYN | TCP_ACK | TCP_RST)) != TCP_SYN)
		return ERR_OK;
	/* Every connection a peer opens passes here first. */
	ncm_lwip_timewait_trim();
	if (lpcb->accepts_pending < lpcb->backlog)
		return ERR_OK;
	victim = oldest_half_open(lpcb);
	if (victim != NULL) {
		/* No RST: its SYN most likely came from a forged address. */
		tcp_abandon(victim, 0);
		__atomic_add_fetch(&evictions, 1, __ATOMIC_RELAXED);
	}
	return ERR_OK;
}

u64_t
ncm_lwip_backlog_evictions(void)
{
	return __atomic_load_n(&evictions, __ATOMIC_RELAXED);
}
