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
	gchar *access_error;       /* why the device could not be opened to read strings */
} NcmFunctionInfo;

#define NCM_TYPE_FUNCTION_INFO (ncm_function_info_get_type())
NCM_EXPORT GType ncm_function_info_get_type(void);
NCM_EXPORT NcmFunctionInfo *ncm_function_info_ref(NcmFunctionInfo *info);
NCM_EXPORT void ncm_function_info_unref(NcmFunctionInfo *info);
/* "/dev/bus/usb/BBB/DDD": the usbfs node, for messages. Free with g_free(). */
NCM_EXPORT gchar *ncm_function_info_dup_usbfs_path(const NcmFunctionInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NcmFunctionInfo, ncm_function_info_unref)

/**
 * NcmMatch:
 *
 * Selects functions. Zero / %NULL fields match anything. @mac needs
 * @have_mac. @serial and @mac need the device to be openable.
 */
typedef struct {
	guint16 vid;
	guint16 pid;
	const gchar *serial;
	const gchar *port_path;
	gboolean have_mac;
	guint8 mac[6];
} NcmMatch;

/* Parses "VID:PID", "serial=S", "path=1-1.2" or "mac=aa:bb:..." into @match. */
NCM_EXPORT gboolean ncm_match_parse(NcmMatch *match, const gchar *text, GError **error);
NCM_EXPORT gboolean ncm_match_test(const NcmMatch *match, const NcmFunctionInfo *info);

#define NCM_TYPE_CONTEXT (ncm_context_get_type())
NCM_EXPORT G_DECLARE_FINAL_TYPE(NcmContext, ncm_context, NCM, CONTEXT, GObject)

/**
 * ncm_context_new:
 *
 * Creates a libusb context and starts its event thread. Control-plane
 * signals ("function-added", "device-removed") are emitted on the
 * thread-default main context of the calling thread (the owner's).
 * Thread: any thread; the caller's thread-default context becomes the owner's.
 */
NCM_EXPORT NcmContext *ncm_context_new(GError **error);

/**
 * ncm_context_enumerate:
 *
 * Lists every NCM function of every device, in all configurations, that
 * @match (may be %NULL) selects. Returns a #GPtrArray of #NcmFunctionInfo.
 * Thread: any thread but the libusb event thread (it may do control I/O).
 */
NCM_EXPORT GPtrArray *ncm_context_enumerate(NcmContext *self, const NcmMatch *match,
					    GError **error);

/**
 * ncm_context_watch:
 *
 * Starts reporting arrivals ("function-added", once per matching function)
 * and removals ("device-removed" with bus and address). Uses libusb hotplug
 * where it works, else polls every @poll_ms (0 = 1000 ms). Functions present
 * now are reported too. Thread: owner's main context.
 */
NCM_EXPORT gboolean ncm_context_watch(NcmContext *self, const NcmMatch *match, guint poll_ms,
				      GError **error);

/**
 * ncm_context_switch_apple_devices:
 *
 * Apple devices (iOS 17+) expose their NCM function only after a vendor
 * request. Sends it to every Apple device not yet in that mode and returns
 * how many were asked (they then re-enumerate: watch for "function-added").
 * Thread: any thread but the libusb event thread.
 */
NCM_EXPORT guint ncm_context_switch_apple_devices(NcmContext *self, GError **error);

/* Counts of callbacks the library queued on the owner's main context. */
NCM_EXPORT guint64 ncm_context_get_main_dispatches(NcmContext *self);

G_END_DECLS
