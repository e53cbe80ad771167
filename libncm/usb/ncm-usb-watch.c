/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-watch.c: reporting NCM functions that arrive and devices that leave: libusb hotplug, else polling. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/inotify.h>
#include <glib-unix.h>
#endif

#include "ncm-error.h"
#include "ncm-usb-context.h"

#define NCM_WATCH_KEY "ncm-watch"

/* Hangs on the context; owner's main context only. */
typedef struct {
	NcmContext *context;       /* not a reference: the context owns the watch */
	NcmMatch match;
	gchar *match_serial;
	gchar *match_path;
	gboolean hotplug;
	libusb_hotplug_callback_handle hotplug_handle;
	GSource *poll_source;
	GHashTable *known;         /* "bus:addr" -> TRUE: devices reported as present */
	GHashTable *recheck;       /* "bus:addr" -> TRUE: reported, then found gone while present */
	GHashTable *rechecked;     /* "bus:addr" -> gint64 *: when it was last looked at again */
	gint64 created_at;         /* it reported what was present then */
	gchar *fingerprint;        /* the device set at the last poll */
	guint poll_ms;
	/* Hotplug only: udevd may run where its events never arrive (a
	 * container with the host's /run/udev but a network namespace of its
	 * own: libudev hears udevd over netlink). The usbfs nodes say when
	 * devices come or go; with no event for them, the watch polls. */
	GSource *deaf_source;      /* a look every DEAF_CHECK_MS, where inotify is not */
	int nodes_fd;              /* inotify on /dev/bus/usb and its buses; -1: none */
	GSource *nodes_source;     /* ... which looks when a node comes or goes */
	int nodes_top_wd;          /* inotify's watch of /dev/bus/usb itself */
	gboolean nodes_could;      /* inotify works here: the clock tries it again */
	GSource *grace_source;     /* ... and once more when a change's grace ends */
	gchar *nodes;              /* the usbfs nodes at the last look */
	guint events_at_look;      /* hotplug callbacks by then (counted on libusb's thread) */
	guint events_before;       /* ... at the look before a change; valid while changed_at */
	gint64 changed_at;         /* a look first saw the change; 0: no change pending */
} NcmWatch;

static void deaf_sources_drop(NcmWatch *self);

static void
source_drop(GSource **source)
{
	if (*source) {
		g_source_destroy(*source);
		g_source_unref(*source);
		*source = NULL;
	}
}

static void
watch_free(gpointer data)
{
	NcmWatch *w = data;

	if (w->hotplug)
		libusb_hotplug_deregister_callback(ncm_context_get_usb(w->context), w->hotplug_handle);
	source_drop(&w->poll_source);
	deaf_sources_drop(w);
	g_free(w->nodes);
	g_hash_table_unref(w->known);
	g_hash_table_unref(w->recheck);
	g_hash_table_unref(w->rechecked);
	g_free(w->match_serial);
	g_free(w->match_path);
	g_free(w->fingerprint);
	g_free(w);
}

static gchar *
device_key(const NcmFunctionInfo *info)
{
	return g_strdup_printf("%u:%u", info->bus, info->address);
}

/* One pass: report functions that came and devices that went. FALSE if it could not look. */
static gboolean
rescan(NcmWatch *self)
{
	g_autoptr(GPtrArray) all = ncm_context_enumerate(self->context, &self->match, NULL);
	g_autoptr(GHashTable) now = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GPtrArray) added = g_ptr_array_new();
	GHashTableIter iter;
	gpointer key;

	if (!all)
		return FALSE;
	for (guint i = 0; i < all->len; i++) {
		NcmFunctionInfo *info = g_ptr_array_index(all, i);
		gchar *k = device_key(info);

		if (!g_hash_table_contains(self->known, k) || g_hash_table_contains(self->recheck, k))
			g_ptr_array_add(added, info);
		g_hash_table_add(now, k);
	}
	g_hash_table_remove_all(self->recheck);
	g_hash_table_iter_init(&iter, self->known);
	while (g_hash_table_iter_next(&iter, &key, NULL)) {
		guint bus, addr;

		if (g_hash_table_contains(now, key))
			continue;
		g_hash_table_remove(self->rechecked, key);
		if (sscanf(key, "%u:%u", &bus, &addr) == 2)
			g_signal_emit_by_name(self->context, "device-removed", bus, addr);
		g_hash_table_iter_remove(&iter);
	}
	g_hash_table_iter_init(&iter, now);
	while (g_hash_table_iter_next(&iter, &key, NULL))
		g_hash_table_add(self->known, g_strdup(key));
	for (guint i = 0; i < added->len; i++)
		g_signal_emit_by_name(self->context, "function-added", g_ptr_array_index(added, i));
	return TRUE;
}

static gint
compare_names(gconstpointer a, gconstpointer b)
{
	return g_strcmp0(*(const gchar *const *)a, *(const gchar *const *)b);
}

/* The usbfs nodes, /dev/bus/usb/BBB/DDD, as "bus:addr," in name order. */
static void
append_usbfs_nodes(GString *s)
{
	g_autoptr(GDir) buses = g_dir_open("/dev/bus/usb", 0, NULL);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	const gchar *bus, *dev;

	while (buses && (bus = g_dir_read_name(buses))) {
		g_autofree gchar *path = g_build_filename("/dev/bus/usb", bus, NULL);
		g_autoptr(GDir) devs = g_dir_open(path, 0, NULL);

		while (devs && (dev = g_dir_read_name(devs)))
			g_ptr_array_add(names, g_strdup_printf("%u:%u", (guint)g_ascii_strtoull(bus, NULL, 10),
							       (guint)g_ascii_strtoull(dev, NULL, 10)));
	}
	g_ptr_array_sort(names, compare_names);
	for (guint i = 0; i < names->len; i++)
		g_string_append_printf(s, "%s,", (const gchar *)g_ptr_array_index(names, i));
}

/*
 * Which devices exist, by bus and address, without talking to any of them:
 * polling must not send control requests to a device that is streaming.
 * Where libusb's list goes stale, the usbfs nodes say it: a fresh libusb
 * context each poll would park the event threads every second
 * (ncm_context_init_fresh_usb()), so one is made only when the set changed.
 */
static gchar *
usbfs_nodes(void)
{
	GString *s = g_string_new(NULL);

	append_usbfs_nodes(s);
	return g_string_free(s, FALSE);
}

static gchar *
device_set_fingerprint(NcmContext *context)
{
	libusb_context *usb = ncm_context_get_usb(context);
	libusb_device **list;
	GString *s;
	ssize_t n;

	if (ncm_context_needs_fresh_scan(context))
		return usbfs_nodes();
	s = g_string_new(NULL);
	n = libusb_get_device_list(usb, &list);
	for (ssize_t i = 0; i < n; i++)
		g_string_append_printf(s, "%u:%u,", libusb_get_bus_number(list[i]),
				       libusb_get_device_address(list[i]));
	if (n >= 0)
		libusb_free_device_list(list, 1);
	return g_string_free(s, FALSE);
}

/* A GWeakRef of its own, or a block that starts with one. */
static void
weak_ref_free(gpointer data)
{
	g_weak_ref_clear(data);
	g_free(data);
}

static gboolean
rescan_tick(NcmWatch *self)
{
	g_autofree gchar *now = NULL;
	gchar *old;

	now = device_set_fingerprint(self->context);
	g_debug("poll: devices %s (was %s)", now, self->fingerprint);
	if (g_strcmp0(now, self->fingerprint) == 0)
		return G_SOURCE_CONTINUE;
	/* Only a completed rescan moves the fingerprint on, so a failed one
	 * (which emitted nothing) is retried. Moved first: the signals'
	 * handlers may replace the watch, so self is not used after. */
	old = self->fingerprint;
	self->fingerprint = g_steal_pointer(&now);
	if (rescan(self)) {
		g_free(old);
		return G_SOURCE_CONTINUE;
	}
	g_free(self->fingerprint);
	self->fingerprint = old;
	return G_SOURCE_CONTINUE;
}

/*
 * Polling's source holds the context weakly, and each tick a strong
 * reference: the last reference to a context may go on any thread, and
 * its finalize frees the watch (g_source_destroy() does not wait for a
 * dispatch under way), so a tick must not run on a watch being freed.
 */
static gboolean
rescan_cb(gpointer data)
{
	g_autoptr(NcmContext) context = g_weak_ref_get(data);
	NcmWatch *self;
	gboolean go_on;

	if (!context)
		return G_SOURCE_REMOVE;
	/* Not attached yet: a "function-added" handler of the first rescan
	 * ran a main loop. (A replaced watch's source is destroyed.) */
	self = ncm_context_get_attached(context, NCM_WATCH_KEY);
	if (!self || self->poll_source != g_main_current_source())
		return G_SOURCE_CONTINUE;
	go_on = rescan_tick(self);
	/* Ours may be the last reference: finalize sees this tick's writes. */
	ncm_tsan_release(context);
	return go_on;
}

/* Looks the watch up anew: it may have been replaced since the post. */
static gboolean
rescan_once_cb(gpointer data)
{
	NcmWatch *self = ncm_context_get_attached(data, NCM_WATCH_KEY);

	if (self && !rescan(self))
		g_debug("rescan after a hotplug event failed");
	return G_SOURCE_REMOVE;
}

/* @source's @func gets a GWeakRef to the context (see rescan_cb()). */
static GSource *
owner_source_prepare(NcmWatch *self, GSource *source, GSourceFunc func)
{
	GWeakRef *ref = g_new0(GWeakRef, 1);

	g_weak_ref_init(ref, self->context);
	g_source_set_callback(source, func, ref, weak_ref_free);
	return source;
}

/* A timer on the owner's context, its @func as owner_source_prepare() says. */
static GSource *
owner_timer_new(NcmWatch *self, guint ms, GSourceFunc func)
{
	GSource *source = owner_source_prepare(self, g_timeout_source_new(ms), func);

	g_source_attach(source, ncm_context_get_owner(self->context));
	return source;
}

static void
poll_start(NcmWatch *self)
{
	self->fingerprint = device_set_fingerprint(self->context);
	self->poll_source = owner_timer_new(self, self->poll_ms, rescan_cb);
}

/* Where inotify cannot watch the nodes: a look every DEAF_CHECK_MS. */
#define DEAF_CHECK_MS 2000
/* udevd's rules run between the node's creation and the event: a loaded
 * host takes a while, and a false alarm costs only the switch to polling. */
#define DEAF_GRACE_S 5

static void
nodes_watch_stop(NcmWatch *self)
{
	source_drop(&self->nodes_source);
	source_drop(&self->grace_source);
	if (self->nodes_fd >= 0) {
		close(self->nodes_fd);
		self->nodes_fd = -1;
	}
}

static void
deaf_sources_drop(NcmWatch *self)
{
	source_drop(&self->deaf_source);
	nodes_watch_stop(self);
}

/*
 * TRUE while hotplug is trusted; FALSE once the watch polls instead. Events
 * are counted where libusb delivers them, not where the owner handles
 * them: an owner that was busy for seconds must not take its own queue
 * for silence. The grace runs from the look that saw the change.
 */
static gboolean
deaf_look(NcmWatch *self)
{
	g_autofree gchar *nodes = usbfs_nodes();
	guint events = ncm_context_get_hotplug_events(self->context);
	gint64 now = g_get_monotonic_time();

	if (g_strcmp0(nodes, self->nodes) != 0) {
		if (!self->changed_at) {
			self->changed_at = now;
			self->events_before = self->events_at_look;
		}
		g_free(self->nodes);
		self->nodes = g_steal_pointer(&nodes);
	}
	self->events_at_look = events;
	if (!self->changed_at)
		return TRUE;
	/* An event after the last look that saw the old set may be this
	 * change's: the events still come. */
	if (events != self->events_before) {
		self->changed_at = 0;
		return TRUE;
	}
	if (now - self->changed_at < DEAF_GRACE_S * G_USEC_PER_SEC)
		return TRUE;
	g_message("watch: USB devices came or went but no hotplug event came from udev "
		  "within %d s (a container that does not get the host's udev events?): "
		  "polling every %u ms instead", DEAF_GRACE_S, self->poll_ms);
	libusb_hotplug_deregister_callback(ncm_context_get_usb(self->context), self->hotplug_handle);
	self->hotplug = FALSE;
	ncm_context_set_fresh_scans(self->context);
	poll_start(self);
	return FALSE;
}

static gboolean grace_cb(gpointer data);

/* A change that inotify showed is looked at again when its grace ends:
 * nothing else would wake the owner for it. */
static void
grace_arm(NcmWatch *self)
{
	gint64 left;

	if (!self->changed_at) {
		/* The events came: nothing left for the grace to check. */
		source_drop(&self->grace_source);
		return;
	}
	if (self->nodes_fd < 0 || self->grace_source)
		return;
	left = self->changed_at + DEAF_GRACE_S * G_USEC_PER_SEC - g_get_monotonic_time();
	self->grace_source = owner_timer_new(self, (guint)MAX(left / 1000 + 1, 1), grace_cb);
}

/*
 * A look from one of the deaf check's sources. FALSE: the watch switched
 * to polling and its deaf sources are gone, the caller's too (its
 * dispatch may finish: GLib holds it meanwhile).
 */
static gboolean
deaf_look_from_source(NcmWatch *self)
{
	if (deaf_look(self)) {
		grace_arm(self);
		return TRUE;
	}
	deaf_sources_drop(self);
	/* Report now what came unannounced. Its signals' handlers may
	 * replace the watch: self is not used after, unless it emitted
	 * nothing; then polling's next tick is told to look. */
	if (!rescan(self)) {
		g_debug("rescan after switching to polling failed");
		g_clear_pointer(&self->fingerprint, g_free);
	}
	return FALSE;
}

static gboolean nodes_watch_start(NcmWatch *self, gboolean attach);

static gboolean
deaf_cb(gpointer data)
{
	g_autoptr(NcmContext) context = g_weak_ref_get(data);
	NcmWatch *self;
	gboolean go_on, watched = FALSE;

	if (!context)
		return G_SOURCE_REMOVE;
	self = ncm_context_get_attached(context, NCM_WATCH_KEY);
	if (!self || self->deaf_source != g_main_current_source())
		return G_SOURCE_CONTINUE;
	/* The clock stands in for inotify only while inotify cannot watch
	 * (/dev/bus/usb went with the last bus, or was not there yet: a
	 * service started before the USB controllers' drivers): each tick
	 * tries again, before the look, so that nothing between the two
	 * goes unseen. */
	if (self->nodes_could && nodes_watch_start(self, TRUE)) {
		g_debug("watch: inotify watches /dev/bus/usb now");
		g_clear_pointer(&self->deaf_source, g_source_unref);
		watched = TRUE;
	}
	go_on = deaf_look_from_source(self) && !watched;
	ncm_tsan_release(context);
	return go_on ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static gboolean
grace_cb(gpointer data)
{
	g_autoptr(NcmContext) context = g_weak_ref_get(data);
	NcmWatch *self;

	if (!context)
		return G_SOURCE_REMOVE;
	self = ncm_context_get_attached(context, NCM_WATCH_KEY);
	if (!self || self->grace_source != g_main_current_source())
		return G_SOURCE_REMOVE;
	/* A one-shot: gone before the look, which may arm the next. */
	g_clear_pointer(&self->grace_source, g_source_unref);
	deaf_look_from_source(self);
	ncm_tsan_release(context);
	return G_SOURCE_REMOVE;
}

#ifdef __linux__
/* Where inotify stopped working (the buses' directory went, or a bus
 * cannot be watched): the clock's looks until it works again. */
static void
nodes_watch_fall_back(NcmWatch *self, const gchar *why)
{
	g_debug("watch: %s: looking at /dev/bus/usb every %u ms", why, DEAF_CHECK_MS);
	nodes_watch_stop(self);
	self->deaf_source = owner_timer_new(self, DEAF_CHECK_MS, deaf_cb);
}

#define NODES_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)

static gboolean
nodes_watch_bus(NcmWatch *self, const gchar *bus)
{
	g_autofree gchar *path = g_build_filename("/dev/bus/usb", bus, NULL);

	/* ENOENT: the bus went again before it was watched; its nodes too. */
	if (inotify_add_watch(self->nodes_fd, path, NODES_MASK | IN_ONLYDIR) >= 0 || errno == ENOENT)
		return TRUE;
	g_debug("watch: cannot watch %s: %s", path, g_strerror(errno));
	return FALSE;
}

/* Each bus under /dev/bus/usb; one watched already keeps its watch. */
static gboolean
nodes_watch_buses(NcmWatch *self)
{
	g_autoptr(GDir) buses = g_dir_open("/dev/bus/usb", 0, NULL);
	const gchar *bus;

	if (!buses)
		return FALSE;
	while ((bus = g_dir_read_name(buses)))
		if (!nodes_watch_bus(self, bus))
			return FALSE;
	return TRUE;
}

/* Reads what inotify has; FALSE, with @why, when it can no longer tell. */
static gboolean
nodes_drain(NcmWatch *self, const gchar **why)
{
	/* inotify's own alignment for its events, as its manual page asks. */
	gchar buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	gboolean ok = TRUE, overflow = FALSE;
	ssize_t n;

	while ((n = read(self->nodes_fd, buf, sizeof(buf))) > 0) {
		for (gchar *p = buf; p + sizeof(struct inotify_event) <= buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			/* Events were lost, a new bus's among them, perhaps. */
			if (ev->mask & IN_Q_OVERFLOW)
				overflow = TRUE;
			if (ev->wd != self->nodes_top_wd)
				continue;
			if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
				*why = "/dev/bus/usb went away";
				ok = FALSE;
			} else if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) &&
				   ev->len && ok && !nodes_watch_bus(self, ev->name)) {
				*why = "a new bus cannot be watched";
				ok = FALSE;
			}
		}
	}
	if (ok && overflow && !nodes_watch_buses(self)) {
		*why = "after inotify's queue overflowed, the buses cannot be watched";
		ok = FALSE;
	}
	return ok;
}

/* Attached only once the watch is (ncm_context_watch()), and destroyed
 * with it: a source that is not the watch's own is a stale one. */
static gboolean
nodes_cb(gint fd, GIOCondition condition, gpointer data)
{
	g_autoptr(NcmContext) context = g_weak_ref_get(data);
	NcmWatch *self = context ? ncm_context_get_attached(context, NCM_WATCH_KEY) : NULL;
	const gchar *why = NULL;
	gboolean go_on = TRUE;

	if (!self || self->nodes_source != g_main_current_source())
		return G_SOURCE_REMOVE;
	if (!nodes_drain(self, &why)) {
		nodes_watch_fall_back(self, why);
		go_on = FALSE;
	}
	/* The fall-back's clock looks too, but the change is news now. */
	if (!deaf_look_from_source(self))
		go_on = FALSE;
	ncm_tsan_release(context);
	return go_on ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}
#endif

/*
 * Where it can, the check sleeps until a usbfs node comes or goes
 * (inotify on /dev/bus/usb and each bus under it), so an idle owner
 * wakes for nothing; else it looks every DEAF_CHECK_MS. @attach FALSE:
 * the caller attaches nodes_source once the watch is attached to its
 * context; until then the kernel keeps the events.
 */
static gboolean
nodes_watch_start(NcmWatch *self, gboolean attach)
{
#ifdef __linux__
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (fd < 0)
		return FALSE;
	self->nodes_could = TRUE;
	self->nodes_fd = fd;
	self->nodes_top_wd = inotify_add_watch(fd, "/dev/bus/usb",
					       NODES_MASK | IN_ONLYDIR | IN_DELETE_SELF | IN_MOVE_SELF);
	if (self->nodes_top_wd < 0 || !nodes_watch_buses(self)) {
		nodes_watch_stop(self);
		return FALSE;
	}
	self->nodes_source = owner_source_prepare(self, g_unix_fd_source_new(fd, G_IO_IN),
						  G_SOURCE_FUNC(nodes_cb));
	if (attach)
		g_source_attach(self->nodes_source, ncm_context_get_owner(self->context));
	return TRUE;
#else
	return FALSE;
#endif
}

static void
deaf_start(NcmWatch *self)
{
	/* Watched before the first look: a node between the two is seen. */
	gboolean watched = nodes_watch_start(self, FALSE);

	self->nodes = usbfs_nodes();
	self->events_at_look = ncm_context_get_hotplug_events(self->context);
	if (watched) {
		g_debug("watch: inotify on /dev/bus/usb tells when to check that hotplug events come");
	} else {
		g_debug("watch: looking at /dev/bus/usb every %u ms to check that hotplug events come",
			DEAF_CHECK_MS);
		self->deaf_source = owner_timer_new(self, DEAF_CHECK_MS, deaf_cb);
	}
}

/* libusb thread: hand the event to the owner, where enumeration may do I/O. */
static int LIBUSB_CALL
hotplug_cb(libusb_context *ctx, libusb_device *dev, libusb_hotplug_event event, void *data)
{
	NcmContext *context = data;

	ncm_context_note_hotplug(context);
	ncm_context_count_dispatch(context);
	ncm_context_post(ncm_context_get_owner(context), rescan_once_cb, g_object_ref(context),
			 g_object_unref);
	return 0;
}

/*
 * A device that another program (usbreset, a daemon) or the hub driver
 * resets ends usbfs's claims, so its NcmDevice is gone, yet it keeps its
 * bus and address and no hotplug event comes: neither hotplug nor polling
 * (whose device set is unchanged) would report its function again, and an
 * owner that reopens on "function-added" would wait for ever. So a removal
 * makes the watch look again a little later, once the kernel has finished
 * the reset: a device still there is reported as arrived, one that left
 * as removed (if hotplug or polling has not said so already).
 */
#define RECHECK_DELAY_MS 500

#define RECHECK_TRIES 5

/* Weak: a pending look must not keep the context (and libusb) alive. */
typedef struct {
	GWeakRef context;
	guint bus, address;
	gint64 removed_at;
	guint tries;
} Recheck;

G_STATIC_ASSERT(G_STRUCT_OFFSET(Recheck, context) == 0); /* weak_ref_free() frees it */

/* The owner's main context. */
static gboolean
recheck_look(Recheck *r, NcmContext *context)
{
	NcmWatch *self = context ? ncm_context_get_attached(context, NCM_WATCH_KEY) : NULL;
	g_autofree gchar *key = g_strdup_printf("%u:%u", r->bus, r->address);
	g_autofree gchar *node = g_strdup_printf("/dev/bus/usb/%03u/%03u", r->bus, r->address);
	gint64 now = g_get_monotonic_time(), *last;

	/* A watch started since reported what was there; the functions of a
	 * device each have an NcmDevice, and each was removed: one look per
	 * removal. */
	if (!self || !g_hash_table_contains(self->known, key) || self->created_at > r->removed_at)
		return G_SOURCE_REMOVE;
	last = g_hash_table_lookup(self->rechecked, key);
	if (last && *last >= r->removed_at)
		return G_SOURCE_REMOVE;
	/* Unplugged: hotplug or polling reports it, and libusb's list may
	 * not have caught up yet (the node goes first). */
	if (g_file_test("/dev/bus/usb", G_FILE_TEST_IS_DIR) && !g_file_test(node, G_FILE_TEST_EXISTS))
		return G_SOURCE_REMOVE;
	g_debug("watch: %s was found gone but is still there (reset?): looking again", key);
	g_hash_table_add(self->recheck, g_strdup(key));
	last = g_new(gint64, 1);
	*last = now;
	g_hash_table_replace(self->rechecked, g_strdup(key), last);
	/* Its signals' handlers may replace the watch: self is not used after. */
	if (rescan(self))
		return G_SOURCE_REMOVE;
	/* It emitted nothing. The key stays in recheck for the next rescan
	 * that works: polling's next tick (its device set did not change, so
	 * it is told to look), or this source's next try. */
	g_debug("rescan after a removal failed");
	g_hash_table_remove(self->rechecked, key);
	g_clear_pointer(&self->fingerprint, g_free);
	return ++r->tries < RECHECK_TRIES ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static gboolean
recheck_cb(gpointer data)
{
	Recheck *r = data;
	g_autoptr(NcmContext) context = g_weak_ref_get(&r->context);
	gboolean go_on = recheck_look(r, context);

	/* Ours may be the last reference (see rescan_cb()). */
	if (context)
		ncm_tsan_release(context);
	return go_on;
}

void
ncm_context_watch_recheck(NcmContext *context, guint bus, guint address)
{
	Recheck *r = g_new0(Recheck, 1);
	GSource *s = g_timeout_source_new(RECHECK_DELAY_MS);

	g_weak_ref_init(&r->context, context);
	r->bus = bus;
	r->address = address;
	r->removed_at = g_get_monotonic_time();
	g_source_set_callback(s, recheck_cb, r, weak_ref_free);
	g_source_attach(s, ncm_context_get_owner(context));
	g_source_unref(s);
}

gboolean
ncm_context_watch(NcmContext *context, const NcmMatch *match, guint poll_ms, GError **error)
{
	NcmWatch *self;

	g_return_val_if_fail(NCM_IS_CONTEXT(context), FALSE);

	/* A new watch replaces the old one, and reports what is present anew. */
	ncm_context_attach(context, NCM_WATCH_KEY, NULL, NULL);
	self = g_new0(NcmWatch, 1);
	self->context = context;
	self->nodes_fd = -1;
	self->known = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	self->recheck = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	self->rechecked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	self->created_at = g_get_monotonic_time();
	self->match = match ? *match : (NcmMatch){ 0 };
	self->match_serial = g_strdup(self->match.serial);
	self->match_path = g_strdup(self->match.port_path);
	self->match.serial = self->match_serial;
	self->match.port_path = self->match_path;

	/* Not again where a watch found the events do not come. */
	if (ncm_context_hotplug_usable() && !ncm_context_needs_fresh_scan(context)) {
		int r = libusb_hotplug_register_callback(
			ncm_context_get_usb(context),
			LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED | LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT,
			0, LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY,
			LIBUSB_HOTPLUG_MATCH_ANY, hotplug_cb, context, &self->hotplug_handle);
		self->hotplug = r == LIBUSB_SUCCESS;
	}
	self->poll_ms = poll_ms ? poll_ms : 1000;
	if (self->hotplug) {
		g_debug("watch: libusb's hotplug events (udev)");
		deaf_start(self);
	} else {
		g_debug("watch: polling the USB devices every %u ms (libusb without hotplug, "
			"no udev daemon, or NCM_FORCE_POLL)", self->poll_ms);
		poll_start(self);
	}
	if (!rescan(self)) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "cannot list USB devices: is /dev/bus/usb readable?");
		watch_free(self);
		return FALSE;
	}
	ncm_context_attach(context, NCM_WATCH_KEY, self, watch_free);
	if (self->nodes_source)
		g_source_attach(self->nodes_source, ncm_context_get_owner(context));
	return TRUE;
}
