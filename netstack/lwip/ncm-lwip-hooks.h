/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-hooks.h: the lwIP hooks of libncm's port (LWIP_HOOK_FILENAME: lwIP's own sources include it). */
#ifndef NCM_LWIP_HOOKS_H
#define NCM_LWIP_HOOKS_H

#include "lwip/tcp.h"
#include "lwip/prot/tcp.h"

/* LWIP_HOOK_TCP_INPACKET_PCB (ncm-lwip-backlog.c). Core lock held. */
err_t ncm_lwip_tcp_inpacket(struct tcp_pcb *pcb, struct tcp_hdr *hdr, u16_t optlen,
			    u16_t opt1len, u8_t *opt2, struct pbuf *p);
/* Half-open connections dropped for a newer SYN since start. Thread: any. */
u64_t ncm_lwip_backlog_evictions(void);

/* Connections kept in TIME_WAIT at most (ncm-lwip-timewait.c): ~200 bytes each. */
#define NCM_LWIP_TIME_WAIT_MAX 512
/* Core lock held: a new connection is coming; drops the oldest TIME_WAIT
 * connection when NCM_LWIP_TIME_WAIT_MAX are held. */
void ncm_lwip_timewait_trim(void);
/* TIME_WAIT connections dropped to stay under the cap since start. Thread: any. */
u64_t ncm_lwip_timewait_evictions(void);

#endif /* NCM_LWIP_HOOKS_H */
