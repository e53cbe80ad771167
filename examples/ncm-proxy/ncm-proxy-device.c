/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-device.c: the NCM function (or a test TAP) under lwIP: open, netif, replug, addresses seen, counters. */
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ncm-cli.h"
#include "ncm-link.h"
#include "ncm-proxy-device.h"

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
	CliPersist persist;
	gchar *seen;               /* the addresses and servers last reported */
	gchar *description;
};

static void device_detach(ProxyDevice *self, const gchar *why);
static void report_addresses(ProxyDevice *self);

/* ---- Choosing and opening -------------------------------------------------------- */

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
	/* A DHCP lease or an RA is reported when it comes. */
	g_signal_connect_swapped(self->netif, "addresses-changed", G_CALLBACK(report_addresses),
				 self);
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

/* Removing stops the link now, whoever still holds a reference to the
 * netif; the reference is ours to drop. */
static void
netif_clear(ProxyDevice *self)
{
	if (self->netif)
		ncm_lwip_netif_remove(self->netif);
	g_clear_object(&self->netif);
}

/* Ends the session (the netif stops the link, which closes the device). */
static void
device_detach(ProxyDevice *self, const gchar *why)
{
	NcmStats st;

	if (!self->device)
		return;
	g_signal_handlers_disconnect_by_data(self->device, self);
	netif_clear(self);
	ncm_device_get_stats(self->device, &st);
	cli_stats_add(&self->past, &st);
	g_clear_object(&self->device);
	g_clear_pointer(&self->seen, g_free);
	if (!why)
		return;
	if (self->config.persist && self->config.usb_fd < 0) {
		g_message("%s; waiting for it to come back", why);
		cli_persist_lost(&self->persist);
		return;
	}
	self->gone(why, self->gone_data);
}

/* ---- --persist ------------------------------------------------------------------- */

static NcmDevice *
persist_current(gpointer data)
{
	return ((ProxyDevice *)data)->device;
}

static gboolean
persist_reopen(gpointer data, const NcmFunctionInfo *info, GError **error)
{
	return device_attach(data, info, error);
}

static void
persist_removed(gpointer data)
{
	device_detach(data, "the device went away");
}

static gboolean
start_persist(ProxyDevice *self, GError **error)
{
	self->persist = (CliPersist){
		.ctx = self->ctx,
		.match = &self->config.match,
		.current = persist_current,
		.reopen = persist_reopen,
		.removed = persist_removed,
		.data = self,
		.opened = self->device != NULL,
	};
	return cli_persist_start(&self->persist, error);
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

static void
report_addresses(ProxyDevice *self)
{
	g_autofree gchar *now = NULL;

	if (!self->netif)
		return;
	now = describe_addresses(self);
	if (g_strcmp0(now, self->seen)) {
		g_message("%s", now);
		g_free(self->seen);
		self->seen = g_steal_pointer(&now);
	}
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
		gboolean persist = config->persist && config->usb_fd < 0;
		g_autoptr(GError) none = NULL;

		self->ctx = ncm_context_new(error);
		if (!self->ctx || !cli_apple_switch(self->ctx, &config->match, config->usb_fd, error))
			goto fail;
		/* --persist: started before the device (at login, at boot), or
		 * before udev gave it to us, it waits for one as for a replug,
		 * retries included. Several that match the user must settle first. */
		info = cli_select_function(self->ctx, &config->match, config->usb_fd,
					   persist ? &none : error);
		if (info && !device_attach(self, info, persist ? &none : error) && !persist)
			goto fail;
		if (!info && !persist)
			goto fail;
		/* Under --persist either failure is in @none. */
		if (none && !cli_persist_waits_for(none)) {
			g_propagate_error(error, g_steal_pointer(&none));
			goto fail;
		}
		if (none && info)
			g_warning("the function at %s: %s (tried again in 2, 4 ... 60 s, and at once "
				  "when it is plugged in again)", info->port_path, none->message);
		else if (none && none->code == NCM_ERROR_NOT_FOUND)
			g_message("%s; waiting for one (--persist)", none->message);
		else if (none)
			g_warning("%s; waiting for that (--persist)", none->message);
		if (!self->device)
			self->description = g_strdup("no device yet");
		if (persist && !start_persist(self, error))
			goto fail;
	}
	report_addresses(self);
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
		cli_stats_add(&st, &now);
	}
	fprintf(out, "  device: %s, %u session(s)%s\n", proxy_device_describe(self),
		self->sessions, self->netif ? "" : ", detached");
	if (addresses)
		fprintf(out, "  %s\n", addresses);
	if (!self->ctx)
		return;
	cli_print_usb_stats(out, &st);
}

void
proxy_device_free(ProxyDevice *self)
{
	if (!self)
		return;
	cli_persist_stop(&self->persist);
	device_detach(self, NULL);
	/* A TAP's netif, which device_detach() leaves. */
	netif_clear(self);
	g_clear_object(&self->ctx);
	g_object_unref(self->stack);
	g_free(self->seen);
	g_free(self->description);
	g_free(self);
}
