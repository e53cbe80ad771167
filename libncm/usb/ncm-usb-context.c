/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-context.c: the libusb context, its event thread, device timers and hotplug. */
#include <stdio.h>
#include <string.h>

#include "ncm-usb-context.h"
#include "ncm-error.h"


/* Idle ceiling for the event loop: timers re-arm it sooner through wake. */
#define NCM_EVENT_IDLE_US (100 * G_TIME_SPAN_MILLISECOND)

struct _NcmContext {
	GObject parent;
	libusb_context *usb;
	GThread *event_thread;
	gint stop;                 /* atomic: ends the event thread */
	gint64 armed_deadline;     /* atomic: when the event thread will next look at timers */
	guint64 main_dispatches;   /* atomic */
	GMainContext *owner;
	gboolean fresh_scans;      /* libusb's list goes stale here (no udevd) */

	/*
	 * Guards devices. Lock order: devices_lock, then a device's tx_lock.
	 * Never taken from inside a device lock.
	 */
	GMutex devices_lock;
	GPtrArray *devices;
	GHashTable *memory;        /* per-function blobs that outlive a session (devices_lock) */

	/* Watch state: owner's main context only. */
	gboolean watching;
	NcmMatch match;
	gchar *match_serial;
	gchar *match_path;
	gboolean hotplug;
	libusb_hotplug_callback_handle hotplug_handle;
	GSource *poll_source;
	GHashTable *known;         /* "bus:addr" -> TRUE: devices reported as present */
	gchar *fingerprint;        /* the device set at the last poll */
};

enum { SIGNAL_FUNCTION_ADDED, SIGNAL_DEVICE_REMOVED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void ncm_context_initable_iface_init(GInitableIface *iface);
static gboolean hotplug_usable(void);

G_DEFINE_TYPE_WITH_CODE(NcmContext, ncm_context, G_TYPE_OBJECT,
			G_IMPLEMENT_INTERFACE(G_TYPE_INITABLE, ncm_context_initable_iface_init))

G_DEFINE_QUARK(ncm-error-quark, ncm_error)

static gpointer
event_thread_main(gpointer data)
{
	NcmContext *self = data;

	while (!g_atomic_int_get(&self->stop)) {
		gint64 now = g_get_monotonic_time();
		gint64 next = now + NCM_EVENT_IDLE_US;

		ncm_mutex_lock(&self->devices_lock);
		for (guint i = 0; i < self->devices->len; i++)
			next = MIN(next, ncm_device_tick(g_ptr_array_index(self->devices, i), now));
		ncm_mutex_unlock(&self->devices_lock);

		__atomic_store_n(&self->armed_deadline, next, __ATOMIC_RELAXED);
		gint64 wait = MAX(next - now, 0);
		struct timeval tv = { .tv_sec = wait / G_USEC_PER_SEC,
				      .tv_usec = wait % G_USEC_PER_SEC };
		libusb_handle_events_timeout_completed(self->usb, &tv, NULL);
	}
	return NULL;
}

static gboolean
ncm_context_initable_init(GInitable *initable, GCancellable *cancellable, GError **error)
{
	NcmContext *self = NCM_CONTEXT(initable);
	int r = libusb_init(&self->usb);

	if (r < 0) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "libusb could not start (%s): is /dev/bus/usb present "
			    "(in a container, bind-mount it)?", libusb_strerror(r));
		return FALSE;
	}
	self->fresh_scans = !hotplug_usable();
	self->event_thread = g_thread_new("ncm-usb-events", event_thread_main, self);
	return TRUE;
}

static void
ncm_context_initable_iface_init(GInitableIface *iface)
{
	iface->init = ncm_context_initable_init;
}

static void
stop_watch(NcmContext *self)
{
	if (self->hotplug)
		libusb_hotplug_deregister_callback(self->usb, self->hotplug_handle);
	self->hotplug = FALSE;
	if (self->poll_source) {
		g_source_destroy(self->poll_source);
		g_clear_pointer(&self->poll_source, g_source_unref);
	}
	self->watching = FALSE;
}

static void
ncm_context_finalize(GObject *object)
{
	NcmContext *self = NCM_CONTEXT(object);

	if (self->usb)
		stop_watch(self);
	if (self->event_thread) {
		g_atomic_int_set(&self->stop, 1);
		libusb_interrupt_event_handler(self->usb);
		g_thread_join(self->event_thread);
	}
	if (self->devices->len)
		g_critical("NcmContext finalized with %u open devices", self->devices->len);
	g_ptr_array_unref(self->devices);
	g_hash_table_unref(self->memory);
	g_clear_pointer(&self->known, g_hash_table_unref);
	g_free(self->match_serial);
	g_free(self->match_path);
	g_free(self->fingerprint);
	if (self->usb)
		libusb_exit(self->usb);
	g_mutex_clear(&self->devices_lock);
	g_main_context_unref(self->owner);
	G_OBJECT_CLASS(ncm_context_parent_class)->finalize(object);
}

static void
ncm_context_init(NcmContext *self)
{
	g_mutex_init(&self->devices_lock);
	self->devices = g_ptr_array_new();
	self->memory = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	self->owner = g_main_context_ref_thread_default();
	self->known = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

static void
ncm_context_class_init(NcmContextClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->finalize = ncm_context_finalize;

	/**
	 * NcmContext::function-added:
	 * @info: the #NcmFunctionInfo that arrived (or was present at watch start).
	 */
	signals[SIGNAL_FUNCTION_ADDED] =
		g_signal_new("function-added", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
			     NULL, NULL, NULL, G_TYPE_NONE, 1, NCM_TYPE_FUNCTION_INFO);
	/**
	 * NcmContext::device-removed:
	 * @bus: bus number; @address: device address.
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
	return self->fresh_scans;
}

gboolean
ncm_context_is_event_thread(NcmContext *self)
{
	return g_thread_self() == self->event_thread;
}

void
ncm_context_add_device(NcmContext *self, NcmDevice *device)
{
	ncm_mutex_lock(&self->devices_lock);
	g_ptr_array_add(self->devices, device);
	ncm_mutex_unlock(&self->devices_lock);
	libusb_interrupt_event_handler(self->usb);
}

void
ncm_context_remember(NcmContext *self, const gchar *key, gconstpointer data, gsize len)
{
	ncm_mutex_lock(&self->devices_lock);
	g_hash_table_replace(self->memory, g_strdup(key), g_memdup2(data, len));
	ncm_mutex_unlock(&self->devices_lock);
}

gboolean
ncm_context_recall(NcmContext *self, const gchar *key, gpointer ret_data, gsize len)
{
	gpointer found;

	ncm_mutex_lock(&self->devices_lock);
	found = g_hash_table_lookup(self->memory, key);
	if (found)
		memcpy(ret_data, found, len);
	ncm_mutex_unlock(&self->devices_lock);
	return found != NULL;
}

void
ncm_context_remove_device(NcmContext *self, NcmDevice *device)
{
	ncm_mutex_lock(&self->devices_lock);
	g_ptr_array_remove(self->devices, device);
	ncm_mutex_unlock(&self->devices_lock);
}

void
ncm_context_wake(NcmContext *self, gint64 deadline_us)
{
	/*
	 * Interrupting costs a syscall, so only when the loop would sleep past
	 * it, and never from the event thread itself (an lwIP ACK sent while
	 * parsing an NTB): its loop asks every device for its deadline again as
	 * soon as the current callbacks return.
	 */
	if (ncm_context_is_event_thread(self))
		return;
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

/* ---- Watching for arrivals and removals --------------------------------- */

static gchar *
device_key(const NcmFunctionInfo *info)
{
	return g_strdup_printf("%u:%u", info->bus, info->address);
}

/* One pass: report functions that came and devices that went. FALSE if it could not look. */
static gboolean
rescan(NcmContext *self)
{
	g_autoptr(GPtrArray) all = ncm_context_enumerate(self, &self->match, NULL);
	g_autoptr(GHashTable) now = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GPtrArray) added = g_ptr_array_new();
	GHashTableIter iter;
	gpointer key;

	if (!all)
		return FALSE;
	for (guint i = 0; i < all->len; i++) {
		NcmFunctionInfo *info = g_ptr_array_index(all, i);
		gchar *k = device_key(info);

		if (!g_hash_table_contains(self->known, k))
			g_ptr_array_add(added, info);
		g_hash_table_add(now, k);
	}
	g_hash_table_iter_init(&iter, self->known);
	while (g_hash_table_iter_next(&iter, &key, NULL)) {
		guint bus, addr;

		if (g_hash_table_contains(now, key))
			continue;
		if (sscanf(key, "%u:%u", &bus, &addr) == 2)
			g_signal_emit(self, signals[SIGNAL_DEVICE_REMOVED], 0, bus, addr);
		g_hash_table_iter_remove(&iter);
	}
	g_hash_table_iter_init(&iter, now);
	while (g_hash_table_iter_next(&iter, &key, NULL))
		g_hash_table_add(self->known, g_strdup(key));
	for (guint i = 0; i < added->len; i++)
		g_signal_emit(self, signals[SIGNAL_FUNCTION_ADDED], 0, g_ptr_array_index(added, i));
	return TRUE;
}

/*
 * Which devices exist, by bus and address, without talking to any of them:
 * polling must not send control requests to a device that is streaming.
 */
static gchar *
device_set_fingerprint(NcmContext *self)
{
	libusb_context *usb = self->usb;
	libusb_device **list;
	GString *s = g_string_new(NULL);
	ssize_t n;

	if (self->fresh_scans && libusb_init(&usb) < 0)
		return g_string_free(s, FALSE);  /* differs from any real set: rescan */
	n = libusb_get_device_list(usb, &list);
	for (ssize_t i = 0; i < n; i++)
		g_string_append_printf(s, "%u:%u,", libusb_get_bus_number(list[i]),
				       libusb_get_device_address(list[i]));
	if (n >= 0)
		libusb_free_device_list(list, 1);
	if (usb != self->usb)
		libusb_exit(usb);
	return g_string_free(s, FALSE);
}

static gboolean
rescan_cb(gpointer data)
{
	NcmContext *self = data;
	g_autofree gchar *now = NULL;

	if (!self->watching)
		return G_SOURCE_CONTINUE;
	now = device_set_fingerprint(self);
	g_debug("poll: devices %s (was %s)", now, self->fingerprint);
	/* Only a completed rescan moves the fingerprint on, so a failed one is retried. */
	if (g_strcmp0(now, self->fingerprint) != 0 && rescan(self)) {
		g_free(self->fingerprint);
		self->fingerprint = g_steal_pointer(&now);
	}
	return G_SOURCE_CONTINUE;
}

static gboolean
rescan_once_cb(gpointer data)
{
	if (!rescan(data))
		g_debug("rescan after a hotplug event failed");
	return G_SOURCE_REMOVE;
}

/* libusb thread: hand the event to the owner, where enumeration may do I/O. */
static int LIBUSB_CALL
hotplug_cb(libusb_context *ctx, libusb_device *dev, libusb_hotplug_event event, void *data)
{
	NcmContext *self = data;

	ncm_context_count_dispatch(self);
	ncm_context_post(self->owner, rescan_once_cb, g_object_ref(self), g_object_unref);
	return 0;
}

/*
 * libusb's Linux hotplug listens to udevd. Without udevd (initramfs,
 * containers) it never fires and its device list goes stale, so poll then.
 */
static gboolean
hotplug_usable(void)
{
	if (!libusb_has_capability(LIBUSB_CAP_HAS_HOTPLUG))
		return FALSE;
#ifdef __linux__
	if (!g_file_test("/run/udev/control", G_FILE_TEST_EXISTS))
		return FALSE;
#endif
	return g_getenv("NCM_FORCE_POLL") == NULL;
}

gboolean
ncm_context_watch(NcmContext *self, const NcmMatch *match, guint poll_ms, GError **error)
{
	g_return_val_if_fail(NCM_IS_CONTEXT(self), FALSE);

	stop_watch(self);
	g_hash_table_remove_all(self->known);
	g_free(self->match_serial);
	g_free(self->match_path);
	self->match = match ? *match : (NcmMatch){ 0 };
	self->match_serial = g_strdup(self->match.serial);
	self->match_path = g_strdup(self->match.port_path);
	self->match.serial = self->match_serial;
	self->match.port_path = self->match_path;
	self->watching = TRUE;

	if (hotplug_usable()) {
		int r = libusb_hotplug_register_callback(
			self->usb,
			LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED | LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT,
			0, LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY,
			LIBUSB_HOTPLUG_MATCH_ANY, hotplug_cb, self, &self->hotplug_handle);
		self->hotplug = r == LIBUSB_SUCCESS;
	}
	if (!self->hotplug) {
		g_free(self->fingerprint);
		self->fingerprint = device_set_fingerprint(self);
		self->poll_source = g_timeout_source_new(poll_ms ? poll_ms : 1000);
		g_source_set_callback(self->poll_source, rescan_cb, self, NULL);
		g_source_attach(self->poll_source, self->owner);
	}
	if (!rescan(self)) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "cannot list USB devices: is /dev/bus/usb readable?");
		stop_watch(self);
		return FALSE;
	}
	return TRUE;
}
