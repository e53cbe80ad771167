/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-sync.h: GMutex/GCond wrappers that ThreadSanitizer understands (private to libncm and netstack). */
#ifndef NCM_SYNC_H
#define NCM_SYNC_H

#include <glib.h>

/*
 * On Linux GLib implements GMutex and GCond with futexes inside libglib,
 * which is not instrumented: TSan sees neither side of the lock and reports
 * every access the mutex protects as a race. These wrappers tell TSan about
 * the acquire/release edges; without TSan they are the plain GLib calls.
 * Use them for every GMutex/GCond whose protected data TSan can see.
 */

#if defined(__SANITIZE_THREAD__)
#define NCM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NCM_TSAN 1
#endif
#endif

#ifdef NCM_TSAN
#include <sanitizer/tsan_interface.h>
#define ncm_tsan_acquire(addr) __tsan_acquire(addr)
#define ncm_tsan_release(addr) __tsan_release(addr)
#else
#define ncm_tsan_acquire(addr) ((void)(addr))
#define ncm_tsan_release(addr) ((void)(addr))
#endif

/*
 * How many times a lock is tried before the thread sleeps on it. libncm's
 * sections are microseconds long (a frame copied into the NTB, a slot
 * released), and GLib's futex mutex sleeps at the first miss: the holder
 * then pays a futex wake and both threads a context switch, more than the
 * wait itself. On ncm-tun's upload (the TAP reader and the event thread on
 * tx_lock) it cut futex calls per MB 5-6x and context switches 0.7x
 * (issue 15, tests/bench/RESULTS.md). 0 turns it off.
 */
#ifndef NCM_MUTEX_SPINS
#define NCM_MUTEX_SPINS 200
#endif

static inline void
ncm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static inline void
ncm_mutex_lock(GMutex *mutex)
{
	for (int i = 0; i < NCM_MUTEX_SPINS; i++) {
		if (g_mutex_trylock(mutex)) {
			ncm_tsan_acquire(mutex);
			return;
		}
		ncm_cpu_relax();
	}
	g_mutex_lock(mutex);
	ncm_tsan_acquire(mutex);
}

static inline void
ncm_mutex_unlock(GMutex *mutex)
{
	ncm_tsan_release(mutex);
	g_mutex_unlock(mutex);
}

/* g_cond_wait() drops and retakes the mutex: mirror both edges. */
static inline void
ncm_cond_wait(GCond *cond, GMutex *mutex)
{
	ncm_tsan_release(mutex);
	g_cond_wait(cond, mutex);
	ncm_tsan_acquire(mutex);
}

/* As g_cond_wait_until(): FALSE once the monotonic end_time has passed. */
static inline gboolean
ncm_cond_wait_until(GCond *cond, GMutex *mutex, gint64 end_time)
{
	gboolean signalled;

	ncm_tsan_release(mutex);
	signalled = g_cond_wait_until(cond, mutex, end_time);
	ncm_tsan_acquire(mutex);
	return signalled;
}

#endif /* NCM_SYNC_H */
