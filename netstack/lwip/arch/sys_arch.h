/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* arch/sys_arch.h: lwIP's OS abstraction types, implemented on GLib in sys_arch.c. */
#ifndef NCM_LWIP_ARCH_SYS_ARCH_H
#define NCM_LWIP_ARCH_SYS_ARCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Each object is a heap block behind an opaque pointer, so lwIP can embed
 * sys_*_t in its structs without seeing glib.h, and NULL doubles as lwIP's
 * "invalid" value. Every function may be called from any thread.
 */

/* GMutex plus the thread holding it, for LWIP_ASSERT_CORE_LOCKED(). */
typedef struct ncm_lwip_mutex *sys_mutex_t;
/* Counting semaphore: GMutex + GCond + count. */
typedef struct ncm_lwip_sem *sys_sem_t;
/* Bounded FIFO of pointers: GMutex + two GConds + ring buffer. */
typedef struct ncm_lwip_mbox *sys_mbox_t;
/* The GThread; the thread is detached, so this only names it. */
typedef struct _GThread *sys_thread_t;
/* Unused: sys_arch_protect() is a recursive mutex, there is no level. */
typedef int sys_prot_t;

#define SYS_MBOX_NULL NULL
#define SYS_SEM_NULL NULL

#define sys_mutex_valid(mutex) (*(mutex) != NULL)
#define sys_mutex_set_invalid(mutex) (*(mutex) = NULL)
#define sys_sem_valid(sem) (*(sem) != NULL)
#define sys_sem_set_invalid(sem) (*(sem) = NULL)
#define sys_mbox_valid(mbox) (*(mbox) != NULL)
#define sys_mbox_set_invalid(mbox) (*(mbox) = NULL)

/* How often lwIP's core lock was found busy, and the microseconds spent
 * waiting for it, summed over threads since the start (NcmLwipStats). */
void ncm_lwip_core_lock_waits(uint64_t *waits, uint64_t *wait_us);

/* Mailbox capacity when lwIP asks for size 0 ("port default"). */
#define NCM_LWIP_MBOX_DEFAULT_SIZE 128

#endif /* NCM_LWIP_ARCH_SYS_ARCH_H */
