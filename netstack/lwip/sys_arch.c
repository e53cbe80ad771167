/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sys_arch.c: lwIP's OS layer (mutexes, semaphores, mailboxes, threads, time) on GLib. */
#define G_LOG_DOMAIN "ncm-lwip"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "lwip/opt.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"

#include "ncm-lwip-timers.h"
#include "ncm-sync.h"

struct ncm_lwip_mutex {
	GMutex mutex;
	/* The thread holding mutex, NULL when free. Written only by the
	 * holder, read atomically by ncm_lwip_assert_core_locked(). */
	GThread *owner;
};

struct ncm_lwip_sem {
	GMutex lock; /* guards count; a leaf lock */
	GCond cond;  /* count became non-zero */
	guint count;
};

struct ncm_lwip_mbox {
	GMutex lock;     /* guards everything below; a leaf lock */
	GCond not_empty; /* count became non-zero */
	GCond not_full;  /* count dropped below size */
	guint size;
	guint head; /* index of the oldest message */
	guint count;
	gboolean kicked; /* a timed fetch returns now, as if timed out */
	void *slots[];
};

/* The mailbox the timers' thread waits on (atomic), for the kick. */
static struct ncm_lwip_mbox *timers_mbox;

struct thread_start {
	lwip_thread_fn fn;
	void *arg;
};

/* sys_arch_protect(): recursive because lwIP nests SYS_ARCH_PROTECT (a
 * pbuf_free inside a protected section). A leaf lock: nothing else is
 * taken while holding it. Static GRecMutex needs no init. */
static GRecMutex protect_lock;

void
sys_init(void)
{
	/* All state is static or per object: nothing to set up. */
}

u32_t
sys_now(void)
{
	/* lwIP's timers compare with wrap-around, so truncating is fine. */
	return (u32_t)(g_get_monotonic_time() / 1000);
}

u32_t
sys_jiffies(void)
{
	return sys_now();
}

sys_prot_t
sys_arch_protect(void)
{
	g_rec_mutex_lock(&protect_lock);
	return 0;
}

void
sys_arch_unprotect(sys_prot_t pval)
{
	(void)pval;
	g_rec_mutex_unlock(&protect_lock);
}

uint32_t
ncm_lwip_rand(void)
{
	return g_random_int();
}

void
ncm_lwip_diag(const char *format, ...)
{
	va_list ap;
	char *msg;
	size_t len;

	va_start(ap, format);
	msg = g_strdup_vprintf(format, ap);
	va_end(ap);
	/* lwIP ends its lines with '\n'; g_log adds its own. */
	len = strlen(msg);
	while (len > 0 && msg[len - 1] == '\n')
		msg[--len] = '\0';
	g_debug("%s", msg);
	g_free(msg);
}

void
ncm_lwip_assert_failed(const char *message, const char *file, int line)
{
	g_log(G_LOG_DOMAIN, G_LOG_LEVEL_ERROR, "lwIP assertion \"%s\" failed at %s:%d", message,
	      file, line);
	abort(); /* G_LOG_LEVEL_ERROR aborts already; this tells the compiler */
}

/* ---- Mutexes ------------------------------------------------------------- */

err_t
sys_mutex_new(sys_mutex_t *mutex)
{
	struct ncm_lwip_mutex *m = g_new0(struct ncm_lwip_mutex, 1);

	g_mutex_init(&m->mutex);
	*mutex = m;
	return ERR_OK;
}

/*
 * Contention on lwIP's one core lock, which the tcpip thread, every netif's
 * receive path and every application thread take: the serial point of a
 * stack shared by several devices or connections. Counted only when the
 * lock was busy, so the free case stays one trylock.
 */
static guint64 core_waits, core_wait_us;

#ifdef NCM_LWIP_CORE_LOCK_DIAG
/*
 * A measuring build's view of who waits for the core lock (issue 20): the
 * wait per thread name, printed to stderr at exit. Off by default: the
 * counters above are what the API reports.
 */
#include <pthread.h>
#include <stdio.h>

#define DIAG_THREADS 64
static GMutex diag_lock;
static struct {
	char name[16];
	guint64 acquired, waits, wait_us; /* atomics */
} diag[DIAG_THREADS];
static __thread int diag_slot = -1;

/* The calling thread's row, one per thread name. */
static int
diag_row(void)
{
	char name[16] = "?";

	if (diag_slot >= 0)
		return diag_slot;
	pthread_getname_np(pthread_self(), name, sizeof(name));
	g_mutex_lock(&diag_lock);
	for (int i = 0; i < DIAG_THREADS; i++) {
		if (diag[i].name[0] == '\0')
			g_strlcpy(diag[i].name, name, sizeof(diag[i].name));
		if (strcmp(diag[i].name, name) == 0) {
			diag_slot = i;
			break;
		}
	}
	g_mutex_unlock(&diag_lock);
	return diag_slot >= 0 ? diag_slot : DIAG_THREADS - 1;
}

static void
diag_acquired(gint64 waited_us)
{
	int i = diag_row();

	__atomic_add_fetch(&diag[i].acquired, 1, __ATOMIC_RELAXED);
	if (waited_us >= 0) {
		__atomic_add_fetch(&diag[i].waits, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&diag[i].wait_us, (guint64)waited_us, __ATOMIC_RELAXED);
	}
}

__attribute__((destructor)) static void
diag_print(void)
{
	for (guint i = 0; i < DIAG_THREADS && diag[i].name[0] != '\0'; i++)
		fprintf(stderr, "core-lock-diag: %s acquired %" G_GUINT64_FORMAT " waits %" G_GUINT64_FORMAT
			" wait_ms %" G_GUINT64_FORMAT "\n", diag[i].name, diag[i].acquired, diag[i].waits,
			diag[i].wait_us / 1000);
}
#else
#define diag_acquired(us) ((void)(us))
#endif

void
sys_mutex_lock(sys_mutex_t *mutex)
{
	struct ncm_lwip_mutex *m = *mutex;
	gint64 waited = -1;

	if (!g_mutex_trylock(&m->mutex)) {
		gint64 t0 = g_get_monotonic_time();

		ncm_mutex_lock(&m->mutex);  /* spins a little first (ncm-sync.h) */
		if (mutex == &lock_tcpip_core) {
			gint64 us = g_get_monotonic_time() - t0;

			__atomic_add_fetch(&core_waits, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&core_wait_us, (guint64)us, __ATOMIC_RELAXED);
			waited = us;
		}
	}
	if (mutex == &lock_tcpip_core)
		diag_acquired(waited);
	ncm_tsan_acquire(&m->mutex);
	g_atomic_pointer_set(&m->owner, g_thread_self());
}

void
ncm_lwip_core_lock_waits(uint64_t *waits, uint64_t *wait_us)
{
	*waits = __atomic_load_n(&core_waits, __ATOMIC_RELAXED);
	*wait_us = __atomic_load_n(&core_wait_us, __ATOMIC_RELAXED);
}

/* The tcpip thread sleeps until its next timer; work for an earlier one
 * that appeared on another thread (a connect, DHCP started) wakes it. */
static void
timers_kick(void)
{
	struct ncm_lwip_mbox *mb = g_atomic_pointer_get(&timers_mbox);

	if (!mb)
		return;
	ncm_mutex_lock(&mb->lock);
	mb->kicked = TRUE;
	g_cond_signal(&mb->not_empty);
	ncm_mutex_unlock(&mb->lock);
}

void
sys_mutex_unlock(sys_mutex_t *mutex)
{
	struct ncm_lwip_mutex *m = *mutex;
	gboolean kick = mutex == &lock_tcpip_core && ncm_lwip_timers_moved_earlier();

	g_atomic_pointer_set(&m->owner, NULL);
	ncm_mutex_unlock(&m->mutex);
	if (kick)
		timers_kick();
}

void
sys_mutex_free(sys_mutex_t *mutex)
{
	struct ncm_lwip_mutex *m = *mutex;

	g_mutex_clear(&m->mutex);
	g_free(m);
	*mutex = NULL;
}

void
ncm_lwip_assert_core_locked(const char *function)
{
	struct ncm_lwip_mutex *core = lock_tcpip_core;

	/* lwip_init() calls the API before tcpip_init() creates the lock,
	 * while no other thread can use lwIP yet. */
	if (core == NULL)
		return;
	if (g_atomic_pointer_get(&core->owner) == g_thread_self())
		return;
	g_log(G_LOG_DOMAIN, G_LOG_LEVEL_ERROR,
	      "%s() called without the lwIP core lock: call the raw API on the "
	      "tcpip thread or between LOCK_TCPIP_CORE() and UNLOCK_TCPIP_CORE()",
	      function);
	abort();
}

/* ---- Waiting ------------------------------------------------------------- */

/* lwIP timeouts are in ms with 0 meaning forever; returns the monotonic
 * deadline in µs, or 0 for forever. */
static gint64
deadline_after(gint64 start, u32_t timeout_ms)
{
	if (timeout_ms == 0)
		return 0;
	return start + (gint64)timeout_ms * G_TIME_SPAN_MILLISECOND;
}

/* One wait on cond; FALSE once the deadline has passed. Callers loop on
 * their predicate: GCond wakes up spuriously. */
static gboolean
wait_until(GCond *cond, GMutex *mutex, gint64 deadline)
{
	if (deadline == 0) {
		ncm_cond_wait(cond, mutex);
		return TRUE;
	}
	return ncm_cond_wait_until(cond, mutex, deadline);
}

/* What sys_arch_sem_wait() and sys_arch_mbox_fetch() return on success. */
static u32_t
ms_since(gint64 start)
{
	gint64 ms = (g_get_monotonic_time() - start) / G_TIME_SPAN_MILLISECOND;

	return ms >= (gint64)SYS_ARCH_TIMEOUT ? SYS_ARCH_TIMEOUT - 1 : (u32_t)ms;
}

/* ---- Semaphores ---------------------------------------------------------- */

err_t
sys_sem_new(sys_sem_t *sem, u8_t count)
{
	struct ncm_lwip_sem *s = g_new0(struct ncm_lwip_sem, 1);

	g_mutex_init(&s->lock);
	g_cond_init(&s->cond);
	s->count = count;
	*sem = s;
	return ERR_OK;
}

void
sys_sem_signal(sys_sem_t *sem)
{
	struct ncm_lwip_sem *s = *sem;

	ncm_mutex_lock(&s->lock);
	s->count++;
	g_cond_signal(&s->cond);
	ncm_mutex_unlock(&s->lock);
}

u32_t
sys_arch_sem_wait(sys_sem_t *sem, u32_t timeout)
{
	struct ncm_lwip_sem *s = *sem;
	gint64 start = g_get_monotonic_time();
	gint64 deadline = deadline_after(start, timeout);
	gboolean got;

	ncm_mutex_lock(&s->lock);
	while (s->count == 0 && wait_until(&s->cond, &s->lock, deadline))
		;
	got = s->count > 0;
	if (got)
		s->count--;
	ncm_mutex_unlock(&s->lock);
	return got ? ms_since(start) : SYS_ARCH_TIMEOUT;
}

void
sys_sem_free(sys_sem_t *sem)
{
	struct ncm_lwip_sem *s = *sem;

	g_cond_clear(&s->cond);
	g_mutex_clear(&s->lock);
	g_free(s);
	*sem = NULL;
}

/* ---- Mailboxes ----------------------------------------------------------- */

err_t
sys_mbox_new(sys_mbox_t *mbox, int size)
{
	guint n = size > 0 ? (guint)size : NCM_LWIP_MBOX_DEFAULT_SIZE;
	struct ncm_lwip_mbox *mb = g_malloc0(sizeof(*mb) + n * sizeof(mb->slots[0]));

	g_mutex_init(&mb->lock);
	g_cond_init(&mb->not_empty);
	g_cond_init(&mb->not_full);
	mb->size = n;
	*mbox = mb;
	return ERR_OK;
}

/* Called with mb->lock held and room in the ring. */
static void
mbox_push_locked(struct ncm_lwip_mbox *mb, void *msg)
{
	mb->slots[(mb->head + mb->count) % mb->size] = msg;
	mb->count++;
	g_cond_signal(&mb->not_empty);
}

/* Called with mb->lock held and at least one message queued. */
static void *
mbox_pop_locked(struct ncm_lwip_mbox *mb)
{
	void *msg = mb->slots[mb->head];

	mb->head = (mb->head + 1) % mb->size;
	mb->count--;
	g_cond_signal(&mb->not_full);
	return msg;
}

void
sys_mbox_post(sys_mbox_t *mbox, void *msg)
{
	struct ncm_lwip_mbox *mb = *mbox;

	ncm_mutex_lock(&mb->lock);
	while (mb->count == mb->size)
		ncm_cond_wait(&mb->not_full, &mb->lock);
	mbox_push_locked(mb, msg);
	ncm_mutex_unlock(&mb->lock);
}

err_t
sys_mbox_trypost(sys_mbox_t *mbox, void *msg)
{
	struct ncm_lwip_mbox *mb = *mbox;
	err_t err = ERR_MEM;

	ncm_mutex_lock(&mb->lock);
	if (mb->count < mb->size) {
		mbox_push_locked(mb, msg);
		err = ERR_OK;
	}
	ncm_mutex_unlock(&mb->lock);
	return err;
}

err_t
sys_mbox_trypost_fromisr(sys_mbox_t *mbox, void *msg)
{
	/* No interrupts in userspace: the same as any other thread. */
	return sys_mbox_trypost(mbox, msg);
}

u32_t
sys_arch_mbox_fetch(sys_mbox_t *mbox, void **msg, u32_t timeout)
{
	struct ncm_lwip_mbox *mb = *mbox;
	gint64 start = g_get_monotonic_time();
	gint64 deadline = deadline_after(start, timeout);
	void *m = NULL;
	gboolean got;
	gboolean first = FALSE;

	/* Only a timed wait can be kicked: lwIP takes its end as "look at the
	 * timers", while an endless one must return a message. Stored once (a
	 * store per message would be a barrier per message); a kick that came
	 * before the mailbox was known is taken as one. */
	if (timeout && ncm_lwip_timers_is_thread() && g_atomic_pointer_get(&timers_mbox) != mb) {
		g_atomic_pointer_set(&timers_mbox, mb);
		first = TRUE;
	}
	ncm_mutex_lock(&mb->lock);
	if (first)
		mb->kicked = TRUE;
	while (mb->count == 0 && !(timeout && mb->kicked) &&
	       wait_until(&mb->not_empty, &mb->lock, deadline))
		;
	got = mb->count > 0;
	if (got)
		m = mbox_pop_locked(mb);
	/* Either way the timers are looked at before the next wait. */
	if (timeout)
		mb->kicked = FALSE;
	ncm_mutex_unlock(&mb->lock);
	if (msg != NULL)
		*msg = m;
	return got ? ms_since(start) : SYS_ARCH_TIMEOUT;
}

u32_t
sys_arch_mbox_tryfetch(sys_mbox_t *mbox, void **msg)
{
	struct ncm_lwip_mbox *mb = *mbox;
	void *m = NULL;
	gboolean got;

	ncm_mutex_lock(&mb->lock);
	got = mb->count > 0;
	if (got)
		m = mbox_pop_locked(mb);
	ncm_mutex_unlock(&mb->lock);
	if (msg != NULL)
		*msg = m;
	return got ? 0 : SYS_MBOX_EMPTY;
}

void
sys_mbox_free(sys_mbox_t *mbox)
{
	struct ncm_lwip_mbox *mb = *mbox;

	/* lwIP frees mailboxes only once drained; leftovers are lost messages
	 * (and whatever they own), i.e. a bug in the caller. */
	if (mb->count != 0)
		g_critical("freeing an lwIP mailbox that still holds %u messages", mb->count);
	g_cond_clear(&mb->not_full);
	g_cond_clear(&mb->not_empty);
	g_mutex_clear(&mb->lock);
	g_free(mb);
	*mbox = NULL;
}

/* ---- Threads ------------------------------------------------------------- */

static gpointer
thread_trampoline(gpointer data)
{
	struct thread_start start = *(struct thread_start *)data;

	g_free(data);
	start.fn(start.arg);
	return NULL;
}

sys_thread_t
sys_thread_new(const char *name, lwip_thread_fn thread, void *arg, int stacksize, int prio)
{
	struct thread_start *start = g_new(struct thread_start, 1);
	GThread *t;

	(void)stacksize;
	(void)prio;
	start->fn = thread;
	start->arg = arg;
	/* g_thread_new() aborts when it cannot create the thread, which is
	 * what lwIP demands: sys_thread_new() must not fail. */
	t = g_thread_new(name, thread_trampoline, start);
	/* Detached: lwIP never joins its threads. */
	g_thread_unref(t);
	return t;
}
