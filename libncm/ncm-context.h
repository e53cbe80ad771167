/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-context.h: NcmContext, one libusb context with its event thread, and discovery. */
#pragma once

#include <gio/gio.h>

#include "ncm-version.h"

G_BEGIN_DECLS

/**
 * NcmFunctionInfo:
 *
 * One NCM function of one USB device, as found by enumeration. Immutable and
 * reference counted; safe to pass between threads. String fields are %NULL
 * when they could not be read (see @access_error).
 *
 * ABI: only libncm allocates one (its private state follows it), so it has
 * no reserve and grows at its end: fields never move, and a program built
 * against an older header reads the ones it knows. Keep one with
 * ncm_function_info_ref(); never allocate, embed or copy one by value.
 */
typedef struct {
	guint8 bus;
	guint8 address;
	gchar *port_path;          /* "BUS-PORT.PORT...", as in sysfs */
	guint16 vid;
	guint16 pid;
	gchar *manufacturer;
	gchar *product;
	gchar *serial;
	gboolean have_mac;
	guint8 mac[6];             /* from iMACAddress */
	guint speed_mbps;          /* 1 (low), 12, 480, 5000, 10000, 0 unknown */
	guint8 active_config;      /* bConfigurationValue now active, 0 if unknown */
	guint8 config_value;       /* configuration holding this function */
	guint8 comm_iface;
	guint8 data_iface;
	guint8 data_alt;
	guint8 intr_ep;            /* 0 when the function has no interrupt endpoint */
	guint16 intr_max_packet;
	guint8 bulk_in_ep;
	guint8 bulk_out_ep;
	guint16 bulk_in_max_packet;
	guint16 bulk_out_max_packet;
	guint16 max_segment_size;  /* wMaxSegmentSize, 0 if absent */
	guint16 bcd_ncm;
	guint8 net_caps;           /* bmNetworkCapabilities */
	gchar *kernel_driver;      /* driver bound to the comm interface (Linux), or NULL */
	gchar *access_error;       /* why the device could not be opened to read strings
				    * and, when permission was denied, what to do */
} NcmFunctionInfo;

/**
 * ncm_function_info_get_type:
 *
 * The #GType that lets bindings and GValues carry #NcmFunctionInfo.
 *
 * Thread: any.
 *
 * Returns: the boxed #GType of #NcmFunctionInfo (copy = ref).
 */
#define NCM_TYPE_FUNCTION_INFO (ncm_function_info_get_type())
NCM_EXPORT GType ncm_function_info_get_type(void);

/**
 * ncm_function_info_ref:
 * @info: an #NcmFunctionInfo.
 *
 * Takes a reference, for keeping @info beyond its array or signal.
 *
 * Thread: any.
 *
 * Returns: (transfer full): @info, with one more reference.
 */
NCM_EXPORT NcmFunctionInfo *ncm_function_info_ref(NcmFunctionInfo *info);

/**
 * ncm_function_info_unref:
 * @info: (nullable) (transfer full): an #NcmFunctionInfo, or %NULL.
 *
 * Drops one reference; the last frees @info.
 * Thread: any.
 */
NCM_EXPORT void ncm_function_info_unref(NcmFunctionInfo *info);

/**
 * ncm_function_info_dup_usbfs_path:
 * @info: an #NcmFunctionInfo.
 *
 * The device node libusb opens for @info.
 *
 * Thread: any.
 *
 * Returns: (transfer full): "/dev/bus/usb/BBB/DDD", the usbfs node, for
 *   messages (a udev rule, a permission error). Free with g_free().
 */
NCM_EXPORT gchar *ncm_function_info_dup_usbfs_path(const NcmFunctionInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NcmFunctionInfo, ncm_function_info_unref)

/**
 * NcmMatch:
 *
 * Selects functions. Zero / %NULL fields match anything. @mac needs
 * @have_mac. @serial and @mac need the device to be openable.
 *
 * ABI: 88 bytes (LP64) in every libncm.so.1. Zero the whole struct
 * (`= { 0 }`) before setting selectors: the library reads all of it, so it
 * never grows, and a selector added later takes the front of the private
 * reserve, where zero matches anything, as a program built before it
 * leaves it.
 */
typedef struct {
	guint16 vid;
	guint16 pid;
	const gchar *serial;
	const gchar *port_path;
	gboolean have_mac;
	guint8 mac[6];
	/*< private >*/
	guint32 _reserved[13];     /* zero; new selectors come from here */
} NcmMatch;

/**
 * ncm_match_parse:
 * @match: the #NcmMatch to add a selector to; zero it first. Selectors from
 *   several calls combine (all must hold).
 * @text: "VID:PID" (hex), "serial=S", "path=BUS-PORT[.PORT...]" or
 *   "mac=aa:bb:cc:dd:ee:ff". @match points into it for serial and path:
 *   keep @text alive as long as @match. An Apple device's serial (an
 *   iPhone's UDID) matches with or without dashes.
 * @error: return location for a #GError (%NCM_ERROR_FAILED) that lists the
 *   accepted forms.
 *
 * Thread: any.
 *
 * Returns: %TRUE when @text was understood.
 */
NCM_EXPORT gboolean ncm_match_parse(NcmMatch *match, const gchar *text, GError **error);

/**
 * ncm_match_test:
 * @match: an #NcmMatch.
 * @info: a found function.
 *
 * Tests one found function against @match, as enumeration does.
 *
 * Thread: any.
 *
 * Returns: whether @match selects @info: every field set in @match agrees.
 */
NCM_EXPORT gboolean ncm_match_test(const NcmMatch *match, const NcmFunctionInfo *info);

/**
 * NcmContext:
 *
 * One libusb context and the thread that handles its events, plus discovery.
 * Create one per process (or per owner thread) and open devices from it;
 * it must outlive them. libncm/THREADING.md draws which thread does what.
 *
 * ncm_context_get_type(): the #GType. Thread: any.
 */
#define NCM_TYPE_CONTEXT (ncm_context_get_type())
NCM_EXPORT G_DECLARE_FINAL_TYPE(NcmContext, ncm_context, NCM, CONTEXT, GObject)

/**
 * ncm_context_new:
 * @error: return location for a #GError: libusb could not start, with
 *   what to check.
 *
 * Creates a libusb context and starts its event thread. Control-plane
 * signals ("function-added", "device-removed") are emitted on the
 * thread-default main context of the calling thread (the owner's).
 * Where libusb cannot list devices at all (an Android app), the context
 * starts without device discovery: enumeration then finds nothing, and
 * only ncm_context_enumerate_fd() finds devices.
 *
 * Thread: any thread; the caller's thread-default context becomes the owner's.
 *
 * Returns: (transfer full) (nullable): the context, or %NULL with @error set.
 */
NCM_EXPORT NcmContext *ncm_context_new(GError **error);

/**
 * ncm_context_enumerate:
 * @self: an #NcmContext.
 * @match: (nullable): which functions; %NULL for all.
 * @error: return location for a #GError.
 *
 * Lists every NCM function of every device, in all configurations, that
 * @match selects. Devices this user may not open are listed too, with
 * their strings %NULL and #NcmFunctionInfo.access_error saying why.
 *
 * Thread: any thread but the libusb event thread (it may do control I/O).
 *
 * Returns: (transfer container) (element-type NcmFunctionInfo) (nullable):
 *   the functions found, possibly none; %NULL with @error set on failure.
 *   The array is yours and holds a reference to each element:
 *   g_ptr_array_unref() frees both. (For bindings that is "transfer
 *   container": they take their own references to the elements before
 *   freeing the array; "transfer full" would make them release each
 *   element twice.)
 */
NCM_EXPORT GPtrArray *ncm_context_enumerate(NcmContext *self, const NcmMatch *match,
					    GError **error);

/**
 * ncm_context_enumerate_fd:
 * @self: an #NcmContext.
 * @fd: an open, read-write file descriptor of one USB device's usbfs node,
 *   as Android's UsbManager, Termux's termux-usb or a privileged helper
 *   hands one over. It stays the caller's: libncm keeps duplicates of it.
 * @match: (nullable): which of its functions; %NULL for all. Its vid and
 *   pid are checked against the device, serial and mac as usual.
 * @error: return location for a #GError: @fd is not open, or not a USB
 *   device (%NCM_ERROR_UNSUPPORTED where libusb cannot wrap fds).
 *
 * Lists the NCM functions of the device behind @fd, read through @fd
 * alone: no access to /dev/bus/usb and no device discovery is needed.
 * Each #NcmFunctionInfo holds its own duplicate of @fd, and
 * ncm_device_open() on it opens the device through that, never by its
 * node. Such functions are not reported by ncm_context_watch(); when the
 * device goes away, #NcmDevice::removed says so, and a new fd is needed.
 *
 * Thread: any thread but the libusb event thread (it does control I/O).
 *
 * Returns: (transfer container) (element-type NcmFunctionInfo) (nullable):
 *   the functions found, possibly none; %NULL with @error set on failure.
 *   As for ncm_context_enumerate(), g_ptr_array_unref() frees the array
 *   and its elements.
 */
NCM_EXPORT GPtrArray *ncm_context_enumerate_fd(NcmContext *self, int fd, const NcmMatch *match,
					       GError **error);

/**
 * ncm_context_watch:
 * @self: an #NcmContext.
 * @match: (nullable): which arrivals to report; copied. %NULL for all.
 * @poll_ms: the polling period when hotplug cannot be used; 0 = 1000 ms.
 * @error: return location for a #GError.
 *
 * Starts reporting arrivals ("function-added", once per matching function)
 * and removals ("device-removed" with bus and address). Uses libusb hotplug
 * where it works (udevd runs), else polls. Where udevd runs but its events
 * do not reach this process (a container given the host's /run/udev, in a
 * network namespace of its own), a device that comes or goes with no event
 * within 5 s makes the watch say so and poll from then on. Functions present now are
 * reported too, during this call: connect to the signals first. A second
 * call replaces the first watch and reports what is present anew. A device
 * reset by another program or by the hub driver keeps its bus and address
 * and sends no hotplug event, but its #NcmDevice emits "removed": about
 * half a second after that the watch looks again, and reports the function
 * again if the device is still there ("device-removed" if it left).
 *
 * Thread: the owner's main context (the thread whose thread-default context
 *   it is); the signals are emitted there.
 *
 * Returns: %TRUE when watching.
 */
NCM_EXPORT gboolean ncm_context_watch(NcmContext *self, const NcmMatch *match, guint poll_ms,
				      GError **error);

/**
 * ncm_context_switch_apple_devices:
 * @self: an #NcmContext.
 * @error: return location for a #GError, set when the devices could not be
 *   listed, or when none was asked or found in NCM mode and one could not
 *   be opened or refused (the first such: %NCM_ERROR_PERMISSION,
 *   %NCM_ERROR_PROTOCOL).
 *
 * Apple devices (iOS 17+) expose their NCM function only after a vendor
 * request. Sends it to every Apple device not yet in that mode. A device
 * that cannot be opened or refuses the request (an Apple keyboard or
 * display carries the same vendor ID) is skipped, and the others are
 * still asked.
 *
 * Thread: any thread but the libusb event thread (synchronous control
 *   transfers).
 *
 * Returns: how many were asked before any error (they then re-enumerate:
 *   watch for "function-added").
 */
NCM_EXPORT guint ncm_context_switch_apple_devices(NcmContext *self, GError **error);

/**
 * ncm_context_switch_apple_devices_matching:
 * @self: an #NcmContext.
 * @match: (nullable): the devices to ask: its VID:PID, path= and serial=
 *   (an iPhone's serial is its UDID, with or without the dash its tools
 *   print); %NULL asks every Apple device. mac=
 *   selects nothing here: the MAC comes with the NCM function.
 * @error: as for ncm_context_switch_apple_devices().
 *
 * As ncm_context_switch_apple_devices(), for only the devices @match
 * selects: another phone on the same host keeps its mode (its own host
 * software may be using it).
 *
 * Thread: any thread but the libusb event thread (synchronous control
 *   transfers).
 *
 * Returns: how many were asked before any error.
 *
 * Since: 0.2
 */
NCM_EXPORT guint ncm_context_switch_apple_devices_matching(NcmContext *self,
							  const NcmMatch *match,
							  GError **error);

/**
 * ncm_context_get_main_dispatches:
 * @self: an #NcmContext.
 *
 * A counter of the control plane's cost on the owner's thread.
 *
 * Thread: any.
 *
 * Returns: how many callbacks the library has queued on the owner's main
 *   context so far (the control plane's cost there; data never goes there).
 */
NCM_EXPORT guint64 ncm_context_get_main_dispatches(NcmContext *self);

G_END_DECLS
