/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-enumerate.c: finding NCM functions in every configuration of every device. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ncm-cdc.h"
#include "ncm-le.h"
#include "ncm-usb-context.h"
#include "ncm-usb-function.h"
#include "ncm-error.h"


/* Configuration blobs are at most wTotalLength = 65535 bytes. */
#define NCM_MAX_FUNCTIONS_PER_CONFIG 8

/* ---- Raw configuration blob, rebuilt from libusb's parse ---------------- */

/*
 * libusb keeps every descriptor it does not parse in the "extra" bytes of
 * the descriptor before it, in order, so concatenating them gives back the
 * configuration as the device sent it (up to alt-setting order), which our
 * pure parser walks like any other device input.
 */
static void
blob_put_endpoint(GByteArray *b, const struct libusb_endpoint_descriptor *ep)
{
	guint8 d[7] = { 7, LIBUSB_DT_ENDPOINT, ep->bEndpointAddress, ep->bmAttributes,
			ep->wMaxPacketSize & 0xff, ep->wMaxPacketSize >> 8, ep->bInterval };

	g_byte_array_append(b, d, sizeof(d));
	if (ep->extra_length > 0)
		g_byte_array_append(b, ep->extra, ep->extra_length);
}

static void
blob_put_interface(GByteArray *b, const struct libusb_interface_descriptor *alt)
{
	guint8 d[9] = { 9, LIBUSB_DT_INTERFACE, alt->bInterfaceNumber, alt->bAlternateSetting,
			alt->bNumEndpoints, alt->bInterfaceClass, alt->bInterfaceSubClass,
			alt->bInterfaceProtocol, alt->iInterface };

	g_byte_array_append(b, d, sizeof(d));
	if (alt->extra_length > 0)
		g_byte_array_append(b, alt->extra, alt->extra_length);
	for (guint e = 0; e < alt->bNumEndpoints; e++)
		blob_put_endpoint(b, &alt->endpoint[e]);
}

static GByteArray *
config_blob(const struct libusb_config_descriptor *cfg)
{
	GByteArray *b = g_byte_array_new();
	guint8 d[9] = { 9, LIBUSB_DT_CONFIG, 0, 0, cfg->bNumInterfaces, cfg->bConfigurationValue,
			cfg->iConfiguration, cfg->bmAttributes, cfg->MaxPower };

	g_byte_array_append(b, d, sizeof(d));
	if (cfg->extra_length > 0)
		g_byte_array_append(b, cfg->extra, cfg->extra_length);
	for (guint i = 0; i < cfg->bNumInterfaces; i++)
		for (int a = 0; a < cfg->interface[i].num_altsetting; a++)
			blob_put_interface(b, &cfg->interface[i].altsetting[a]);
	b->data[2] = b->len & 0xff;
	b->data[3] = (b->len >> 8) & 0xff;
	return b;
}

/* ---- Strings and sysfs ---------------------------------------------- */

/*
 * String descriptor @index, raw, into @buf: its length, or < 0. In the
 * device's first language; one that cannot list its languages (string 0
 * STALLed or short) is asked in US English, as Linux does.
 */
static int
read_string(libusb_device_handle *h, guint8 index, unsigned char *buf, int size)
{
	unsigned char langs[4];
	int n = libusb_get_string_descriptor(h, 0, 0, langs, sizeof(langs));
	guint16 lang = n >= 4 ? ncm_le16_at(langs, (size_t)n, 2) : 0x0409;

	return libusb_get_string_descriptor(h, index, lang, buf, size);
}

gchar *
ncm_usb_read_ascii(libusb_device_handle *h, guint8 index)
{
	unsigned char buf[255];
	GString *s;
	int n;

	if (!h || !index)
		return NULL;
	n = read_string(h, index, buf, sizeof(buf));
	if (n < 2 || buf[1] != 0x03)
		return NULL;
	n = MIN(n, buf[0]);
	s = g_string_new(NULL);
	/* UTF-16LE; what is not ASCII reads '?', as libusb's own helper has it. */
	for (int i = 2; i + 1 < n; i += 2)
		g_string_append_c(s, buf[i + 1] == 0 && buf[i] < 0x80 ? (gchar)buf[i] : '?');
	if (s->len == 0) {
		g_string_free(s, TRUE);
		return NULL;
	}
	return g_string_free(s, FALSE);
}

static gboolean
read_mac(libusb_device_handle *h, guint8 index, guint8 mac[6])
{
	unsigned char buf[255];
	int n;

	if (!h || !index)
		return FALSE;
	n = read_string(h, index, buf, sizeof(buf));
	return n > 0 && ncm_cdc_parse_mac_string(buf, (size_t)n, mac);
}

gchar *
ncm_usb_port_path(libusb_device *dev)
{
	guint8 ports[8];
	int n = libusb_get_port_numbers(dev, ports, G_N_ELEMENTS(ports));
	GString *s = g_string_new(NULL);

	g_string_printf(s, "%u", libusb_get_bus_number(dev));
	for (int i = 0; i < n; i++)
		g_string_append_printf(s, "%c%u", i == 0 ? '-' : '.', ports[i]);
	return g_string_free(s, FALSE);
}

static gchar *
kernel_driver_name(const gchar *path, guint8 config, guint8 iface)
{
#ifdef __linux__
	g_autofree gchar *link = g_strdup_printf("/sys/bus/usb/devices/%s:%u.%u/driver", path,
						 config, iface);
	g_autofree gchar *target = g_file_read_link(link, NULL);

	return target ? g_path_get_basename(target) : NULL;
#else
	return NULL;
#endif
}

static guint
speed_mbps(libusb_device *dev)
{
	switch (libusb_get_device_speed(dev)) {
	case LIBUSB_SPEED_LOW: return 1;
	case LIBUSB_SPEED_FULL: return 12;
	case LIBUSB_SPEED_HIGH: return 480;
	case LIBUSB_SPEED_SUPER: return 5000;
	case LIBUSB_SPEED_SUPER_PLUS: return 10000;
	default: return 0;
	}
}

/* ---- Enumeration ---------------------------------------------------- */

typedef struct {
	libusb_device *dev;
	gboolean keep_dev;             /* dev outlives the scan (the context's own list) */
	libusb_device_handle *handle;  /* NULL if it could not be opened */
	gchar *open_error;
	gboolean gone;
	struct libusb_device_descriptor desc;
	gchar *path;
	guint8 active;
	int fd;                        /* the passed fd the handle wraps, or -1 */
} DeviceScan;

static NcmFunctionInfo *
info_new(DeviceScan *scan, const NcmCdcFunction *f)
{
	NcmFunctionInfo *info = ncm_function_info_new(scan->keep_dev ? scan->dev : NULL);

	if (scan->fd >= 0)
		ncm_function_info_take_fd(info, fcntl(scan->fd, F_DUPFD_CLOEXEC, 3));

	info->bus = libusb_get_bus_number(scan->dev);
	info->address = libusb_get_device_address(scan->dev);
	info->port_path = g_strdup(scan->path);
	info->vid = scan->desc.idVendor;
	info->pid = scan->desc.idProduct;
	info->manufacturer = ncm_usb_read_ascii(scan->handle, scan->desc.iManufacturer);
	info->product = ncm_usb_read_ascii(scan->handle, scan->desc.iProduct);
	info->serial = ncm_usb_read_ascii(scan->handle, scan->desc.iSerialNumber);
	info->have_mac = read_mac(scan->handle, f->mac_string_index, info->mac);
	info->speed_mbps = speed_mbps(scan->dev);
	info->active_config = scan->active;
	info->config_value = f->config_value;
	info->comm_iface = f->comm_iface;
	info->data_iface = f->data_iface;
	info->data_alt = f->data_alt;
	info->intr_ep = f->intr_ep;
	info->intr_max_packet = f->intr_max_packet;
	info->bulk_in_ep = f->bulk_in_ep;
	info->bulk_out_ep = f->bulk_out_ep;
	info->bulk_in_max_packet = f->bulk_in_max_packet;
	info->bulk_out_max_packet = f->bulk_out_max_packet;
	info->max_segment_size = f->max_segment_size;
	info->bcd_ncm = f->bcd_ncm;
	info->net_caps = f->net_caps;
	info->kernel_driver = kernel_driver_name(scan->path, f->config_value, f->comm_iface);
	info->access_error = g_strdup(scan->open_error);
	return info;
}

static void
scan_open(DeviceScan *scan)
{
	int r = libusb_open(scan->dev, &scan->handle);

	if (r < 0) {
		g_autofree gchar *node = g_strdup_printf("/dev/bus/usb/%03u/%03u",
							 libusb_get_bus_number(scan->dev),
							 libusb_get_device_address(scan->dev));
		g_autofree gchar *advice =
			r == LIBUSB_ERROR_ACCESS
				? ncm_usbfs_access_advice(node, scan->desc.idVendor, scan->desc.idProduct)
				: NULL;

		scan->handle = NULL;
		/* Listed but already torn down: not a device anyone can use. */
		scan->gone = r == LIBUSB_ERROR_NO_DEVICE || r == LIBUSB_ERROR_NOT_FOUND;
		scan->open_error = g_strdup_printf("cannot open %s: %s%s%s", node, libusb_strerror(r),
						   advice ? ": " : "", advice ? advice : "");
	}
}

static void
scan_config(DeviceScan *scan, guint8 index, const NcmMatch *match, GPtrArray *out)
{
	struct libusb_config_descriptor *cfg;
	NcmCdcFunction found[NCM_MAX_FUNCTIONS_PER_CONFIG];
	size_t n = 0;

	if (libusb_get_config_descriptor(scan->dev, index, &cfg) < 0)
		return;
	GByteArray *blob = config_blob(cfg);
	libusb_free_config_descriptor(cfg);
	NcmCdcStatus st = ncm_cdc_parse_config(blob->data, blob->len, found, G_N_ELEMENTS(found), &n);
	if (st != NCM_CDC_OK)
		g_debug("%s: configuration %u: %s", scan->path, index, ncm_cdc_status_name(st));
	g_byte_array_unref(blob);

	for (size_t i = 0; i < n; i++) {
		if (!scan->handle && !scan->open_error)
			scan_open(scan);
		if (scan->gone)
			return;
		NcmFunctionInfo *info = info_new(scan, &found[i]);

		if (!match || ncm_match_test(match, info))
			g_ptr_array_add(out, info);
		else
			ncm_function_info_unref(info);
	}
}

/* Adds @scan's functions to @out; the handle, if any, stays the caller's. */
static void
scan_functions(DeviceScan *scan, const NcmMatch *match, GPtrArray *out)
{
	struct libusb_config_descriptor *active;

	if (libusb_get_device_descriptor(scan->dev, &scan->desc) < 0)
		return;
	if (!ncm_match_ids(match, scan->desc.idVendor, scan->desc.idProduct))
		return;
	scan->path = ncm_usb_port_path(scan->dev);
	if (libusb_get_active_config_descriptor(scan->dev, &active) == 0) {
		scan->active = active->bConfigurationValue;
		libusb_free_config_descriptor(active);
	}
	for (guint8 c = 0; c < scan->desc.bNumConfigurations; c++)
		scan_config(scan, c, match, out);
	g_free(scan->open_error);
	g_free(scan->path);
}

static void
scan_device(libusb_device *dev, gboolean keep_dev, const NcmMatch *match, GPtrArray *out)
{
	DeviceScan scan = { .dev = dev, .keep_dev = keep_dev, .fd = -1 };

	scan_functions(&scan, match, out);
	if (scan.handle)
		libusb_close(scan.handle);
}

GPtrArray *
ncm_context_enumerate(NcmContext *self, const NcmMatch *match, GError **error)
{
	libusb_context *usb = ncm_context_get_usb(self);
	gboolean fresh = ncm_context_needs_fresh_scan(self);
	libusb_device **list;
	ssize_t n;
	GPtrArray *out;

	g_return_val_if_fail(NCM_IS_CONTEXT(self), NULL);
	/*
	 * Without udevd, libusb's Linux device list never learns of arrivals:
	 * a short-lived context scans sysfs afresh, and open() wraps the node.
	 */
	if (fresh && ncm_context_init_fresh_usb(&usb) < 0) {
		/* The context's own list would be stale here: better no answer than a wrong one. */
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "cannot rescan USB devices: is /dev/bus/usb readable?");
		return NULL;
	}
	n = libusb_get_device_list(usb, &list);
	if (n < 0) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "cannot list USB devices: %s (is /dev/bus/usb readable?)",
			    libusb_strerror((int)n));
		if (usb != ncm_context_get_usb(self))
			libusb_exit(usb);
		return NULL;
	}
	out = g_ptr_array_new_with_free_func((GDestroyNotify)ncm_function_info_unref);
	for (ssize_t i = 0; i < n; i++)
		scan_device(list[i], usb == ncm_context_get_usb(self), match, out);
	libusb_free_device_list(list, 1);
	if (usb != ncm_context_get_usb(self))
		libusb_exit(usb);
	return out;
}

GPtrArray *
ncm_context_enumerate_fd(NcmContext *self, int fd, const NcmMatch *match, GError **error)
{
	DeviceScan scan = { .fd = -1 };
	GPtrArray *out;
	int r;

	g_return_val_if_fail(NCM_IS_CONTEXT(self), NULL);
	/* Our own duplicate: the caller may close theirs, and libusb_close()
	 * of a wrapped handle leaves the fd open for us to close. */
	scan.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (scan.fd < 0) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
			    "fd %d is not an open file (%s): pass the fd of an open "
			    "/dev/bus/usb/BBB/DDD node", fd, g_strerror(errno));
		return NULL;
	}
	r = libusb_wrap_sys_device(ncm_context_get_usb(self), scan.fd, &scan.handle);
	if (r < 0) {
		close(scan.fd);
		g_set_error(error, NCM_ERROR, r == LIBUSB_ERROR_NOT_SUPPORTED ? NCM_ERROR_UNSUPPORTED
						: NCM_ERROR_FAILED,
			    "fd %d is not a USB device libusb can use (%s): pass the fd of a "
			    "/dev/bus/usb/BBB/DDD node opened read-write", fd, libusb_strerror(r));
		return NULL;
	}
	scan.dev = libusb_get_device(scan.handle);
	out = g_ptr_array_new_with_free_func((GDestroyNotify)ncm_function_info_unref);
	scan_functions(&scan, match, out);
	libusb_close(scan.handle);
	close(scan.fd);
	return out;
}

/* ---- Matching --------------------------------------------------------- */
