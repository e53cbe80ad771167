/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-mem.h: lwIP's heap (mem_clib_*) on malloc, with a bounded cache of frame-sized blocks. */
#ifndef NCM_LWIP_MEM_H
#define NCM_LWIP_MEM_H

#include <stddef.h>
#include <glib.h>

/* A cached block, header included: a 1514-byte frame's pbuf with lwIP's
 * headers in front fits, a 1 KiB request would waste half of one. */
#define NLW_MEM_BLOCK 2048
#define NLW_MEM_CACHED_MIN 1024
#define NLW_MEM_CACHE_MAX 1024

/* malloc(), calloc() and free() for lwIP (lwipopts.h): any thread; sizes
 * in (NLW_MEM_CACHED_MIN, NLW_MEM_BLOCK - 16] reuse freed blocks. */
void *nlw_mem_malloc(size_t size);
void *nlw_mem_calloc(size_t count, size_t size);
void nlw_mem_free(void *mem);

/* Blocks waiting in the cache. */
guint nlw_mem_cached(void);

#endif /* NCM_LWIP_MEM_H */
