/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-outq.c: a netif's output queue (ncm-lwip-outq.c): order, one sender at a time, link room, closing. */
#include <glib.h>

#include "ncm-lwip-outq.h"

/* A fake link: records what it took, refuses on demand. */
typedef struct {
	NlwOutq *q;
	GMutex lock;
	GArray *sent;                 /* guint: the items taken, in order */
	guint freed;                  /* atomic */
	guint flushes;                /* atomic */
	gint in_send;                 /* atomic: senders inside send() now */
	gint max_in_send;             /* atomic */
	guint refuse_at;              /* refuse when this many were sent (0: never) */
	gboolean room_during_refusal; /* writable arrives while refusing */
	gboolean push_during_send;    /* a frame is pushed from inside send() */
	guint refuse_every;           /* refuse one in N attempts (threads test) */
	guint attempts;               /* atomic */
} Link;

static NlwOutqSend
link_send(gpointer item, gpointer data)
{
	Link *l = data;
	gint now = g_atomic_int_add(&l->in_send, 1) + 1;
	NlwOutqSend r = NLW_OUTQ_SENT;
	guint attempt = g_atomic_int_add(&l->attempts, 1);

	if (now > g_atomic_int_get(&l->max_in_send))
		g_atomic_int_set(&l->max_in_send, now);
	g_mutex_lock(&l->lock);
	if (l->refuse_at != 0 && l->sent->len == l->refuse_at) {
		l->refuse_at = 0;
		r = NLW_OUTQ_BLOCKED;
	} else if (l->refuse_every != 0 && attempt % l->refuse_every == 0) {
		r = NLW_OUTQ_BLOCKED;
	} else {
		guint v = GPOINTER_TO_UINT(item);

		g_array_append_val(l->sent, v);
	}
	g_mutex_unlock(&l->lock);
	if (r == NLW_OUTQ_BLOCKED && l->room_during_refusal) {
		/* The link frees a slot between refusing and the drain's
		 * look at the queue again. */
		l->room_during_refusal = FALSE;
		nlw_outq_writable(l->q, NULL, NULL);
	}
	if (r == NLW_OUTQ_SENT && l->push_during_send) {
		gboolean blocked;

		l->push_during_send = FALSE;
		g_assert_true(nlw_outq_push(l->q, GUINT_TO_POINTER(1000), NCM_FLOW_NONE, FALSE, &blocked));
	}
	g_atomic_int_add(&l->in_send, -1);
	return r;
}

static Link *free_link; /* the free callback has no data pointer */

static void
link_free_item(gpointer item)
{
	g_atomic_int_inc(&free_link->freed);
}

static void
link_flush(gpointer data)
{
	Link *l = data;

	g_atomic_int_inc(&l->flushes);
}

static const NlwOutqOps ops = {
    .send = link_send,
    .free = link_free_item,
    .flush = link_flush,
};

static void
link_init(Link *l, NlwOutq *q, guint size)
{
	*l = (Link){.q = q};
	g_mutex_init(&l->lock);
	l->sent = g_array_new(FALSE, FALSE, sizeof(guint));
	nlw_outq_init(q, size);
	free_link = l;
}

static void
link_clear(Link *l)
{
	nlw_outq_close(l->q);
	nlw_outq_clear(l->q, link_free_item);
	g_array_unref(l->sent);
	g_mutex_clear(&l->lock);
}

static void
push_n(NlwOutq *q, guint from, guint n)
{
	for (guint i = from; i < from + n; i++) {
		gboolean blocked;

		g_assert_true(nlw_outq_push(q, GUINT_TO_POINTER(i), NCM_FLOW_NONE, FALSE, &blocked));
	}
}

static void
assert_sent_in_order(Link *l, guint n)
{
	g_assert_cmpuint(l->sent->len, ==, n);
	for (guint i = 0; i < n; i++)
		g_assert_cmpuint(g_array_index(l->sent, guint, i), ==, i + 1);
}

static void
test_order(void)
{
	NlwOutq q;
	Link l;
	gboolean blocked;

	link_init(&l, &q, 8);
	push_n(&q, 1, 8);
	/* Full: the caller keeps the frame. */
	g_assert_false(nlw_outq_push(&q, GUINT_TO_POINTER(99), NCM_FLOW_NONE, FALSE, &blocked));
	nlw_outq_drain(&q, &ops, &l);
	assert_sent_in_order(&l, 8);
	g_assert_cmpuint(l.freed, ==, 8);
	/* One flush per drain, not per frame. */
	g_assert_cmpuint(l.flushes, ==, 1);
	/* Nothing queued: no flush. */
	nlw_outq_drain(&q, &ops, &l);
	g_assert_cmpuint(l.flushes, ==, 1);
	/* The ring wraps. */
	push_n(&q, 9, 5);
	nlw_outq_drain(&q, &ops, &l);
	assert_sent_in_order(&l, 13);
	link_clear(&l);
}

static void
test_blocked(void)
{
	NlwOutq q;
	Link l;
	gboolean blocked;

	link_init(&l, &q, 16);
	l.refuse_at = 3;
	push_n(&q, 1, 6);
	nlw_outq_drain(&q, &ops, &l);
	assert_sent_in_order(&l, 3);
	g_assert_cmpuint(l.freed, ==, 3);
	/* A blocked link is flushed (it reports room only then). */
	g_assert_cmpuint(l.flushes, ==, 1);
	/* Until writable, nothing is tried, and pushes say they wait. */
	g_assert_true(nlw_outq_push(&q, GUINT_TO_POINTER(7), NCM_FLOW_NONE, FALSE, &blocked));
	g_assert_true(blocked);
	nlw_outq_drain(&q, &ops, &l);
	g_assert_cmpuint(l.attempts, ==, 4);
	nlw_outq_writable(&q, &ops, &l);
	assert_sent_in_order(&l, 7);
	g_assert_cmpuint(l.freed, ==, 7);
	link_clear(&l);
}

/* Room that comes while the drain is being refused must not be lost:
 * nobody else would drain (the writable call found the drain running). */
static void
test_room_during_refusal(void)
{
	NlwOutq q;
	Link l;

	link_init(&l, &q, 16);
	l.refuse_at = 2;
	l.room_during_refusal = TRUE;
	push_n(&q, 1, 5);
	nlw_outq_drain(&q, &ops, &l);
	assert_sent_in_order(&l, 5);
	link_clear(&l);
}

/* A frame pushed while the drain sends (another thread's output) goes in
 * the same drain: its thread found the drain running and left it. */
static void
test_push_during_drain(void)
{
	NlwOutq q;
	Link l;

	link_init(&l, &q, 16);
	l.push_during_send = TRUE;
	push_n(&q, 1, 3);
	nlw_outq_drain(&q, &ops, &l);
	g_assert_cmpuint(l.sent->len, ==, 4);
	g_assert_cmpuint(g_array_index(l.sent, guint, 3), ==, 1000);
	g_assert_cmpuint(l.freed, ==, 4);
	link_clear(&l);
}

#define THREADS 4
#define PER_THREAD 5000

typedef struct {
	Link *l;
	guint id;
} Pusher;

static gpointer
pusher_main(gpointer data)
{
	Pusher *p = data;

	for (guint i = 0; i < PER_THREAD; i++) {
		guint v = p->id * PER_THREAD + i + 1;
		gboolean blocked;

		/* Full: the link's room comes back (a refusal blocks it). */
		while (!nlw_outq_push(p->l->q, GUINT_TO_POINTER(v), NCM_FLOW_NONE, FALSE, &blocked))
			nlw_outq_writable(p->l->q, &ops, p->l);
		if (i % 7 == 0) {
			nlw_outq_hold(p->l->q);
			nlw_outq_drain_held(p->l->q, &ops, p->l);
		} else {
			nlw_outq_drain(p->l->q, &ops, p->l);
		}
		/* The link's completions, from its own thread in real life. */
		if (i % 5 == 0)
			nlw_outq_writable(p->l->q, &ops, p->l);
	}
	return NULL;
}

/* Threads push and drain at once; the link refuses now and then. Every
 * frame is sent once, each thread's in its order, by one sender at a time. */
static void
test_threads(void)
{
	GThread *t[THREADS];
	Pusher p[THREADS];
	guint next[THREADS] = {0};
	NlwOutq q;
	Link l;

	link_init(&l, &q, 64);
	l.refuse_every = 13;
	for (guint i = 0; i < THREADS; i++) {
		p[i] = (Pusher){&l, i};
		t[i] = g_thread_new("pusher", pusher_main, &p[i]);
	}
	for (guint i = 0; i < THREADS; i++)
		g_thread_join(t[i]);
	/* The last refusals may have left frames for a writable to come. */
	for (guint i = 0; i < 100 && l.sent->len < THREADS * PER_THREAD; i++)
		nlw_outq_writable(&q, &ops, &l);
	g_assert_cmpint(l.max_in_send, ==, 1);
	g_assert_cmpuint(l.sent->len, ==, THREADS * PER_THREAD);
	g_assert_cmpuint(l.freed, ==, THREADS * PER_THREAD);
	for (guint i = 0; i < l.sent->len; i++) {
		guint v = g_array_index(l.sent, guint, i) - 1;
		guint id = v / PER_THREAD;

		g_assert_cmpuint(v % PER_THREAD, ==, next[id]);
		next[id]++;
	}
	link_clear(&l);
}

typedef struct {
	NlwOutq *q;
	gint closed; /* atomic */
} Closer;

static gpointer
closer_main(gpointer data)
{
	Closer *c = data;

	nlw_outq_close(c->q);
	g_atomic_int_set(&c->closed, 1);
	return NULL;
}

static gboolean
queue_closed(NlwOutq *q)
{
	gboolean closed;

	g_mutex_lock(&q->lock);
	closed = q->closed;
	g_mutex_unlock(&q->lock);
	return closed;
}

/* Closing waits for a drain promised before (the netif's link must outlive
 * it), and a closed queue neither takes nor sends frames. */
static void
test_close_waits_for_hold(void)
{
	Closer c;
	GThread *t;
	NlwOutq q;
	Link l;
	gboolean blocked;

	link_init(&l, &q, 8);
	c = (Closer){&q, 0};
	push_n(&q, 1, 2);
	nlw_outq_hold(&q);
	t = g_thread_new("closer", closer_main, &c);
	while (!queue_closed(&q))
		g_usleep(1000);
	g_usleep(20000);
	g_assert_cmpint(g_atomic_int_get(&c.closed), ==, 0);
	nlw_outq_drain_held(&q, &ops, &l);
	g_thread_join(t);
	g_assert_cmpint(c.closed, ==, 1);
	/* Closed before the held drain ran: nothing was sent. */
	g_assert_cmpuint(l.sent->len, ==, 0);
	g_assert_false(nlw_outq_push(&q, GUINT_TO_POINTER(3), NCM_FLOW_NONE, FALSE, &blocked));
	nlw_outq_clear(&q, link_free_item);
	g_assert_cmpuint(l.freed, ==, 2);
	g_array_unref(l.sent);
	g_mutex_clear(&l.lock);
}

static void
push_flow(NlwOutq *q, guint v, guint flow, gboolean small)
{
	gboolean blocked;

	/* Four of them fill a flow's room ahead. */
	g_assert_true(nlw_outq_push(q, GUINT_TO_POINTER(v), flow, small ? NCM_FLOW_AHEAD_MAX / 4 : 0,
				    &blocked));
}

static void
assert_sent(Link *l, const guint *want, guint n)
{
	g_assert_cmpuint(l->sent->len, ==, n);
	for (guint i = 0; i < n; i++)
		g_assert_cmpuint(g_array_index(l->sent, guint, i), ==, want[i]);
}

/*
 * A small frame of a flow with nothing in the main queue goes first; one
 * of a flow that has frames there, or being sent from there, keeps its
 * place behind them. Large frames and frames of no flow never go first.
 */
static void
test_sparse(void)
{
	static const guint first[] = {100, 101, 1, 2, 3, 102, 104};
	static const guint all[] = {100, 101, 1, 2, 3, 102, 104, 200, 105, 201, 204, 202, 203};
	NlwOutq q;
	Link l;

	link_init(&l, &q, 16);
	push_flow(&q, 1, 5, FALSE);
	push_flow(&q, 2, 5, FALSE);
	push_flow(&q, 3, 5, FALSE);
	push_flow(&q, 100, 9, TRUE);   /* sparse */
	push_flow(&q, 101, 9, TRUE);   /* behind 100, ahead too */
	push_flow(&q, 102, 5, TRUE);   /* behind 1-3 */
	push_flow(&q, 104, 11, FALSE); /* large */
	g_assert_cmpuint(q.ahead.len, ==, 2);
	nlw_outq_drain(&q, &ops, &l);
	assert_sent(&l, first, G_N_ELEMENTS(first));
	for (guint f = 0; f < NCM_FLOW_BUCKETS; f++) {
		g_assert_cmpuint(q.flows.queued[f], ==, 0);
		g_assert_cmpuint(q.flows.ahead[f], ==, 0);
		g_assert_cmpuint(q.flows.ahead_bytes[f], ==, 0);
	}
	/* No flow is never sparse; flow 5, all sent, is again. */
	push_flow(&q, 105, NCM_FLOW_NONE, TRUE);
	g_assert_cmpuint(q.ahead.len, ==, 0);
	push_flow(&q, 200, 5, TRUE);
	g_assert_cmpuint(q.ahead.len, ==, 1);
	/* The link refuses 201: still counted, so 203 of its flow waits
	 * behind it, while 204 of another flow passes 202. 201 itself goes
	 * first when room comes: the link may have taken part of it (a cut
	 * segment resumes only if nothing came in between). */
	push_flow(&q, 201, 7, FALSE);
	push_flow(&q, 202, 8, FALSE);
	l.refuse_at = G_N_ELEMENTS(first) + 2;
	nlw_outq_drain(&q, &ops, &l);
	g_assert_cmpuint(l.sent->len, ==, G_N_ELEMENTS(first) + 2);
	push_flow(&q, 203, 7, TRUE);
	push_flow(&q, 204, 12, TRUE);
	g_assert_cmpuint(q.ahead.len, ==, 1);
	nlw_outq_writable(&q, &ops, &l);
	assert_sent(&l, all, G_N_ELEMENTS(all));
	link_clear(&l);
}

/* While the link has no room, a flow's small frames wait ahead up to
 * NCM_FLOW_AHEAD_MAX bytes; the next joins the bulk, and so do the ones
 * after it while it is there, though fewer bytes wait ahead by then. */
static void
test_sparse_trickle(void)
{
	static const guint order[] = {1, 2, 10, 11, 12, 13, 20, 3, 14, 15};
	NlwOutq q;
	Link l;

	link_init(&l, &q, 16);
	l.refuse_at = 1;
	push_flow(&q, 1, 5, FALSE);
	push_flow(&q, 2, 5, FALSE);
	nlw_outq_drain(&q, &ops, &l);
	for (guint i = 10; i < 14; i++)
		push_flow(&q, i, 9, TRUE);
	g_assert_cmpuint(q.ahead.len, ==, 4);
	push_flow(&q, 3, 5, FALSE);
	push_flow(&q, 14, 9, TRUE);
	g_assert_cmpuint(q.ahead.len, ==, 4);
	g_assert_cmpuint(q.flows.ahead[9], ==, 4);
	/* Refused again at 11: 11 to 13 still wait ahead, but 15 goes
	 * behind 14, in the bulk; 20, of another flow, goes ahead. */
	l.refuse_at = 3;
	nlw_outq_writable(&q, &ops, &l);
	g_assert_cmpuint(q.flows.ahead[9], ==, 3);
	g_assert_cmpuint(q.flows.ahead_bytes[9], ==, 3 * NCM_FLOW_AHEAD_MAX / 4);
	push_flow(&q, 15, 9, TRUE);
	push_flow(&q, 20, 10, TRUE);
	nlw_outq_writable(&q, &ops, &l);
	g_assert_cmpuint(q.flows.ahead[9], ==, 0);
	assert_sent(&l, order, G_N_ELEMENTS(order));
	link_clear(&l);
}

/* An item the link refused is tried again before anything else, sparse
 * frames included, however often it is refused. */
static void
test_refused_first(void)
{
	static const guint order[] = {1, 2, 50, 3};
	NlwOutq q;
	Link l;

	link_init(&l, &q, 16);
	push_flow(&q, 1, 1, FALSE);
	push_flow(&q, 2, 1, FALSE);
	push_flow(&q, 3, 1, FALSE);
	l.refuse_at = 1;
	nlw_outq_drain(&q, &ops, &l);
	push_flow(&q, 50, 9, TRUE);
	g_assert_cmpuint(q.ahead.len, ==, 1);
	l.refuse_at = 1;
	nlw_outq_writable(&q, &ops, &l);
	g_assert_cmpuint(l.sent->len, ==, 1);
	nlw_outq_writable(&q, &ops, &l);
	assert_sent(&l, order, G_N_ELEMENTS(order));
	g_assert_null(q.refused);
	link_clear(&l);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lwip-outq/order", test_order);
	g_test_add_func("/lwip-outq/blocked", test_blocked);
	g_test_add_func("/lwip-outq/room-during-refusal", test_room_during_refusal);
	g_test_add_func("/lwip-outq/push-during-drain", test_push_during_drain);
	g_test_add_func("/lwip-outq/threads", test_threads);
	g_test_add_func("/lwip-outq/close-waits-for-hold", test_close_waits_for_hold);
	g_test_add_func("/lwip-outq/sparse", test_sparse);
	g_test_add_func("/lwip-outq/refused-first", test_refused_first);
	g_test_add_func("/lwip-outq/sparse-trickle", test_sparse_trickle);
	return g_test_run();
}
