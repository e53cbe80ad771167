/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-chunk.h: helpers for lwIP 2.1's 16-bit TCP window interfaces (private). */
#ifndef NCM_LWIP_CHUNK_H
#define NCM_LWIP_CHUNK_H

#include <stddef.h>

#include "lwip/tcp.h"

/*
 * With windows of 1 MiB (lwipopts.h) the amounts a caller handles exceed what
 * lwIP 2.1's API carries in a u16_t:
 *
 *  - tcp_recved(pcb, u16_t len): a bigger len would be truncated modulo
 *    65536 and the window would shrink for good, so credit in chunks;
 *  - tcp_sndbuf(pcb) reports min(snd_buf, 0xFFFF) and tcp_write() takes a
 *    u16_t: write at most tcp_sndbuf() bytes per call, loop while it is
 *    non-zero, and refill from the tcp_sent callback. The full send buffer
 *    still fills, 64 KiB per call.
 *
 * Thread: tcpip thread or under LOCK_TCPIP_CORE(), like the raw API.
 */

/* Returns len bytes of receive window to the peer, any size. */
static inline void
ncm_lwip_recved_chunked(struct tcp_pcb *pcb, size_t len)
{
	while (len > 0) {
		u16_t chunk = len > 0xFFFF ? 0xFFFF : (u16_t)len;

		tcp_recved(pcb, chunk);
		len -= chunk;
	}
}

#endif /* NCM_LWIP_CHUNK_H */
