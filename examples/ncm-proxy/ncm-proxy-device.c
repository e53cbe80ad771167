/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-device.c: the NCM function (or a test TAP) under lwIP: open, netif, replug, addresses seen, counters. */
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ncm-link.h"
#include "ncm-proxy-device.h"

/* How often the netif's addresses and DNS servers are looked at, so that
 * a DHCP lease or an RA is reported when it comes. */
#define WATCH_INTERVAL_S 1

struct _ProxyDevice {
	NcmLwipStack *stack;
	ProxyDeviceConfig config;
	ProxyDeviceGoneFunc gone;
	gpointer gone_data;
	NcmContext *ctx;           /* NULL for a TAP */
	NcmDevice *device;         /* NULL while waiting for a replug; the link holds it too */
	NcmLwipNetif *netif;
	NcmStats past;             /* summed over closed sessions */
	guint sessions;
	guint watch_id;
	guint retry_id;
	gchar *seen;               /* the addresses and servers last reported */
	gchar *description;
};

static void device_detach(ProxyDevice *self, const gchar *why);

/* ---- Choosing and opening -------------------------------------------------------- */

/*
 * serial= and mac= are read from the device, which this user may not be
 * allowed to open: then nothing matches, and the real problem is the
 * permission. Says so for the first such function of the right VID:PID.
 */
static gboolean
explain_unreadable(ProxyDevice *self, GError **error)
{
	const NcmMatch *match = &self->config.match;
	NcmMatch ids = { .vid = match->vid, .pid = match->pid, .port_path = match->port_path };
	g_autoptr(GPtrArray) all = NULL;

	if (!match->serial && !match->have_mac)
		return FALSE;
	all = ncm_context_enumerate(self->ctx, &ids, NULL);
	for (guint i = 0; all && i < all->len; i++) {
		const NcmFunctionInfo *info = all->pdata[i];

		if (!info->access_error)
			continue;
		g_set_error(error, NCM_ERROR, NCM_ERROR_PERMISSION,
			    "no USB CDC-NCM function matches the --device filters, and the serial "
			    "number and MAC of %04x:%04x at %s could not be read: %s. Give this user "
			    "access with a udev rule such as SUBSYSTEM==\"usb\", "
			    "ATTR{idVendor}==\"%04x\", ATTR{idProduct}==\"%04x\", MODE=\"0660\", "
			    "GROUP=\"plugdev\" and replug the device",
			    info->vid, info->pid, info->port_path, info->access_error, info->vid,
			    info->pid);
		return TRUE;
	}
	return FALSE;
}

static NcmFunctionInfo *
select_function(ProxyDevice *self, GError **error)
{
	const NcmMatch *match = &self->config.match;
	g_autoptr(GPtrArray) all =
		self->config.usb_fd >= 0
			? ncm_context_enumerate_fd(self->ctx, self->config.usb_fd, match, error)
			: ncm_context_enumerate(self->ctx, match, error);
	g_autoptr(GString) list = g_string_new(NULL);

	if (!all)
		return NULL;
	if (all->len == 1)
		return ncm_function_info_ref(all->pdata[0]);
	if (all->len == 0) {
		if (self->config.usb_fd < 0 && explain_unreadable(self, error))
			return NULL;
		g_set_error(error, NCM_ERROR, NCM_ERROR_NOT_FOUND, "%s",
			    self->config.usb_fd >= 0
				    ? "the device of --usb-fd has no USB CDC-NCM function that the "
				      "--device filters select"
				    : "no USB CDC-NCM function matches (ncm-probe lists them)");
		return NULL;
	}
	for (guint i = 0; i < all->len; i++) {
		const NcmFunctionInfo *info = all->pdata[i];

		g_string_append_printf(list, "\n  path=%s  %04x:%04x  serial=%s  interface %u",
				       info->port_path, info->vid, info->pid,
				       info->serial ? info->serial : "?", info->comm_iface);
	}
	g_set_error(error, NCM_ERROR, NCM_ERROR_FAILED,
		    "%u functions match; pick one with --device:%s", all->len, list->str);
	return NULL;
}

static void
on_removed(NcmDevice *device, ProxyDevice *self)
{
	device_detach(self, "the device went away");
}

static void
on_device_error(NcmDevice *device, GError *error, ProxyDevice *self)
{
	g_warning("device error: %s", error->message);
	device_detach(self, "the device failed");
}

static gboolean
attach_link(ProxyDevice *self, NcmLink *link, GError **error)
{
	self->netif = ncm_lwip_netif_add(self->stack, link, &self->config.netif, error);
	if (!self->netif)
		return FALSE;
	self->sessions++;
	return TRUE;
}

/* Opens @info and puts a netif on it: one session. */
static gboolean
device_attach(ProxyDevice *self, const NcmFunctionInfo *info, GError **error)
{
	NcmDevice *device = ncm_device_open(self->ctx, info, &self->config.options, error);

	if (!device)
		return FALSE;
	/* ncm_lwip_netif_add() takes the link, the link a reference to the device. */
	if (!attach_link(self, ncm_link_new_for_device(device), error)) {
		g_object_unref(device);
		return FALSE;
	}
	g_signal_connect(device, "removed", G_CALLBACK(on_removed), self);
	g_signal_connect(device, "error", G_CALLBACK(on_device_error), self);
	self->device = device;
	g_free(self->description);
	self->description = g_strdup_printf("usb %04x:%04x at %s (/dev/bus/usb/%03u/%03u), MTU %u",
					    info->vid, info->pid, info->port_path, info->bus,
					    info->address, ncm_device_get_mtu(device));
	g_message("%s attached", self->description);
	return TRUE;
}

/* Ends the session (the netif stops the link, which closes the device). */
static void
device_detach(ProxyDevice *self, const gchar *why)
{
	NcmStats st;
	guint i;

	if (!self->device)
		return;
	g_signal_handlers_disconnect_by_data(self->device, self);
	ncm_lwip_netif_remove(g_steal_pointer(&self->netif));
	ncm_device_get_stats(self->device, &st);
	for (i = 0; i < sizeof(NcmStats) / sizeof(guint64); i++)
		((guint64 *)&self->past)[i] += ((const guint64 *)&st)[i];
	g_clear_object(&self->device);
	g_clear_pointer(&self->seen, g_free);
	if (!why)
		return;
	if (self->config.persist && self->config.usb_fd < 0) {
		g_message("%s; waiting for it to come back", why);
		return;
	}
	self->gone(why, self->gone_data);
}

/* ---- --persist ------------------------------------------------------------------- */

static void
try_reattach(ProxyDevice *self, const NcmFunctionInfo *info)
{
	g_autoptr(GError) error = NULL;

	if (self->device || !ncm_match_test(&self->config.match, info))
		return;
	/* It may still be settling (busy, strings unreadable): the retry timer tries again. */
	if (!device_attach(self, info, &error))
		g_message("reattach %s: %s", info->port_path, error->message);
}

static void
on_function_added(NcmContext *ctx, NcmFunctionInfo *info, ProxyDevice *self)
{
	try_reattach(self, info);
}

static void
on_device_removed(NcmContext *ctx, guint bus, guint address, ProxyDevice *self)
{
	const NcmFunctionInfo *info;

	if (!self->device)
		return;
	info = ncm_device_get_info(self->device);
	if (info->bus == bus && info->address == address)
		device_detach(self, "the device went away");
}

/* Covers what no arrival announces: an error on a device that stayed plugged in. */
static gboolean
on_retry(gpointer data)
{
	ProxyDevice *self = data;
	g_autoptr(GPtrArray) all = NULL;

	if (self->device)
		return G_SOURCE_CONTINUE;
	all = ncm_context_enumerate(self->ctx, &self->config.match, NULL);
	for (guint i = 0; all && i < all->len && !self->device; i++)
		try_reattach(self, all->pdata[i]);
	return G_SOURCE_CONTINUE;
}

static gboolean
start_persist(ProxyDevice *self, GError **error)
{
	g_signal_connect(self->ctx, "function-added", G_CALLBACK(on_function_added), self);
	g_signal_connect(self->ctx, "device-removed", G_CALLBACK(on_device_removed), self);
	if (!ncm_context_watch(self->ctx, &self->config.match, 0, error))
		return FALSE;
	self->retry_id = g_timeout_add_seconds(2, on_retry, self);
	return TRUE;
}

/* ---- A TAP instead of USB (tests) ------------------------------------------------ */

static gboolean
open_tap(ProxyDevice *self, GError **error)
{
	static const guint8 mac[6] = { 0x02, 0x4e, 0x43, 0x4d, 0x50, 0x02 };
	struct ifreq ifr = { 0 };
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	g_strlcpy(ifr.ifr_name, self->config.tap, IFNAMSIZ);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
			    "cannot create the TAP interface %s: %s (--tap is for tests, as root)",
			    self->config.tap, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return FALSE;
	}
	self->description = g_strdup_printf("tap %s", self->config.tap);
	return attach_link(self, ncm_link_new_for_tap_fd(fd, mac, 1514), error);
}

/* ---- Addresses, as they come ------------------------------------------------------ */

static void
append_addresses(GString *s, GList *list)
{
	for (GList *l = list; l; l = l->next) {
		g_autofree gchar *text = g_inet_address_to_string(l->data);

		g_string_append_printf(s, "%s%s", s->len && s->str[s->len - 1] != ' ' ? ", " : "",
				       text);
	}
}

static gchar *
describe_addresses(ProxyDevice *self)
{
	GString *s = g_string_new("addresses ");
	GList *addresses = ncm_lwip_netif_get_addresses(self->netif);
	GList *servers = ncm_lwip_stack_get_dns_servers(self->stack);

	append_addresses(s, addresses);
	g_string_append(s, addresses ? "; DNS " : "(none yet); DNS ");
	append_addresses(s, servers);
	if (!servers)
		g_string_append(s, "(none: give --dns, or lease by DHCP)");
	g_list_free_full(addresses, g_object_unref);
	g_list_free_full(servers, g_object_unref);
	return g_string_free(s, FALSE);
}

static gboolean
on_watch(gpointer data)
{
	ProxyDevice *self = data;
	g_autofree gchar *now = NULL;

	if (!self->netif)
		return G_SOURCE_CONTINUE;
	now = describe_addresses(self);
	if (g_strcmp0(now, self->seen)) {
		g_message("%s", now);
		g_free(self->seen);
		self->seen = g_steal_pointer(&now);
	}
	return G_SOURCE_CONTINUE;
}

/* ---- Life cycle ------------------------------------------------------------------ */

ProxyDevice *
proxy_device_open(NcmLwipStack *stack, const ProxyDeviceConfig *config, ProxyDeviceGoneFunc gone,
		  gpointer user_data, GError **error)
{
	ProxyDevice *self = g_new0(ProxyDevice, 1);
	g_autoptr(NcmFunctionInfo) info = NULL;

	self->stack = g_object_ref(stack);
	self->config = *config;
	self->gone = gone;
	self->gone_data = user_data;
	if (config->tap) {
		if (!open_tap(self, error))
			goto fail;
	} else {
		self->ctx = ncm_context_new(error);
		if (!self->ctx || !(info = select_function(self, error)) ||
		    !device_attach(self, info, error))
			goto fail;
		if (config->persist && config->usb_fd < 0 && !start_persist(self, error))
			goto fail;
	}
	on_watch(self);
	self->watch_id = g_timeout_add_seconds(WATCH_INTERVAL_S, on_watch, self);
	return self;
fail:
	proxy_device_free(self);
	return NULL;
}

const gchar *
proxy_device_describe(ProxyDevice *self)
{
	return self->description ? self->description : "no device";
}

void
proxy_device_print_stats(ProxyDevice *self, FILE *out)
{
	NcmStats st = self->past;
	g_autofree gchar *addresses = self->netif ? describe_addresses(self) : NULL;

	if (self->device) {
		NcmStats now;

		ncm_device_get_stats(self->device, &now);
		for (guint i = 0; i < sizeof(NcmStats) / sizeof(guint64); i++)
			((guint64 *)&st)[i] += ((const guint64 *)&now)[i];
	}
	fprintf(out, "  device: %s, %u session(s)%s\n", proxy_device_describe(self),
		self->sessions, self->netif ? "" : ", detached");
	if (addresses)
		fprintf(out, "  %s\n", addresses);
	if (!self->ctx)
		return;
	fprintf(out, "  usb rx: %" G_GUINT64_FORMAT " NTBs, %" G_GUINT64_FORMAT " datagrams, %"
		G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT " bad NTBs, %" G_GUINT64_FORMAT
		" errors\n", st.rx_ntbs, st.rx_datagrams, st.rx_bytes, st.rx_bad_ntbs,
		st.rx_errors + st.rx_overflows + st.rx_stalls);
	fprintf(out, "  usb tx: %" G_GUINT64_FORMAT " NTBs, %" G_GUINT64_FORMAT " datagrams, %"
		G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT " would-block, %" G_GUINT64_FORMAT
		" errors\n", st.tx_ntbs, st.tx_datagrams, st.tx_bytes, st.tx_would_block,
		st.tx_errors);
}

void
proxy_device_free(ProxyDevice *self)
{
	if (!self)
		return;
	if (self->watch_id)
		g_source_remove(self->watch_id);
	if (self->retry_id)
		g_source_remove(self->retry_id);
	if (self->ctx)
		g_signal_handlers_disconnect_by_data(self->ctx, self);
	device_detach(self, NULL);
	/* A TAP's netif, which device_detach() leaves. */
	ncm_lwip_netif_remove(g_steal_pointer(&self->netif));
	g_clear_object(&self->ctx);
	g_object_unref(self->stack);
	g_free(self->seen);
	g_free(self->description);
	g_free(self);
}
