/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-outq.c: a netif's frames on their way to its link, sent outside lwIP's core lock. */
#include "ncm-lwip-outq.h"

#include "ncm-sync.h"

void
nlw_outq_init(NlwOutq *q, guint size)
{
	*q = (NlwOutq){.size = size};
	g_mutex_init(&q->lock);
	g_cond_init(&q->idle);
	q->ring = g_new0(gpointer, size);
}

void
nlw_outq_clear(NlwOutq *q, void (*free_item)(gpointer item))
{
	for (; q->len > 0; q->len--) {
		free_item(q->ring[q->head]);
		q->head = (q->head + 1) % q->size;
	}
	g_clear_pointer(&q->ring, g_free);
	g_cond_clear(&q->idle);
	g_mutex_clear(&q->lock);
}

gboolean
nlw_outq_push(NlwOutq *q, gpointer item, gboolean *ret_blocked)
{
	gboolean ok;

	ncm_mutex_lock(&q->lock);
	ok = q->len < q->size && !q->closed;
	if (ok) {
		/* A drain reads ring[head .. head+len) without the lock; this
		 * slot lies past it. */
		q->ring[(q->head + q->len) % q->size] = item;
		q->len++;
	}
	*ret_blocked = q->blocked;
	ncm_mutex_unlock(&q->lock);
	return ok;
}

/* q->lock held, q->draining ours: sends the @n items at the head without
 * the lock, frees those that left; returns how many left the queue. */
static guint
send_head(NlwOutq *q, guint n, const NlwOutqOps *ops, gpointer data, gboolean *ret_blocked)
{
	guint head = q->head, i;

	ncm_mutex_unlock(&q->lock);
	*ret_blocked = FALSE;
	for (i = 0; i < n; i++) {
		gpointer item = q->ring[(head + i) % q->size];
		NlwOutqSend r = ops->send(item, data);

		if (r == NLW_OUTQ_BLOCKED) {
			*ret_blocked = TRUE;
			break;
		}
		ops->free(item);
	}
	ncm_mutex_lock(&q->lock);
	q->head = (q->head + i) % q->size;
	q->len -= i;
	return i;
}

/* q->lock held, q->draining ours. Items pushed while it sends are sent in
 * the same drain; it ends with the queue empty or the link blocked. */
static void
drain_locked(NlwOutq *q, const NlwOutqOps *ops, gpointer data)
{
	gboolean flush = FALSE;

	for (;;) {
		guint epoch = q->writable_epoch;
		gboolean blocked = FALSE;

		if (q->len > 0) {
			send_head(q, q->len, ops, data, &blocked);
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
		if (q->blocked || q->len == 0)
			break;
	}
}

static void
drain_maybe_locked(NlwOutq *q, const NlwOutqOps *ops, gpointer data)
{
	if (q->draining || q->blocked || q->closed || q->len == 0)
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
