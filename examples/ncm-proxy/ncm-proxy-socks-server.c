/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-socks-server.c: the SOCKS5 listener and each client's handshake, up to the relay. */
#include <string.h>

#include "ncm-proxy-socks.h"
#include "ncm-proxy.h"

/*
 * A session reads what the client sends into one buffer and parses it from
 * the start each time more came (the parsers keep no state). Greeting,
 * authentication and request may arrive together, and data after the
 * request too: whatever follows the request goes to the device first,
 * once connected. At most one read or dial is pending at a time; the
 * handshake timeout cancels it, and its callback ends the session.
 */

/* Greeting, auth and request at their longest fit, with room to spare. */
#define SESSION_BUF 2048

typedef enum {
	STAGE_GREETING,
	STAGE_AUTH,
	STAGE_REQUEST,
	STAGE_DIALING,
	STAGE_HANDED_OVER,   /* a UDP association took the client */
} Stage;

typedef struct {
	Proxy *proxy;
	GSocketConnection *client;
	GCancellable *cancel;
	guint timeout_id;
	Stage stage;
	guint8 buf[SESSION_BUF];
	gsize len;            /* bytes received */
	gsize pos;            /* bytes parsed into messages */
	gchar *peer;          /* the client, for messages */
	gchar *target;        /* "host:port" asked for */
} Session;

static void session_advance(Session *s);

static void
session_free(Session *s)
{
	if (s->timeout_id)
		g_source_remove(s->timeout_id);
	g_clear_object(&s->client);
	g_object_unref(s->cancel);
	g_free(s->peer);
	g_free(s->target);
	g_free(s);
}

/* The handshake failed or the client left: close, count, free. */
static void
session_end(Session *s, gboolean error)
{
	if (error)
		s->proxy->count.socks_errors++;
	s->proxy->count.active--;
	if (s->client)
		g_io_stream_close(G_IO_STREAM(s->client), NULL, NULL);
	session_free(s);
}

/*
 * The client has read nothing of ours yet, and every message of the
 * handshake is tiny: the socket's send buffer takes it whole, or the
 * client is gone.
 */
static gboolean
session_send(Session *s, const guint8 *msg, gsize len)
{
	GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(s->client));

	return g_pollable_output_stream_write_nonblocking(G_POLLABLE_OUTPUT_STREAM(out), msg, len,
							  NULL, NULL) == (gssize)len;
}

static void
send_reply(Session *s, guint8 rep)
{
	guint8 reply[PROXY_SOCKS_REPLY_MAX];
	gsize n = proxy_socks_build_reply(reply, sizeof reply, rep, NULL, 0, 0);

	session_send(s, reply, n);
}

static void
on_read(GObject *source, GAsyncResult *result, gpointer data)
{
	Session *s = data;
	g_autoptr(GError) error = NULL;
	gssize n = g_input_stream_read_finish(G_INPUT_STREAM(source), result, &error);

	if (n <= 0) {
		if (n < 0 && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
			g_debug("SOCKS %s: %s", s->peer, error->message);
		/* A client that leaves or stalls mid-handshake is an error; the
		 * timeout says so. */
		if (g_cancellable_is_cancelled(s->cancel))
			g_message("SOCKS %s: no complete request within %d s", s->peer,
				  PROXY_HANDSHAKE_TIMEOUT_S);
		session_end(s, TRUE);
		return;
	}
	s->len += (gsize)n;
	session_advance(s);
}

static void
read_more(Session *s)
{
	GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(s->client));

	/* Never full: the longest handshake is half the buffer, and a
	 * complete message is consumed before the next read. */
	g_input_stream_read_async(in, s->buf + s->len, sizeof s->buf - s->len, G_PRIORITY_DEFAULT,
				  s->cancel, on_read, s);
}

/* ---- Stages ------------------------------------------------------------------- */

static ProxySocksStatus
do_greeting(Session *s)
{
	ProxySocksGreeting g;
	ProxySocksStatus st = proxy_socks_parse_greeting(s->buf + s->pos, s->len - s->pos, &g, NULL);
	gboolean want_auth = s->proxy->auth_user != NULL;
	guint8 reply[2] = { PROXY_SOCKS_VERSION, PROXY_SOCKS_METHOD_REFUSED };

	if (st != PROXY_SOCKS_OK)
		return st;
	s->pos += g.len;
	if (want_auth && g.offers_userpass)
		reply[1] = PROXY_SOCKS_METHOD_USERPASS;
	else if (!want_auth && g.offers_none)
		reply[1] = PROXY_SOCKS_METHOD_NONE;
	if (!session_send(s, reply, sizeof reply) || reply[1] == PROXY_SOCKS_METHOD_REFUSED) {
		g_message("SOCKS %s: %s", s->peer,
			  want_auth ? "the client does not offer username/password authentication"
				    : "the client offers no method without authentication");
		return PROXY_SOCKS_MALFORMED;
	}
	s->stage = want_auth ? STAGE_AUTH : STAGE_REQUEST;
	return PROXY_SOCKS_OK;
}

/* Compares without an early exit, so timing does not tell a prefix. */
static gboolean
same_secret(const guint8 *given, gsize given_len, const gchar *expected)
{
	gsize len = strlen(expected);
	guint diff = given_len != len;

	for (gsize i = 0; i < given_len; i++)
		diff |= (guint)(given[i] ^ (guint8)expected[i < len ? i : 0]);
	return diff == 0;
}

static ProxySocksStatus
do_auth(Session *s)
{
	ProxySocksAuth a;
	ProxySocksStatus st = proxy_socks_parse_auth(s->buf + s->pos, s->len - s->pos, &a, NULL);
	guint8 reply[2] = { PROXY_SOCKS_AUTH_VERSION, 1 };
	gboolean ok;

	if (st != PROXY_SOCKS_OK)
		return st;
	s->pos += a.len;
	ok = same_secret(a.user, a.user_len, s->proxy->auth_user) &
	     same_secret(a.password, a.password_len, s->proxy->auth_password);
	reply[1] = ok ? 0 : 1;
	if (!session_send(s, reply, sizeof reply) || !ok) {
		s->proxy->count.auth_failures++;
		g_message("SOCKS %s: wrong username or password", s->peer);
		return PROXY_SOCKS_MALFORMED;
	}
	s->stage = STAGE_REQUEST;
	return PROXY_SOCKS_OK;
}

/* SOCKS reply code for why the device side failed. */
static guint8
reply_for(const GError *error)
{
	if (error->domain == G_RESOLVER_ERROR)
		return PROXY_SOCKS_REP_HOST_UNREACHABLE;
	if (error->domain != G_IO_ERROR)
		return PROXY_SOCKS_REP_FAILURE;
	switch (error->code) {
	case G_IO_ERROR_CONNECTION_REFUSED:
		return PROXY_SOCKS_REP_REFUSED;
	case G_IO_ERROR_NETWORK_UNREACHABLE:
		return PROXY_SOCKS_REP_NET_UNREACHABLE;
	case G_IO_ERROR_HOST_UNREACHABLE:
	case G_IO_ERROR_TIMED_OUT:
		return PROXY_SOCKS_REP_HOST_UNREACHABLE;
	default:
		return PROXY_SOCKS_REP_FAILURE;
	}
}

static void
on_dialed(GObject *source, GAsyncResult *result, gpointer data)
{
	Session *s = data;
	g_autoptr(GError) error = NULL;
	NcmLwipConnection *conn = proxy_dial_finish(result, &error);
	guint8 reply[PROXY_SOCKS_REPLY_MAX];
	GInetSocketAddress *local;
	GInetAddress *ip;
	GBytes *early;
	gsize n;

	if (!conn) {
		g_message("SOCKS %s -> %s: %s", s->peer, s->target, error->message);
		send_reply(s, reply_for(error));
		session_end(s, TRUE);
		return;
	}
	local = ncm_lwip_connection_get_local_address(conn);
	ip = g_inet_socket_address_get_address(local);
	n = proxy_socks_build_reply(reply, sizeof reply, PROXY_SOCKS_REP_OK,
				    g_inet_address_to_bytes(ip), g_inet_address_get_native_size(ip),
				    g_inet_socket_address_get_port(local));
	if (!session_send(s, reply, n)) {
		g_object_unref(conn);
		session_end(s, TRUE);
		return;
	}
	g_debug("SOCKS %s -> %s: connected", s->peer, s->target);
	early = g_bytes_new(s->buf + s->pos, s->len - s->pos);
	/* The relay takes both streams and the connection's place in count.active. */
	proxy_relay_start(s->proxy, G_IO_STREAM(g_steal_pointer(&s->client)), G_IO_STREAM(conn),
			  early);
	g_bytes_unref(early);
	session_free(s);
}

/*
 * UDP ASSOCIATE: the reply names the association's host socket; from then
 * on the control connection only keeps the association alive. The port in
 * the request, when not 0, is where the client's datagrams come from.
 */
static ProxySocksStatus
do_udp(Session *s, const ProxySocksRequest *r)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GSocketAddress) bound = NULL;
	ProxyUdp *u = proxy_udp_new(s->proxy, s->client, r->port, &error);
	guint8 reply[PROXY_SOCKS_REPLY_MAX];
	GInetSocketAddress *inet;
	GInetAddress *ip;
	gboolean sent;
	gsize n;

	if (!u) {
		g_message("SOCKS %s: %s", s->peer, error->message);
		return PROXY_SOCKS_MALFORMED;
	}
	bound = proxy_udp_get_address(u);
	inet = G_INET_SOCKET_ADDRESS(bound);
	ip = g_inet_socket_address_get_address(inet);
	n = proxy_socks_build_reply(reply, sizeof reply, PROXY_SOCKS_REP_OK,
				    g_inet_address_to_bytes(ip), g_inet_address_get_native_size(ip),
				    g_inet_socket_address_get_port(inet));
	sent = session_send(s, reply, n);
	/* The association has the client and its place in count.active now,
	 * and gives both up when it ends. */
	g_clear_object(&s->client);
	s->stage = STAGE_HANDED_OVER;
	if (!sent) {
		s->proxy->count.socks_errors++;
		proxy_udp_end(u);
	}
	return PROXY_SOCKS_OK;
}

static gchar *
request_host(const ProxySocksRequest *r)
{
	g_autoptr(GInetAddress) ip = NULL;

	if (r->atyp == PROXY_SOCKS_ATYP_NAME)
		return g_strdup(r->name);
	ip = g_inet_address_new_from_bytes(r->addr, r->atyp == PROXY_SOCKS_ATYP_IPV4
							    ? G_SOCKET_FAMILY_IPV4
							    : G_SOCKET_FAMILY_IPV6);
	return g_inet_address_to_string(ip);
}

static ProxySocksStatus
do_request(Session *s)
{
	ProxySocksRequest r;
	ProxySocksStatus st = proxy_socks_parse_request(s->buf + s->pos, s->len - s->pos, &r, NULL);
	g_autofree gchar *host = NULL;

	if (st != PROXY_SOCKS_OK)
		return st;
	s->pos += r.len;
	host = request_host(&r);
	s->target = g_strdup_printf(strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, r.port);
	if (r.command == PROXY_SOCKS_CMD_UDP)
		return do_udp(s, &r);
	/* From here the dial's own limits apply (lookup retries, --connect-timeout). */
	if (s->timeout_id) {
		g_source_remove(s->timeout_id);
		s->timeout_id = 0;
	}
	s->stage = STAGE_DIALING;
	proxy_dial_async(s->proxy, host, r.port, s->cancel, on_dialed, s);
	return PROXY_SOCKS_OK;
}

static void
session_advance(Session *s)
{
	for (;;) {
		ProxySocksStatus st;
		int rep;

		switch (s->stage) {
		case STAGE_GREETING:
			st = do_greeting(s);
			break;
		case STAGE_AUTH:
			st = do_auth(s);
			break;
		case STAGE_REQUEST:
			st = do_request(s);
			break;
		case STAGE_HANDED_OVER:
			session_free(s);
			return;
		default:
			return;
		}
		if (st == PROXY_SOCKS_INCOMPLETE) {
			read_more(s);
			return;
		}
		if (st == PROXY_SOCKS_OK)
			continue;
		rep = proxy_socks_status_reply(st);
		if (rep > 0 && s->stage == STAGE_REQUEST)
			send_reply(s, (guint8)rep);
		g_debug("SOCKS %s: %s", s->peer, proxy_socks_status_name(st));
		session_end(s, TRUE);
		return;
	}
}

static gboolean
on_timeout(gpointer data)
{
	Session *s = data;

	s->timeout_id = 0;
	g_cancellable_cancel(s->cancel);
	return G_SOURCE_REMOVE;
}

static gboolean
on_incoming(GSocketService *service, GSocketConnection *client, GObject *source, gpointer data)
{
	Proxy *proxy = data;
	Session *s;

	proxy->count.accepted++;
	if (proxy->count.active >= proxy->max_connections) {
		proxy->count.refused_limit++;
		g_io_stream_close(G_IO_STREAM(client), NULL, NULL);
		return TRUE;
	}
	proxy->count.active++;
	s = g_new0(Session, 1);
	s->proxy = proxy;
	s->client = g_object_ref(client);
	s->cancel = g_cancellable_new();
	s->peer = proxy_stream_describe_peer(G_IO_STREAM(client));
	s->timeout_id = g_timeout_add_seconds(PROXY_HANDSHAKE_TIMEOUT_S, on_timeout, s);
	read_more(s);
	return TRUE;
}

GSocketService *
proxy_socks_server_new(Proxy *proxy, GSocketAddress *address, GError **error)
{
	g_autoptr(GSocketService) service = g_socket_service_new();
	g_autoptr(GError) local = NULL;
	g_autofree gchar *where = proxy_address_to_string(address);

	/* New services accept at once: not before the device is open. */
	g_socket_service_stop(service);

	if (!g_socket_listener_add_address(G_SOCKET_LISTENER(service), address,
					   G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL, NULL,
					   &local)) {
		if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE))
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE,
				    "SOCKS: %s is in use (another ncm-proxy?): pick another port "
				    "with --socks", where);
		else
			g_set_error(error, local->domain, local->code, "SOCKS: cannot listen on %s: %s",
				    where, local->message);
		return NULL;
	}
	g_signal_connect(service, "incoming", G_CALLBACK(on_incoming), proxy);
	return g_steal_pointer(&service);
}
