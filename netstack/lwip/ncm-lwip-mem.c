/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-mem.c: lwIP's heap (mem_clib_*) on malloc, with a bounded cache of frame-sized blocks. */

/*
 * Why: every segment lwIP sends and every frame it receives is a pbuf of
 * 1.5 KB, allocated on one thread and freed on another (a writer's
 * tcp_write() and the event thread's ACK; the event thread's receive copy
 * and the reader). glibc's per-thread cache stops at 1032 bytes, so each
 * of them took the arena's lock, searched its bins and coalesced on free:
 * 5.6 % of the lwip path's upload samples (tests/bench/PERF.md, session
 * 15). Blocks of that size now come back to a stack under one mutex,
 * at most NLW_MEM_CACHE_MAX of them (2 MiB); everything else, and what
 * overflows, is plain malloc()/free().
 *
 * A cached block's payload is poisoned under AddressSanitizer, so a use
 * after lwIP's free is still reported (its header stays readable: it links
 * the cache, and LeakSanitizer follows the links). Valgrind sees cached
 * blocks as live.
 */

#include "ncm-lwip-mem.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ncm-sync.h"

#if defined(__SANITIZE_ADDRESS__)
#define NLW_MEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NLW_MEM_ASAN 1
#endif
#endif
#ifdef NLW_MEM_ASAN
#include <sanitizer/asan_interface.h>
#define poison(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define poison(p, n) ((void)(p), (void)(n))
#define unpoison(p, n) ((void)(p), (void)(n))
#endif

/* In front of every block: where free() sends it. 16 bytes keep the
 * payload as aligned as malloc()'s (16 on x86-64, 8 on armhf), and the
 * head asks for no more than malloc() gives. */
typedef union NlwMemHead {
	union NlwMemHead *next; /* while cached */
	guint cached_size;      /* while in use: NLW_MEM_BLOCK, or 0 for malloc()'s */
	_Alignas(max_align_t) char pad[16];
} NlwMemHead;

G_STATIC_ASSERT(sizeof(NlwMemHead) == 16);

static GMutex cache_lock;
static NlwMemHead *cache;
static guint cache_len;

static void *
take_cached(void)
{
	NlwMemHead *h;

	ncm_mutex_lock(&cache_lock);
	h = cache;
	if (h != NULL) {
		unpoison(h + 1, NLW_MEM_BLOCK - sizeof(*h));
		cache = h->next;
		cache_len--;
	}
	ncm_mutex_unlock(&cache_lock);
	return h;
}

void *
nlw_mem_malloc(size_t size)
{
	gboolean fits = size > NLW_MEM_CACHED_MIN && size <= NLW_MEM_BLOCK - sizeof(NlwMemHead);
	NlwMemHead *h;

	if (size > G_MAXSIZE - sizeof(NlwMemHead))
		return NULL;
	h = fits ? take_cached() : NULL;
	if (h == NULL)
		h = malloc(fits ? NLW_MEM_BLOCK : sizeof(NlwMemHead) + size);
	if (h == NULL)
		return NULL;
	h->cached_size = fits ? NLW_MEM_BLOCK : 0;
	return h + 1;
}

void *
nlw_mem_calloc(size_t count, size_t size)
{
	void *p;

	if (size != 0 && count > G_MAXSIZE / size)
		return NULL;
	p = nlw_mem_malloc(count * size);
	if (p != NULL)
		memset(p, 0, count * size);
	return p;
}

void
nlw_mem_free(void *mem)
{
	NlwMemHead *h;

	if (mem == NULL)
		return;
	h = (NlwMemHead *)mem - 1;
	if (h->cached_size == NLW_MEM_BLOCK) {
		ncm_mutex_lock(&cache_lock);
		if (cache_len < NLW_MEM_CACHE_MAX) {
			h->next = cache;
			cache = h;
			cache_len++;
			poison(h + 1, NLW_MEM_BLOCK - sizeof(*h));
			h = NULL;
		}
		ncm_mutex_unlock(&cache_lock);
	}
	free(h);
}

guint
nlw_mem_cached(void)
{
	guint n;

	ncm_mutex_lock(&cache_lock);
	n = cache_len;
	ncm_mutex_unlock(&cache_lock);
	return n;
}
