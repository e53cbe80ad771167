/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-outq.c: a netif's frames on their way to its link, sent outside lwIP's core lock. */
#include "ncm-lwip-outq.h"

#include "ncm-sync.h"

static void
ring_init(NlwOutqRing *r, guint size)
{
	*r = (NlwOutqRing){.items = g_new0(NlwOutqItem, size), .size = size};
}

static void
ring_clear(NlwOutqRing *r, void (*free_item)(gpointer item))
{
	for (; r->len > 0; r->len--) {
		free_item(r->items[r->head].item);
		r->head = (r->head + 1) % r->size;
	}
	g_clear_pointer(&r->items, g_free);
}

/* A drain reads items[head .. head+len) without the lock; this slot lies past it. */
static void
ring_push(NlwOutqRing *r, gpointer item, guint flow, guint len)
{
	r->items[(r->head + r->len) % r->size] = (NlwOutqItem){item, flow, len};
	r->len++;
}

void
nlw_outq_init(NlwOutq *q, guint size)
{
	*q = (NlwOutq){0};
	g_mutex_init(&q->lock);
	g_cond_init(&q->idle);
	ring_init(&q->main, size);
	ring_init(&q->ahead, NLW_OUTQ_AHEAD);
}

void
nlw_outq_clear(NlwOutq *q, void (*free_item)(gpointer item))
{
	ring_clear(&q->ahead, free_item);
	ring_clear(&q->main, free_item);
	g_cond_clear(&q->idle);
	g_mutex_clear(&q->lock);
}

/* q->lock held. Only a frame whose flow has nothing in the main queue
 * may pass it (none passes one of its own), and only a few bytes of a flow
 * may wait ahead: a probe that comes while the one before it still waits
 * for room goes ahead too, a flow that sends more than a trickle joins the
 * bulk (ncm_flow_may_pass()). */
static gboolean
is_sparse(const NlwOutq *q, guint flow, guint len)
{
	return ncm_flow_may_pass(&q->flows, flow, len) && q->ahead.len < q->ahead.size;
}

NlwOutqPush
nlw_outq_push(NlwOutq *q, gpointer item, guint flow, guint sparse_len, gboolean *ret_blocked)
{
	NlwOutqPush r = NLW_OUTQ_PUSH_REFUSED;

	ncm_mutex_lock(&q->lock);
	if (q->closed) {
		/* refused */
	} else if (is_sparse(q, flow, sparse_len)) {
		ring_push(&q->ahead, item, flow, sparse_len);
		ncm_flow_counts_add(&q->flows, flow, sparse_len, TRUE);
		r = NLW_OUTQ_PUSH_AHEAD;
	} else if (q->main.len < q->main.size) {
		ring_push(&q->main, item, flow, 0);
		ncm_flow_counts_add(&q->flows, flow, 0, FALSE);
		r = NLW_OUTQ_PUSH_QUEUED;
	}
	*ret_blocked = q->blocked;
	ncm_mutex_unlock(&q->lock);
	return r;
}

/* q->lock held, q->draining ours: sends up to @max of @r's items at its
 * head without the lock, frees those that left; FALSE when the link was
 * blocked. */
static gboolean
send_head(NlwOutq *q, NlwOutqRing *r, guint max, const NlwOutqOps *ops, gpointer data)
{
	guint head = r->head, n = MIN(r->len, max), i;
	gboolean blocked = FALSE;

	ncm_mutex_unlock(&q->lock);
	for (i = 0; i < n; i++) {
		gpointer item = r->items[(head + i) % r->size].item;

		if (ops->send(item, data) == NLW_OUTQ_BLOCKED) {
			blocked = TRUE;
			break;
		}
		ops->free(item);
	}
	ncm_mutex_lock(&q->lock);
	for (guint k = 0; k < i; k++) {
		const NlwOutqItem *it = &r->items[(head + k) % r->size];

		ncm_flow_counts_done(&q->flows, it->flow, it->len, r == &q->ahead);
	}
	r->head = (r->head + i) % r->size;
	r->len -= i;
	if (blocked)
		q->refused = r;
	else if (q->refused == r)
		q->refused = NULL;
	return !blocked;
}

/* q->lock held, q->draining ours. Items pushed while it sends are sent in
 * the same drain, sparse ones first but after an item the link refused;
 * it ends with the queue empty or the link blocked. */
static void
drain_locked(NlwOutq *q, const NlwOutqOps *ops, gpointer data)
{
	gboolean flush = FALSE;

	for (;;) {
		guint epoch = q->writable_epoch;
		gboolean blocked = FALSE;

		/* The link may have taken part of it: the netif resumes a cut
		 * segment only while nothing else was sent in between. */
		if (q->refused != NULL && q->refused->len > 0) {
			blocked = !send_head(q, q->refused, 1, ops, data);
			flush = TRUE;
		}
		if (!blocked && q->ahead.len > 0) {
			blocked = !send_head(q, &q->ahead, G_MAXUINT, ops, data);
			flush = TRUE;
		}
		if (!blocked && q->main.len > 0) {
			blocked = !send_head(q, &q->main, G_MAXUINT, ops, data);
			flush = TRUE;
		}
		if (blocked && q->writable_epoch == epoch)
			q->blocked = TRUE; /* room came meanwhile? then retry */
		if (!flush)
			break;
		/* Closes the NTB once per drain, not per frame. */
		ncm_mutex_unlock(&q->lock);
		ops->flush(data);
		ncm_mutex_lock(&q->lock);
		flush = FALSE;
		if (q->blocked || q->main.len + q->ahead.len == 0)
			break;
	}
}

static void
drain_maybe_locked(NlwOutq *q, const NlwOutqOps *ops, gpointer data)
{
	if (q->draining || q->blocked || q->closed || q->main.len + q->ahead.len == 0)
		return;
	q->draining = TRUE;
	drain_locked(q, ops, data);
	q->draining = FALSE;
	if (q->closed)
		g_cond_broadcast(&q->idle);
}

void
nlw_outq_drain(NlwOutq *q, const NlwOutqOps *ops, gpointer data)
{
	ncm_mutex_lock(&q->lock);
	drain_maybe_locked(q, ops, data);
	ncm_mutex_unlock(&q->lock);
}

void
nlw_outq_writable(NlwOutq *q, const NlwOutqOps *ops, gpointer data)
{
	ncm_mutex_lock(&q->lock);
	q->blocked = FALSE;
	/* A drain that was refused before this will try again. */
	q->writable_epoch++;
	drain_maybe_locked(q, ops, data);
	ncm_mutex_unlock(&q->lock);
}

void
nlw_outq_hold(NlwOutq *q)
{
	ncm_mutex_lock(&q->lock);
	q->holds++;
	ncm_mutex_unlock(&q->lock);
}

void
nlw_outq_drain_held(NlwOutq *q, const NlwOutqOps *ops, gpointer data)
{
	ncm_mutex_lock(&q->lock);
	drain_maybe_locked(q, ops, data);
	if (--q->holds == 0 && q->closed)
		g_cond_broadcast(&q->idle);
	ncm_mutex_unlock(&q->lock);
}

void
nlw_outq_close(NlwOutq *q)
{
	ncm_mutex_lock(&q->lock);
	q->closed = TRUE;
	while (q->draining || q->holds > 0)
		ncm_cond_wait(&q->idle, &q->lock);
	ncm_mutex_unlock(&q->lock);
}
