/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-forward.c: ssh-style forwards: -L listens on the host and connects through the device, -R the reverse. */
#include <stdlib.h>
#include <string.h>

#include "ncm-proxy.h"

struct _ProxyForward {
	Proxy *proxy;
	ProxyForwardSpec spec;
	gchar *name;                  /* "-L 127.0.0.1:8080 -> peer:80" */
	GSocketService *service;      /* -L */
	NcmLwipListener *listener;    /* -R */
	GCancellable *cancel;         /* -R: the pending accept */
};

/* ---- The spec ------------------------------------------------------------------- */

/* Splits at colons outside brackets; brackets are kept. */
static GPtrArray *
split_spec(const gchar *text)
{
	GPtrArray *parts = g_ptr_array_new_with_free_func(g_free);
	const gchar *start = text;
	gint depth = 0;

	for (const gchar *p = text;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		else if ((*p == ':' && depth == 0) || *p == '\0') {
			g_ptr_array_add(parts, g_strndup(start, (gsize)(p - start)));
			start = p + 1;
		}
		if (*p == '\0')
			break;
	}
	return parts;
}

static gboolean
parse_port(const gchar *text, guint16 *ret)
{
	gchar *end = NULL;
	guint64 v = g_ascii_strtoull(text, &end, 10);

	if (end == text || *end || v == 0 || v > 65535)
		return FALSE;
	*ret = (guint16)v;
	return TRUE;
}

/* "[v6]" -> "v6"; a bare name or IPv4 address stays. NULL for an empty host. */
static gchar *
unbracket(const gchar *text)
{
	gsize len = strlen(text);

	if (len >= 2 && text[0] == '[' && text[len - 1] == ']')
		return g_strndup(text + 1, len - 2);
	if (len == 0 || strchr(text, '[') || strchr(text, ']'))
		return NULL;
	return g_strdup(text);
}

gboolean
proxy_forward_parse(const gchar *text, ProxyForwardSpec *ret, GError **error)
{
	g_autoptr(GPtrArray) parts = split_spec(text);
	ProxyForwardSpec spec = { 0 };
	guint i = 0;

	if (parts->len == 4) {
		spec.bind = unbracket(parts->pdata[i++]);
		if (!spec.bind)
			goto bad;
	}
	if (parts->len < 3 || parts->len > 4 || !parse_port(parts->pdata[i], &spec.port) ||
	    !(spec.host = unbracket(parts->pdata[i + 1])) ||
	    !parse_port(parts->pdata[i + 2], &spec.host_port))
		goto bad;
	*ret = spec;
	return TRUE;
bad:
	proxy_forward_spec_clear(&spec);
	g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
		    "cannot understand the forward %s: use [BIND:]PORT:HOST:HOSTPORT with ports "
		    "1-65535 and IPv6 addresses in brackets, e.g. 8080:192.168.7.1:80 or "
		    "[::1]:2222:[fd00::1]:22", text);
	return FALSE;
}

void
proxy_forward_spec_clear(ProxyForwardSpec *spec)
{
	g_clear_pointer(&spec->bind, g_free);
	g_clear_pointer(&spec->host, g_free);
}

/* A bind address: a literal, "localhost", or "*" for every address. */
static GSocketAddress *
bind_address(const gchar *bind, gboolean loopback_default, guint16 port, GError **error)
{
	g_autoptr(GInetAddress) ip = NULL;

	if (!bind)
		ip = loopback_default ? g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4)
				      : g_inet_address_new_any(G_SOCKET_FAMILY_IPV6);
	else if (!strcmp(bind, "localhost"))
		ip = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	else if (!strcmp(bind, "*"))
		ip = g_inet_address_new_any(G_SOCKET_FAMILY_IPV6);
	else
		ip = g_inet_address_new_from_string(bind);
	if (!ip) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "bind address %s: expected an IP address, localhost or *", bind);
		return NULL;
	}
	return g_inet_socket_address_new(ip, port);
}

static ProxyForward *
forward_new(Proxy *proxy, const ProxyForwardSpec *spec, gchar kind)
{
	ProxyForward *f = g_new0(ProxyForward, 1);

	f->proxy = proxy;
	f->spec.bind = g_strdup(spec->bind);
	f->spec.port = spec->port;
	f->spec.host = g_strdup(spec->host);
	f->spec.host_port = spec->host_port;
	f->name = g_strdup_printf("-%c %s%s%u -> %s:%u", kind, spec->bind ? spec->bind : "",
				  spec->bind ? ":" : "", spec->port, spec->host, spec->host_port);
	return f;
}

void
proxy_forward_free(ProxyForward *f)
{
	if (!f)
		return;
	if (f->service) {
		g_socket_service_stop(f->service);
		g_socket_listener_close(G_SOCKET_LISTENER(f->service));
		g_object_unref(f->service);
	}
	if (f->cancel)
		g_cancellable_cancel(f->cancel);
	g_clear_object(&f->cancel);
	if (f->listener)
		ncm_lwip_listener_close(f->listener);
	g_clear_object(&f->listener);
	proxy_forward_spec_clear(&f->spec);
	g_free(f->name);
	g_free(f);
}

/* Takes a place in count.active, or refuses: FALSE means close at once. */
static gboolean
take_slot(Proxy *proxy)
{
	proxy->count.accepted++;
	if (proxy->count.active >= proxy->max_connections) {
		proxy->count.refused_limit++;
		return FALSE;
	}
	proxy->count.active++;
	return TRUE;
}

/*
 * The other side could not be reached: reset the accepted one (its client
 * may have sent a request already; an empty reply would read as one), give
 * up its slot.
 */
static void
forward_failed(ProxyForward *f, GIOStream *accepted, const GError *error)
{
	g_message("%s: %s", f->name, error->message);
	proxy_stream_abort(accepted);
	g_object_unref(accepted);
	f->proxy->count.active--;
}

/* ---- -L: host listener, device connection ------------------------------------- */

typedef struct {
	ProxyForward *forward;
	GIOStream *host;
} Pending;

static void
local_dialed(GObject *source, GAsyncResult *result, gpointer data)
{
	Pending *p = data;
	g_autoptr(GError) error = NULL;
	NcmLwipConnection *conn = proxy_dial_finish(result, &error);

	if (!conn)
		forward_failed(p->forward, p->host, error);
	else
		proxy_relay_start(p->forward->proxy, p->host, G_IO_STREAM(conn), NULL);
	g_free(p);
}

static gboolean
local_incoming(GSocketService *service, GSocketConnection *client, GObject *source,
	       gpointer data)
{
	ProxyForward *f = data;
	Pending *p;

	if (!take_slot(f->proxy)) {
		g_io_stream_close(G_IO_STREAM(client), NULL, NULL);
		return TRUE;
	}
	p = g_new0(Pending, 1);
	p->forward = f;
	p->host = g_object_ref(G_IO_STREAM(client));
	proxy_dial_async(f->proxy, f->spec.host, f->spec.host_port, NULL, local_dialed, p);
	return TRUE;
}

ProxyForward *
proxy_forward_local_new(Proxy *proxy, const ProxyForwardSpec *spec, GError **error)
{
	ProxyForward *f = forward_new(proxy, spec, 'L');
	g_autoptr(GSocketAddress) address = bind_address(spec->bind, TRUE, spec->port, error);
	g_autoptr(GError) local = NULL;

	f->service = g_socket_service_new();
	g_socket_service_stop(f->service);
	if (!address ||
	    !g_socket_listener_add_address(G_SOCKET_LISTENER(f->service), address,
					   G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL, NULL,
					   &local)) {
		if (local)
			g_set_error(error, local->domain, local->code, "%s: %s%s", f->name,
				    local->message,
				    g_error_matches(local, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE)
					    ? " (pick another local port)"
					    : "");
		proxy_forward_free(f);
		return NULL;
	}
	g_signal_connect(f->service, "incoming", G_CALLBACK(local_incoming), f);
	return f;
}

void
proxy_forward_start(ProxyForward *f)
{
	if (f->service)
		g_socket_service_start(f->service);
}

/* ---- -R: device listener, host connection --------------------------------------- */

typedef struct {
	ProxyForward *forward;
	NcmLwipConnection *device;
} RemotePending;

static void
remote_connected(GObject *source, GAsyncResult *result, gpointer data)
{
	RemotePending *p = data;
	g_autoptr(GError) error = NULL;
	GSocketConnection *host = g_socket_client_connect_to_host_finish(G_SOCKET_CLIENT(source),
									 result, &error);

	if (!host) {
		p->forward->proxy->count.connect_failures++;
		forward_failed(p->forward, G_IO_STREAM(p->device), error);
	} else {
		ncm_lwip_connection_set_no_delay(p->device, TRUE);
		proxy_relay_start(p->forward->proxy, G_IO_STREAM(host), G_IO_STREAM(p->device),
				  NULL);
	}
	g_free(p);
}

static void remote_accept_next(ProxyForward *f);

static void
remote_accepted(GObject *source, GAsyncResult *result, gpointer data)
{
	ProxyForward *f = data;
	g_autoptr(GError) error = NULL;
	NcmLwipConnection *conn = ncm_lwip_listener_accept_finish(NCM_LWIP_LISTENER(source), result,
								  &error);
	g_autoptr(GSocketClient) client = NULL;
	RemotePending *p;

	if (!conn) {
		if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) &&
		    !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CLOSED))
			g_warning("%s: accept: %s", f->name, error->message);
		return;
	}
	remote_accept_next(f);
	if (!take_slot(f->proxy)) {
		g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
		g_object_unref(conn);
		return;
	}
	p = g_new0(RemotePending, 1);
	p->forward = f;
	p->device = conn;
	client = g_socket_client_new();
	g_socket_client_set_timeout(client, f->proxy->connect_timeout_ms / 1000);
	g_socket_client_connect_to_host_async(client, f->spec.host, f->spec.host_port, NULL,
					      remote_connected, p);
}

static void
remote_accept_next(ProxyForward *f)
{
	ncm_lwip_listener_accept_async(f->listener, f->cancel, remote_accepted, f);
}

ProxyForward *
proxy_forward_remote_new(Proxy *proxy, const ProxyForwardSpec *spec, GError **error)
{
	ProxyForward *f = forward_new(proxy, spec, 'R');
	g_autoptr(GSocketAddress) address = bind_address(spec->bind, FALSE, spec->port, error);

	if (address)
		f->listener = ncm_lwip_stack_listen(proxy->stack, G_INET_SOCKET_ADDRESS(address), 0,
						    error);
	if (!f->listener) {
		if (error && *error)
			g_prefix_error(error, "%s: ", f->name);
		proxy_forward_free(f);
		return NULL;
	}
	f->cancel = g_cancellable_new();
	remote_accept_next(f);
	return f;
}
