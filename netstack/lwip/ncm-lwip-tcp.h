/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-tcp.h: one TCP connection's state shared by lwIP's callbacks and its GIO streams (private). */
#pragma once

#include "lwip/tcp.h"

#include "ncm-lwip-private.h"

/*
 * LwipConn outlives both sides that use it: the tcp_pcb (its callback arg)
 * and the NcmLwipConnection each hold a reference, as does every callback
 * posted to the tcpip thread. Freeing one never needs the core lock, so
 * the last reference may go on any thread.
 */
typedef struct {
	gint refs; /* atomic */

	/* Core lock: NULL once lwIP freed the pcb (error) or we closed it. */
	struct tcp_pcb *pcb;
	gboolean timer_armed; /* core lock: connect timeout pending */
	guint wake_pending;   /* core lock: directions to wake when the batch ends */

	/* Guards everything below; taken inside the core lock, never around it. */
	GMutex lock;
	GCond cond; /* broadcast on any change below */

	gboolean connected;
	gint error;           /* G_IO_ERROR code, or -1 */
	gboolean reset;       /* error came from a RST */
	gboolean in_closed;   /* the application closed its input stream */
	gboolean out_closed;  /* ... its output stream (FIN sent) */

	/* Received payload: a chain linked through pbuf->next, with its own
	 * tail pointer and byte count (tot_len is not maintained). */
	struct pbuf *rx_head, *rx_tail;
	gsize rx_off;   /* bytes of rx_head already read */
	gsize rx_bytes; /* unread bytes */
	gboolean rx_eof;

	/* Window credit for bytes read, returned by a posted callback. */
	gsize credit;
	gboolean credit_posted;

	/* tcp_sndbuf() as of the last lwIP event, for writability. */
	gsize snd_room;

	/* Pollable sources (LwipSource) attached to a main context: woken
	 * when their direction may have become ready. */
	GSList *waiters;
} LwipConn;

/* A writer wakes up when this much send buffer is free: fewer, larger
 * tcp_write() calls, each under one acquisition of the core lock. */
#define LWIP_CONN_WRITE_LOWAT (8 * TCP_MSS)
/* The most one write call copies under the core lock, which the link
 * thread's input waits for. */
#define LWIP_CONN_WRITE_MAX (256 * 1024)

LwipConn *lwip_conn_new(void);
LwipConn *lwip_conn_ref(LwipConn *c);
void lwip_conn_unref(LwipConn *c);
/* Core lock held: hooks @pcb's callbacks to @c (takes a reference). */
void lwip_conn_attach(LwipConn *c, struct tcp_pcb *pcb);
/* Core lock held: unhooks and closes the pcb (RST when @abort). */
void lwip_conn_close_pcb(LwipConn *c, gboolean abort);

/* Blocking or not; both follow GInputStream/GOutputStream semantics. */
gssize lwip_conn_read(LwipConn *c, void *buf, gsize count, gboolean blocking,
		      GCancellable *cancellable, GError **error);
gssize lwip_conn_write(LwipConn *c, const void *buf, gsize count, gboolean blocking,
		       GCancellable *cancellable, GError **error);
gboolean lwip_conn_readable(LwipConn *c);
void lwip_conn_set_no_delay(LwipConn *c, gboolean no_delay);
gboolean lwip_conn_writable(LwipConn *c);
/* A source that is ready while the direction is (level-triggered), to be
 * the child of a GPollableSource. */
GSource *lwip_conn_source_new(LwipConn *c, gboolean write);
/* Sends FIN after queued data. */
void lwip_conn_shutdown_write(LwipConn *c);
void lwip_conn_mark_in_closed(LwipConn *c);

/* The public wrapper around an LwipConn (takes the reference). */
NcmLwipConnection *lwip_connection_new(LwipConn *c);
