/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-context.c: the libusb context, its event thread and the timeouts it runs, posting to the owner. */
#include <stdio.h>
#include <string.h>

#include "ncm-usb-context.h"
#include "ncm-error.h"


/*
 * Idle ceiling for the event loop. Every deadline a timeout has reaches the
 * loop (its return value, or ncm_context_wake() from other threads), so an
 * idle link costs no wake-up but this one: at 100 ms it woke the event
 * thread ten times a second for as long as a phone stayed plugged in
 * (idle_check in tests/vm/guest-lib.sh). What it still catches is the one clock a
 * producer starts without waking the loop, TX's "sending stopped" watch
 * (NCM_TX_STUCK_US, 10 s): waking for it would cost a syscall per lone
 * datagram, and a ceiling under it finds it in time.
 */
#define NCM_EVENT_IDLE_MS 5000

struct _NcmContext {
	GObject parent;
	libusb_context *usb;
	GThread *event_thread;
	gint stop;                 /* atomic: ends the event thread */
	gint64 armed_deadline;     /* atomic: when the event thread will next look at timers */
	guint64 main_dispatches;   /* atomic */
	GMainContext *owner;
	gint hotplug_events;       /* atomic: libusb hotplug callbacks so far */
	gint fresh_scans;          /* atomic: libusb's list goes stale here (no udevd, or its
				    * events do not reach us) */

	/* A fresh scan context is starting: the event thread waits. Set and
	 * cleared under park_lock; read without it first (atomic), so that the
	 * event loop takes no lock per round while nothing parks it. */
	GMutex park_lock;
	GCond park_cond;
	gint parked_for_init;
	gint idle_ms;              /* the loop's idle ceiling (atomic; tests raise it) */
	/* The gate (below): threads that hold this context's event lock and
	 * wait for live_lock (atomic); whether the gate took the event lock
	 * (under live_lock). */
	gint gate_waiters;
	gboolean gate_locked;

	/*
	 * Guards timeouts and memory. Lock order: lock, then whatever a
	 * timeout takes (a device's tx_lock). Never taken from inside those.
	 */
	GMutex lock;
	GArray *timeouts;          /* NcmTimeout */
	guint tick_turn;           /* the timeout each round starts at */
	GHashTable *memory;        /* per-function blobs that outlive a session */

	/* What other parts hang on the context (the watch): owner's context only. */
	GData *attached;
};

typedef struct {
	NcmTimeoutFunc func;
	gpointer data;
} NcmTimeout;

enum { SIGNAL_FUNCTION_ADDED, SIGNAL_DEVICE_REMOVED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void ncm_context_initable_iface_init(GInitableIface *iface);

/*
 * Every initialised context of the process, for the gate around libusb_init()
 * (ncm_context_init_fresh_usb()). live_lock also serialises the gate's
 * holders, so their event-lock grabs never cross. A thread that may hold
 * an event lock takes it only inside gate_wait_begin() .. gate_wait_end().
 */
static GMutex live_lock;
static GSList *live_contexts;

/*
 * The context whose events this thread is handling, so whose event lock it
 * holds whenever it runs a callback: its event thread's for good, a thread
 * in synchronous libusb I/O for the length of one of our transfer callbacks
 * (NCM_HANDLING_SCOPE()).
 */
static __thread NcmContext *handling;

G_DEFINE_TYPE_WITH_CODE(NcmContext, ncm_context, G_TYPE_OBJECT,
			G_IMPLEMENT_INTERFACE(G_TYPE_INITABLE, ncm_context_initable_iface_init))

/*
 * Lock held. A device's timeout hands its batch of received frames to its
 * sink (lwIP takes the ACKs there and sends on at once) and flushes a
 * partly filled OUT NTB (ncm-usb-timers.c). With one thread serving 8 busy
 * devices in open order, the device opened last was served last in every
 * round, and uploads fell off down the list (mean shares 1.11 to 0.79 for
 * ncm-tun, 1.08 to 0.91 for lwIP; flat with the gadgets listed in reverse,
 * so not the emulation's): each round starts one device further on
 * (tests/bench/RESULTS.md, issue 20).
 */
static void
run_timeouts(NcmContext *self, gint64 now, gint64 *next)
{
	guint n = self->timeouts->len;
	guint first;

	if (n == 0)
		return;
	first = self->tick_turn++ % n;
	for (guint k = 0; k < n; k++) {
		NcmTimeout *t = &g_array_index(self->timeouts, NcmTimeout, (first + k) % n);

		*next = MIN(*next, t->func(t->data, now));
	}
}

static gpointer
event_thread_main(gpointer data)
{
	NcmContext *self = data;

	handling = self;
	while (!g_atomic_int_get(&self->stop)) {
		if (g_atomic_int_get(&self->parked_for_init)) {
			ncm_mutex_lock(&self->park_lock);
			while (g_atomic_int_get(&self->parked_for_init))
				ncm_cond_wait(&self->park_cond, &self->park_lock);
			ncm_mutex_unlock(&self->park_lock);
		}

		gint64 now = g_get_monotonic_time();
		gint64 next = now + g_atomic_int_get(&self->idle_ms) * G_TIME_SPAN_MILLISECOND;

		/*
		 * Until the new deadline is armed below, any wake interrupts: a
		 * producer that changes what a timeout reads after that timeout
		 * has looked (an NTB opened, a transfer parked) would otherwise
		 * find the old, passed deadline, not interrupt, and wait for the
		 * idle ceiling. An interrupt is remembered, so the worst is one
		 * more round. The fence pairs with the wake's: some timeouts read
		 * their state without a lock (the parked count), so either they
		 * see the producer's change or the producer sees this store.
		 */
		__atomic_store_n(&self->armed_deadline, G_MAXINT64, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);

		/*
		 * Under libusb's event lock: a thread doing synchronous libusb I/O
		 * (enumeration, another device's open) may handle events, and so
		 * run RX callbacks, while this thread is between event batches.
		 * The timeouts touch what those callbacks touch (the nudge), so
		 * they must not overlap.
		 */
		libusb_lock_events(self->usb);
		ncm_mutex_lock(&self->lock);
		run_timeouts(self, now, &next);
		ncm_mutex_unlock(&self->lock);
		libusb_unlock_events(self->usb);

		__atomic_store_n(&self->armed_deadline, next, __ATOMIC_RELAXED);
		gint64 wait = MAX(next - now, 0);
		struct timeval tv = { .tv_sec = wait / G_USEC_PER_SEC,
				      .tv_usec = wait % G_USEC_PER_SEC };
		libusb_handle_events_timeout_completed(self->usb, &tv, NULL);
	}
	return NULL;
}

NcmContext *
ncm_context_handling_enter(NcmContext *ctx)
{
	NcmContext *prev = handling;

	handling = ctx;
	return prev;
}

void
ncm_context_handling_leave(NcmContext **prev)
{
	handling = *prev;
}

/*
 * A thread that holds an event lock (a callback that creates or drops a
 * context, or scans) says so from before it may wait on a gate until it has
 * taken live_lock: the gate's holder, which may be polling for that very
 * event lock, then knows that nobody can handle that context's events
 * before it lets go, and stops polling. Without this the two would wait for
 * each other.
 */
static NcmContext *
gate_wait_begin(void)
{
	NcmContext *mine = handling;

	if (mine)
		g_atomic_int_inc(&mine->gate_waiters);
	return mine;
}

/* live_lock held: a gate that saw the announcement is over, and no new one
 * may see it once this thread is back handling events. */
static void
gate_wait_end(NcmContext *mine)
{
	if (mine)
		g_atomic_int_add(&mine->gate_waiters, -1);
}

static void
live_lock_take(void)
{
	NcmContext *mine = gate_wait_begin();

	ncm_mutex_lock(&live_lock);
	gate_wait_end(mine);
}

/*
 * live_lock held. Stops @c's event handling: parks its event thread
 * (interrupted, it would otherwise win its event lock straight back) and
 * takes its event lock, which also keeps out threads handling events inside
 * synchronous I/O. Polled, never waited for: the holder may be this thread
 * (a callback of @c), or one that announced a wait on this gate
 * (gate_wait_begin()); either way nobody handles @c's events meanwhile, and
 * @c is left as it is.
 */
static void
gate_quiesce(NcmContext *c)
{
	if (c == handling)
		return;
	ncm_mutex_lock(&c->park_lock);
	g_atomic_int_set(&c->parked_for_init, TRUE);
	ncm_mutex_unlock(&c->park_lock);
	libusb_interrupt_event_handler(c->usb);
	while (libusb_try_lock_events(c->usb) != 0) {
		if (g_atomic_int_get(&c->gate_waiters) > 0)
			return;
		g_usleep(100);
	}
	c->gate_locked = TRUE;
}

static void
gate_release(NcmContext *c)
{
	if (c == handling)
		return;
	if (c->gate_locked) {
		c->gate_locked = FALSE;
		libusb_unlock_events(c->usb);
	}
	ncm_mutex_lock(&c->park_lock);
	g_atomic_int_set(&c->parked_for_init, FALSE);
	g_cond_broadcast(&c->park_cond);
	ncm_mutex_unlock(&c->park_lock);
}

/*
 * libusb 1.0.26 adds a new context to the process's list before it scans,
 * but takes hotplug messages for it only after the scan. A disconnect that
 * libusb notices in between on any other context's event thread (a POLLERR
 * on an unplugged device's open handle calls linux_device_disconnected(),
 * which walks every context) takes the device off the new context's list
 * without a message to hold the list's reference: the device and its parent
 * hub leak at libusb_exit(). So every libusb_init() of ours, an NcmContext's
 * own as well as a fresh scan's, runs inside this gate: live_lock held and
 * no context of ours handling events. libusb_exit() needs nothing: it
 * unlists the context before all else.
 */
static void
gate_close(void)
{
	live_lock_take();
	for (GSList *l = live_contexts; l; l = l->next)
		gate_quiesce(l->data);
}

static void
gate_open(void)
{
	for (GSList *l = live_contexts; l; l = l->next)
		gate_release(l->data);
	ncm_mutex_unlock(&live_lock);
}

/* Inside the gate. */
static int
usb_init(NcmContext *self)
{
	int r = libusb_init(&self->usb);

#if LIBUSB_API_VERSION >= 0x01000108
	/*
	 * Where devices cannot be listed at all (Android apps: no sysfs or
	 * usbfs access) libusb_init() fails on the scan. Devices handed over
	 * as fds (ncm_context_enumerate_fd()) need no scan: start without one.
	 * The option is process-wide, but so is the reason it is needed.
	 */
	if (r < 0 && libusb_set_option(NULL, LIBUSB_OPTION_NO_DEVICE_DISCOVERY) == 0) {
		r = libusb_init(&self->usb);
		if (r == 0)
			g_message("USB devices cannot be listed here: only devices passed as file "
				  "descriptors can be used");
	}
#endif
	return r;
}

static gboolean
ncm_context_initable_init(GInitable *initable, GCancellable *cancellable, GError **error)
{
	NcmContext *self = NCM_CONTEXT(initable);
	int r;

	/* Listed before the gate opens: the next gate finds its event thread. */
	gate_close();
	r = usb_init(self);
	if (r == 0) {
		g_atomic_int_set(&self->fresh_scans, !ncm_context_hotplug_usable());
		live_contexts = g_slist_prepend(live_contexts, self);
		self->event_thread = g_thread_new("ncm-usb-events", event_thread_main, self);
	}
	gate_open();
	if (r < 0) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "libusb could not start (%s): is /dev/bus/usb present "
			    "(in a container, bind-mount it)?", libusb_strerror(r));
		return FALSE;
	}
	return TRUE;
}

static void
ncm_context_initable_iface_init(GInitableIface *iface)
{
	iface->init = ncm_context_initable_init;
}

static void
ncm_context_finalize(GObject *object)
{
	NcmContext *self = NCM_CONTEXT(object);
	NcmContext *mine;

	/* The last reference may go on any thread; a dispatch that held one
	 * (polling's tick, a posted rescan) released it first. */
	ncm_tsan_acquire(self);
	/* What hangs on the context may still talk to libusb (deregistering). */
	g_datalist_clear(&self->attached);
	/*
	 * Listed until its event thread has ended, so that no gate runs while it
	 * still handles events. The join may wait out a gate that parked that
	 * thread: announced as a wait on the gate (gate_wait_begin()).
	 */
	mine = gate_wait_begin();
	if (self->event_thread) {
		g_atomic_int_set(&self->stop, 1);
		libusb_interrupt_event_handler(self->usb);
		g_thread_join(self->event_thread);
	}
	ncm_mutex_lock(&live_lock);
	gate_wait_end(mine);
	live_contexts = g_slist_remove(live_contexts, self);
	ncm_mutex_unlock(&live_lock);
	if (self->timeouts->len)
		g_critical("NcmContext finalized with %u timeouts (open devices)", self->timeouts->len);
	g_array_unref(self->timeouts);
	g_hash_table_unref(self->memory);
	if (self->usb)
		libusb_exit(self->usb);
	g_mutex_clear(&self->lock);
	g_mutex_clear(&self->park_lock);
	g_cond_clear(&self->park_cond);
	g_main_context_unref(self->owner);
	G_OBJECT_CLASS(ncm_context_parent_class)->finalize(object);
}

static void
ncm_context_init(NcmContext *self)
{
	g_mutex_init(&self->lock);
	g_mutex_init(&self->park_lock);
	g_cond_init(&self->park_cond);
	self->idle_ms = NCM_EVENT_IDLE_MS;
	self->timeouts = g_array_new(FALSE, FALSE, sizeof(NcmTimeout));
	self->memory = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	self->owner = g_main_context_ref_thread_default();
	g_datalist_init(&self->attached);
}

static void
ncm_context_class_init(NcmContextClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->finalize = ncm_context_finalize;

	/**
	 * NcmContext::function-added:
	 * @self: the #NcmContext.
	 * @info: the #NcmFunctionInfo that arrived (or was present when
	 *   ncm_context_watch() started).
	 *
	 * A matching NCM function arrived. Emitted on the owner's main context.
	 */
	signals[SIGNAL_FUNCTION_ADDED] =
		g_signal_new("function-added", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
			     NULL, NULL, NULL, G_TYPE_NONE, 1, NCM_TYPE_FUNCTION_INFO);
	/**
	 * NcmContext::device-removed:
	 * @self: the #NcmContext.
	 * @bus: the bus number of the device that left.
	 * @address: its device address.
	 *
	 * A USB device left (any device: compare with #NcmFunctionInfo's bus
	 * and address). Emitted on the owner's main context.
	 */
	signals[SIGNAL_DEVICE_REMOVED] =
		g_signal_new("device-removed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
			     NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_UINT, G_TYPE_UINT);
}

NcmContext *
ncm_context_new(GError **error)
{
	return g_initable_new(NCM_TYPE_CONTEXT, NULL, error, NULL);
}

libusb_context *
ncm_context_get_usb(NcmContext *self)
{
	return self->usb;
}

gboolean
ncm_context_needs_fresh_scan(NcmContext *self)
{
	return g_atomic_int_get(&self->fresh_scans);
}

void
ncm_context_set_fresh_scans(NcmContext *self)
{
	g_atomic_int_set(&self->fresh_scans, TRUE);
}

void
ncm_context_set_idle_ms(NcmContext *self, gint ms)
{
	g_atomic_int_set(&self->idle_ms, ms);
	libusb_interrupt_event_handler(self->usb);
}

/* A short-lived scan context, inside the gate like every libusb_init() of ours. */
int
ncm_context_init_fresh_usb(libusb_context **out)
{
	int r;

	gate_close();
	r = libusb_init(out);
	gate_open();
	return r;
}

gboolean
ncm_context_is_event_thread(NcmContext *self)
{
	return g_thread_self() == self->event_thread;
}

GMainContext *
ncm_context_get_owner(NcmContext *self)
{
	return self->owner;
}

void
ncm_context_add_timeout(NcmContext *self, NcmTimeoutFunc func, gpointer data)
{
	NcmTimeout t = { func, data };

	ncm_mutex_lock(&self->lock);
	g_array_append_val(self->timeouts, t);
	ncm_mutex_unlock(&self->lock);
	libusb_interrupt_event_handler(self->usb);
}

gboolean
ncm_context_remove_timeout(NcmContext *self, NcmTimeoutFunc func, gpointer data)
{
	gboolean found = FALSE;

	ncm_mutex_lock(&self->lock);
	for (guint i = 0; i < self->timeouts->len; i++) {
		NcmTimeout *t = &g_array_index(self->timeouts, NcmTimeout, i);

		if (t->func == func && t->data == data) {
			g_array_remove_index_fast(self->timeouts, i);
			found = TRUE;
			break;
		}
	}
	ncm_mutex_unlock(&self->lock);
	return found;
}

void
ncm_context_attach(NcmContext *self, const gchar *key, gpointer data, GDestroyNotify destroy)
{
	g_datalist_set_data_full(&self->attached, key, data, destroy);
}

gpointer
ncm_context_get_attached(NcmContext *self, const gchar *key)
{
	return g_datalist_get_data(&self->attached, key);
}

/*
 * libusb's Linux hotplug listens to udevd. Without udevd (initramfs,
 * containers) it never fires and its device list goes stale, so poll then.
 */
gboolean
ncm_context_hotplug_usable(void)
{
	if (!libusb_has_capability(LIBUSB_CAP_HAS_HOTPLUG))
		return FALSE;
#ifdef __linux__
	if (!g_file_test("/run/udev/control", G_FILE_TEST_EXISTS))
		return FALSE;
#endif
	return g_getenv("NCM_FORCE_POLL") == NULL;
}

void
ncm_context_remember(NcmContext *self, const gchar *key, gconstpointer data, gsize len)
{
	ncm_mutex_lock(&self->lock);
	g_hash_table_replace(self->memory, g_strdup(key), g_memdup2(data, len));
	ncm_mutex_unlock(&self->lock);
}

gboolean
ncm_context_recall(NcmContext *self, const gchar *key, gpointer ret_data, gsize len)
{
	gpointer found;

	ncm_mutex_lock(&self->lock);
	found = g_hash_table_lookup(self->memory, key);
	if (found)
		memcpy(ret_data, found, len);
	ncm_mutex_unlock(&self->lock);
	return found != NULL;
}

void
ncm_context_wake(NcmContext *self, gint64 deadline_us)
{
	/*
	 * Interrupting costs a syscall, so only when the loop would sleep past
	 * it, and never from the event thread itself (an lwIP ACK sent while
	 * parsing an NTB): its loop asks every timeout for its deadline again as
	 * soon as the current callbacks return.
	 */
	if (ncm_context_is_event_thread(self))
		return;
	/* After the caller's change to what the timeouts read (see the loop). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (deadline_us < __atomic_load_n(&self->armed_deadline, __ATOMIC_RELAXED)) {
		__atomic_store_n(&self->armed_deadline, deadline_us, __ATOMIC_RELAXED);
		libusb_interrupt_event_handler(self->usb);
	}
}

/*
 * A posted call crosses from the libusb thread to the owner's thread
 * through GMainContext's lock, which lives in uninstrumented GLib. The
 * release/acquire pair on the Posted block tells TSan about that edge, so
 * everything written before the post (the event, the GSource) is seen as
 * ordered before its dispatch and its free.
 */
typedef struct {
	GSourceFunc func;
	gpointer data;
	GDestroyNotify destroy;
} Posted;

static gboolean
posted_dispatch(gpointer user_data)
{
	Posted *p = user_data;

	ncm_tsan_acquire(p);
	return p->func(p->data);
}

static void
posted_free(gpointer user_data)
{
	Posted *p = user_data;

	ncm_tsan_acquire(p);
	if (p->destroy)
		p->destroy(p->data);
	g_free(p);
}

void
ncm_context_post(GMainContext *owner, GSourceFunc func, gpointer data, GDestroyNotify destroy)
{
	GSource *source = g_idle_source_new();
	Posted *p = g_new(Posted, 1);

	*p = (Posted){func, data, destroy};
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, posted_dispatch, p, posted_free);
	ncm_tsan_release(p);
	g_source_attach(source, owner);
	g_source_unref(source);
}

void
ncm_context_note_hotplug(NcmContext *self)
{
	g_atomic_int_inc(&self->hotplug_events);
}

guint
ncm_context_get_hotplug_events(NcmContext *self)
{
	return (guint)g_atomic_int_get(&self->hotplug_events);
}

void
ncm_context_count_dispatch(NcmContext *self)
{
	__atomic_add_fetch(&self->main_dispatches, 1, __ATOMIC_RELAXED);
}

guint64
ncm_context_get_main_dispatches(NcmContext *self)
{
	g_return_val_if_fail(NCM_IS_CONTEXT(self), 0);
	return __atomic_load_n(&self->main_dispatches, __ATOMIC_RELAXED);
}

