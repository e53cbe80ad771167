/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-proto.h: the wire format between the ncm-bench client and its --server. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * One TCP connection per test. The client sends one command line, then:
 *
 *   SINK secs=T mark=N framed=F   client sends; the server reports, every
 *                                 250 ms and whenever the count crosses a
 *                                 multiple of N (N > 0),
 *                                   "S <t_us> <bytes> <owd_min> <owd_max> <frames> <gap_us>"
 *                                 (one-way delays of frames completed since
 *                                 the last report, F = 1 only; the longest
 *                                 time without arrivals since the last
 *                                 report, an open one included), and after T s
 *                                 (0: until EOF) "E <t_us> <bytes>", then
 *                                 discards data until the client closes.
 *   SOURCE secs=T                 the server sends for T s, then closes.
 *   ECHO                          the server echoes until EOF.
 *   UDP_REFLECT                   the server answers "P <port>" and echoes
 *                                 each datagram to its sender with its
 *                                 receive time in the header, until EOF.
 *   UDP_RECV                      the server answers "P <port>" and every
 *                                 250 ms reports, per stream seen,
 *                                   "U <t_us> <stream> <unique> <dups> <reordered> <late> <highest>"
 *                                 until EOF.
 *   RAW_FLOOD secs=T mac=M len=L  the server answers "F <ifname> <frame_len>",
 *                                 then sends frames of BENCH_RAW_ETHERTYPE,
 *                                 L bytes (at most the interface's MTU + 14),
 *                                 to MAC M, through a packet socket on the
 *                                 interface that holds the connection's
 *                                 local address, as fast as that takes them,
 *                                 for T s or until the client closes.
 *   RAW_COUNT secs=T len=L        the server answers "M <mac> <ifname>" (that
 *                                 interface's MAC), then reports every 250 ms
 *                                 "S <t_us> <bytes> 0 0 0 0", bytes being L
 *                                 times the frames the interface received
 *                                 since the command (its rx_packets), and
 *                                 after T s "E <t_us> <bytes>", then
 *                                 discards data until the client closes.
 *   A RAW_ command the server cannot serve (no such interface, no packet
 *   socket without CAP_NET_RAW) is answered "X <why>" instead.
 *
 * Times are each side's monotonic clock in µs; only differences taken on
 * one side, or differences of one-way delays, mean anything.
 */

#define BENCH_DEFAULT_PORT 5288
#define BENCH_REPORT_US 250000
#define BENCH_MAX_STREAMS 16

#define BENCH_DGRAM_MAGIC 0x4e424447u /* "NBDG" */
#define BENCH_FRAME_MAGIC 0x4e424652u /* "NBFR" */
/* The raw path's frames: IEEE 802's local experimental EtherType, which no stack takes. */
#define BENCH_RAW_ETHERTYPE 0x88b5

/* UDP datagram header, big-endian on the wire; payload follows. */
#define BENCH_DGRAM_HDR 32
typedef struct {
	guint16 stream;
	guint64 seq;
	gint64 send_us;   /* sender's clock */
	gint64 server_us; /* reflector's receive time, 0 from the client */
} BenchDgram;

void bench_dgram_write(guint8 *buf, const BenchDgram *d);
/* FALSE when @len is short or the magic is wrong. */
gboolean bench_dgram_read(const guint8 *buf, gsize len, BenchDgram *ret);

/* Framed TCP (SINK framed=1): each frame starts with this header. */
#define BENCH_FRAME_HDR 16
void bench_frame_write(guint8 *buf, guint32 frame_len, gint64 send_us);
gboolean bench_frame_read(const guint8 *buf, guint32 *ret_len, gint64 *ret_send_us);

/* The value of "key=" in a command line, or @fallback. */
gint64 bench_cmd_param(const char *line, const char *key, gint64 fallback);

/* "02:4e:43:4d:00:02": six hex pairs, colon-separated. FALSE for anything else. */
gboolean bench_mac_parse(const char *text, guint8 ret_mac[6]);
/* The same form, for bench_mac_parse(); g_free it. */
char *bench_mac_text(const guint8 mac[6]);
/* The value of "key=" in a command line as a MAC; FALSE when absent or malformed. */
gboolean bench_cmd_mac(const char *line, const char *key, guint8 ret_mac[6]);

G_END_DECLS
