/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-mem.c: lwIP's heap with its frame- and segment-sized block caches (ncm-lwip-mem.c): sizes, reuse, the bounds, threads. */
#include <stddef.h>
#include <string.h>
#include <glib.h>

#include "lwip/pbuf.h"
#include "ncm-lwip-mem.h"
#include "ncm-sync.h"

#define HEAD 16

/* A size of each class: a frame, and the largest a segment's block takes. */
#define FRAME 1514
#define SEGMENT (NLW_MEM_SEGMENT_BLOCK - HEAD)

static gboolean
is_cached_size(gsize n)
{
	return (n > NLW_MEM_CACHED_MIN && n <= NLW_MEM_BLOCK - HEAD) ||
	       (NLW_MEM_SEGMENT_CACHE_MAX > 0 && n > NLW_MEM_SEGMENT_MIN &&
		n <= NLW_MEM_SEGMENT_BLOCK - HEAD);
}

static guint
cached_all(void)
{
	/* Without a segments' class, SEGMENT is a frame's size. */
	return nlw_mem_cached(FRAME) + (NLW_MEM_SEGMENT_CACHE_MAX > 0 ? nlw_mem_cached(SEGMENT) : 0);
}

/* Every size around the cached range gets usable, aligned memory of its
 * own, and only the cached range comes back from the cache. */
static void
test_sizes(void)
{
	static const gsize sizes[] = {0, 1, 40, NLW_MEM_CACHED_MIN, NLW_MEM_CACHED_MIN + 1, 1514,
				      1560, NLW_MEM_BLOCK - HEAD, NLW_MEM_BLOCK - HEAD + 1,
				      NLW_MEM_SEGMENT_MIN, NLW_MEM_SEGMENT_MIN + 1, 11784,
				      SEGMENT, SEGMENT + 1, 65536};

	for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
		gsize n = sizes[i];
		guint8 *a = nlw_mem_malloc(n), *b;
		guint before;

		g_assert_nonnull(a);
		/* malloc()'s alignment: 16 bytes on x86-64 and i386, 8 on armhf. */
		g_assert_cmpuint((guintptr)a % G_ALIGNOF(max_align_t), ==, 0);
		memset(a, 0x5A, n);
		before = cached_all();
		nlw_mem_free(a);
		gboolean cached = is_cached_size(n);
		/* Into its own class's cache, or into none. */
		g_assert_cmpuint(cached_all(), ==, before + (cached ? 1 : 0));
		if (cached)
			g_assert_cmpuint(nlw_mem_cached(n), >=, 1);
		b = nlw_mem_calloc(1, n);
		g_assert_nonnull(b);
		/* A cached block comes back (the same one: a stack), zeroed by calloc. */
		if (cached)
			g_assert_true(b == a);
		for (gsize k = 0; k < n; k++)
			g_assert_cmpuint(b[k], ==, 0);
		nlw_mem_free(b);
	}
	nlw_mem_free(NULL);
	g_assert_null(nlw_mem_calloc(G_MAXSIZE / 2, 4));
	g_assert_null(nlw_mem_malloc(G_MAXSIZE - 4));
}

/* The cache keeps at most NLW_MEM_CACHE_MAX blocks; the rest go back to
 * malloc (ASan and LeakSanitizer would see them otherwise). */
static void
test_bound(void)
{
	guint n = NLW_MEM_CACHE_MAX + 100;
	g_autofree void **p = g_new(void *, n);

	for (guint i = 0; i < n; i++)
		p[i] = nlw_mem_malloc(1514);
	g_assert_cmpuint(nlw_mem_cached(1514), ==, 0);
	for (guint i = 0; i < n; i++)
		nlw_mem_free(p[i]);
	g_assert_cmpuint(nlw_mem_cached(1514), ==, NLW_MEM_CACHE_MAX);
}

/* The segments' cache has a bound of its own, and the frames' cache is
 * not spent on them. */
static void
test_segment_bound(void)
{
	guint n = NLW_MEM_SEGMENT_CACHE_MAX + 20, frames = nlw_mem_cached(FRAME);
	g_autofree void **p = g_new(void *, n);

	if (NLW_MEM_SEGMENT_CACHE_MAX == 0) {
		g_test_skip("segments fit a frame's block in this build");
		return;
	}
	for (guint i = 0; i < n; i++)
		p[i] = nlw_mem_malloc(SEGMENT);
	g_assert_cmpuint(nlw_mem_cached(SEGMENT), ==, 0);
	for (guint i = 0; i < n; i++)
		nlw_mem_free(p[i]);
	g_assert_cmpuint(nlw_mem_cached(SEGMENT), ==, NLW_MEM_SEGMENT_CACHE_MAX);
	g_assert_cmpuint(nlw_mem_cached(FRAME), ==, frames);
}

/* What the segments' cache is for: the pbuf tcp_write() allocates for a
 * full large segment (TCP_MSS bytes and room for the TCP, IP and
 * Ethernet headers in front) is a cached block, whatever TCP_MSS a -D
 * gives (a frame's block when segments are link-sized). */
static void
test_segment_fits(void)
{
	struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, TCP_MSS, PBUF_RAM);
	guint before = cached_all();

	g_assert_nonnull(p);
	g_assert_cmpuint(p->len, ==, TCP_MSS);
	memset(p->payload, 0xA5, p->len);
	pbuf_free(p);
	g_assert_cmpuint(cached_all(), ==, before + 1);
	/* And the next one reuses it. */
	p = pbuf_alloc(PBUF_TRANSPORT, TCP_MSS, PBUF_RAM);
	g_assert_nonnull(p);
	g_assert_cmpuint(cached_all(), ==, before);
	pbuf_free(p);
}

/* Allocated on one thread, freed on another, as pbufs are: blocks keep
 * their contents while in use and are never handed out twice. The
 * hand-off is ncm-sync.h's, which ThreadSanitizer sees (GAsyncQueue's
 * lock is inside uninstrumented GLib). */
typedef struct {
	GMutex lock;
	GCond cond;
	GQueue q;
	guint n;
} Pipe;

static void
pipe_push(Pipe *pipe, gpointer p)
{
	ncm_mutex_lock(&pipe->lock);
	g_queue_push_tail(&pipe->q, p);
	g_cond_signal(&pipe->cond);
	ncm_mutex_unlock(&pipe->lock);
}

static gpointer
pipe_pop(Pipe *pipe)
{
	gpointer p;

	ncm_mutex_lock(&pipe->lock);
	while (g_queue_is_empty(&pipe->q))
		ncm_cond_wait(&pipe->cond, &pipe->lock);
	p = g_queue_pop_head(&pipe->q);
	ncm_mutex_unlock(&pipe->lock);
	return p;
}

static gpointer
consumer(gpointer data)
{
	Pipe *pipe = data;

	for (guint i = 0; i < pipe->n; i++) {
		guint32 *p = pipe_pop(pipe);

		for (guint k = 0; k < 1514 / 4; k++)
			g_assert_cmpuint(p[k], ==, p[0]);
		nlw_mem_free(p);
	}
	return NULL;
}

static void
test_threads(void)
{
	Pipe pipes[2];
	GThread *t[2];

	for (guint j = 0; j < 2; j++) {
		g_mutex_init(&pipes[j].lock);
		g_cond_init(&pipes[j].cond);
		g_queue_init(&pipes[j].q);
		pipes[j].n = 50000;
		t[j] = g_thread_new("consumer", consumer, &pipes[j]);
	}
	for (guint i = 0; i < 50000; i++) {
		for (guint j = 0; j < 2; j++) {
			guint32 *p = nlw_mem_malloc(1514);

			for (guint k = 0; k < 1514 / 4; k++)
				p[k] = i * 2 + j;
			pipe_push(&pipes[j], p);
		}
	}
	for (guint j = 0; j < 2; j++) {
		g_thread_join(t[j]);
		g_mutex_clear(&pipes[j].lock);
		g_cond_clear(&pipes[j].cond);
	}
	g_assert_cmpuint(nlw_mem_cached(FRAME), <=, NLW_MEM_CACHE_MAX);
}

#if defined(__SANITIZE_ADDRESS__)
/* A cached block is poisoned: lwIP writing to a pbuf it freed is still
 * an AddressSanitizer report, cache or not (@tail FALSE). And a block's
 * tail past the size asked for is poisoned too, fresh or reused: lwIP
 * writing past its pbuf is a report (@tail TRUE). */
static void
poison_case(gsize size, gboolean tail)
{
	if (g_test_subprocess()) {
		volatile guint8 *p = nlw_mem_malloc(size);

		nlw_mem_free((void *)p);
		if (tail) {
			p = nlw_mem_malloc(size); /* the same block, from the cache */
			p[size - 1] = 1;
			g_printerr("the last byte asked for is writable\n");
			p[size + 8] = 1;
		} else {
			p[100] = 1;
		}
		return;
	}
	g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
	g_test_trap_assert_failed();
	g_test_trap_assert_stderr(tail ? "*the last byte asked for is writable*use-after-poison*"
				       : "*use-after-poison*");
}

static void
test_poisoned(gconstpointer data)
{
	poison_case(GPOINTER_TO_SIZE(data), FALSE);
}

static void
test_tail_poisoned(gconstpointer data)
{
	poison_case(GPOINTER_TO_SIZE(data), TRUE);
}
#endif

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lwip-mem/sizes", test_sizes);
	g_test_add_func("/lwip-mem/bound", test_bound);
	g_test_add_func("/lwip-mem/segment-bound", test_segment_bound);
	g_test_add_func("/lwip-mem/segment-fits", test_segment_fits);
	g_test_add_func("/lwip-mem/threads", test_threads);
#if defined(__SANITIZE_ADDRESS__)
	g_test_add_data_func("/lwip-mem/poisoned/frame", GSIZE_TO_POINTER(FRAME), test_poisoned);
	g_test_add_data_func("/lwip-mem/poisoned/segment", GSIZE_TO_POINTER(SEGMENT),
			     test_poisoned);
	g_test_add_data_func("/lwip-mem/tail-poisoned/frame", GSIZE_TO_POINTER(1100),
			     test_tail_poisoned);
	g_test_add_data_func("/lwip-mem/tail-poisoned/segment",
			     GSIZE_TO_POINTER(NLW_MEM_SEGMENT_MIN + 1), test_tail_poisoned);
#endif
	return g_test_run();
}
