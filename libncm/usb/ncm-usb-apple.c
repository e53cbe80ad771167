/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-apple.c: asking Apple devices to expose their NCM function (iOS 17+ CoreDevice). */
#include "ncm-cdc.h"
#include "ncm-usb-context.h"
#include "ncm-usb-function.h"
#include "ncm-error.h"

static int
usb_control(void *user_data, const NcmControlSetup *setup, uint8_t *data)
{
	return libusb_control_transfer(user_data, setup->request_type, setup->request, setup->value,
				       setup->index, data, setup->length, 3000);
}

/* What @match can tell before the switch: the MAC comes with NCM, so mac= selects nothing here. */
static gboolean
selected_before_open(libusb_device *dev, const struct libusb_device_descriptor *d,
		     const NcmMatch *match)
{
	g_autofree gchar *path = NULL;

	if (!ncm_match_ids(match, d->idVendor, d->idProduct))
		return FALSE;
	return !match || !match->port_path ||
	       !g_strcmp0(match->port_path, path = ncm_usb_port_path(dev));
}

/* FALSE with @error: the device could not be asked; FALSE alone: another serial. */
static gboolean
switch_one(libusb_device *dev, const struct libusb_device_descriptor *d, const NcmMatch *match,
	   guint *n_requested, guint *n_already, GError **error)
{
	libusb_device_handle *h;
	uint32_t mode = 0;
	int r = libusb_open(dev, &h);

	if (r < 0) {
		g_set_error(error, NCM_ERROR, r == LIBUSB_ERROR_ACCESS ? NCM_ERROR_PERMISSION
							     : NCM_ERROR_FAILED,
			    "cannot open Apple device /dev/bus/usb/%03u/%03u to switch it to NCM: "
			    "%s%s", libusb_get_bus_number(dev), libusb_get_device_address(dev),
			    libusb_strerror(r),
			    r == LIBUSB_ERROR_ACCESS ? " (run as root or add a udev rule)" : "");
		return FALSE;
	}
	if (match && match->serial) {
		g_autofree gchar *serial = ncm_usb_read_ascii(h, d->iSerialNumber);

		if (!ncm_usb_serial_matches(match->serial, serial, d->idVendor)) {
			libusb_close(h);
			return FALSE;
		}
	}
	NcmAppleSwitchResult res = ncm_apple_mode_switch(usb_control, h, &mode);
	libusb_close(h);
	if (res == NCM_APPLE_SWITCH_FAILED) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_PROTOCOL,
			    "the Apple device on bus %u did not accept the NCM mode request: "
			    "unlock and trust the host, or update it to iOS 17 or later",
			    libusb_get_bus_number(dev));
		return FALSE;
	}
	g_debug("Apple device mode 0x%08x: %s", mode,
		res == NCM_APPLE_SWITCH_ALREADY ? "already NCM" : "switch requested");
	if (res == NCM_APPLE_SWITCH_REQUESTED)
		(*n_requested)++;
	else
		(*n_already)++;
	return TRUE;
}

guint
ncm_context_switch_apple_devices(NcmContext *self, GError **error)
{
	return ncm_context_switch_apple_devices_matching(self, NULL, error);
}

guint
ncm_context_switch_apple_devices_matching(NcmContext *self, const NcmMatch *match,
					  GError **error)
{
	libusb_context *usb = ncm_context_get_usb(self);
	libusb_device **list;
	ssize_t n;
	guint requested = 0, already = 0;
	GError *first = NULL;

	/*
	 * Without udevd the context's own list never learns that a device
	 * re-enumerated (as after this very switch): it would name the old
	 * node. A short-lived context scans sysfs afresh, as enumerate does.
	 */
	if (ncm_context_needs_fresh_scan(self) && ncm_context_init_fresh_usb(&usb) < 0) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "cannot rescan USB devices: is /dev/bus/usb readable?");
		return 0;
	}
	n = libusb_get_device_list(usb, &list);
	if (n < 0) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "cannot list USB devices: %s (is /dev/bus/usb readable?)",
			    libusb_strerror((int)n));
		if (usb != ncm_context_get_usb(self))
			libusb_exit(usb);
		return 0;
	}
	/*
	 * Keyboards, displays and AirPods carry Apple's vendor ID too and refuse
	 * the mode request (or this user may not open them): one of them must not
	 * keep the phone behind it from being asked. Its error counts only when
	 * no device was asked or is in NCM mode already.
	 */
	for (ssize_t i = 0; i < n; i++) {
		struct libusb_device_descriptor d;
		GError *e = NULL;

		if (libusb_get_device_descriptor(list[i], &d) < 0 || d.idVendor != NCM_APPLE_VID ||
		    !selected_before_open(list[i], &d, match))
			continue;
		if (switch_one(list[i], &d, match, &requested, &already, &e) || !e)
			continue;
		g_debug("Apple device %04x:%04x skipped: %s", d.idVendor, d.idProduct, e->message);
		if (!first)
			first = e;
		else
			g_error_free(e);
	}
	libusb_free_device_list(list, 1);
	if (usb != ncm_context_get_usb(self))
		libusb_exit(usb);
	if (first && requested == 0 && already == 0)
		g_propagate_error(error, first);
	else if (first)
		g_error_free(first);
	return requested;
}
