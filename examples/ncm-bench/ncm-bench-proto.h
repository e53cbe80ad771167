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
 *
 * Times are each side's monotonic clock in µs; only differences taken on
 * one side, or differences of one-way delays, mean anything.
 */

#define BENCH_DEFAULT_PORT 5288
#define BENCH_REPORT_US 250000
#define BENCH_MAX_STREAMS 16

#define BENCH_DGRAM_MAGIC 0x4e424447u /* "NBDG" */
#define BENCH_FRAME_MAGIC 0x4e424652u /* "NBFR" */

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

G_END_DECLS
