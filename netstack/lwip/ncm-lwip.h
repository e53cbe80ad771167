/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip.h: the in-process lwIP netstack (libncm-lwip): netifs over NcmLinks, TCP and UDP as GIO objects. */
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
 * (1 MiB) of payload, since window credit is returned only as the
 * application reads; segments of up to 256 bytes (also those lwIP hands
 * over as one chain when a hole fills) are copied into 2 KiB chunks, so
 * the queue costs about what it carries. Out of order, lwIP holds at most
 * 4096 pbufs. lwIP's send queue holds at most TCP_SND_BUF (1 MiB). Per
 * listener: at most 255 half-open connections; a SYN beyond them drops
 * the oldest (NcmLwipStats.syn_evicted).
 * Per UDP socket: at most NCM_LWIP_UDP_MAX_QUEUED datagrams and
 * NCM_LWIP_UDP_MAX_BYTES bytes wait to be received; more are dropped.
 * Per netif: at most NCM_LWIP_TXQ_LEN frames wait for the link (sent by
 * the thread that releases lwIP's core lock, or after NCM_SEND_WOULD_BLOCK
 * once the link has room), as references to lwIP's pbufs: TCP segments are
 * not copied, so the queue costs 32 KiB of pointers; frames beyond it are
 * dropped and counted (TCP retransmits them).
 */

#include <gio/gio.h>

#include "ncm-link.h"

G_BEGIN_DECLS

/**
 * NCM_LWIP_UDP_MAX_QUEUED:
 *
 * Datagrams that may wait in one #NcmLwipUdpSocket's receive queue; more
 * are dropped and counted (ncm_lwip_udp_socket_get_drops()).
 */
#define NCM_LWIP_UDP_MAX_QUEUED 1024
/**
 * NCM_LWIP_UDP_MAX_BYTES:
 *
 * Bytes that may wait in one #NcmLwipUdpSocket's receive queue.
 */
#define NCM_LWIP_UDP_MAX_BYTES (4 * 1024 * 1024)
/**
 * NCM_LWIP_TXQ_LEN:
 *
 * Frames one netif holds for its link: output not yet sent, and what waits
 * while the link has no room.
 */
#define NCM_LWIP_TXQ_LEN 4096

/**
 * NcmLwipInputMode:
 * @NCM_LWIP_INPUT_LOCKED: the link thread runs lwIP's input under the core
 *   lock, once per received batch (default: measured fastest).
 * @NCM_LWIP_INPUT_QUEUED: the link thread queues each frame to the tcpip
 *   thread (tcpip_input) and never waits for the core lock.
 *
 * Where received frames enter lwIP.
 */
typedef enum {
	NCM_LWIP_INPUT_LOCKED,
	NCM_LWIP_INPUT_QUEUED,
} NcmLwipInputMode;

/**
 * NcmLwipStats:
 * @rx_frames: frames received from the links.
 * @rx_drops: received frames dropped: no pbuf, or the tcpip mailbox was full.
 * @tx_frames: frames handed to a link.
 * @tx_queued: frames held back by %NCM_SEND_WOULD_BLOCK, sent on writable.
 * @tx_drops: frames dropped: queue full, link closed or frame invalid.
 * @tx_flushes: link flushes, one per drain of a netif's output.
 * @window_posts: receive-window updates posted to the tcpip thread.
 * @main_dispatches: callbacks and wake-ups the stack caused on main contexts.
 * @rx_compacted: small TCP segments copied into shared chunks.
 * @syn_evicted: half-open connections dropped for a newer SYN (full backlog).
 * @time_wait_evicted: connections in TIME_WAIT dropped early for a new one
 *   (512 are kept at most).
 * @rx_merged: received TCP segments merged into the one before them (in
 *   order, same flow, same receive batch) before lwIP saw them.
 * @core_lock_waits: times a thread found lwIP's core lock busy. lwIP is
 *   single-threaded: its tcpip thread, every netif's receive path and every
 *   thread reading or writing a connection take that one lock.
 * @core_lock_wait_us: microseconds spent waiting for it, summed over
 *   threads; divided by a wall-clock interval, the average number of
 *   threads waiting (near 1 or more: the lock is the limit, not the CPUs).
 * @tx_cut: packets lwIP sent larger than a link's frames, cut into
 *   frames on their way out: its TCP segments of several frames (it builds
 *   them when the peer's MSS allows full frames: lwIP's work is per
 *   segment), and IP packets over the link's MTU, fragmented.
 * @tx_sparse_ahead: frames sent before the bulk a netif had queued: each
 *   the only frame queued of its flow and at most 1514 bytes (a DNS query,
 *   a ping, a game's or a shell's packets), as fq_codel's new flows on a
 *   NIC. Pure TCP ACKs keep their place.
 *
 * Counters since the stack started, over all netifs.
 *
 * ABI: 512 bytes, all guint64, in every libncm-lwip.so.1.
 * ncm_lwip_stack_get_stats() writes the whole struct, so it never grows: a
 * counter added later takes the front of the private reserve. The library
 * writes zeros over the reserve, so a program built against a newer header
 * than its library reads 0 for the counters that library lacks.
 */
typedef struct {
	guint64 rx_frames;
	guint64 rx_drops;
	guint64 tx_frames;
	guint64 tx_queued;
	guint64 tx_drops;
	guint64 tx_flushes;
	guint64 window_posts;
	guint64 main_dispatches;
	guint64 rx_compacted;
	guint64 syn_evicted;
	guint64 time_wait_evicted;
	guint64 rx_merged;
	guint64 core_lock_waits;
	guint64 core_lock_wait_us;
	guint64 tx_cut;
	guint64 tx_sparse_ahead;
	/*< private >*/
	guint64 _reserved[48];         /* zero; new counters come from here */
} NcmLwipStats;

/**
 * NcmLwipStack:
 *
 * The process's lwIP instance: its netifs, TCP connections and listeners,
 * UDP sockets. lwIP keeps its state in globals, so there is one, from
 * ncm_lwip_stack_get_default(). Its tcpip thread runs lwIP's timers.
 */
#define NCM_LWIP_TYPE_STACK (ncm_lwip_stack_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipStack, ncm_lwip_stack, NCM_LWIP, STACK, GObject)

/**
 * ncm_lwip_stack_get_default:
 *
 * The process's stack. The first call starts lwIP and its tcpip thread.
 *
 * Thread: any.
 *
 * Returns: (transfer full): a new reference to the stack.
 */
NcmLwipStack *ncm_lwip_stack_get_default(void);

/**
 * ncm_lwip_stack_get_stats:
 * @self: the #NcmLwipStack.
 * @ret_stats: (out caller-allocates): the counters since lwIP started.
 *
 * Each counter is read atomically; the set is not one instant's snapshot.
 * Thread: any.
 */
void ncm_lwip_stack_get_stats(NcmLwipStack *self, NcmLwipStats *ret_stats);

/**
 * ncm_lwip_stack_set_input_mode:
 * @self: the #NcmLwipStack.
 * @mode: where received frames enter lwIP.
 *
 * Takes effect for the next received frame.
 * Thread: any.
 */
void ncm_lwip_stack_set_input_mode(NcmLwipStack *self, NcmLwipInputMode mode);

/* ---- Netifs ------------------------------------------------------------- */

/**
 * NcmLwipNetif:
 *
 * One lwIP Ethernet interface over an #NcmLink. It runs from
 * ncm_lwip_netif_add() until ncm_lwip_netif_remove() or its last unref.
 */

/**
 * NcmLwipNetif::addresses-changed:
 * @netif: the #NcmLwipNetif.
 *
 * An address of the netif came, went or changed state (DHCP's lease,
 * SLAAC, duplicate detection over, ncm_lwip_netif_set_ipv4(), the netif
 * going up or down): read them with ncm_lwip_netif_get_addresses(). Also
 * emitted, within a second, when the stack's DNS servers changed
 * (ncm_lwip_stack_get_dns_servers(): DHCP, a router advertisement's
 * RDNSS, or set by the program). Changes that come together make one
 * emission. Emitted on the main context that was the thread's default
 * when the netif was added; watch this instead of polling, which wakes
 * the process all day long. Not emitted once ncm_lwip_netif_remove() has
 * begun.
 */
#define NCM_LWIP_TYPE_NETIF (ncm_lwip_netif_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipNetif, ncm_lwip_netif, NCM_LWIP, NETIF, GObject)

/**
 * NcmLwipNetifConfig:
 * @ipv4: (nullable): a static IPv4 address, or %NULL.
 * @ipv4_prefix: its prefix length; 0 means 24.
 * @ipv4_gateway: (nullable): the IPv4 gateway, or %NULL.
 * @dhcp: lease IPv4 by DHCP (when @ipv4 is %NULL).
 * @ipv6_link_local: give the netif fe80::EUI-64(MAC); %TRUE by default.
 * @ipv6_dad: probe for duplicates before using IPv6 addresses; %TRUE by default.
 * @ipv6_slaac: take addresses from router advertisements; %TRUE by default.
 * @ipv6: (nullable): a static IPv6 address (/64), or %NULL.
 * @make_default: route everything off-link through this netif.
 *
 * How ncm_lwip_netif_add() sets a netif up. Initialise it with
 * ncm_lwip_netif_config_init(), then change what you need. The addresses
 * are borrowed for the call. From another language, leave them %NULL and
 * call ncm_lwip_netif_set_ipv4() on the netif.
 *
 * ABI: 120 bytes (LP64) in every libncm-lwip.so.1. The library reads the
 * whole struct, so it never grows: a setting added later takes the front
 * of the private reserve, and its zero keeps what the library did before
 * it, since a program that zeroes the struct instead of calling
 * ncm_lwip_netif_config_init() passes 0.
 */
typedef struct {
	GInetAddress *ipv4;
	guint ipv4_prefix;
	GInetAddress *ipv4_gateway;
	gboolean dhcp;
	gboolean ipv6_link_local;
	gboolean ipv6_dad;
	gboolean ipv6_slaac;
	GInetAddress *ipv6;
	gboolean make_default;
	/*< private >*/
	guint32 _reserved[17];     /* zero; new settings come from here */
} NcmLwipNetifConfig;

/**
 * ncm_lwip_netif_config_init:
 * @config: (out caller-allocates): the configuration to fill.
 *
 * Sets the defaults: link-local IPv6 with duplicate detection and SLAAC,
 * no IPv4, not the default route.
 * Thread: any.
 */
void ncm_lwip_netif_config_init(NcmLwipNetifConfig *config);

/**
 * ncm_lwip_netif_add: (skip)
 * @stack: the #NcmLwipStack.
 * @link: (transfer full): the link to run over; taken, also on failure.
 * @config: how to set the netif up.
 * @error: return location for a #GError: %G_IO_ERROR_INVALID_ARGUMENT for
 *   a bad @config or a link too small for IP, %G_IO_ERROR_FAILED when lwIP
 *   refuses, or why the link could not start (for an #NcmDevice, its
 *   %NCM_ERROR).
 *
 * Adds an Ethernet netif over @link (MAC and MTU from the link), sets the
 * link's sink and starts it. The link's data thread (for an #NcmDevice,
 * the libusb event thread) then runs lwIP's input.
 *
 * Thread: any but the link's data thread.
 *
 * Returns: (transfer full) (nullable): the running netif, or %NULL with
 *   @error set.
 */
NcmLwipNetif *ncm_lwip_netif_add(NcmLwipStack *stack, NcmLink *link,
				 const NcmLwipNetifConfig *config, GError **error);

/**
 * ncm_lwip_stack_add_device:
 * @self: the #NcmLwipStack.
 * @device: an open #NcmDevice, not started (ncm_device_open()).
 * @config: (nullable): how to set the netif up; %NULL for the defaults of
 *   ncm_lwip_netif_config_init().
 * @error: return location for a #GError, as for ncm_lwip_netif_add().
 *
 * Runs ncm_lwip_netif_add() over ncm_link_new_for_device(@device): starts the
 * device with the stack as its sink. The netif holds a reference to
 * @device and closes it when removed.
 *
 * Thread: any but the libusb event thread.
 *
 * Returns: (transfer full) (nullable): the running netif, or %NULL with
 *   @error set.
 */
NcmLwipNetif *ncm_lwip_stack_add_device(NcmLwipStack *self, NcmDevice *device,
					const NcmLwipNetifConfig *config, GError **error);

/**
 * ncm_lwip_netif_remove:
 * @netif: an #NcmLwipNetif.
 *
 * Stops the link (for an #NcmDevice: ncm_device_close()), waits until no
 * frame of it is left in lwIP, removes the netif and frees the link.
 * Connections through it then time out or fail. Idempotent; the last
 * unref removes too.
 * Thread: any but the link's data thread.
 */
void ncm_lwip_netif_remove(NcmLwipNetif *netif);

/**
 * ncm_lwip_netif_set_ipv4:
 * @netif: an #NcmLwipNetif.
 * @address: (nullable): the new IPv4 address; %NULL removes it.
 * @prefix: its prefix length, 1 to 32; 0 means 24.
 * @gateway: (nullable): the IPv4 gateway, or %NULL for none.
 * @error: return location for a #GError: %G_IO_ERROR_INVALID_ARGUMENT when
 *   an address is not IPv4 or @prefix is over 32, %G_IO_ERROR_CLOSED after
 *   ncm_lwip_netif_remove().
 *
 * Replaces the netif's static IPv4 address, as #NcmLwipNetifConfig.ipv4
 * does at ncm_lwip_netif_add(). Connections on the old address break.
 *
 * Thread: any.
 *
 * Returns: %TRUE when set.
 */
gboolean ncm_lwip_netif_set_ipv4(NcmLwipNetif *netif, GInetAddress *address, guint prefix,
				 GInetAddress *gateway, GError **error);

/**
 * ncm_lwip_netif_get_index:
 * @netif: an #NcmLwipNetif.
 *
 * Thread: any.
 *
 * Returns: lwIP's index of the netif: the scope id that selects it for
 *   link-local IPv6 addresses.
 */
guint ncm_lwip_netif_get_index(NcmLwipNetif *netif);

/**
 * ncm_lwip_netif_get_addresses:
 * @netif: an #NcmLwipNetif.
 *
 * Thread: any.
 *
 * Returns: (transfer full) (element-type GInetAddress): the usable (not
 *   tentative) addresses, IPv4 first. Free with
 *   `g_list_free_full (list, g_object_unref)`.
 */
GList *ncm_lwip_netif_get_addresses(NcmLwipNetif *netif);

/**
 * ncm_lwip_netif_get_peer:
 * @netif: an #NcmLwipNetif.
 * @family: %G_SOCKET_FAMILY_IPV4 or %G_SOCKET_FAMILY_IPV6.
 * @ret_address: (out) (transfer full) (optional) (nullable): the peer's
 *   latest address of @family.
 * @ret_mac: (out caller-allocates) (array fixed-size=6) (optional): the
 *   source MAC of the frame that taught it.
 *
 * The peer (the device's side) as learnt from its ARP (IPv4) or neighbour
 * discovery (IPv6) frames.
 *
 * Thread: any.
 *
 * Returns: %FALSE while none was seen; the outputs are then untouched.
 */
gboolean ncm_lwip_netif_get_peer(NcmLwipNetif *netif, GSocketFamily family,
				 GInetAddress **ret_address, guint8 ret_mac[6]);

/* ---- TCP ------------------------------------------------------------------ */

/**
 * NcmLwipConnection:
 *
 * A TCP connection. Its streams are #GPollableInputStream and
 * #GPollableOutputStream; g_io_stream_close() sends FIN (RST when unread
 * data is left, as sockets do). Closing only the output stream sends FIN
 * and keeps receiving. Errors: %G_IO_ERROR_CONNECTION_CLOSED after a reset
 * on reads, %G_IO_ERROR_BROKEN_PIPE on writes, %G_IO_ERROR_TIMED_OUT when
 * lwIP gave up retransmitting, %G_IO_ERROR_CLOSED after close.
 *
 * Blocking reads and writes may come from any thread, one reader and one
 * writer at a time; the async and pollable ones complete on the caller's
 * thread-default main context.
 */
#define NCM_LWIP_TYPE_CONNECTION (ncm_lwip_connection_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipConnection, ncm_lwip_connection, NCM_LWIP, CONNECTION, GIOStream)

/**
 * ncm_lwip_stack_connect:
 * @self: the #NcmLwipStack.
 * @address: where to connect. A link-local IPv6 address without a scope
 *   id goes out of the default netif, or the first one.
 * @timeout_ms: give up after this long; 0 leaves it to lwIP's SYN retries.
 * @cancellable: (nullable): a #GCancellable.
 * @error: return location for a #GError in %G_IO_ERROR:
 *   %G_IO_ERROR_CONNECTION_REFUSED, %G_IO_ERROR_TIMED_OUT,
 *   %G_IO_ERROR_NETWORK_UNREACHABLE (no route: no netif, or off-link
 *   without a gateway), %G_IO_ERROR_CANCELLED.
 *
 * Opens a TCP connection, blocking until the handshake ends.
 *
 * Thread: any; blocks.
 *
 * Returns: (transfer full) (nullable): the connection, or %NULL with
 *   @error set.
 */
NcmLwipConnection *ncm_lwip_stack_connect(NcmLwipStack *self, GInetSocketAddress *address,
					  guint timeout_ms, GCancellable *cancellable,
					  GError **error);

/**
 * ncm_lwip_stack_connect_async:
 * @self: the #NcmLwipStack.
 * @address: as for ncm_lwip_stack_connect().
 * @timeout_ms: as for ncm_lwip_stack_connect().
 * @cancellable: (nullable): a #GCancellable.
 * @callback: (scope async): called once with the result.
 * @user_data: (closure): passed to @callback.
 *
 * Connects like ncm_lwip_stack_connect(), without blocking the caller. It runs the
 * blocking connect on a thread of its own per call, not on GLib's pool:
 * the pool caps its threads, so a few long connects or accepts could
 * starve each other. Connecting is control plane: one short-lived thread
 * per connection costs little beside a TCP handshake.
 *
 * Thread: any. @callback runs on the caller's thread-default
 *   #GMainContext, which must be iterated.
 */
void ncm_lwip_stack_connect_async(NcmLwipStack *self, GInetSocketAddress *address,
				  guint timeout_ms, GCancellable *cancellable,
				  GAsyncReadyCallback callback, gpointer user_data);

/**
 * ncm_lwip_stack_connect_finish:
 * @self: the #NcmLwipStack.
 * @result: the #GAsyncResult given to the callback.
 * @error: return location for a #GError, as for ncm_lwip_stack_connect().
 *
 * Thread: the callback's (the caller's of ncm_lwip_stack_connect_async()).
 *
 * Returns: (transfer full) (nullable): the connection, or %NULL with
 *   @error set.
 */
NcmLwipConnection *ncm_lwip_stack_connect_finish(NcmLwipStack *self, GAsyncResult *result,
						 GError **error);

/**
 * ncm_lwip_connection_get_local_address:
 * @self: an #NcmLwipConnection.
 *
 * Thread: any.
 *
 * Returns: (transfer none): this side's address and port.
 */
GInetSocketAddress *ncm_lwip_connection_get_local_address(NcmLwipConnection *self);

/**
 * ncm_lwip_connection_get_remote_address:
 * @self: an #NcmLwipConnection.
 *
 * Thread: any.
 *
 * Returns: (transfer none): the peer's address and port.
 */
GInetSocketAddress *ncm_lwip_connection_get_remote_address(NcmLwipConnection *self);

/**
 * ncm_lwip_connection_abort:
 * @self: an #NcmLwipConnection.
 *
 * Closes the connection with a reset (RST) instead of FIN: the peer sees an
 * error, not an end of stream. For a relay whose other side failed, so that
 * a cut transfer does not look complete. Queued data is dropped. Idempotent;
 * also after g_io_stream_close() (then nothing is sent).
 *
 * Thread: any.
 *
 * Since: 0.2
 */
void ncm_lwip_connection_abort(NcmLwipConnection *self);

/**
 * ncm_lwip_connection_set_no_delay:
 * @self: an #NcmLwipConnection.
 * @no_delay: %TRUE turns Nagle's algorithm off (TCP_NODELAY).
 *
 * Nagle's algorithm is on by default, as in lwIP and in kernel sockets;
 * turn it off for request/response and paced streams, where a small
 * segment must not wait for the previous one's ACK.
 * Thread: any.
 */
void ncm_lwip_connection_set_no_delay(NcmLwipConnection *self, gboolean no_delay);

/**
 * ncm_lwip_connection_splice_nonblocking:
 * @self: an #NcmLwipConnection.
 * @out: where the received bytes go, such as a #GSocketConnection's
 *   output stream.
 * @count: the most bytes to move.
 * @error: return location for a #GError, or %NULL.
 *
 * Moves received bytes to @out without a copy in between: one
 * g_pollable_output_stream_writev_nonblocking() straight from lwIP's
 * buffers. What @out does not take stays received, to be read or spliced
 * later, and the peer's window reopens only for what it took, so a slow
 * @out holds back the peer rather than making the stack buffer more. A
 * relay from the device to a socket saves the copy into its own buffer
 * that reading and then writing costs.
 *
 * It reads as g_pollable_input_stream_read_nonblocking() on the
 * connection's input stream does, and must not run at the same time as
 * another read of it (that one fails with %G_IO_ERROR_PENDING).
 *
 * Thread: any; one reader of the connection at a time.
 *
 * Returns: the bytes moved (at most @count); 0 at the end of the stream;
 *   -1 with @error set, %G_IO_ERROR_WOULD_BLOCK when nothing has been
 *   received or @out is full: the input stream's
 *   g_pollable_input_stream_is_readable() tells which to wait for.
 */
gssize ncm_lwip_connection_splice_nonblocking(NcmLwipConnection *self,
					      GPollableOutputStream *out, gsize count,
					      GError **error);

/**
 * NcmLwipListener:
 *
 * A listening TCP socket; ncm_lwip_listener_accept() hands out its
 * connections.
 */
#define NCM_LWIP_TYPE_LISTENER (ncm_lwip_listener_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipListener, ncm_lwip_listener, NCM_LWIP, LISTENER, GObject)

/**
 * ncm_lwip_stack_listen:
 * @self: the #NcmLwipStack.
 * @address: (nullable): where to listen: %NULL or an any-address listens
 *   on every address of both families; port 0 picks an ephemeral port.
 * @backlog: connections that may wait for accept (0 = 64); more are reset.
 * @error: return location for a #GError in %G_IO_ERROR
 *   (%G_IO_ERROR_ADDRESS_IN_USE, ...).
 *
 * Thread: any.
 *
 * Returns: (transfer full) (nullable): the listener, or %NULL with @error set.
 */
NcmLwipListener *ncm_lwip_stack_listen(NcmLwipStack *self, GInetSocketAddress *address,
				       guint backlog, GError **error);

/**
 * ncm_lwip_listener_get_port:
 * @self: an #NcmLwipListener.
 *
 * Thread: any.
 *
 * Returns: the port it listens on (the ephemeral one chosen for port 0).
 */
guint16 ncm_lwip_listener_get_port(NcmLwipListener *self);

/**
 * ncm_lwip_listener_accept:
 * @self: an #NcmLwipListener.
 * @cancellable: (nullable): a #GCancellable.
 * @error: return location for a #GError: %G_IO_ERROR_CLOSED once the
 *   listener is closed, %G_IO_ERROR_CANCELLED.
 *
 * Waits for the next connection.
 *
 * Thread: any; blocks.
 *
 * Returns: (transfer full) (nullable): the connection, or %NULL with @error set.
 */
NcmLwipConnection *ncm_lwip_listener_accept(NcmLwipListener *self, GCancellable *cancellable,
					    GError **error);

/**
 * ncm_lwip_listener_accept_async:
 * @self: an #NcmLwipListener.
 * @cancellable: (nullable): a #GCancellable.
 * @callback: (scope async): called once with the result.
 * @user_data: (closure): passed to @callback.
 *
 * Accepts like ncm_lwip_listener_accept(), without blocking the caller: a thread of its
 * own per call, for the reason ncm_lwip_stack_connect_async() gives.
 *
 * Thread: any. @callback runs on the caller's thread-default
 *   #GMainContext.
 */
void ncm_lwip_listener_accept_async(NcmLwipListener *self, GCancellable *cancellable,
				    GAsyncReadyCallback callback, gpointer user_data);

/**
 * ncm_lwip_listener_accept_finish:
 * @self: an #NcmLwipListener.
 * @result: the #GAsyncResult given to the callback.
 * @error: return location for a #GError, as for ncm_lwip_listener_accept().
 *
 * Thread: the callback's.
 *
 * Returns: (transfer full) (nullable): the connection, or %NULL with @error set.
 */
NcmLwipConnection *ncm_lwip_listener_accept_finish(NcmLwipListener *self,
						   GAsyncResult *result, GError **error);

/**
 * ncm_lwip_listener_close:
 * @self: an #NcmLwipListener.
 *
 * Stops listening and resets the connections nobody accepted; pending and
 * future accepts fail with %G_IO_ERROR_CLOSED. Idempotent; the last unref
 * closes too.
 * Thread: any.
 */
void ncm_lwip_listener_close(NcmLwipListener *self);

/* ---- Names ---------------------------------------------------------------- */

/**
 * NCM_LWIP_DNS_MAX_SERVERS:
 *
 * How many DNS servers the stack asks, in order: lwIP's DNS client, asking
 * through the netifs. Its servers come from DHCP (option 6) and router
 * advertisements (RDNSS), or from ncm_lwip_stack_set_dns_server(), whose
 * servers take precedence: they are written back before every query.
 */
#define NCM_LWIP_DNS_MAX_SERVERS 2

/**
 * ncm_lwip_stack_set_dns_server:
 * @self: the #NcmLwipStack.
 * @index: which server, below %NCM_LWIP_DNS_MAX_SERVERS; a larger one is
 *   ignored with a critical warning.
 * @address: (nullable): the server (port 53), or %NULL to clear the
 *   slot, which the next DHCP lease or router advertisement may fill.
 *
 * Sets a DNS server that DHCP and router advertisements cannot overwrite.
 *
 * Thread: any.
 */
void ncm_lwip_stack_set_dns_server(NcmLwipStack *self, guint index, GInetAddress *address);

/**
 * ncm_lwip_stack_get_dns_servers:
 * @self: the #NcmLwipStack.
 *
 * The servers in use now, whether set, leased by DHCP or announced by RDNSS.
 *
 * Thread: any.
 *
 * Returns: (transfer full) (element-type GInetAddress): the servers, in the
 *   order they are asked; free with `g_list_free_full(list, g_object_unref)`.
 */
GList *ncm_lwip_stack_get_dns_servers(NcmLwipStack *self);

/**
 * ncm_lwip_stack_resolve:
 * @self: the #NcmLwipStack.
 * @name: a host name, or an address literal, which is returned as is.
 * @family: %G_SOCKET_FAMILY_IPV4 or %G_SOCKET_FAMILY_IPV6 for that family
 *   only; %G_SOCKET_FAMILY_INVALID for IPv4 and, when there is none, IPv6.
 * @cancellable: (nullable): a #GCancellable.
 * @error: return location for a #GError: %G_RESOLVER_ERROR_NOT_FOUND (no
 *   such name, or no answer after lwIP's retries: ~15 s),
 *   %G_RESOLVER_ERROR_TEMPORARY_FAILURE (no server, too many lookups at
 *   once), %G_IO_ERROR_CANCELLED.
 *
 * Resolves @name to one address through the device, with the servers of
 * ncm_lwip_stack_get_dns_servers(). Answers are cached for their TTL.
 *
 * Thread: any; blocks.
 *
 * Returns: (transfer full) (nullable): the address, or %NULL with @error set.
 */
GInetAddress *ncm_lwip_stack_resolve(NcmLwipStack *self, const gchar *name, GSocketFamily family,
				     GCancellable *cancellable, GError **error);

/**
 * ncm_lwip_stack_resolve_async:
 * @self: the #NcmLwipStack.
 * @name: as for ncm_lwip_stack_resolve().
 * @family: as for ncm_lwip_stack_resolve().
 * @cancellable: (nullable): a #GCancellable.
 * @callback: (scope async): called once with the result.
 * @user_data: (closure): passed to @callback.
 *
 * Resolves like ncm_lwip_stack_resolve(), without blocking the caller.
 *
 * Thread: any. @callback runs on the caller's thread-default
 *   #GMainContext.
 */
void ncm_lwip_stack_resolve_async(NcmLwipStack *self, const gchar *name, GSocketFamily family,
				  GCancellable *cancellable, GAsyncReadyCallback callback,
				  gpointer user_data);

/**
 * ncm_lwip_stack_resolve_finish:
 * @self: the #NcmLwipStack.
 * @result: the #GAsyncResult given to the callback.
 * @error: return location for a #GError, as for ncm_lwip_stack_resolve().
 *
 * Thread: the callback's.
 *
 * Returns: (transfer full) (nullable): the address, or %NULL with @error set.
 */
GInetAddress *ncm_lwip_stack_resolve_finish(NcmLwipStack *self, GAsyncResult *result,
					    GError **error);

/* ---- UDP ------------------------------------------------------------------ */

/**
 * NcmLwipUdpSocket:
 *
 * A bound UDP socket with a bounded receive queue
 * (%NCM_LWIP_UDP_MAX_QUEUED datagrams, %NCM_LWIP_UDP_MAX_BYTES bytes).
 */
#define NCM_LWIP_TYPE_UDP_SOCKET (ncm_lwip_udp_socket_get_type())
G_DECLARE_FINAL_TYPE(NcmLwipUdpSocket, ncm_lwip_udp_socket, NCM_LWIP, UDP_SOCKET, GObject)

/**
 * ncm_lwip_stack_udp_bind:
 * @self: the #NcmLwipStack.
 * @address: (nullable): as for ncm_lwip_stack_listen().
 * @error: return location for a #GError in %G_IO_ERROR.
 *
 * Thread: any.
 *
 * Returns: (transfer full) (nullable): the socket, or %NULL with @error set.
 */
NcmLwipUdpSocket *ncm_lwip_stack_udp_bind(NcmLwipStack *self, GInetSocketAddress *address,
					  GError **error);

/**
 * ncm_lwip_udp_socket_get_port:
 * @self: an #NcmLwipUdpSocket.
 *
 * Thread: any.
 *
 * Returns: the local port (the ephemeral one chosen for port 0).
 */
guint16 ncm_lwip_udp_socket_get_port(NcmLwipUdpSocket *self);

/**
 * ncm_lwip_udp_socket_send_to:
 * @self: an #NcmLwipUdpSocket.
 * @to: the destination.
 * @data: (array length=len) (element-type guint8): the payload.
 * @len: its length, at most 65527 bytes; lwIP fragments above the MTU.
 * @error: return location for a #GError: %G_IO_ERROR_MESSAGE_TOO_LARGE,
 *   %G_IO_ERROR_CLOSED, or lwIP's reason (no route, no memory).
 *
 * Sends one datagram.
 *
 * Thread: any.
 *
 * Returns: %TRUE when lwIP took it.
 */
gboolean ncm_lwip_udp_socket_send_to(NcmLwipUdpSocket *self, GInetSocketAddress *to,
				     const void *data, gsize len, GError **error);

/**
 * ncm_lwip_udp_socket_receive_from:
 * @self: an #NcmLwipUdpSocket.
 * @ret_from: (out) (transfer full) (optional): the sender.
 * @buf: (out caller-allocates) (array length=len) (element-type guint8):
 *   where the datagram goes, truncated to @len.
 * @len: the size of @buf.
 * @timeout_ms: give up after this long; 0 waits forever.
 * @cancellable: (nullable): a #GCancellable.
 * @error: return location for a #GError: %G_IO_ERROR_TIMED_OUT,
 *   %G_IO_ERROR_CLOSED, %G_IO_ERROR_CANCELLED.
 *
 * Receives one datagram.
 *
 * Thread: any; blocks.
 *
 * Returns: the datagram's full length (more than @len when truncated), or
 *   -1 with @error set.
 */
gssize ncm_lwip_udp_socket_receive_from(NcmLwipUdpSocket *self, GInetSocketAddress **ret_from,
					void *buf, gsize len, guint timeout_ms,
					GCancellable *cancellable, GError **error);

/**
 * ncm_lwip_udp_socket_receive_async:
 * @self: an #NcmLwipUdpSocket.
 * @cancellable: (nullable): a #GCancellable.
 * @callback: (scope async): called once with the result.
 * @user_data: (closure): passed to @callback.
 *
 * Receives one datagram without blocking the caller: a thread of its own
 * per call, for the reason ncm_lwip_stack_connect_async() gives. For a
 * steady stream of datagrams, a thread calling
 * ncm_lwip_udp_socket_receive_from() in a loop costs less.
 *
 * Thread: any. @callback runs on the caller's thread-default
 *   #GMainContext.
 */
void ncm_lwip_udp_socket_receive_async(NcmLwipUdpSocket *self, GCancellable *cancellable,
				       GAsyncReadyCallback callback, gpointer user_data);

/**
 * ncm_lwip_udp_socket_receive_finish:
 * @self: an #NcmLwipUdpSocket.
 * @result: the #GAsyncResult given to the callback.
 * @ret_from: (out) (transfer full) (optional): the sender.
 * @error: return location for a #GError: %G_IO_ERROR_CLOSED,
 *   %G_IO_ERROR_CANCELLED.
 *
 * Thread: the callback's.
 *
 * Returns: (transfer full) (nullable): the whole datagram, or %NULL with
 *   @error set.
 */
GBytes *ncm_lwip_udp_socket_receive_finish(NcmLwipUdpSocket *self, GAsyncResult *result,
					   GInetSocketAddress **ret_from, GError **error);

/**
 * ncm_lwip_udp_socket_get_drops:
 * @self: an #NcmLwipUdpSocket.
 *
 * Thread: any.
 *
 * Returns: datagrams dropped because the receive queue was full.
 */
guint64 ncm_lwip_udp_socket_get_drops(NcmLwipUdpSocket *self);

/**
 * ncm_lwip_udp_socket_close:
 * @self: an #NcmLwipUdpSocket.
 *
 * Unbinds; waiting and later receives fail with %G_IO_ERROR_CLOSED.
 * Idempotent; the last unref closes too.
 * Thread: any.
 */
void ncm_lwip_udp_socket_close(NcmLwipUdpSocket *self);

G_END_DECLS
