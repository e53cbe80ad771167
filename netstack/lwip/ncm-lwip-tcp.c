/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-tcp.c: TCP over lwIP's raw API: per-connection queues, reads, writes, connect. */
#define G_LOG_DOMAIN "ncm-lwip"

#include <string.h>

#include "lwip/priv/tcp_priv.h"
#include "lwip/tcpip.h"
#include "lwip/timeouts.h"

#include "ncm-lwip-chunk.h"
#include "ncm-lwip-hooks.h"
#include "ncm-lwip-tcp.h"

NlwConn *
nlw_conn_new(void)
{
	NlwConn *c = g_new0(NlwConn, 1);

	c->refs = 1;
	c->error = -1;
	g_mutex_init(&c->lock);
	g_cond_init(&c->rx_cond);
	g_cond_init(&c->tx_cond);
	return c;
}

NlwConn *
nlw_conn_ref(NlwConn *c)
{
	g_atomic_int_inc(&c->refs);
	return c;
}

void
nlw_conn_unref(NlwConn *c)
{
	if (!g_atomic_int_dec_and_test(&c->refs))
		return;
	/* The chain holds one reference per pbuf: freeing the head frees all. */
	if (c->rx_head != NULL)
		pbuf_free(c->rx_head);
	g_assert(c->waiters == NULL);
	g_cond_clear(&c->rx_cond);
	g_cond_clear(&c->tx_cond);
	g_mutex_clear(&c->lock);
	g_free(c);
}

static const char *
error_message(gint code)
{
	switch (code) {
	case G_IO_ERROR_CONNECTION_REFUSED:
		return "connection refused";
	case G_IO_ERROR_CONNECTION_CLOSED: /* == G_IO_ERROR_BROKEN_PIPE */
		return "connection reset by peer";
	case G_IO_ERROR_TIMED_OUT:
		return "connection timed out";
	case G_IO_ERROR_CLOSED:
		return "connection is closed";
	case G_IO_ERROR_NETWORK_UNREACHABLE:
		return "no route to host";
	default:
		return "connection failed";
	}
}

/* A source waiting for one direction of a connection. */
typedef struct {
	GSource source;
	NlwConn *conn;
	gboolean write;
	GMainContext *context; /* conn->lock: where it waits, once it prepared */
} NlwSource;

/* c->lock held: the readiness of a direction may have changed. Blocking
 * callers wait on the GCond; sources get their context woken up, which
 * is what the stack counts as a main-context dispatch. */
static void
wake_locked(NlwConn *c, gboolean rx, gboolean tx)
{
	if (rx)
		g_cond_broadcast(&c->rx_cond);
	if (tx)
		g_cond_broadcast(&c->tx_cond);
	for (GSList *l = c->waiters; l != NULL; l = l->next) {
		NlwSource *s = l->data;

		if (s->context != NULL && (s->write ? tx : rx)) {
			g_main_context_wakeup(s->context);
			nlw_count(NLW_COUNT_MAIN_DISPATCHES, 1);
		}
	}
}

#define WAKE_RX 1u
#define WAKE_TX 2u

/* Core lock: connections with wake_pending set, one reference each. */
static GPtrArray *batch_wakes;

/* Core lock held: the batch's NLW_BATCH_WAKE stage. */
static void
conns_wake_batch(void)
{
	for (guint i = 0; batch_wakes != NULL && i < batch_wakes->len; i++) {
		NlwConn *c = g_ptr_array_index(batch_wakes, i);

		ncm_mutex_lock(&c->lock);
		wake_locked(c, c->wake_pending & WAKE_RX, c->wake_pending & WAKE_TX);
		ncm_mutex_unlock(&c->lock);
		c->wake_pending = 0;
		nlw_conn_unref(c);
	}
	if (batch_wakes != NULL)
		g_ptr_array_set_size(batch_wakes, 0);
}

/*
 * Core lock and c->lock held. lwIP calls back once per segment; an NTB
 * carries several, and waking the reader for each costs a futex wake and
 * a context switch per 1.4 KB. Inside a batch (the input of one NTB under
 * the core lock) the wake waits for the batch's end.
 */
static void
wake_soon_locked(NlwConn *c, guint dirs)
{
	if (!nlw_in_batch()) {
		wake_locked(c, dirs & WAKE_RX, dirs & WAKE_TX);
		return;
	}
	if (c->wake_pending == 0) {
		if (batch_wakes == NULL) {
			batch_wakes = g_ptr_array_new();
			nlw_batch_on_end(NLW_BATCH_WAKE, conns_wake_batch);
		}
		g_ptr_array_add(batch_wakes, nlw_conn_ref(c));
	}
	c->wake_pending |= dirs;
}

/* c->lock held. */
static void
fail_locked(NlwConn *c, gint code)
{
	if (c->error < 0)
		c->error = code;
	wake_locked(c, TRUE, TRUE);
}

/* ---- lwIP callbacks (core lock held) ---------------------------------------- */

/*
 * A peer that sends a window's worth of 1-byte segments while the
 * application reads slowly would queue one pbuf per byte: ~100 bytes of
 * memory each, hundreds of MB per connection. Small segments are copied
 * into chunks instead, so what is queued costs about what it carries.
 */
#define NLW_RX_SMALL 256
#define NLW_RX_CHUNK 2048

/* c->lock held: @p (one pbuf) becomes the queue's last. */
static void
link_tail_locked(NlwConn *c, struct pbuf *p)
{
	if (c->rx_tail != NULL)
		c->rx_tail->next = p;
	else
		c->rx_head = p;
	c->rx_tail = p;
}

/* c->lock held, @p one pbuf: FALSE when it is not small (the caller
 * queues it as it is). */
static gboolean
append_small_locked(NlwConn *c, struct pbuf *p)
{
	struct pbuf *chunk = c->rx_chunk;
	u16_t n = p->len;

	if (n > NLW_RX_SMALL)
		return FALSE;
	if (chunk == NULL || chunk->len + n > NLW_RX_CHUNK) {
		chunk = pbuf_alloc(PBUF_RAW, NLW_RX_CHUNK, PBUF_RAM);
		if (chunk == NULL)
			return FALSE;
		chunk->len = chunk->tot_len = 0;
		link_tail_locked(c, chunk);
		c->rx_chunk = chunk;
	}
	memcpy((u8_t *)chunk->payload + chunk->len, p->payload, n);
	chunk->len = chunk->tot_len = (u16_t)(chunk->len + n);
	c->rx_bytes += n;
	nlw_count(NLW_COUNT_RX_COMPACTED, 1);
	pbuf_free(p);
	return TRUE;
}

/* c->lock held: @p (one pbuf, not small) joins the queue as it is. */
static void
append_pbuf_locked(NlwConn *c, struct pbuf *p)
{
	link_tail_locked(c, p);
	c->rx_chunk = NULL;
	c->rx_bytes += p->len;
}

/*
 * c->lock held. When a hole fills, lwIP hands over every segment that
 * waited behind it as one chain: a window of 1-byte segments sent out of
 * order arrives as one chain of 1-byte pbufs. Each pbuf is judged on its
 * own. pbuf_cat() gave the chain each pbuf's only reference, so a pbuf
 * taken off it is the caller's to keep or free.
 */
static void
queue_chain_locked(NlwConn *c, struct pbuf *p)
{
	while (p != NULL) {
		struct pbuf *next = p->next;

		p->next = NULL;
		p->tot_len = p->len;
		if (p->len == 0)
			pbuf_free(p);
		else if (!append_small_locked(c, p))
			append_pbuf_locked(c, p);
		p = next;
	}
}

static err_t
conn_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	NlwConn *c = arg;
	/* More than a segment at once (merged by ncm-lwip-gro.c, or a hole
	 * filled): ACK it now, as for any two segments. lwIP delays every
	 * other in-order delivery by up to its 250 ms fast timer, which
	 * would hold a sender that waits for this ACK. */
	gboolean ack_now = p != NULL && p->tot_len > NCM_LWIP_LINK_MSS;

	ncm_mutex_lock(&c->lock);
	if (p == NULL) {
		c->rx_eof = TRUE;
	} else if (c->in_closed) {
		/* Nobody reads any more: keep the window open. */
		ncm_lwip_recved_chunked(pcb, p->tot_len);
		pbuf_free(p);
	} else {
		queue_chain_locked(c, p);
	}
	if (ack_now)
		tcp_ack_now(pcb);
	wake_soon_locked(c, WAKE_RX);
	ncm_mutex_unlock(&c->lock);
	return ERR_OK;
}

/* c->lock held: the free send buffer worth a wake-up. A blocked writer
 * knows how much it wants (never over NLW_CONN_WRITE_WAKE_MAX, so it wins
 * over a source); a source cannot know how much its callback will write,
 * so it is woken as a blocked writer of a large write is, at
 * NLW_CONN_WRITE_WAKE_MAX: at 8 segments ncm-proxy's relay woke its main
 * loop per ~12 KB the peer acknowledged (tests/bench/RESULTS.md, session
 * 19). It only waits when the buffer was nearly full, so that is no delay
 * for a writer of small messages. */
static gsize
tx_wake_at_locked(NlwConn *c)
{
	if (c->tx_want > 0)
		return c->tx_want;
	return c->tx_sources > 0 ? NLW_CONN_WRITE_WAKE_MAX : NLW_CONN_WRITE_LOWAT;
}

static err_t
conn_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	NlwConn *c = arg;

	ncm_mutex_lock(&c->lock);
	c->snd_room = pcb->snd_buf;
	if (c->snd_room >= tx_wake_at_locked(c))
		wake_soon_locked(c, WAKE_TX);
	ncm_mutex_unlock(&c->lock);
	return ERR_OK;
}

/* lwIP has freed the pcb already. */
static void
conn_err(void *arg, err_t err)
{
	NlwConn *c = arg;

	c->pcb = NULL;
	ncm_mutex_lock(&c->lock);
	c->reset = err == ERR_RST;
	if (err == ERR_RST && !c->connected)
		fail_locked(c, G_IO_ERROR_CONNECTION_REFUSED);
	else
		fail_locked(c, nlw_err_to_io(err));
	ncm_mutex_unlock(&c->lock);
	nlw_conn_unref(c);
}

static err_t
conn_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	NlwConn *c = arg;

	ncm_mutex_lock(&c->lock);
	c->connected = TRUE;
	c->snd_room = pcb->snd_buf;
	wake_locked(c, FALSE, TRUE);
	ncm_mutex_unlock(&c->lock);
	return ERR_OK;
}

static void credit_batch(void);

/* Core lock held. */
void
nlw_conn_attach(NlwConn *c, struct tcp_pcb *pcb)
{
	/* Before any reader can leave credit waiting for a batch. */
	nlw_batch_on_end(NLW_BATCH_CREDIT, credit_batch);
	c->pcb = pcb;
	nlw_conn_ref(c);
	tcp_arg(pcb, c);
	tcp_recv(pcb, conn_recv);
	tcp_sent(pcb, conn_sent);
	tcp_err(pcb, conn_err);
	ncm_mutex_lock(&c->lock);
	c->snd_room = pcb->snd_buf;
	ncm_mutex_unlock(&c->lock);
}

/* Core lock held: returns the window for bytes read so far. */
static void
credit_apply(NlwConn *c)
{
	gsize n;

	ncm_mutex_lock(&c->lock);
	n = c->credit;
	c->credit = 0;
	c->credit_state = NLW_CREDIT_NONE;
	ncm_mutex_unlock(&c->lock);
	if (c->pcb != NULL && n > 0)
		ncm_lwip_recved_chunked(c->pcb, n);
}

void
nlw_conn_close_pcb(NlwConn *c, gboolean abort)
{
	struct tcp_pcb *pcb = c->pcb;

	if (pcb == NULL)
		return;
	/* Read bytes whose credit is still in flight would make tcp_close()
	 * see unread data and reset the connection. */
	credit_apply(c);
	tcp_arg(pcb, NULL);
	tcp_recv(pcb, NULL);
	tcp_sent(pcb, NULL);
	tcp_err(pcb, NULL);
	c->pcb = NULL;
	if (abort || tcp_close(pcb) != ERR_OK)
		tcp_abort(pcb);
	ncm_mutex_lock(&c->lock);
	fail_locked(c, G_IO_ERROR_CLOSED);
	ncm_mutex_unlock(&c->lock);
	nlw_conn_unref(c);
}

/* ---- Reading ------------------------------------------------------------------- */

/* tcpip thread, posted by a reader. */
static void
credit_callback(void *arg)
{
	NlwConn *c = arg;

	nlw_batch_begin();
	credit_apply(c);
	nlw_batch_end();
	nlw_conn_unref(c);
}

/*
 * Credit too small to wake the tcpip thread for waits here, one reference
 * each, for the next batch (almost always the next received NTB's) to
 * hand to lwIP. Its own lock: readers add without the core lock.
 */
static GMutex credit_lock;
static GPtrArray *credit_waiting;

/* Core lock held: the NLW_BATCH_CREDIT stage. */
static void
credit_batch(void)
{
	GPtrArray *waiting;

	ncm_mutex_lock(&credit_lock);
	waiting = credit_waiting;
	credit_waiting = NULL;
	ncm_mutex_unlock(&credit_lock);
	for (guint i = 0; waiting != NULL && i < waiting->len; i++) {
		NlwConn *c = g_ptr_array_index(waiting, i);

		credit_apply(c);
		nlw_conn_unref(c);
	}
	if (waiting != NULL)
		g_ptr_array_unref(waiting);
}

/*
 * Posted, not waited for: a reader never makes a round trip to the tcpip
 * thread. At most one post or wait per connection is pending; it carries
 * all credit accumulated until it runs. Under NLW_CREDIT_POST the credit
 * waits for the next batch instead: while data streams in, one comes with
 * every NTB, and a thread wake-up per read cost more than the read. Past
 * it, the window may be what holds the peer back, so it goes now.
 */
#define NLW_CREDIT_POST (TCP_WND / 4)

static void
post_credit(NlwConn *c, NlwCredit how)
{
	if (how == NLW_CREDIT_WAITING) {
		ncm_mutex_lock(&credit_lock);
		if (credit_waiting == NULL)
			credit_waiting = g_ptr_array_new();
		g_ptr_array_add(credit_waiting, nlw_conn_ref(c));
		ncm_mutex_unlock(&credit_lock);
		return;
	}
	nlw_conn_ref(c);
	if (tcpip_try_callback(credit_callback, c) == ERR_OK) {
		nlw_count(NLW_COUNT_WINDOW_POSTS, 1);
		return;
	}
	/* Mailbox full: a lost update could leave the window shut for good. */
	nlw_core_lock();
	credit_apply(c);
	nlw_core_unlock();
	nlw_conn_unref(c);
}

/* c->lock held, @n <= rx_bytes: drops the queue's first @n bytes, which
 * the application has taken, and owes their window to the peer. */
static void
consume_locked(NlwConn *c, gsize n)
{
	c->rx_bytes -= n;
	c->credit += n;
	while (n > 0) {
		struct pbuf *h = c->rx_head;
		gsize take = MIN(h->len - c->rx_off, n);

		n -= take;
		c->rx_off += take;
		if (c->rx_off < h->len)
			break;
		c->rx_head = h->next;
		if (c->rx_head == NULL)
			c->rx_tail = NULL;
		if (h == c->rx_chunk)
			c->rx_chunk = NULL;
		h->next = NULL;
		pbuf_free(h);
		c->rx_off = 0;
	}
}

/* c->lock held, rx_bytes > 0. */
static gsize
copy_out_locked(NlwConn *c, guint8 *buf, gsize count)
{
	gsize done = 0, off = c->rx_off;

	for (struct pbuf *p = c->rx_head; p != NULL && done < count; p = p->next) {
		gsize take = MIN(p->len - off, count - done);

		memcpy(buf + done, (const guint8 *)p->payload + off, take);
		done += take;
		off = 0;
	}
	consume_locked(c, done);
	return done;
}

/* c->lock held, after a read took bytes: how their credit goes (and it
 * is marked so); NLW_CREDIT_NONE when nothing more is to be posted. */
static NlwCredit
credit_how_locked(NlwConn *c)
{
	NlwCredit how;

	if (c->credit_state == NLW_CREDIT_POSTED)
		return NLW_CREDIT_NONE;
	how = c->credit >= NLW_CREDIT_POST ? NLW_CREDIT_POSTED : NLW_CREDIT_WAITING;
	/* Already waiting: only growing past the threshold changes anything. */
	if (how == c->credit_state)
		return NLW_CREDIT_NONE;
	c->credit_state = how;
	return how;
}

static void
cancel_wake(GCancellable *cancellable, gpointer data)
{
	NlwConn *c = data;

	ncm_mutex_lock(&c->lock);
	g_cond_broadcast(&c->rx_cond);
	g_cond_broadcast(&c->tx_cond);
	ncm_mutex_unlock(&c->lock);
}

static gssize
read_locked(NlwConn *c, void *buf, gsize count, gboolean blocking, GCancellable *cancellable,
	    GError **error)
{
	for (;;) {
		if (c->rx_lent) {
			g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_PENDING,
					    "another read of this connection is in progress");
			return -1;
		}
		if (c->rx_bytes > 0)
			return (gssize)copy_out_locked(c, buf, count);
		if (c->rx_eof)
			return 0;
		if (c->error >= 0) {
			g_set_error_literal(error, G_IO_ERROR, c->error, error_message(c->error));
			return -1;
		}
		if (g_cancellable_set_error_if_cancelled(cancellable, error))
			return -1;
		if (!blocking) {
			g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK,
					    "no data received yet");
			return -1;
		}
		ncm_cond_wait(&c->rx_cond, &c->lock);
	}
}

gssize
nlw_conn_read(NlwConn *c, void *buf, gsize count, gboolean blocking, GCancellable *cancellable,
	      GError **error)
{
	NlwCredit how = NLW_CREDIT_NONE;
	gulong handler = 0;
	gssize n;

	if (count == 0)
		return 0;
	if (blocking && cancellable != NULL)
		handler = g_cancellable_connect(cancellable, G_CALLBACK(cancel_wake), c, NULL);
	ncm_mutex_lock(&c->lock);
	n = read_locked(c, buf, count, blocking, cancellable, error);
	if (n > 0)
		how = credit_how_locked(c);
	ncm_mutex_unlock(&c->lock);
	if (handler != 0)
		g_cancellable_disconnect(cancellable, handler);
	if (how != NLW_CREDIT_NONE)
		post_credit(c, how);
	return n;
}

/*
 * The pbufs stay queued while @out copies from them, without c->lock:
 * lwIP's callbacks only append (past the lengths taken here, even into
 * rx_chunk), and rx_lent keeps every other reader off the queue, so
 * nothing frees or moves them meanwhile. lwIP's input never waits for
 * the syscall.
 */
gssize
nlw_conn_send_to(NlwConn *c, GPollableOutputStream *out, gsize count, GError **error)
{
	GOutputVector v[NLW_CONN_SEND_VECTORS];
	NlwCredit how = NLW_CREDIT_NONE;
	GPollableReturn ret;
	gsize total = 0, off, written = 0;
	guint nv = 0;
	gssize n;

	if (count == 0)
		return 0;
	ncm_mutex_lock(&c->lock);
	if (c->rx_lent || c->rx_bytes == 0) {
		/* Fails (another reader, an error, nothing yet) or ends. */
		n = read_locked(c, NULL, 0, FALSE, NULL, error);
		ncm_mutex_unlock(&c->lock);
		return n;
	}
	off = c->rx_off;
	for (struct pbuf *p = c->rx_head; p != NULL && nv < G_N_ELEMENTS(v) && total < count;
	     p = p->next) {
		gsize take = MIN(p->len - off, count - total);

		v[nv].buffer = (const guint8 *)p->payload + off;
		v[nv].size = take;
		nv++;
		total += take;
		off = 0;
	}
	c->rx_lent = TRUE;
	ncm_mutex_unlock(&c->lock);

	ret = g_pollable_output_stream_writev_nonblocking(out, v, nv, &written, NULL, error);

	ncm_mutex_lock(&c->lock);
	c->rx_lent = FALSE;
	/* Only what @out took leaves the queue and reopens the window. */
	if (ret == G_POLLABLE_RETURN_OK && written > 0) {
		consume_locked(c, MIN(written, total));
		how = credit_how_locked(c);
	}
	ncm_mutex_unlock(&c->lock);
	if (how != NLW_CREDIT_NONE)
		post_credit(c, how);
	if (ret == G_POLLABLE_RETURN_WOULD_BLOCK) {
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK,
				    "the output stream is full");
		return -1;
	}
	if (ret != G_POLLABLE_RETURN_OK)
		return -1;
	return (gssize)MIN(written, total);
}

gboolean
nlw_conn_readable(NlwConn *c)
{
	gboolean ready;

	ncm_mutex_lock(&c->lock);
	ready = c->rx_bytes > 0 || c->rx_eof || c->error >= 0;
	ncm_mutex_unlock(&c->lock);
	return ready;
}

/* ---- Writing ------------------------------------------------------------------- */

void
nlw_conn_set_no_delay(NlwConn *c, gboolean no_delay)
{
	nlw_core_lock();
	if (c->pcb != NULL) {
		if (no_delay)
			tcp_nagle_disable(c->pcb);
		else
			tcp_nagle_enable(c->pcb);
	}
	nlw_core_unlock();
}

/* Core lock held, c->pcb == NULL: why writing cannot work. */
static void
set_write_error(NlwConn *c, GError **error)
{
	gint code;

	ncm_mutex_lock(&c->lock);
	code = c->error >= 0 ? c->error : G_IO_ERROR_CLOSED;
	if (c->reset)
		code = G_IO_ERROR_BROKEN_PIPE;
	ncm_mutex_unlock(&c->lock);
	g_set_error_literal(error, G_IO_ERROR, code, error_message(code));
}

/* Core lock held: copies what fits into lwIP, in tcp_sndbuf()-sized pieces
 * (tcp_write() takes a u16_t). Returns 0 when nothing fit. */
static gssize
write_locked(struct tcp_pcb *pcb, const guint8 *buf, gsize count, GError **error)
{
	gsize limit = MIN(count, NLW_CONN_WRITE_MAX);
	gsize done = 0;

	while (done < limit) {
		u16_t len = (u16_t)MIN((gsize)tcp_sndbuf(pcb), limit - done);
		u8_t flags = TCP_WRITE_FLAG_COPY;
		err_t err;

		if (len == 0)
			break;
		if (done + len < limit)
			flags |= TCP_WRITE_FLAG_MORE;
		err = tcp_write(pcb, buf + done, len, flags);
		if (err == ERR_MEM)
			break;
		if (err != ERR_OK) {
			if (done > 0)
				break;
			g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE,
					    "connection is not open for writing");
			return -1;
		}
		done += len;
	}
	if (done > 0)
		tcp_output(pcb);
	return (gssize)done;
}

static gssize
write_some(NlwConn *c, const void *buf, gsize count, GError **error)
{
	gssize n;

	nlw_core_lock();
	if (c->pcb == NULL) {
		set_write_error(c, error);
		n = -1;
	} else {
		n = write_locked(c->pcb, buf, count, error);
		ncm_mutex_lock(&c->lock);
		/* Nothing fit (the segment queue may be full while bytes are
		 * free): wait for the next ACK rather than spin. */
		c->snd_room = n == 0 ? 0 : c->pcb->snd_buf;
		ncm_mutex_unlock(&c->lock);
	}
	/* Flushes what tcp_output() packed into the link. */
	nlw_core_unlock();
	return n;
}

/* FALSE when cancelled; errors of the connection show in the next write.
 * Waits for room for @count bytes, within NLW_CONN_WRITE_LOWAT and
 * NLW_CONN_WRITE_WAKE_MAX. */
static gboolean
wait_writable(NlwConn *c, gsize count, GCancellable *cancellable, GError **error)
{
	gsize want = CLAMP(count, NLW_CONN_WRITE_LOWAT, NLW_CONN_WRITE_WAKE_MAX);
	gboolean cancelled;

	ncm_mutex_lock(&c->lock);
	/* A second blocked writer on the stream waits for the smaller need. */
	c->tx_want = c->tx_want > 0 ? MIN(c->tx_want, want) : want;
	while (c->snd_room < want && c->error < 0 && !g_cancellable_is_cancelled(cancellable))
		ncm_cond_wait(&c->tx_cond, &c->lock);
	c->tx_want = 0;
	ncm_mutex_unlock(&c->lock);
	cancelled = g_cancellable_set_error_if_cancelled(cancellable, error);
	return !cancelled;
}

gssize
nlw_conn_write(NlwConn *c, const void *buf, gsize count, gboolean blocking,
	       GCancellable *cancellable, GError **error)
{
	gulong handler = 0;
	gssize n;

	if (count == 0)
		return 0;
	if (blocking && cancellable != NULL)
		handler = g_cancellable_connect(cancellable, G_CALLBACK(cancel_wake), c, NULL);
	for (;;) {
		n = write_some(c, buf, count, error);
		if (n != 0)
			break;
		if (!blocking) {
			g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK,
					    "send buffer full");
			n = -1;
			break;
		}
		if (!wait_writable(c, count, cancellable, error)) {
			n = -1;
			break;
		}
	}
	if (handler != 0)
		g_cancellable_disconnect(cancellable, handler);
	return n;
}

gboolean
nlw_conn_writable(NlwConn *c)
{
	gboolean ready;

	ncm_mutex_lock(&c->lock);
	ready = c->snd_room >= NLW_CONN_WRITE_LOWAT || c->error >= 0;
	ncm_mutex_unlock(&c->lock);
	return ready;
}

static gboolean
source_prepare(GSource *source, gint *timeout)
{
	NlwSource *s = (NlwSource *)source;
	GMainContext *context = g_source_get_context(source);

	*timeout = -1;
	/* The context is known only once attached: register it here, on
	 * its own thread, before it polls. */
	ncm_mutex_lock(&s->conn->lock);
	if (s->context != context) {
		if (s->context != NULL)
			g_main_context_unref(s->context);
		s->context = g_main_context_ref(context);
	}
	ncm_mutex_unlock(&s->conn->lock);
	return s->write ? nlw_conn_writable(s->conn) : nlw_conn_readable(s->conn);
}

static gboolean
source_check(GSource *source)
{
	NlwSource *s = (NlwSource *)source;

	return s->write ? nlw_conn_writable(s->conn) : nlw_conn_readable(s->conn);
}

/* The parent GPollableSource calls the application's callback. */
static gboolean
source_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
	return G_SOURCE_CONTINUE;
}

static void
source_finalize(GSource *source)
{
	NlwSource *s = (NlwSource *)source;
	GMainContext *context;

	ncm_mutex_lock(&s->conn->lock);
	s->conn->waiters = g_slist_remove(s->conn->waiters, s);
	if (s->write)
		s->conn->tx_sources--;
	context = s->context;
	s->context = NULL;
	ncm_mutex_unlock(&s->conn->lock);
	if (context != NULL)
		g_main_context_unref(context);
	nlw_conn_unref(s->conn);
}

/* g_pollable_source_new_full() gives the child a dummy closure, which
 * GLib allows only for sources that can call one; ours never does. */
static gboolean
source_closure_callback(gpointer data)
{
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs source_funcs = {
	.prepare = source_prepare,
	.check = source_check,
	.dispatch = source_dispatch,
	.finalize = source_finalize,
	.closure_callback = source_closure_callback,
};

GSource *
nlw_conn_source_new(NlwConn *c, gboolean write)
{
	GSource *source = g_source_new(&source_funcs, sizeof(NlwSource));
	NlwSource *s = (NlwSource *)source;

	g_source_set_name(source, write ? "ncm-lwip-writable" : "ncm-lwip-readable");
	s->conn = nlw_conn_ref(c);
	s->write = write;
	ncm_mutex_lock(&c->lock);
	c->waiters = g_slist_prepend(c->waiters, s);
	if (write)
		c->tx_sources++;
	ncm_mutex_unlock(&c->lock);
	return source;
}

void
nlw_conn_shutdown_write(NlwConn *c)
{
	nlw_core_lock();
	ncm_mutex_lock(&c->lock);
	c->out_closed = TRUE;
	ncm_mutex_unlock(&c->lock);
	if (c->pcb != NULL)
		tcp_shutdown(c->pcb, 0, 1);
	nlw_core_unlock();
}

gboolean
nlw_conn_has_unread(NlwConn *c)
{
	gboolean unread;

	ncm_mutex_lock(&c->lock);
	unread = c->rx_bytes > 0;
	ncm_mutex_unlock(&c->lock);
	return unread;
}

void
nlw_conn_mark_in_closed(NlwConn *c)
{
	ncm_mutex_lock(&c->lock);
	c->in_closed = TRUE;
	ncm_mutex_unlock(&c->lock);
}

/* ---- Connecting ------------------------------------------------------------------- */

/* tcpip thread: the connect deadline passed. */
static void
connect_timeout(void *arg)
{
	NlwConn *c = arg;
	gboolean connected;

	c->timer_armed = FALSE;
	ncm_mutex_lock(&c->lock);
	connected = c->connected;
	if (!connected)
		fail_locked(c, G_IO_ERROR_TIMED_OUT);
	ncm_mutex_unlock(&c->lock);
	if (!connected) {
		nlw_batch_begin();
		nlw_conn_close_pcb(c, TRUE);
		nlw_batch_end();
	}
	nlw_conn_unref(c);
}

/* Core lock held. */
static err_t
connect_locked(NlwConn *c, ip_addr_t *ip, guint16 port, guint scope, guint timeout_ms)
{
	struct tcp_pcb *pcb;
	err_t err;

	nlw_addr_assign_zone(ip, scope);
	if (!nlw_routable(ip))
		return ERR_RTE;
	/* Connections we close first wait in TIME_WAIT, each on a local port
	 * that tcp_new_port() must skip: capped here too (ncm-lwip-timewait.c). */
	ncm_lwip_timewait_trim();
	pcb = tcp_new_ip_type(IP_GET_TYPE(ip));
	if (pcb == NULL)
		return ERR_MEM;
	nlw_conn_attach(c, pcb);
	if (scope != 0 && nlw_netif_for_scope(scope) != NULL)
		tcp_bind_netif(pcb, nlw_netif_for_scope(scope));
	err = tcp_connect(pcb, ip, port, conn_connected);
	if (err != ERR_OK) {
		nlw_conn_close_pcb(c, TRUE);
		return err;
	}
	if (timeout_ms > 0) {
		c->timer_armed = TRUE;
		sys_timeout(timeout_ms, connect_timeout, nlw_conn_ref(c));
	}
	return ERR_OK;
}

static NlwConn *
connect_start(GInetSocketAddress *address, guint timeout_ms, GError **error)
{
	NlwConn *c = nlw_conn_new();
	ip_addr_t ip;
	err_t err;

	nlw_addr_from_gio(g_inet_socket_address_get_address(address), &ip);
	nlw_core_lock();
	err = connect_locked(c, &ip, g_inet_socket_address_get_port(address),
			     nlw_scope_of(address), timeout_ms);
	nlw_core_unlock();
	if (err != ERR_OK) {
		g_set_error(error, G_IO_ERROR, nlw_err_to_io(err), "cannot connect: %s",
			    nlw_strerr(err));
		nlw_conn_unref(c);
		return NULL;
	}
	return c;
}

/* Waits for the handshake; on failure the pcb is gone when it returns. */
static gboolean
connect_wait(NlwConn *c, GCancellable *cancellable, GError **error)
{
	gulong handler = 0;
	gboolean ok, timer;
	gint code;

	if (cancellable != NULL)
		handler = g_cancellable_connect(cancellable, G_CALLBACK(cancel_wake), c, NULL);
	ncm_mutex_lock(&c->lock);
	while (!c->connected && c->error < 0 && !g_cancellable_is_cancelled(cancellable))
		ncm_cond_wait(&c->tx_cond, &c->lock);
	ok = c->connected;
	code = c->error;
	ncm_mutex_unlock(&c->lock);
	if (handler != 0)
		g_cancellable_disconnect(cancellable, handler);
	if (!ok && !g_cancellable_set_error_if_cancelled(cancellable, error))
		g_set_error_literal(error, G_IO_ERROR, code, error_message(code));

	nlw_core_lock();
	timer = c->timer_armed;
	if (timer)
		sys_untimeout(connect_timeout, c);
	c->timer_armed = FALSE;
	if (!ok)
		nlw_conn_close_pcb(c, TRUE);
	nlw_core_unlock();
	if (timer)
		nlw_conn_unref(c);
	return ok;
}

NlwConn *
nlw_conn_connect(GInetSocketAddress *address, guint timeout_ms, GCancellable *cancellable,
		 GError **error)
{
	NlwConn *c = connect_start(address, timeout_ms, error);

	if (c == NULL)
		return NULL;
	if (!connect_wait(c, cancellable, error)) {
		nlw_conn_unref(c);
		return NULL;
	}
	return c;
}
