/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-mem.h: lwIP's heap (mem_clib_*) on malloc, with bounded caches of frame- and segment-sized blocks. */
#ifndef NCM_LWIP_MEM_H
#define NCM_LWIP_MEM_H

#include <stddef.h>
#include <glib.h>

#include "lwip/opt.h"

/* A cached block, header included: a 1514-byte frame's pbuf with lwIP's
 * headers in front fits, a 1 KiB request would waste half of one. */
#define NLW_MEM_BLOCK 2048
#define NLW_MEM_CACHED_MIN 1024
#define NLW_MEM_CACHE_MAX 1024

/* A cached block for one of lwIP's large TCP segments: TCP_MSS bytes (up
 * to NCM_LWIP_TSO_SEGS link frames' payload, lwipopts.h) behind the pbuf
 * and its TCP, IP and Ethernet header room, 11784 bytes at the defaults,
 * rounded up to 1 KiB with the block's head. Sizes over half a block take
 * one, so none wastes more than it holds. Where a segment fits a frame's
 * block (-DNCM_LWIP_TSO_SEGS=1) the class is off. */
#define NLW_MEM_SEGMENT_BLOCK ((((gsize)TCP_MSS + 128 + 16) + 1023) / 1024 * 1024)
#define NLW_MEM_SEGMENT_MIN MAX(NLW_MEM_SEGMENT_BLOCK / 2, (gsize)NLW_MEM_BLOCK - 16)
#define NLW_MEM_SEGMENT_CACHE_MAX \
	(NLW_MEM_SEGMENT_BLOCK > NLW_MEM_BLOCK ? (guint)((2u << 20) / NLW_MEM_SEGMENT_BLOCK) : 0u)

/* malloc(), calloc() and free() for lwIP (lwipopts.h): any thread; sizes
 * in (NLW_MEM_CACHED_MIN, NLW_MEM_BLOCK - 16] and (NLW_MEM_SEGMENT_MIN,
 * NLW_MEM_SEGMENT_BLOCK - 16] reuse freed blocks of their class. */
void *nlw_mem_malloc(size_t size);
void *nlw_mem_calloc(size_t count, size_t size);
void nlw_mem_free(void *mem);

/* Blocks waiting in the cache that serves @size (0 if none does). */
guint nlw_mem_cached(size_t size);

#endif /* NCM_LWIP_MEM_H */
