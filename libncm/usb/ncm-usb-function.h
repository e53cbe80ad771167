/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-function.h: NcmFunctionInfo's private side, and the driver's actionable libusb errors. */
#pragma once

#include <libusb.h>

#include "ncm-context.h"

/* A new, zeroed info holding a reference to @dev (may be NULL: found by a
 * fresh scan, opened by its usbfs node). */
NcmFunctionInfo *ncm_function_info_new(libusb_device *dev);
/* NULL when found by a fresh scan (open by node) or in a passed fd. */
libusb_device *ncm_function_info_get_usb_device(const NcmFunctionInfo *info);
/* Found in a usbfs fd the application passed (ncm_context_enumerate_fd()):
 * the info keeps its own duplicate (@fd is taken), which open wraps. */
void ncm_function_info_take_fd(NcmFunctionInfo *info, int fd);
/* That fd, or -1. */
int ncm_function_info_get_fd(const NcmFunctionInfo *info);

/* What to do about "permission denied" on usbfs node @node (vid:pid): join
 * the group a udev rule already gave it, or add such a rule, or be root;
 * or look elsewhere when the file's permissions are not what refused. */
gchar *ncm_usbfs_access_advice(const gchar *node, guint vid, guint pid);
typedef enum {
	NCM_ACCESS_ADVICE_RULE,
	NCM_ACCESS_ADVICE_JOIN,
	NCM_ACCESS_ADVICE_ELSEWHERE,
} NcmAccessAdvice;
/* Its decision, from the node's stat (@exists, @mode, whether its group is
 * root's, whether this process is in it) and access(R_OK | W_OK). */
NcmAccessAdvice ncm_usbfs_access_kind(gboolean exists, guint mode, gboolean group_is_root,
				      gboolean in_node_group, gboolean accessible);

/* Maps a libusb error from an operation on @info to an actionable GError. */
void ncm_set_usb_error(GError **error, int usb_err, const NcmFunctionInfo *info,
		       const char *what);

/* "BUS-PORT[.PORT...]", as NcmFunctionInfo's port_path and path= name it. */
gchar *ncm_usb_port_path(libusb_device *dev);
/* String descriptor @index in ASCII, or NULL (none, or unreadable). */
gchar *ncm_usb_read_ascii(libusb_device_handle *h, guint8 index);
/* @match's VID:PID selectors against a device's IDs; a NULL @match takes any. */
gboolean ncm_match_ids(const NcmMatch *match, guint16 vid, guint16 pid);
/* serial= @want selects @serial (Apple's: with or without the UDID's dashes). */
gboolean ncm_usb_serial_matches(const gchar *want, const gchar *serial, guint16 vid);
