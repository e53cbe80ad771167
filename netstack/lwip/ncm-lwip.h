/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip.h: the in-process lwIP netstack: netifs over NcmLinks, TCP and UDP as GIO objects. */
#pragma once

/*
 * One lwIP instance per process (lwIP's state is global), reached through
 * ncm_lwip_stack_get_default(). Each NcmLink becomes one Ethernet netif.
 *
 * Data path: frames arrive on the link's thread (the libusb event thread)
 * and are processed there under the lwIP core lock, batched per NTB; output
 * is packed into the link from whichever thread runs lwIP and flushed once
 * per batch. Applications read and write from any thread; nothing on the
 * data path goes through a GMainContext (see NcmLwipStats.main_dispatches).
 *
 * Memory, per TCP connection: the receive queue holds at most TCP_WND
 * (4 MiB) of payload, since window credit is returned only as the
 * application reads; lwIP's send queue holds at most TCP_SND_BUF (4 MiB).
 * Per UDP socket: at most NCM_LWIP_UDP_MAX_QUEUED datagrams and
 * NCM_LWIP_UDP_MAX_BYTES bytes wait to be received; more are dropped.
 * Per netif: at most NCM_LWIP_TXQ_LEN frames wait for link room (after
 * NCM_SEND_WOULD_BLOCK), as references to lwIP's pbufs: TCP segments are
 * not copied, so the queue costs 32 KiB of pointers; frames beyond it are
 * dropped and counted (TCP retransmits them).
 */

#include <gio/gio.h>

#include "ncm-link.h"

G_BEGIN_DECLS

#define NCM_LWIP_UDP_MAX_QUEUED 1024
#define NCM_LWIP_UDP_MAX_BYTES (4 * 1024 * 1024)
#define NCM_LWIP_TXQ_LEN 4096

/**
 * NcmLwipInputMode:
 * @NCM_LWIP_INPUT_LOCKED: the link thread runs lwIP's input under the core
 *   lock, once per received batch (default: measured fastest).
 * @NCM_LWIP_INPUT_QUEUED: the link thread queues each frame to the tcpip
 *   thread (tcpip_input) and never waits for the core lock.
 */
typedef enum {
	NCM_LWIP_INPUT_LOCKED,
	NCM_LWIP_INPUT_QUEUED,
} NcmLwipInputMode;

/**
 * NcmLwipStats:
 *
 * Counters since the stack started, over all netifs.
 */
typedef struct {
	guint64 rx_frames;
	guint64 rx_drops;        /* no pbuf, or the tcpip mailbox was full */
	guint64 tx_frames;       /* handed to a link */
	guint64 tx_queued;       /* held back by NCM_SEND_WOULD_BLOCK, sent on writable */
	guint64 tx_drops;        /* queue full, link closed or frame invalid */
	guint64 tx_flushes;      /* ncm_link_flush() calls: one per batch */
	guint64 window_posts;    /* receive-window updates posted to the tcpip thread */
	guint64 main_dispatches; /* callbacks and wake-ups the stack caused on main contexts */
	guint64 rx_compacted;    /* small TCP segments copied into shared chunks */
} NcmLwipStats;

#define NCM_LWIP_TYPE_STACK (ncm_lwip_stack_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipStack, ncm_lwip_stack, NCM_LWIP, STACK, GObject)

/* Starts lwIP on first use. Returns a new reference. Thread: any. */
NcmLwipStack *ncm_lwip_stack_get_default(void);
void ncm_lwip_stack_get_stats(NcmLwipStack *self, NcmLwipStats *ret_stats);
/* Takes effect for the next received frame. Thread: any. */
void ncm_lwip_stack_set_input_mode(NcmLwipStack *self, NcmLwipInputMode mode);

/* ---- Netifs ------------------------------------------------------------- */

typedef struct _NcmLwipNetif NcmLwipNetif;

/**
 * NcmLwipNetifConfig:
 *
 * Initialise with ncm_lwip_netif_config_init(). Addresses are borrowed.
 */
typedef struct {
	GInetAddress *ipv4;          /* static IPv4, or NULL */
	guint ipv4_prefix;           /* 0 = 24 */
	GInetAddress *ipv4_gateway;  /* or NULL */
	gboolean dhcp;               /* lease IPv4 by DHCP (when ipv4 is NULL) */
	gboolean ipv6_link_local;    /* fe80::EUI-64(mac); TRUE */
	gboolean ipv6_dad;           /* probe before using IPv6 addresses; TRUE */
	gboolean ipv6_slaac;         /* addresses from router advertisements; TRUE */
	GInetAddress *ipv6;          /* static /64 IPv6, or NULL */
	gboolean make_default;       /* route everything off-link through this netif */
} NcmLwipNetifConfig;

void ncm_lwip_netif_config_init(NcmLwipNetifConfig *config);

/*
 * Adds a netif over @link (MAC link->mac, MTU link->max_frame - 14), takes
 * the link, and starts it. Thread: any but the link's thread.
 */
NcmLwipNetif *ncm_lwip_netif_add(NcmLwipStack *stack, NcmLink *link,
				 const NcmLwipNetifConfig *config, GError **error);
/* Stops and frees the link, then removes the netif. Thread: any but the link's. */
void ncm_lwip_netif_remove(NcmLwipNetif *netif);
/* lwIP's netif index: the scope id of link-local addresses on this netif. */
guint ncm_lwip_netif_get_index(NcmLwipNetif *netif);
/* The usable (not tentative) addresses: a list of GInetAddress, free with
 * g_list_free_full(list, g_object_unref). Thread: any. */
GList *ncm_lwip_netif_get_addresses(NcmLwipNetif *netif);
/*
 * The peer as learnt from its ARP (IPv4) or neighbour discovery (IPv6)
 * frames: its latest address of @family and that frame's source MAC.
 * FALSE while none was seen. Thread: any.
 */
gboolean ncm_lwip_netif_get_peer(NcmLwipNetif *netif, GSocketFamily family,
				 GInetAddress **ret_address, guint8 ret_mac[6]);

/* ---- TCP ------------------------------------------------------------------ */

/*
 * A TCP connection. Its streams are GPollableInputStream and
 * GPollableOutputStream; g_io_stream_close() sends FIN (RST when unread
 * data is left, as sockets do). Closing only the output stream sends FIN
 * and keeps receiving. Errors: G_IO_ERROR_CONNECTION_CLOSED after a reset
 * on reads, G_IO_ERROR_BROKEN_PIPE on writes, G_IO_ERROR_TIMED_OUT when
 * lwIP gave up retransmitting, G_IO_ERROR_CLOSED after close.
 */
#define NCM_LWIP_TYPE_CONNECTION (ncm_lwip_connection_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipConnection, ncm_lwip_connection, NCM_LWIP, CONNECTION, GIOStream)

/*
 * Connects to @address. @timeout_ms 0 leaves it to lwIP's SYN retries.
 * Link-local IPv6 without a scope id goes out of the default netif, or the
 * first one. Errors: CONNECTION_REFUSED, TIMED_OUT, NETWORK_UNREACHABLE (no
 * route: off-link without a gateway), CANCELLED. Thread: any; blocks.
 */
NcmLwipConnection *ncm_lwip_stack_connect(NcmLwipStack *self, GInetSocketAddress *address,
					  guint timeout_ms, GCancellable *cancellable,
					  GError **error);
/* The same, completing on the caller's thread-default main context. */
void ncm_lwip_stack_connect_async(NcmLwipStack *self, GInetSocketAddress *address,
				  guint timeout_ms, GCancellable *cancellable,
				  GAsyncReadyCallback callback, gpointer user_data);
NcmLwipConnection *ncm_lwip_stack_connect_finish(NcmLwipStack *self, GAsyncResult *result,
						 GError **error);

GInetSocketAddress *ncm_lwip_connection_get_local_address(NcmLwipConnection *self);
GInetSocketAddress *ncm_lwip_connection_get_remote_address(NcmLwipConnection *self);
/*
 * Nagle's algorithm is on by default, as in lwIP and in kernel sockets;
 * TRUE turns it off (TCP_NODELAY), for request/response and paced streams
 * where a small segment must not wait for the previous one's ACK.
 * Thread: any.
 */
void ncm_lwip_connection_set_no_delay(NcmLwipConnection *self, gboolean no_delay);

#define NCM_LWIP_TYPE_LISTENER (ncm_lwip_listener_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipListener, ncm_lwip_listener, NCM_LWIP, LISTENER, GObject)

/*
 * Listens on @address (NULL or an any-address: every address of both
 * families; port 0: an ephemeral port). At most @backlog (0 = 64)
 * connections wait for accept; more are reset. Thread: any.
 */
NcmLwipListener *ncm_lwip_stack_listen(NcmLwipStack *self, GInetSocketAddress *address,
				       guint backlog, GError **error);
guint16 ncm_lwip_listener_get_port(NcmLwipListener *self);
/* Thread: any; blocks. */
NcmLwipConnection *ncm_lwip_listener_accept(NcmLwipListener *self, GCancellable *cancellable,
					    GError **error);
void ncm_lwip_listener_accept_async(NcmLwipListener *self, GCancellable *cancellable,
				    GAsyncReadyCallback callback, gpointer user_data);
NcmLwipConnection *ncm_lwip_listener_accept_finish(NcmLwipListener *self,
						   GAsyncResult *result, GError **error);
/* Stops listening; pending and future accepts fail with G_IO_ERROR_CLOSED. */
void ncm_lwip_listener_close(NcmLwipListener *self);

/* ---- Names ---------------------------------------------------------------- */

/*
 * lwIP's DNS client, asking through the netifs. Its servers come from DHCP
 * (option 6) and router advertisements (RDNSS), or from
 * ncm_lwip_stack_set_dns_server(), whose servers take precedence: they are
 * written back before every query.
 */
#define NCM_LWIP_DNS_MAX_SERVERS 2

/* Sets (or with NULL clears) server @index (< NCM_LWIP_DNS_MAX_SERVERS). Thread: any. */
void ncm_lwip_stack_set_dns_server(NcmLwipStack *self, guint index, GInetAddress *address);
/* The servers in use now: a list of GInetAddress, free with
 * g_list_free_full(list, g_object_unref). Thread: any. */
GList *ncm_lwip_stack_get_dns_servers(NcmLwipStack *self);
/*
 * Resolves @name to one address (an address literal is returned as is):
 * @family G_SOCKET_FAMILY_IPV4 or _IPV6 for that family only, INVALID for
 * IPv4 and, when there is none, IPv6. Answers are cached for their TTL.
 * Errors: G_RESOLVER_ERROR_NOT_FOUND (no such name, no answer after lwIP's
 * retries: ~15 s), _TEMPORARY_FAILURE (no server, too many lookups at
 * once), G_IO_ERROR_CANCELLED. Thread: any; blocks.
 */
GInetAddress *ncm_lwip_stack_resolve(NcmLwipStack *self, const gchar *name, GSocketFamily family,
				     GCancellable *cancellable, GError **error);
/* The same, completing on the caller's thread-default main context. */
void ncm_lwip_stack_resolve_async(NcmLwipStack *self, const gchar *name, GSocketFamily family,
				  GCancellable *cancellable, GAsyncReadyCallback callback,
				  gpointer user_data);
GInetAddress *ncm_lwip_stack_resolve_finish(NcmLwipStack *self, GAsyncResult *result,
					    GError **error);

/* ---- UDP ------------------------------------------------------------------ */

#define NCM_LWIP_TYPE_UDP_SOCKET (ncm_lwip_udp_socket_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipUdpSocket, ncm_lwip_udp_socket, NCM_LWIP, UDP_SOCKET, GObject)

/* Binds like ncm_lwip_stack_listen(). Thread: any. */
NcmLwipUdpSocket *ncm_lwip_stack_udp_bind(NcmLwipStack *self, GInetSocketAddress *address,
					  GError **error);
guint16 ncm_lwip_udp_socket_get_port(NcmLwipUdpSocket *self);
/* Sends one datagram (IP fragments above the MTU). Thread: any. */
gboolean ncm_lwip_udp_socket_send_to(NcmLwipUdpSocket *self, GInetSocketAddress *to,
				     const void *data, gsize len, GError **error);
/*
 * Receives one datagram, truncated to @len (the full length is returned).
 * @timeout_ms 0 waits forever. Thread: any; blocks.
 */
gssize ncm_lwip_udp_socket_receive_from(NcmLwipUdpSocket *self, GInetSocketAddress **ret_from,
					void *buf, gsize len, guint timeout_ms,
					GCancellable *cancellable, GError **error);
/* A datagram as GBytes, completing on the caller's thread-default main context. */
void ncm_lwip_udp_socket_receive_async(NcmLwipUdpSocket *self, GCancellable *cancellable,
				       GAsyncReadyCallback callback, gpointer user_data);
GBytes *ncm_lwip_udp_socket_receive_finish(NcmLwipUdpSocket *self, GAsyncResult *result,
					   GInetSocketAddress **ret_from, GError **error);
/* Datagrams dropped because the receive queue was full. */
guint64 ncm_lwip_udp_socket_get_drops(NcmLwipUdpSocket *self);
void ncm_lwip_udp_socket_close(NcmLwipUdpSocket *self);

G_END_DECLS
