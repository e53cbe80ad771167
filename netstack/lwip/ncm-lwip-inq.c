/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-inq.c: a netif's received frames waiting for whoever holds lwIP's core lock. */
#include "ncm-lwip-inq.h"

void
nlw_inq_init(NlwInq *q, guint size)
{
	guint n = 1;

	while (n < size)
		n <<= 1;
	*q = (NlwInq){.size = n};
	q->ring = g_new0(NlwInqItem, n);
}

void
nlw_inq_clear(NlwInq *q, void (*free_item)(gpointer item))
{
	NlwInqItem it;

	while (q->ring != NULL && nlw_inq_pop(q, &it))
		free_item(it.item);
	g_clear_pointer(&q->ring, g_free);
}

gboolean
nlw_inq_push(NlwInq *q, gpointer item, guint tag)
{
	guint tail = __atomic_load_n(&q->tail, __ATOMIC_RELAXED); /* only this thread writes it */
	guint head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);

	/* Indices run freely and wrap: tail - head is the count. */
	if (tail - head == q->size)
		return FALSE;
	q->ring[tail & (q->size - 1)] = (NlwInqItem){item, tag};
	/* The slot is written before the consumer can see it. */
	__atomic_store_n(&q->tail, tail + 1, __ATOMIC_RELEASE);
	return TRUE;
}

gboolean
nlw_inq_pop(NlwInq *q, NlwInqItem *ret)
{
	/* Only the consumer writes it: one at a time, under the core lock. */
	guint head = __atomic_load_n(&q->head, __ATOMIC_RELAXED);

	if (__atomic_load_n(&q->tail, __ATOMIC_ACQUIRE) == head)
		return FALSE;
	*ret = q->ring[head & (q->size - 1)];
	/* The slot is read before the producer may reuse it. */
	__atomic_store_n(&q->head, head + 1, __ATOMIC_RELEASE);
	return TRUE;
}
