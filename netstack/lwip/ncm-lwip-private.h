/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-private.h: what the lwIP netstack's files share: locking, counters, addresses (private). */
#pragma once

#include "lwip/ip_addr.h"
#include "lwip/netif.h"

#include "ncm-link-private.h"
#include "ncm-lwip.h"
#include "ncm-sync.h"

/*
 * Lock order: the lwIP core lock first, then a connection's, listener's or
 * UDP socket's own lock, then a netif's peer lock. Code holding one of the
 * latter never takes the core lock. A netif's output queue lock
 * (ncm-lwip-outq.h) comes after the core lock too, and is never held
 * while the link sends.
 */

/*
 * The file graph: an arrow reads "calls a function defined in". It is a
 * DAG, the files below never call the ones above; keep it one. What two
 * files both need goes down (into stack.c, or a file of its own), and a
 * lower file reaches a higher one only through a callback it was given.
 *
 *   ncm-lwip-connect.c   -> stream, tcp, stack
 *   ncm-lwip-listener.c  -> stream, tcp, stack
 *   ncm-lwip-stream.c    -> tcp, stack
 *   ncm-lwip-tcp.c       -> stack
 *   ncm-lwip-netif.c     -> stack, outq
 *   ncm-lwip-udp.c       -> stack
 *   ncm-lwip-dns.c       -> stack
 *   ncm-lwip-stack.c     -> none (netif and tcp register batch hooks)
 */

/* Counters, bumped with atomics from any thread. */
typedef enum {
	NLW_COUNT_RX_FRAMES,
	NLW_COUNT_RX_DROPS,
	NLW_COUNT_TX_FRAMES,
	NLW_COUNT_TX_QUEUED,
	NLW_COUNT_TX_DROPS,
	NLW_COUNT_TX_FLUSHES,
	NLW_COUNT_WINDOW_POSTS,
	NLW_COUNT_MAIN_DISPATCHES,
	NLW_COUNT_RX_COMPACTED,
	NLW_COUNT_RX_MERGED,
	NLW_COUNT_TX_CUT,
	NLW_COUNT_TX_SPARSE_AHEAD,
	NLW_COUNT_N,
} NlwCounter;

void nlw_count(NlwCounter counter, guint64 n);

/* The default stack's input mode, read on the link thread per frame. */
NcmLwipInputMode nlw_input_mode(void);

/*
 * A batch of lwIP work: LOCK_TCPIP_CORE() plus bookkeeping so that output
 * produced inside is flushed to the links once, when the outermost batch
 * ends. nlw_batch_begin/end do the same for code already holding the core
 * lock (callbacks on the tcpip thread).
 */
void nlw_core_lock(void);
void nlw_core_unlock(void);
void nlw_batch_begin(void);
void nlw_batch_end(void);

/* Core lock held: whether the current lwIP work is inside a batch. Output
 * outside one (the tcpip thread's timers and queued input) schedules a
 * flush callback instead. */
gboolean nlw_in_batch(void);
/* Core lock held: posts one flush of all netifs to the tcpip thread. */
void nlw_schedule_flush(void);
/*
 * What a batch's end runs, stage by stage: window credit from readers is
 * handed to lwIP, the netifs' output is flushed to the links, then the readers and writers that lwIP's callbacks made
 * ready are woken. The files owning that work (netif, tcp) register it,
 * core lock held, before they first leave any; so ncm-lwip-stack.c calls
 * neither of them (see the file graph above).
 */
typedef enum {
	NLW_BATCH_CREDIT, /* readers' window credit, before its output is flushed */
	NLW_BATCH_FLUSH, /* also run by nlw_schedule_flush()'s callback */
	NLW_BATCH_WAKE,
	NLW_BATCH_N,
} NlwBatchStage;

typedef void (*NlwBatchHook)(void);

/* Core lock held. Registering the same hook again is harmless. */
void nlw_batch_on_end(NlwBatchStage stage, NlwBatchHook hook);

/*
 * Work that needs no lwIP state, done by the thread leaving
 * nlw_core_unlock() right after it released the lock, so the others wait
 * less (the netifs' sending, ncm-lwip-outq.h). @take, core lock held,
 * hands over up to @max items that @run then gets one by one, lock
 * released. One registration (netif), like the batch hooks.
 */
#define NLW_UNLOCK_MAX 16
typedef guint (*NlwUnlockTake)(gpointer *ret_items, guint max);
typedef void (*NlwUnlockRun)(gpointer item);

/* Core lock held. */
void nlw_core_on_unlock(NlwUnlockTake take, NlwUnlockRun run);
/* Core lock held: whether the batch ending is nlw_core_unlock()'s (else the
 * tcpip thread's, which keeps the lock). */
gboolean nlw_core_unlocking(void);

/* Waits until the tcpip thread has handled everything queued so far (such
 * as frames from NCM_LWIP_INPUT_QUEUED). Not under the core lock. */
void nlw_tcpip_barrier(void);

/* GInetAddress <-> ip_addr_t (no zone). */
void nlw_addr_from_gio(GInetAddress *address, ip_addr_t *ret_ip);
GInetAddress *nlw_addr_to_gio(const ip_addr_t *ip);
GInetSocketAddress *nlw_sockaddr_to_gio(const ip_addr_t *ip, u16_t port);
/* The scope id of an IPv6 socket address, 0 for IPv4. */
guint nlw_scope_of(GInetSocketAddress *address);
/* Core lock held: the netif for @scope_id, else the default one, else the first. */
struct netif *nlw_netif_for_scope(guint scope_id);
/* Core lock held: gives a link-local IPv6 @ip the zone of its netif. */
void nlw_addr_assign_zone(ip_addr_t *ip, guint scope_id);

/* Core lock held: whether lwIP can send to @ip at all. lwIP routes
 * off-link IPv4 to the default netif even without a gateway, and its
 * TCP then retries a SYN that etharp_output() refuses until timeout. */
gboolean nlw_routable(const ip_addr_t *ip);

/* lwIP's err_t as a G_IO_ERROR code. */
gint nlw_err_to_io(err_t err);

/* lwIP's err_t in words, for GError messages (never empty). */
const char *nlw_strerr(err_t err);

/*
 * Runs a blocking control-plane call (connect, accept, receive) for an
 * async API on a thread of its own; the GTask then completes on the
 * caller's thread-default main context. Not GTask's pool: it caps its
 * threads (a few accepts could starve it), and it hands tasks over
 * through GLib-internal locks ThreadSanitizer cannot see, while
 * pthread_create() and the main context's eventfd are visible to it.
 * Counts one main-context dispatch. Takes @task.
 */
void nlw_task_run_in_thread(GTask *task, GTaskThreadFunc func);
/*
 * The thread's result (@error, or else @result with @destroy) and its
 * pickup in the _finish call. The result crosses to the caller's context
 * through GLib's main-context lock, which ThreadSanitizer cannot see: these
 * mark that hand-over, so what the thread built is seen as written before
 * the caller reads or frees it.
 */
void nlw_task_return(GTask *task, gpointer result, GDestroyNotify destroy, GError *error);
gpointer nlw_task_propagate(GAsyncResult *result, GError **error);
