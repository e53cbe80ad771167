/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-tcp.h: one TCP connection's state shared by lwIP's callbacks and its GIO streams (private). */
#pragma once

#include "lwip/tcp.h"

#include "ncm-lwip-private.h"

/*
 * NlwConn outlives both sides that use it: the tcp_pcb (its callback arg)
 * and the NcmLwipConnection each hold a reference, as does every callback
 * posted to the tcpip thread. Freeing one never needs the core lock, so
 * the last reference may go on any thread.
 */
/* Where a connection's unapplied window credit is (ncm-lwip-tcp.c). */
typedef enum {
	NLW_CREDIT_NONE,    /* nothing pending */
	NLW_CREDIT_WAITING, /* waits for the next batch */
	NLW_CREDIT_POSTED,  /* a callback is queued on the tcpip thread */
} NlwCredit;

typedef struct {
	gint refs; /* atomic */

	/* Core lock: NULL once lwIP freed the pcb (error) or we closed it. */
	struct tcp_pcb *pcb;
	gboolean timer_armed; /* core lock: connect timeout pending */
	guint wake_pending;   /* core lock: directions to wake when the batch ends */

	/* Guards everything below; taken inside the core lock, never around it. */
	GMutex lock;
	/* Readers wait on rx_cond, writers and connect on tx_cond: a wake-up
	 * for one direction does not also wake (and switch to) a thread
	 * blocked in the other. Errors broadcast both. */
	GCond rx_cond, tx_cond;

	gboolean connected;
	gint error;           /* G_IO_ERROR code, or -1 */
	gboolean reset;       /* error came from a RST */
	gboolean in_closed;   /* the application closed its input stream */
	gboolean out_closed;  /* ... its output stream (FIN sent) */

	/* Received payload: a chain linked through pbuf->next, with its own
	 * tail pointer and byte count (tot_len is not maintained). */
	struct pbuf *rx_head, *rx_tail;
	struct pbuf *rx_chunk;  /* the tail, when it is a chunk of small segments with room */
	gsize rx_off;   /* bytes of rx_head already read */
	gsize rx_bytes; /* unread bytes */
	gboolean rx_lent; /* nlw_conn_send_to() reads the queue without the lock */
	gboolean rx_eof;

	/* Window credit for bytes read, returned by a posted callback. */
	gsize credit;
	NlwCredit credit_state;

	/* Free send buffer (pcb->snd_buf, not tcp_sndbuf()'s 16-bit view) as
	 * of the last lwIP event, for writability. */
	gsize snd_room;
	/* The room a blocked writer waits for, 0 when none waits; and the
	 * writability sources attached, which are woken at
	 * NLW_CONN_WRITE_WAKE_MAX (they are ready from NLW_CONN_WRITE_LOWAT). */
	gsize tx_want;
	guint tx_sources;

	/* Pollable sources (NlwSource) attached to a main context: woken
	 * when their direction may have become ready. */
	GSList *waiters;
} NlwConn;

/* A writer wakes up when this much send buffer is free: fewer, larger
 * tcp_write() calls, each under one acquisition of the core lock. */
#define NLW_CONN_WRITE_LOWAT (8 * NCM_LWIP_LINK_MSS)
/*
 * A blocked writer waits for room for its whole write, up to this much,
 * rather than for NLW_CONN_WRITE_LOWAT: with the buffer full, every ACK
 * frees a few segments, and waking at 8 segments cost a futex wake, a
 * context switch, a core-lock hand-over and a tcp_output() per 12 KB. A
 * quarter of the buffer still leaves three quarters queued meanwhile. A
 * writability source, which cannot know its write's size, is woken here
 * too (for a main loop the same cost per 12 KB: ncm-proxy's relay).
 */
#ifndef NLW_CONN_WRITE_WAKE_MAX
#define NLW_CONN_WRITE_WAKE_MAX (TCP_SND_BUF / 4)
#endif
/* The most one write call copies under the core lock, which the link
 * thread's input waits for. */
#ifndef NLW_CONN_WRITE_MAX
#define NLW_CONN_WRITE_MAX (256 * 1024)
#endif
/* The most pbufs one nlw_conn_send_to() hands over: ~180 KB of full
 * segments, on the stack. */
#define NLW_CONN_SEND_VECTORS 128

NlwConn *nlw_conn_new(void);
NlwConn *nlw_conn_ref(NlwConn *c);
void nlw_conn_unref(NlwConn *c);
/* Core lock held: hooks @pcb's callbacks to @c (takes a reference). */
void nlw_conn_attach(NlwConn *c, struct tcp_pcb *pcb);
/* Core lock held: unhooks and closes the pcb (RST when @abort). */
void nlw_conn_close_pcb(NlwConn *c, gboolean abort);
/* Received bytes nobody read yet. */
gboolean nlw_conn_has_unread(NlwConn *c);
/* Opens a connection and waits for its handshake, at most @timeout_ms when
 * not 0. Returns it connected, or NULL with @error set and no pcb left.
 * Not under the core lock; blocks. */
NlwConn *nlw_conn_connect(GInetSocketAddress *address, guint timeout_ms,
			 GCancellable *cancellable, GError **error);

/* Blocking or not; both follow GInputStream/GOutputStream semantics. */
gssize nlw_conn_read(NlwConn *c, void *buf, gsize count, gboolean blocking,
		     GCancellable *cancellable, GError **error);
gssize nlw_conn_write(NlwConn *c, const void *buf, gsize count, gboolean blocking,
		      GCancellable *cancellable, GError **error);
/* Hands up to @count received bytes to @out in one vectored non-blocking
 * write, straight from the pbufs; consumes (and credits) only what @out
 * took. -1 with G_IO_ERROR_WOULD_BLOCK when nothing was received or @out
 * is full. Not under the core lock. */
gssize nlw_conn_send_to(NlwConn *c, GPollableOutputStream *out, gsize count, GError **error);
gboolean nlw_conn_readable(NlwConn *c);
void nlw_conn_set_no_delay(NlwConn *c, gboolean no_delay);
gboolean nlw_conn_writable(NlwConn *c);
/* A source that is ready while the direction is (level-triggered), to be
 * the child of a GPollableSource. */
GSource *nlw_conn_source_new(NlwConn *c, gboolean write);
/* Sends FIN after queued data. */
void nlw_conn_shutdown_write(NlwConn *c);
void nlw_conn_mark_in_closed(NlwConn *c);

/* The public wrapper around an NlwConn (takes the reference). */
NcmLwipConnection *nlw_connection_new(NlwConn *c);
