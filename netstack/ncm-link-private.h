/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-link-private.h: NcmLink's insides, for the links and the stacks of this tree (not installed). */
#pragma once

/*
 * A link moves Ethernet frames; a stack (lwIP, the TAP backend) consumes
 * them. The stack hands the link an NcmLinkSink (receive, receive_done,
 * writable), which the link calls on its own data thread (for an
 * NcmDevice: the libusb event thread). The stack sends through the ops
 * below from any thread. Nothing here goes through a GMainContext.
 * The installed ncm-link.h keeps NcmLink opaque, so that these ops are
 * no ABI.
 */

#include "ncm-link.h"

G_BEGIN_DECLS

typedef struct {
	/* Any thread. Same contract as ncm_device_sendv(). */
	NcmSendResult (*sendv)(NcmLink *link, const GOutputVector *vectors, guint n_vectors);
	/* Any thread: the producer has nothing more queued. */
	void (*flush)(NcmLink *link);
	/* Attaches the stack's sink; call before start. */
	void (*set_sink)(NcmLink *link, const NcmLinkSink *sink, gpointer user_data);
	/* Optional, before start: writable once per burst of freed room, for a
	 * sink that refills inside the callback (ncm_device_set_writable_batched()).
	 * NULL where there are no completions to batch (a TAP fd's writable
	 * comes from poll()). */
	void (*set_writable_batched)(NcmLink *link, gboolean batched);
	/* Optional, before start: the stack flushes every burst itself, so an
	 * NTB opened on an idle link needs no timer armed at once
	 * (ncm_device_set_sender_flushes()). */
	void (*set_sender_flushes)(NcmLink *link, gboolean flushes);
	/* Optional, any thread: the bytes the link lets queue now, from its
	 * pacing rate or a bus below high speed (ncm_device_get_tx_queue_limit());
	 * 0 when unlimited. */
	guint64 (*queue_limit)(NcmLink *link);
	/* Starts delivering frames to the sink. */
	gboolean (*start)(NcmLink *link, GError **error);
	/* Stops delivery and waits until no sink callback runs. Not from the data thread. */
	void (*stop)(NcmLink *link);
	void (*free)(NcmLink *link);
} NcmLinkOps;

struct _NcmLink {
	const NcmLinkOps *ops;
	guint8 mac[6];      /* the MAC this side uses as its own (iMACAddress for NCM) */
	guint max_frame;    /* largest Ethernet frame, no FCS (MTU + 14) */
};

static inline NcmSendResult
ncm_link_sendv(NcmLink *link, const GOutputVector *vectors, guint n_vectors)
{
	return link->ops->sendv(link, vectors, n_vectors);
}

static inline void
ncm_link_flush(NcmLink *link)
{
	link->ops->flush(link);
}

static inline void
ncm_link_set_writable_batched(NcmLink *link, gboolean batched)
{
	if (link->ops->set_writable_batched)
		link->ops->set_writable_batched(link, batched);
}

static inline void
ncm_link_set_sender_flushes(NcmLink *link, gboolean flushes)
{
	if (link->ops->set_sender_flushes)
		link->ops->set_sender_flushes(link, flushes);
}

static inline guint64
ncm_link_queue_limit(NcmLink *link)
{
	return link->ops->queue_limit ? link->ops->queue_limit(link) : 0;
}

G_END_DECLS
