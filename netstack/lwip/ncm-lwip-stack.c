/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-stack.c: the process-wide lwIP instance: start-up, batching and flushing, counters. */
#define G_LOG_DOMAIN "ncm-lwip"

#include <string.h>

#include "lwip/ip.h"
#include "lwip/tcpip.h"

#include "ncm-lwip-hooks.h"
#include "ncm-lwip-private.h"

struct _NcmLwipStack {
	GObject parent;
};

G_DEFINE_TYPE(NcmLwipStack, ncm_lwip_stack, G_TYPE_OBJECT)

/* lwIP's state is global, so is ours. */
static guint64 counters[NLW_COUNT_N]; /* atomics */
static gint input_mode;                /* atomic NcmLwipInputMode */

/* Core lock: nesting depth of nlw_batch_begin(), and whether a flush
 * callback is already queued on the tcpip thread. */
static guint batch_depth;
static gboolean flush_scheduled;
/* Core lock: see nlw_batch_on_end(). */
static NlwBatchHook batch_hooks[NLW_BATCH_N];
/* Core lock: see nlw_core_on_unlock(); and whether the batch ending is
 * nlw_core_unlock()'s. */
static NlwUnlockTake unlock_take;
static NlwUnlockRun unlock_run;
static gboolean unlocking;

void
nlw_count(NlwCounter counter, guint64 n)
{
	__atomic_fetch_add(&counters[counter], n, __ATOMIC_RELAXED);
}

NcmLwipInputMode
nlw_input_mode(void)
{
	return (NcmLwipInputMode)g_atomic_int_get(&input_mode);
}

void
nlw_batch_on_end(NlwBatchStage stage, NlwBatchHook hook)
{
	batch_hooks[stage] = hook;
}

/* Core lock held. Before a file registered its hook it had no work left. */
static void
run_batch_hook(NlwBatchStage stage)
{
	if (batch_hooks[stage] != NULL)
		batch_hooks[stage]();
}

void
nlw_batch_begin(void)
{
	batch_depth++;
}

void
nlw_batch_end(void)
{
	if (--batch_depth == 0) {
		run_batch_hook(NLW_BATCH_CREDIT);
		run_batch_hook(NLW_BATCH_FLUSH);
		run_batch_hook(NLW_BATCH_WAKE);
	}
}

void
nlw_core_lock(void)
{
	LOCK_TCPIP_CORE();
	nlw_batch_begin();
}

void
nlw_core_on_unlock(NlwUnlockTake take, NlwUnlockRun run)
{
	unlock_take = take;
	unlock_run = run;
}

gboolean
nlw_core_unlocking(void)
{
	return unlocking;
}

void
nlw_core_unlock(void)
{
	gpointer after[NLW_UNLOCK_MAX];
	NlwUnlockRun run;
	guint n = 0;

	unlocking = TRUE;
	nlw_batch_end();
	unlocking = FALSE;
	/* Both read under the lock: the batch may have registered them. */
	run = unlock_run;
	if (unlock_take != NULL)
		n = unlock_take(after, G_N_ELEMENTS(after));
	UNLOCK_TCPIP_CORE();
	for (guint i = 0; i < n; i++)
		run(after[i]);
}

gboolean
nlw_in_batch(void)
{
	return batch_depth > 0;
}

/* tcpip thread, after the timers or queued frames that produced output. */
static void
flush_callback(void *arg)
{
	flush_scheduled = FALSE;
	run_batch_hook(NLW_BATCH_CREDIT);
	run_batch_hook(NLW_BATCH_FLUSH);
}

void
nlw_schedule_flush(void)
{
	if (flush_scheduled)
		return;
	/* A full mailbox means the tcpip thread has queued work ahead: the
	 * next output from that work tries again. Flush now rather than
	 * leave frames sitting in an open NTB. */
	if (tcpip_try_callback(flush_callback, NULL) == ERR_OK)
		flush_scheduled = TRUE;
	else
		run_batch_hook(NLW_BATCH_FLUSH);
}

typedef struct {
	GMutex lock;
	GCond cond;
	gboolean done;
} Barrier;

static void
barrier_reached(void *arg)
{
	Barrier *b = arg;

	ncm_mutex_lock(&b->lock);
	b->done = TRUE;
	g_cond_signal(&b->cond);
	ncm_mutex_unlock(&b->lock);
}

void
nlw_tcpip_barrier(void)
{
	Barrier b = {.done = FALSE};

	g_mutex_init(&b.lock);
	g_cond_init(&b.cond);
	/* The mailbox is FIFO: once this runs, everything before it has. */
	if (tcpip_callback(barrier_reached, &b) == ERR_OK) {
		ncm_mutex_lock(&b.lock);
		while (!b.done)
			ncm_cond_wait(&b.cond, &b.lock);
		ncm_mutex_unlock(&b.lock);
	}
	g_cond_clear(&b.cond);
	g_mutex_clear(&b.lock);
}

static void
tcpip_ready(void *arg)
{
	GMutex *lock = ((gpointer *)arg)[0];
	GCond *cond = ((gpointer *)arg)[1];
	gboolean *done = ((gpointer *)arg)[2];

	ncm_mutex_lock(lock);
	*done = TRUE;
	g_cond_broadcast(cond);
	ncm_mutex_unlock(lock);
}

static void
start_lwip(void)
{
	GMutex lock;
	GCond cond;
	gboolean done = FALSE;
	gpointer args[3] = {&lock, &cond, &done};

	g_mutex_init(&lock);
	g_cond_init(&cond);
	tcpip_init(tcpip_ready, args);
	ncm_mutex_lock(&lock);
	while (!done)
		ncm_cond_wait(&cond, &lock);
	ncm_mutex_unlock(&lock);
	g_cond_clear(&cond);
	g_mutex_clear(&lock);
}

static void
ncm_lwip_stack_init(NcmLwipStack *self)
{
}

static void
ncm_lwip_stack_class_init(NcmLwipStackClass *klass)
{
}

NcmLwipStack *
ncm_lwip_stack_get_default(void)
{
	static gsize once;
	static NcmLwipStack *stack;

	if (g_once_init_enter(&once)) {
		/* tcpip_init() may run once per process; tests that use lwIP
		 * directly must go through here too. */
		start_lwip();
		stack = g_object_new(NCM_LWIP_TYPE_STACK, NULL);
		g_once_init_leave(&once, 1);
	}
	return g_object_ref(stack);
}

void
ncm_lwip_stack_get_stats(NcmLwipStack *self, NcmLwipStats *ret_stats)
{
	guint64 v[NLW_COUNT_N], waits, wait_us;

	g_return_if_fail(NCM_LWIP_IS_STACK(self));
	for (guint i = 0; i < NLW_COUNT_N; i++)
		v[i] = __atomic_load_n(&counters[i], __ATOMIC_RELAXED);
	ncm_lwip_core_lock_waits(&waits, &wait_us);
	*ret_stats = (NcmLwipStats){
		.rx_frames = v[NLW_COUNT_RX_FRAMES],
		.rx_drops = v[NLW_COUNT_RX_DROPS],
		.tx_frames = v[NLW_COUNT_TX_FRAMES],
		.tx_queued = v[NLW_COUNT_TX_QUEUED],
		.tx_drops = v[NLW_COUNT_TX_DROPS],
		.tx_flushes = v[NLW_COUNT_TX_FLUSHES],
		.window_posts = v[NLW_COUNT_WINDOW_POSTS],
		.main_dispatches = v[NLW_COUNT_MAIN_DISPATCHES],
		.rx_compacted = v[NLW_COUNT_RX_COMPACTED],
		.syn_evicted = ncm_lwip_backlog_evictions(),
		.time_wait_evicted = ncm_lwip_timewait_evictions(),
		.rx_merged = v[NLW_COUNT_RX_MERGED],
		.core_lock_waits = waits,
		.core_lock_wait_us = wait_us,
		.tx_cut = v[NLW_COUNT_TX_CUT],
		.tx_sparse_ahead = v[NLW_COUNT_TX_SPARSE_AHEAD],
	};
}

void
ncm_lwip_stack_set_input_mode(NcmLwipStack *self, NcmLwipInputMode mode)
{
	g_return_if_fail(NCM_LWIP_IS_STACK(self));
	g_atomic_int_set(&input_mode, (gint)mode);
}

static gpointer
task_thread(gpointer data)
{
	GTask *task = data;
	union {
		GTaskThreadFunc func;
		gpointer ptr;
	} u = {.ptr = g_object_get_data(G_OBJECT(task), "ncm-lwip-func")};
	GTaskThreadFunc func = u.func;

	func(task, g_task_get_source_object(task), g_task_get_task_data(task),
	     g_task_get_cancellable(task));
	nlw_count(NLW_COUNT_MAIN_DISPATCHES, 1);
	return NULL;
}

/*
 * The thread's reference, dropped on the caller's context once the
 * callback has run. Dropped on the thread, it could be the last one: the
 * task would free the caller's main context there, which the caller had
 * just polled through GLib-internal locks ThreadSanitizer cannot see
 * (test-lwip-tap's UDP receive: a report in 1 TSan run of 4).
 */
static void
task_completed(GObject *task, GParamSpec *pspec, gpointer data)
{
	(void)pspec;
	(void)data;
	/* The result may die with the task here, unread by a callback that
	 * never called its _finish(): take nlw_task_return()'s release. */
	ncm_tsan_acquire(task);
	g_object_unref(task);
}

void
nlw_task_run_in_thread(GTask *task, GTaskThreadFunc func)
{
	/* GObject data holds a gpointer; a union avoids an ISO C cast
	 * between function and object pointers. */
	union {
		GTaskThreadFunc func;
		gpointer ptr;
	} u = {.func = func};

	g_object_set_data(G_OBJECT(task), "ncm-lwip-func", u.ptr);
	g_signal_connect(task, "notify::completed", G_CALLBACK(task_completed), NULL);
	g_thread_unref(g_thread_new("ncm-lwip-task", task_thread, task));
}

void
nlw_task_return(GTask *task, gpointer result, GDestroyNotify destroy, GError *error)
{
	ncm_tsan_release(task);
	if (error != NULL)
		g_task_return_error(task, error);
	else
		g_task_return_pointer(task, result, destroy);
}

gpointer
nlw_task_propagate(GAsyncResult *result, GError **error)
{
	ncm_tsan_acquire(result);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---- Addresses and errors ------------------------------------------------ */

void
nlw_addr_from_gio(GInetAddress *address, ip_addr_t *ret_ip)
{
	const guint8 *bytes = g_inet_address_to_bytes(address);

	if (g_inet_address_get_family(address) == G_SOCKET_FAMILY_IPV4) {
		ip_addr_set_zero_ip4(ret_ip);
		memcpy(&ip_2_ip4(ret_ip)->addr, bytes, 4);
	} else {
		ip_addr_set_zero_ip6(ret_ip);
		memcpy(ip_2_ip6(ret_ip)->addr, bytes, 16);
	}
}

GInetAddress *
nlw_addr_to_gio(const ip_addr_t *ip)
{
	if (IP_IS_V4(ip))
		return g_inet_address_new_from_bytes((const guint8 *)&ip_2_ip4(ip)->addr,
						     G_SOCKET_FAMILY_IPV4);
	return g_inet_address_new_from_bytes((const guint8 *)ip_2_ip6(ip)->addr,
					     G_SOCKET_FAMILY_IPV6);
}

GInetSocketAddress *
nlw_sockaddr_to_gio(const ip_addr_t *ip, u16_t port)
{
	g_autoptr(GInetAddress) address = nlw_addr_to_gio(ip);

	if (IP_IS_V6(ip) && ip6_addr_has_zone(ip_2_ip6(ip)))
		return G_INET_SOCKET_ADDRESS(g_object_new(G_TYPE_INET_SOCKET_ADDRESS, "address",
							  address, "port", (guint)port, "scope-id",
							  (guint)ip6_addr_zone(ip_2_ip6(ip)), NULL));
	return G_INET_SOCKET_ADDRESS(g_inet_socket_address_new(address, port));
}

guint
nlw_scope_of(GInetSocketAddress *address)
{
	GInetAddress *inet = g_inet_socket_address_get_address(address);

	if (g_inet_address_get_family(inet) != G_SOCKET_FAMILY_IPV6)
		return 0;
	return g_inet_socket_address_get_scope_id(address);
}

struct netif *
nlw_netif_for_scope(guint scope_id)
{
	struct netif *netif = NULL;

	if (scope_id != 0 && scope_id <= 255)
		netif = netif_get_by_index((u8_t)scope_id);
	if (netif == NULL)
		netif = netif_default;
	if (netif == NULL)
		netif = netif_list;
	return netif;
}

void
nlw_addr_assign_zone(ip_addr_t *ip, guint scope_id)
{
	struct netif *netif;

	if (!IP_IS_V6(ip) || !ip6_addr_islinklocal(ip_2_ip6(ip)))
		return;
	netif = nlw_netif_for_scope(scope_id);
	if (netif != NULL)
		ip6_addr_assign_zone(ip_2_ip6(ip), IP6_UNICAST, netif);
}

gboolean
nlw_routable(const ip_addr_t *ip)
{
	struct netif *netif;

	if (IP_IS_V6(ip))
		return ip6_route(IP6_ADDR_ANY6, ip_2_ip6(ip)) != NULL;
	netif = ip4_route(ip_2_ip4(ip));
	if (netif == NULL)
		return FALSE;
	return ip4_addr_netcmp(ip_2_ip4(ip), netif_ip4_addr(netif), netif_ip4_netmask(netif)) ||
	       !ip4_addr_isany_val(*netif_ip4_gw(netif)) ||
	       ip4_addr_isbroadcast(ip_2_ip4(ip), netif);
}

/* lwIP's own lwip_strerr() is "" unless built with LWIP_DEBUG. */
const char *
nlw_strerr(err_t err)
{
	switch (err) {
	case ERR_OK:
		return "no error";
	case ERR_MEM:
	case ERR_BUF:
		return "lwIP is out of buffers (too many connections or queued data; close some or raise MEMP_NUM_* in lwipopts.h)";
	case ERR_TIMEOUT:
		return "timed out";
	case ERR_RTE:
		return "no route to host (is a netif up with an address on that network?)";
	case ERR_INPROGRESS:
		return "operation in progress";
	case ERR_VAL:
	case ERR_ARG:
		return "invalid argument";
	case ERR_WOULDBLOCK:
		return "operation would block";
	case ERR_USE:
		return "address in use (another listener or socket has this port)";
	case ERR_ALREADY:
		return "already connecting";
	case ERR_ISCONN:
		return "already connected";
	case ERR_CONN:
		return "not connected";
	case ERR_IF:
		return "the network interface failed";
	case ERR_ABRT:
		return "connection aborted";
	case ERR_RST:
		return "connection reset by peer";
	case ERR_CLSD:
		return "connection closed";
	default:
		return "unknown lwIP error";
	}
}

gint
nlw_err_to_io(err_t err)
{
	switch (err) {
	case ERR_RST:
	case ERR_CLSD:
		return G_IO_ERROR_CONNECTION_CLOSED;
	case ERR_ABRT:
	case ERR_TIMEOUT:
		return G_IO_ERROR_TIMED_OUT;
	case ERR_RTE:
		return G_IO_ERROR_NETWORK_UNREACHABLE;
	case ERR_USE:
		return G_IO_ERROR_ADDRESS_IN_USE;
	case ERR_MEM:
	case ERR_BUF:
		return G_IO_ERROR_NO_SPACE;
	case ERR_VAL:
	case ERR_ARG:
		return G_IO_ERROR_INVALID_ARGUMENT;
	case ERR_CONN:
		return G_IO_ERROR_NOT_CONNECTED;
	default:
		return G_IO_ERROR_FAILED;
	}
}
