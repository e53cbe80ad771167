/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-inq.h: received frames waiting for whoever holds lwIP's core lock (private). */
#pragma once

#include <glib.h>

/*
 * At 8 devices the link's event thread waited ~10 % of its time for lwIP's
 * core lock while writer threads held it for tcp_write() and tcp_output()
 * (~1.3 ms per wait under TCG; tests/bench/RESULTS.md, session 14). When
 * the lock is busy, the event thread leaves the batch here and goes back to
 * USB; the thread that holds the lock inputs it before it lets go
 * (ncm-lwip-stack.c, nlw_input_post()).
 *
 * One producer (the netif's link thread) and one consumer at a time (the
 * core lock's holder), so the ring needs no lock: the producer owns tail,
 * the consumer head. Frames leave in the order they came. Items are opaque
 * (pbufs) with a tag each (whether the copy checked the TCP checksum), so
 * the queue is tested without lwIP.
 */

typedef struct {
	gpointer item;
	guint tag;
} NlwInqItem;

typedef struct {
	NlwInqItem *ring;
	guint size; /* a power of two */
	guint head; /* atomic: next to pop; written by the consumer */
	guint tail; /* atomic: next free slot; written by the producer */
} NlwInq;

/* @size: rounded up to a power of two. */
void nlw_inq_init(NlwInq *q, guint size);
/* Frees what is still queued with @free_item; nobody pushes or pops any more. */
void nlw_inq_clear(NlwInq *q, void (*free_item)(gpointer item));

/* Producer. FALSE when full (the item stays the caller's). */
gboolean nlw_inq_push(NlwInq *q, gpointer item, guint tag);
/* Consumer. FALSE when empty. */
gboolean nlw_inq_pop(NlwInq *q, NlwInqItem *ret);
