/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy.h: what ncm-proxy's parts share: the settings, the counters, and each part's entry points. */
#pragma once

#include <gio/gio.h>

#include "ncm-lwip.h"

/*
 * Threads: everything here runs on the main thread's GMainContext (the
 * kernel sockets, the SOCKS handshakes, every relay's copying, the device's
 * signals). lwIP's connects and lookups block on threads of their own
 * (ncm_lwip_stack_*_async) and complete there too. So the counters and
 * lists need no lock.
 *
 * The file graph (an arrow reads "calls"), a DAG:
 *   ncm-proxy.c         -> device, socks-server, forward, dial, relay
 *   ncm-proxy-socks-server.c -> dial, relay, udp, socks (parser), stream
 *   ncm-proxy-udp.c     -> socks (parser), (lwIP)
 *   ncm-proxy-forward.c -> dial, relay, stream
 *   ncm-proxy-device.c  -> (libncm, lwIP)
 *   ncm-proxy-dial.c    -> (lwIP)
 *   ncm-proxy-relay.c   -> stream
 *   ncm-proxy-stream.c  -> (GIO)
 */

/* Defaults, documented in --help and README.md. */
#define PROXY_DEFAULT_BUFFER (256 * 1024)
#define PROXY_DEFAULT_MAX_CONNECTIONS 256
#define PROXY_DEFAULT_CONNECT_TIMEOUT_S 10
/* A SOCKS client has this long from connecting to a complete request. */
#define PROXY_HANDSHAKE_TIMEOUT_S 20

typedef struct {
	guint64 accepted;        /* connections taken, all listeners */
	guint64 refused_limit;   /* closed at once: --max-connections reached */
	guint64 socks_errors;    /* handshakes that ended in an error reply or a close */
	guint64 auth_failures;
	guint64 lookups;
	guint64 lookup_failures;
	guint64 connect_failures;
	guint64 relays;          /* connections that reached the copying stage */
	guint64 bytes_out;       /* host side -> device side */
	guint64 bytes_in;        /* device side -> host side */
	guint64 udp_associations;
	guint64 udp_out;         /* datagrams sent to the device side */
	guint64 udp_in;          /* ... and back to clients (atomic: a thread counts) */
	guint64 udp_drops;       /* not from the client, malformed, fragments, unresolved */
	guint active;            /* connections open now, in any stage */
} ProxyCounters;

typedef struct {
	NcmLwipStack *stack;
	gsize buffer;            /* bytes held per direction of a connection */
	guint max_connections;
	guint connect_timeout_ms;
	GSocketFamily family;    /* names: IPv4 first (INVALID), or one family */
	gchar *auth_user;        /* RFC 1929 credentials; NULL: no authentication */
	gchar *auth_password;
	ProxyCounters count;
	GQueue relays;           /* ProxyRelay: closed at exit */
	GQueue udps;             /* ProxyUdp: ended at exit */
} Proxy;

/* ---- ncm-proxy-stream.c: kernel sockets and lwIP streams alike ------------ */

/* Half-close: FIN after what was written; reading goes on. */
void proxy_stream_shutdown_write(GIOStream *stream);
/* Closes with a reset (RST), not FIN: the other end must not take a cut
 * transfer for a complete one. */
void proxy_stream_abort(GIOStream *stream);
/* A printable "ADDR:PORT" ("[v6]:PORT") of the stream's remote end. */
gchar *proxy_stream_describe_peer(GIOStream *stream);
/* "ADDR:PORT" of any socket address ("[v6]:PORT"). */
gchar *proxy_address_to_string(GSocketAddress *address);

/* ---- ncm-proxy-relay.c: the copying stage ---------------------------------- */

typedef struct _ProxyRelay ProxyRelay;

/*
 * Copies both ways between @host (a kernel socket) and @device (an lwIP
 * connection), holding at most @proxy->buffer bytes towards the device
 * (the other way splices from lwIP, holding nothing). @early:
 * bytes already read from @host (pipelined after a SOCKS request), sent
 * first. Half-closes are passed on. When both directions have ended, or
 * either failed, the relay closes both streams, counts its bytes, calls
 * proxy->count.active-- and frees itself. Takes both streams.
 */
void proxy_relay_start(Proxy *proxy, GIOStream *host, GIOStream *device, GBytes *early);
/* Ends every relay: FIN (or RST, with unread data) to both sides. */
void proxy_relay_close_all(Proxy *proxy);

/* ---- ncm-proxy-udp.c: UDP ASSOCIATE ------------------------------------------ */

typedef struct _ProxyUdp ProxyUdp;

/*
 * An association for the SOCKS client on @control: a host UDP socket next
 * to the listener's address, an lwIP one on the device side. Datagrams are
 * taken from @control's peer address only, and from @client_port if not 0.
 * Takes @control's place in count.active; ends when @control does.
 */
ProxyUdp *proxy_udp_new(Proxy *proxy, GSocketConnection *control, guint16 client_port,
			GError **error);
/* Where the client sends its datagrams (the reply's BND.ADDR:BND.PORT). */
GSocketAddress *proxy_udp_get_address(ProxyUdp *udp);
void proxy_udp_end(ProxyUdp *udp);
void proxy_udp_close_all(Proxy *proxy);

/* ---- ncm-proxy-dial.c: the device side of a connection --------------------- */

/*
 * Resolves @host through the device unless it is an address literal (IPv6
 * in brackets or not, a %zone ignored), then connects through lwIP. The
 * result is an NcmLwipConnection, or a GError: G_RESOLVER_ERROR_* when the
 * name failed, G_IO_ERROR_* from the connect.
 */
void proxy_dial_async(Proxy *proxy, const gchar *host, guint16 port, GCancellable *cancellable,
		      GAsyncReadyCallback callback, gpointer user_data);
NcmLwipConnection *proxy_dial_finish(GAsyncResult *result, GError **error);

/* ---- ncm-proxy-socks-server.c ---------------------------------------------------- */

/*
 * Listens for SOCKS5 on @address, stopped: g_socket_service_start() once the
 * device is open. Errors: the address is in use, or not ours.
 */
GSocketService *proxy_socks_server_new(Proxy *proxy, GSocketAddress *address, GError **error);

/* ---- ncm-proxy-forward.c: -L and -R ---------------------------------------------- */

typedef struct {
	gchar *bind;        /* NULL: loopback (-L) or every address (-R) */
	guint16 port;
	gchar *host;
	guint16 host_port;
} ProxyForwardSpec;

/* "[BIND:]PORT:HOST:HOSTPORT", IPv6 addresses in brackets. */
gboolean proxy_forward_parse(const gchar *text, ProxyForwardSpec *ret, GError **error);
void proxy_forward_spec_clear(ProxyForwardSpec *spec);

typedef struct _ProxyForward ProxyForward;

/* -L: listens on the host (stopped until proxy_forward_start()), connects through the device. */
ProxyForward *proxy_forward_local_new(Proxy *proxy, const ProxyForwardSpec *spec,
				      GError **error);
/* -R: listens on the device side (lwIP), connects on the host. */
ProxyForward *proxy_forward_remote_new(Proxy *proxy, const ProxyForwardSpec *spec,
				       GError **error);
/* -L accepts from here on (its connections waited in the kernel's backlog). */
void proxy_forward_start(ProxyForward *forward);
void proxy_forward_free(ProxyForward *forward);
