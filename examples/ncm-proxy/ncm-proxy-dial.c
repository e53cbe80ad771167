/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-dial.c: the device side of a proxied connection: a name resolved through the device, then an lwIP connect. */
#include <string.h>

#include "ncm-proxy.h"

typedef struct {
	Proxy *proxy;
	gchar *host;
	guint16 port;
	GSocketFamily tried;   /* the first address's family: its other may be tried */
	GError *first_error;   /* the first address's failure: set while its other is tried */
} Dial;

static void resolved(GObject *source, GAsyncResult *result, gpointer data);

static void
dial_free(gpointer data)
{
	Dial *d = data;

	g_clear_error(&d->first_error);
	g_free(d->host);
	g_free(d);
}

/* "fd77::1", "[fd77::1]", "fe80::1%ncm0": an address literal, or NULL. The
 * zone is dropped: lwIP sends link-local traffic out of its one netif. */
static GInetAddress *
parse_literal(const gchar *host)
{
	g_autofree gchar *bare = g_strdup(host);
	gchar *pct;
	gsize len = strlen(bare);

	if (len >= 2 && bare[0] == '[' && bare[len - 1] == ']') {
		bare[len - 1] = '\0';
		memmove(bare, bare + 1, len - 1);
	}
	pct = strchr(bare, '%');
	if (pct && strchr(bare, ':'))
		*pct = '\0';
	return g_inet_address_new_from_string(bare);
}

static void
connected(GObject *source, GAsyncResult *result, gpointer data)
{
	g_autoptr(GTask) task = data;
	GError *error = NULL;
	NcmLwipConnection *conn = ncm_lwip_stack_connect_finish(NCM_LWIP_STACK(source), result,
								&error);

	if (!conn) {
		Dial *d = g_task_get_task_data(task);

		/*
		 * A name's A record on a link with only IPv6 (an iPad's link-local
		 * NCM link, SLAAC alone), or the other way round: its other
		 * family's address may have a route. Once, and only when the
		 * family was left open (--names ipv4, the default).
		 */
		if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_NETWORK_UNREACHABLE) &&
		    d->tried != G_SOCKET_FAMILY_INVALID) {
			GSocketFamily other = d->tried == G_SOCKET_FAMILY_IPV4 ? G_SOCKET_FAMILY_IPV6
									      : G_SOCKET_FAMILY_IPV4;
			/* Before the task is stolen: arguments have no order. */
			GCancellable *cancellable = g_task_get_cancellable(task);

			g_debug("%s: %s; trying its IPv%c address", d->host, error->message,
				other == G_SOCKET_FAMILY_IPV6 ? '6' : '4');
			d->first_error = error;
			d->proxy->count.lookups++;
			ncm_lwip_stack_resolve_async(d->proxy->stack, d->host, other, cancellable,
						     resolved, g_steal_pointer(&task));
			return;
		}
		d->proxy->count.connect_failures++;
		g_task_return_error(task, error);
		return;
	}
	/* Interactive protocols (ssh, a browser's requests) must not wait for
	 * Nagle behind the relay's own batching. */
	ncm_lwip_connection_set_no_delay(conn, TRUE);
	g_task_return_pointer(task, conn, g_object_unref);
}

static void
connect_to(GTask *task, GInetAddress *address)
{
	Dial *d = g_task_get_task_data(task);
	g_autoptr(GSocketAddress) sa = g_inet_socket_address_new(address, d->port);

	ncm_lwip_stack_connect_async(d->proxy->stack, G_INET_SOCKET_ADDRESS(sa),
				     d->proxy->connect_timeout_ms, g_task_get_cancellable(task),
				     connected, task);
}

static void
resolved(GObject *source, GAsyncResult *result, gpointer data)
{
	GTask *task = data;
	Dial *d = g_task_get_task_data(task);
	GError *error = NULL;
	g_autoptr(GInetAddress) address = ncm_lwip_stack_resolve_finish(NCM_LWIP_STACK(source),
									result, &error);

	if (!address) {
		/* The other family has no address: the client hears the first
		 * one's failure (no route), not this lookup's. */
		if (d->first_error) {
			g_error_free(error);
			d->proxy->count.connect_failures++;
			g_task_return_error(task, g_steal_pointer(&d->first_error));
			g_object_unref(task);
			return;
		}
		d->proxy->count.lookup_failures++;
		g_task_return_error(task, error);
		g_object_unref(task);
		return;
	}
	/* Only the first answer, and only when either family would do, may be retried. */
	d->tried = d->proxy->family == G_SOCKET_FAMILY_INVALID && !d->first_error
			   ? g_inet_address_get_family(address)
			   : G_SOCKET_FAMILY_INVALID;
	connect_to(task, address);
}

void
proxy_dial_async(Proxy *proxy, const gchar *host, guint16 port, GCancellable *cancellable,
		 GAsyncReadyCallback callback, gpointer user_data)
{
	GTask *task = g_task_new(NULL, cancellable, callback, user_data);
	Dial *d = g_new0(Dial, 1);
	g_autoptr(GInetAddress) literal = parse_literal(host);

	d->proxy = proxy;
	d->host = g_strdup(host);
	d->port = port;
	g_task_set_task_data(task, d, dial_free);
	if (literal) {
		connect_to(task, literal);
		return;
	}
	proxy->count.lookups++;
	ncm_lwip_stack_resolve_async(proxy->stack, host, proxy->family, cancellable, resolved,
				     task);
}

NcmLwipConnection *
proxy_dial_finish(GAsyncResult *result, GError **error)
{
	return g_task_propagate_pointer(G_TASK(result), error);
}
