/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-mem.c: lwIP's heap (mem_clib_*) on malloc, with bounded caches of frame- and segment-sized blocks. */

/*
 * Why: every segment lwIP sends and every frame it receives is a pbuf of
 * 1.5 KB, allocated on one thread and freed on another (a writer's
 * tcp_write() and the event thread's ACK; the event thread's receive copy
 * and the reader). glibc's per-thread cache stops at 1032 bytes, so each
 * of them took the arena's lock, searched its bins and coalesced on free:
 * 5.6 % of the lwip path's upload samples (tests/bench/PERF.md, session
 * 15). Blocks of that size now come back to a stack under one mutex,
 * at most NLW_MEM_CACHE_MAX of them (2 MiB).
 *
 * The large segments a bulk upload's tcp_write() fills (ncm-lwip-tso.h,
 * ~11.8 KB) went the other way: freed on the event thread when acked,
 * glibc gave the top of the writer's arena back (madvise) and the
 * writer's next segments faulted their pages in again, zeroed (about 2 %
 * of lwip's upload samples, tests/bench/RESULTS.md, session 37). They
 * have a stack of their own, at most NLW_MEM_SEGMENT_CACHE_MAX blocks
 * (2 MiB). Everything else, and what overflows, is plain malloc()/free().
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
typedef struct NlwMemClass NlwMemClass;

typedef union NlwMemHead {
	union NlwMemHead *next; /* while cached */
	NlwMemClass *cls;       /* while in use: its class, or NULL for malloc()'s */
	_Alignas(max_align_t) char pad[16];
} NlwMemHead;

G_STATIC_ASSERT(sizeof(NlwMemHead) == 16);

/* The sizes a class serves: (min, block - head]. */
struct NlwMemClass {
	gsize block, min;
	guint max;
	NlwMemHead *top;
	guint len;
};

static GMutex cache_lock;
static NlwMemClass classes[] = {
	{NLW_MEM_BLOCK, NLW_MEM_CACHED_MIN, NLW_MEM_CACHE_MAX, NULL, 0},
	{NLW_MEM_SEGMENT_BLOCK, NLW_MEM_SEGMENT_MIN, NLW_MEM_SEGMENT_CACHE_MAX, NULL, 0},
};

/* The classes' ranges do not overlap: each size has one place to go. */
G_STATIC_ASSERT(NLW_MEM_SEGMENT_MIN >= NLW_MEM_BLOCK - sizeof(NlwMemHead));

static NlwMemClass *
class_of(size_t size)
{
	for (guint i = 0; i < G_N_ELEMENTS(classes); i++)
		if (classes[i].max > 0 && size > classes[i].min &&
		    size <= classes[i].block - sizeof(NlwMemHead))
			return &classes[i];
	return NULL;
}

static NlwMemHead *
take_cached(NlwMemClass *c)
{
	NlwMemHead *h;

	ncm_mutex_lock(&cache_lock);
	h = c->top;
	if (h != NULL) {
		unpoison(h + 1, c->block - sizeof(*h));
		c->top = h->next;
		c->len--;
	}
	ncm_mutex_unlock(&cache_lock);
	return h;
}

void *
nlw_mem_malloc(size_t size)
{
	NlwMemClass *c = class_of(size);
	NlwMemHead *h;

	if (size > G_MAXSIZE - sizeof(NlwMemHead))
		return NULL;
	h = c != NULL ? take_cached(c) : NULL;
	if (h == NULL)
		h = malloc(c != NULL ? c->block : sizeof(NlwMemHead) + size);
	if (h == NULL)
		return NULL;
	h->cls = c;
	/* The block's tail past @size stays poisoned: a write past what
	 * lwIP asked for is still a report. */
	if (c != NULL)
		poison((guint8 *)(h + 1) + size, c->block - sizeof(*h) - size);
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
	NlwMemClass *c;

	if (mem == NULL)
		return;
	h = (NlwMemHead *)mem - 1;
	c = h->cls;
	if (c != NULL) {
		ncm_mutex_lock(&cache_lock);
		if (c->len < c->max) {
			h->next = c->top;
			c->top = h;
			c->len++;
			poison(h + 1, c->block - sizeof(*h));
			h = NULL;
		}
		ncm_mutex_unlock(&cache_lock);
	}
	free(h);
}

guint
nlw_mem_cached(size_t size)
{
	NlwMemClass *c = class_of(size);
	guint n;

	if (c == NULL)
		return 0;
	ncm_mutex_lock(&cache_lock);
	n = c->len;
	ncm_mutex_unlock(&cache_lock);
	return n;
}
