/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-transport.h: how ncm-bench reaches its server over one network path (kernel sockets, ncm-tun or lwIP). */
#pragma once

#include <stdio.h>

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _BenchTransport BenchTransport;
typedef struct _BenchUdp BenchUdp;
typedef struct _BenchRaw BenchRaw;

/* A connected UDP socket to the server. Thread: one at a time. */
struct _BenchUdp {
	/* Returns the bytes sent, 0 when the socket has no room now, -1 on error. */
	gssize (*send)(BenchUdp *u, const void *buf, gsize len, GError **error);
	/* Waits up to @timeout_us; returns the datagram's length, 0 on timeout, -1 on error. */
	gssize (*recv)(BenchUdp *u, void *buf, gsize len, gint64 timeout_us, GError **error);
	void (*close)(BenchUdp *u);
	guint mtu; /* the path's IP MTU, 0 when unknown */
};

typedef struct {
	/* Connects to the server's control port. The streams must allow one thread
	 * reading while another writes. */
	GIOStream *(*tcp_connect)(BenchTransport *t, GError **error);
	BenchUdp *(*udp_open)(BenchTransport *t, guint16 port, GError **error);
	/*
	 * Main-context dispatches the path caused so far (libncm paths:
	 * ncm_context_get_main_dispatches() plus the lwIP stack's count),
	 * or NULL for paths that have none.
	 */
	guint64 (*main_dispatches)(BenchTransport *t);
	/*
	 * CPU seconds (user + system) a helper process of the path used so
	 * far (ncm-tun), or NULL for paths without one.
	 */
	double (*child_cpu_seconds)(BenchTransport *t);
	/*
	 * CPU ticks (USER_HZ) the libusb event thread(s) serving the path
	 * used so far (bench_thread_ticks()), or NULL for paths without one.
	 */
	guint64 (*event_thread_ticks)(BenchTransport *t);
	/*
	 * Microseconds threads have waited for lwIP's core lock so far
	 * (NcmLwipStats.core_lock_wait_us), or NULL for paths without lwIP
	 * in this process.
	 */
	guint64 (*core_lock_wait_us)(BenchTransport *t);
	/*
	 * USB work so far, for work units per MB: usb_mark() notes libncm's
	 * NTB counts now, or asks for them (ncm-tun prints its statistics on
	 * SIGUSR1), and returns at once with a mark; usb_count() gives the
	 * counts of a mark, waiting up to 2 s for an asked one, FALSE when
	 * they did not come. Both NULL for paths without libncm (cdc_ncm).
	 * Thread: the one that runs the tests.
	 */
	guint (*usb_mark)(BenchTransport *t);
	gboolean (*usb_count)(BenchTransport *t, guint mark, guint64 *ret_rx_ntbs,
			      guint64 *ret_tx_ntbs);
	/*
	 * Called from the watchdog thread just before the process exits while
	 * the path hangs: stop helper processes, touch nothing shared. Or NULL.
	 */
	void (*abort)(BenchTransport *t);
	/*
	 * From the watchdog thread while the path hangs, before abort: what
	 * each device's driver counted, as ncm-tun prints it
	 * (cli_print_usb_stats()), so a CI log tells which device stopped and
	 * how. Counters only, read atomically. Or NULL.
	 */
	void (*describe)(BenchTransport *t, FILE *out);
	/* JSON members (each after a comma) the path adds to the env, or NULL. */
	const char *(*env)(BenchTransport *t);
	void (*free)(BenchTransport *t);
} BenchTransportOps;

/*
 * Frames of BENCH_RAW_ETHERTYPE straight between the device and ncm-bench,
 * past the netstack: the raw path's usbfs ceiling.
 */
struct _BenchRaw {
	guint8 mac[6];          /* this side's MAC: where the server floods to */
	guint max_frame;        /* the size of every frame send() sends */
	/* The raw frames the sink got so far, and their bytes. Any thread. */
	void (*received)(BenchRaw *raw, guint64 *ret_frames, guint64 *ret_bytes);
	/*
	 * Sends max_frame-byte frames to @dst as fast as the device takes them
	 * until *@stop is set; returns how many, or -1 with @error when the
	 * device refused them. One thread at a time.
	 */
	gint64 (*send)(BenchRaw *raw, const guint8 dst[6], gint *stop, GError **error);
};

struct _BenchTransport {
	const BenchTransportOps *ops;
	char *name;             /* the path's name, as in --path NAME=... */
	GInetAddress *server;
	guint16 port;
	char *iface;            /* forced interface (SO_BINDTODEVICE), or NULL */
	guint mtu;              /* the interface MTU when known, else 0 */
	BenchRaw *raw;          /* the raw path's, else NULL; valid while the path is */
	/* A multi path's devices, one transport each, measured at once
	 * (bench_group_new()); NULL on a path of one device. */
	GPtrArray *members;
};

/*
 * Kernel sockets to @server (bound to @iface when not NULL, so the path is
 * taken even when routes say otherwise). Never fails: errors show on use.
 */
BenchTransport *bench_transport_kernel_new(const char *name, GInetAddress *server, guint16 port,
					   const char *iface);

/*
 * The in-process lwIP stack over a libncm device (or, for tests, a TAP
 * interface). @spec is what followed "NAME=" in --path:
 * SERVER,ipv4=ADDR/PREFIX[,ipv6=ADDR][,dev=SELECTOR...][,tap=IFNAME].
 * @pace_mbit caps the device's TX (0 = off). With @raw, the raw path:
 * lwIP carries only the control connections, and BenchRaw frames bypass
 * it (bench_raw_link_new()). Returns NULL with @error when this build has
 * no lwIP or the device cannot be opened.
 */
BenchTransport *bench_transport_lwip_new(const char *name, const char *spec, guint16 port,
					 double pace_mbit, gboolean raw, GError **error);

/*
 * ncm-tun as a child process: @spec is what followed "NAME=" in --path:
 * SERVER,ipv4=ADDR/PREFIX[,dev=SELECTOR...][,exec=PATH][,name=IFNAME].
 * Starts ncm-tun (by default the one next to this executable, else from
 * PATH) on interface IFNAME (default ncmbench0), waits until that is up
 * with ADDR, and measures over kernel sockets bound to it. Freeing it stops
 * ncm-tun with SIGTERM, which gives the function back to cdc_ncm.
 * @pace_mbit is passed on as --pace (0 = off). Returns NULL with @error
 * (ncm-tun's own message when it failed) when the interface did not come up.
 */
BenchTransport *bench_transport_tun_new(const char *name, const char *spec, guint16 port,
					double pace_mbit, GError **error);

/*
 * ncm-proxy as a child, as ncm-tun above: @spec is
 * SERVER,ipv4=ADDR/PREFIX[,dev=SELECTOR...][,exec=PATH][,lport=PORT].
 * ncm-proxy forwards 127.0.0.1:PORT (default 15288) to the server's port
 * (-L) and serves SOCKS5 on PORT + 1 for UDP ASSOCIATE; the tests run over
 * kernel loopback sockets through it: sockets -> ncm-proxy -> lwIP -> device.
 */
BenchTransport *bench_transport_proxy_new(const char *name, const char *spec, guint16 port,
					  double pace_mbit, GError **error);

/* UDP to @server:@port through a SOCKS5 server's UDP ASSOCIATE (ncm-proxy's). */
BenchUdp *bench_socks_udp_open(GInetSocketAddress *socks, GInetAddress *server, guint16 port,
			       GError **error);

/*
 * ncm-tun driving several devices in one process, a TAP each: @specs are
 * the devices' specs as for bench_transport_tun_new(), each with exactly
 * one dev=SELECTOR and its own ipv4=; exec=, acks= and name= (a pattern
 * with %d, default ncmbench%d) come from the first. ncm-bench gives each
 * interface its address (ncm-tun takes one --ipv4 only for one device) and
 * waits for an echo through each. Returns the process (its env, stop and
 * abort) and appends to @ret_members one transport per device, in the
 * order of @specs, named NAME#I; freeing the process stops ncm-tun, so
 * free the members first.
 */
BenchTransport *bench_transport_tun_group_new(const char *name, char **specs, guint16 port,
					      double pace_mbit, GPtrArray *ret_members,
					      GError **error);

/*
 * A multi path: @members (BenchTransport, taken) measured at once, one
 * TCP stream per device; @owner (taken, or NULL) is what serves them all
 * (ncm-tun's process) and is freed after them.
 */
BenchTransport *bench_group_new(const char *name, GPtrArray *members, BenchTransport *owner);

void bench_transport_free(BenchTransport *t);

G_END_DECLS
