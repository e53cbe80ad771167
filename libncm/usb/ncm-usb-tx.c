/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-tx.c: packing datagrams into NTBs on the producer's thread, pacing, flushing. */
#include <string.h>

#include "ncm-usb-device.h"
#include "ncm-usb-tx-config.h"


#define NCM_DEFAULT_FLUSH_US 2000
/*
 * What one OUT transfer carries at most when the device's NTBs are small:
 * full NTBs back to back (ncm_ntb_packer_finish_full() says why), and how
 * many such transfers are in flight. Against 16 transfers of one 16 KiB
 * NTB each (f_ncm), 8 of 64 KiB carried ncm-tun's upload 1.32x as fast at
 * 0.79x the CPU per MB and its download 1.12x, with a quarter fewer usbfs
 * ioctls and half the producer's waits for room; 4 of 64 KiB (the same
 * 256 KiB in flight as before) gained nothing on the upload
 * (tests/bench/RESULTS.md, session 20). 8 of 128 KiB (8 NTBs each) then
 * carried the upload 1.17x and 1.21x as fast at 0.87x and 0.88x the CPU
 * per MB in two boots, with 0.9x the usbfs ioctls and 0.6x the futex
 * calls per MB: the reader waits for room half as often; 4 of 128 KiB
 * gained nothing (session 22). The price: 1 MiB of usbfs memory per
 * device for TX, and that much more can queue behind a sender.
 * -D either for A/Bs.
 */
#ifndef NCM_TX_TRANSFER_BYTES
#define NCM_TX_TRANSFER_BYTES 131072u
#endif
#ifndef NCM_TX_CHAINED_TRANSFERS
#define NCM_TX_CHAINED_TRANSFERS 8u
#endif
/* ... and what a caller may ask for (NcmDeviceOptions.tx_ntbs_per_transfer). */
#define NCM_TX_TRANSFER_MAX_BYTES (1024u * 1024u)
/* No OUT completion for this long while transfers are in flight: say so. */
#define NCM_TX_STUCK_US (10 * G_USEC_PER_SEC)

static void LIBUSB_CALL tx_complete(struct libusb_transfer *xfer);

/*
 * wMaxSegmentSize may promise frames no OUT NTB can carry (a small
 * dwNtbOutMaxSize, a large divisor). Every such frame would be refused as
 * invalid one by one; the MTU is lowered to what fits instead, once, saying
 * so. RX keeps accepting what the device may send.
 */
static gboolean
clamp_max_frame(NcmDevice *self, GError **error)
{
	NcmNtbInfo *n = &self->ntb;
	size_t room = ncm_ntb_packer_room(&self->packer);

	if (room >= n->max_frame)
		return TRUE;
	/* IPv4's smallest MTU, 68, in a frame. */
	if (room < 14 + 68) {
		g_set_error(error, NCM_ERROR, NCM_ERROR_PROTOCOL,
			    "%04x:%04x: its OUT NTBs (%u bytes, NTB%s) hold frames of at most %zu "
			    "bytes, too few for any IP packet: it cannot be driven; report it with "
			    "ncm-probe's output", self->info->vid, self->info->pid, n->tx_ntb_size,
			    n->ntb32 ? "32" : "16", room);
		return FALSE;
	}
	g_warning("%04x:%04x: its OUT NTBs (%u bytes, NTB%s) hold frames of at most %zu bytes, "
		  "less than its maximum segment size %u: using an MTU of %zu",
		  self->info->vid, self->info->pid, n->tx_ntb_size, n->ntb32 ? "32" : "16", room,
		  n->max_frame, room - 14);
	n->max_frame = (guint)room;
	return TRUE;
}

/* The bus's rate when it, not the transfer pool, must bound the queue:
 * below high speed (ncm-ntb-sched.h). */
static guint64
slow_bus_rate(guint speed_mbps)
{
	return speed_mbps && speed_mbps < 480 ? (guint64)speed_mbps * 1000000 / 8 : 0;
}

/*
 * How many NTBs one OUT transfer carries: only NTBs of exactly the
 * device's dwNtbOutMaxSize may follow each other (the device reads blocks
 * of that size), and only where the packer can fill one to that size.
 */
static guint
tx_chain_for(const NcmNtbInfo *n, const NcmNtbPackConfig *pc, guint asked, gboolean slow_bus)
{
	if (asked == 1 || n->tx_ntb_size != n->out_max_size || !ncm_ntb_pack_config_can_finish_full(pc))
		return 1;
	/* A transfer of several NTBs would be most of a slow bus's queue. */
	if (!asked && slow_bus)
		return 1;
	if (asked)
		return MIN(asked, MAX(1u, NCM_TX_TRANSFER_MAX_BYTES / n->tx_ntb_size));
	return MAX(1u, NCM_TX_TRANSFER_BYTES / n->tx_ntb_size);
}

/* Readers of ncm_device_get_tx_queue_limit() take no lock. */
static void
publish_queue_limit_locked(NcmDevice *self)
{
	size_t limit = ncm_ntb_sched_queue_limit(&self->sched);

	__atomic_store_n(&self->stats.tx_queue_limit, limit == SIZE_MAX ? 0 : (guint64)limit,
			 __ATOMIC_RELAXED);
}

gboolean
ncm_device_tx_setup(NcmDevice *self, GError **error)
{
	NcmNtbInfo *n = &self->ntb;
	NcmNtbPackConfig pc = ncm_usb_tx_pack_config(n, self->info->bulk_out_max_packet,
						     self->options.ndp_first);

	guint64 bus_rate = slow_bus_rate(self->info->speed_mbps);

	self->tx_chain = tx_chain_for(n, &pc, self->options.tx_ntbs_per_transfer, bus_rate != 0);
	n->tx_ntbs_per_transfer = self->tx_chain;
	if (self->options.tx_transfers)
		n->tx_transfers = self->options.tx_transfers;
	else if (self->tx_chain > 1)
		n->tx_transfers = NCM_TX_CHAINED_TRANSFERS;
	else
		n->tx_transfers = ncm_ntb_sched_default_slots(n->tx_ntb_size);
	n->tx_transfers = MIN(n->tx_transfers, NCM_MAX_TX_TRANSFERS);
	if (!self->options.flush_timeout_us)
		self->options.flush_timeout_us = NCM_DEFAULT_FLUSH_US;
	self->n_tx = n->tx_transfers;
	self->tx = g_new0(NcmSlot, self->n_tx);
	for (guint i = 0; i < self->n_tx; i++) {
		NcmSlot *slot = &self->tx[i];

		slot->device = self;
		slot->index = i;
		slot->buf = ncm_device_buf_alloc(self, (gsize)self->tx_chain * n->tx_ntb_size);
		slot->xfer = libusb_alloc_transfer(0);
		libusb_fill_bulk_transfer(slot->xfer, self->handle, self->info->bulk_out_ep, slot->buf,
					  0, tx_complete, slot, 0);
	}
	/* The pacer's bucket stays at two NTBs: a transfer of several takes
	 * the bucket below zero, and the next waits the longer. */
	ncm_ntb_sched_init(&self->sched, self->n_tx, n->tx_ntb_size, self->options.flush_timeout_us,
			   self->options.pace_bytes_per_sec, g_get_monotonic_time());
	ncm_ntb_sched_set_bus_rate(&self->sched, bus_rate);
	ncm_ntb_packer_init(&self->packer, &pc, self->tx[0].buf, n->tx_ntb_size, 0);
	publish_queue_limit_locked(self);
	g_warn_if_fail(self->tx_chain == 1 || ncm_ntb_packer_can_finish_full(&self->packer));
	ncm_ntb_wake_init(&self->tx_wake);
	if (!clamp_max_frame(self, error))
		return FALSE;
	/* RX is set up first: this counts both directions. */
	n->mapped_buffers = ncm_device_buf_mapped(self);
	g_debug("%u of %u transfer buffers are usbfs-mapped", n->mapped_buffers,
		2 * self->n_rx + self->n_tx);
	return TRUE;
}

/* ---- Submission ---------------------------------------------------------- */

static void
submit_locked(NcmDevice *self, NcmSlot *slot, gint64 now)
{
	int r;

	if (ncm_ntb_sched_in_flight(&self->sched) <= 1)
		self->tx_busy_since = now;  /* the clock starts now */
	r = ncm_device_submit(self, slot->xfer, FALSE);

	if (r == 0)
		return;
	ncm_ntb_sched_release(&self->sched, slot->index);
	if (r == LIBUSB_ERROR_NO_DEVICE)
		ncm_device_mark_gone(self);
	else if (r != LIBUSB_ERROR_INTERRUPTED)
		NCM_STAT_ADD(self, tx_errors, 1);
}

/* Sends held-back NTBs, oldest first, while the pacer allows. */
static void
drain_paced_locked(NcmDevice *self, gint64 now)
{
	int slot;

	while ((slot = ncm_ntb_sched_next(&self->sched, now)) >= 0)
		submit_locked(self, &self->tx[slot], now);
	if (ncm_ntb_sched_held(&self->sched))
		ncm_context_wake(self->context, ncm_ntb_sched_pace_deadline(&self->sched, now));
}

static void
count_flush(NcmDevice *self, NcmFlushReason reason)
{
	switch (reason) {
	case NCM_FLUSH_FULL: NCM_STAT_ADD(self, tx_flush_full, 1); break;
	case NCM_FLUSH_LIMIT: NCM_STAT_ADD(self, tx_flush_limit, 1); break;
	case NCM_FLUSH_EXPLICIT: NCM_STAT_ADD(self, tx_flush_explicit, 1); break;
	case NCM_FLUSH_TIMER: NCM_STAT_ADD(self, tx_flush_timer, 1); break;
	}
}

static void
close_ntb_locked(NcmDevice *self, NcmFlushReason reason)
{
	NcmSlot *slot = &self->tx[ncm_ntb_sched_open_slot(&self->sched)];
	gint64 now = g_get_monotonic_time();
	bool zlp = false;
	size_t len;
	int go;

	slot->datagrams += ncm_ntb_packer_count(&self->packer);
	len = (size_t)slot->chained * self->ntb.tx_ntb_size + ncm_ntb_packer_finish(&self->packer, &zlp);
	slot->xfer->length = (int)len;
	if (zlp)
		slot->xfer->flags |= LIBUSB_TRANSFER_ADD_ZERO_PACKET;
	else
		slot->xfer->flags &= ~LIBUSB_TRANSFER_ADD_ZERO_PACKET;
	count_flush(self, reason);
	go = ncm_ntb_sched_close(&self->sched, len, now);
	if (go >= 0) {
		submit_locked(self, slot, now);
		return;
	}
	NCM_STAT_ADD(self, tx_paced_waits, 1);
	drain_paced_locked(self, now);
}

static gboolean
open_ntb_locked(NcmDevice *self)
{
	gint64 now = g_get_monotonic_time();
	int index = ncm_ntb_sched_open(&self->sched, now);
	NcmSlot *slot;

	if (index < 0)
		return FALSE;
	slot = &self->tx[index];
	slot->bytes = 0;
	slot->datagrams = 0;
	slot->chained = 0;
	ncm_ntb_packer_reset(&self->packer, slot->buf, self->tx_sequence++);
	ncm_ack_reset(&self->tx_acks);
	/*
	 * The flush timer needs the event thread to know this NTB's deadline.
	 * With transfers in flight it will look at its timers again at their
	 * completion anyway, and this NTB cannot reach the device before them:
	 * no need to interrupt it, which per NTB was a syscall here and a wake-up
	 * there (issue 15). Nor when every sender flushes its bursts itself.
	 */
	if (ncm_ntb_sched_wake_on_open(&self->sched, self->sender_flushes))
		ncm_context_wake(self->context, now + self->options.flush_timeout_us);
	return TRUE;
}

static gboolean
is_open_locked(NcmDevice *self)
{
	return ncm_ntb_sched_open_slot(&self->sched) >= 0;
}

/*
 * The open NTB is full: it stays in the open transfer, padded to the
 * device's NTB size, and the next NTB starts right behind it, while other
 * transfers are in flight and the transfer has room. With the bus idle
 * the full NTB goes out at once instead, as without chaining. A transfer
 * holds at most half of what a paced device may queue: two transfers
 * still keep its bus busy. FALSE when it must be closed.
 */
static gboolean
chain_locked(NcmDevice *self)
{
	NcmSlot *slot = &self->tx[ncm_ntb_sched_open_slot(&self->sched)];
	guint16 count = ncm_ntb_packer_count(&self->packer);
	gsize after = ((gsize)slot->chained + 2) * self->ntb.tx_ntb_size;

	if ((guint)slot->chained + 1 >= self->tx_chain || count >= self->packer.limit ||
	    after > ncm_ntb_sched_queue_limit(&self->sched) / 2 ||
	    ncm_ntb_sched_in_flight(&self->sched) == 0 || !ncm_ntb_packer_finish_full(&self->packer))
		return FALSE;
	slot->datagrams += count;
	slot->chained++;
	ncm_ntb_packer_reset(&self->packer, slot->buf + (gsize)slot->chained * self->ntb.tx_ntb_size,
			     self->tx_sequence++);
	ncm_ack_reset(&self->tx_acks);
	NCM_STAT_ADD(self, tx_flush_full, 1);
	return TRUE;
}

static guint8 *
reserve_locked(NcmDevice *self, gsize len, NcmSendResult *ret)
{
	NcmNtbPackStatus st;
	guint8 *p;

	if (!is_open_locked(self) && !open_ntb_locked(self))
		goto would_block;
	p = ncm_ntb_packer_reserve(&self->packer, len, &st);
	if (!p && st == NCM_NTB_PACK_FULL) {
		if (!chain_locked(self)) {
			close_ntb_locked(self, NCM_FLUSH_FULL);
			if (!open_ntb_locked(self))
				goto would_block;
		}
		p = ncm_ntb_packer_reserve(&self->packer, len, &st);
	}
	if (!p) {
		NCM_STAT_ADD(self, tx_invalid, 1);
		*ret = NCM_SEND_INVALID;
	}
	return p;
would_block:
	ncm_ntb_wake_refused(&self->tx_wake);
	NCM_STAT_ADD(self, tx_would_block, 1);
	*ret = NCM_SEND_WOULD_BLOCK;
	return NULL;
}

/*
 * Tx lock held. A pure ACK that supersedes one of its flow in the open NTB
 * takes that one's place (ncm-ack.h). Only single-vector frames: producers
 * hand ACKs over in one piece (lwIP builds them in one pbuf, TAP reads one
 * frame per read). A frame in pieces is still tracked once copied
 * (ncm_device_sendv()) while the NTB holds ACKs: the TAP reader's TSO
 * segments come so, and an ACK of their flow must not merge past them.
 */
static gboolean
merge_ack_locked(NcmDevice *self, const GOutputVector *vectors, guint n_vectors, gsize len,
		 NcmAckInfo *info)
{
	info->tcp = FALSE;
	if (self->options.no_ack_merge || n_vectors != 1 || !is_open_locked(self) ||
	    !ncm_ack_classify(vectors[0].buffer, len, info) ||
	    !ncm_ack_merge(&self->tx_acks, self->packer.buf, self->packer.tail, vectors[0].buffer, len, info))
		return FALSE;
	NCM_STAT_ADD(self, tx_acks_merged, 1);
	return TRUE;
}

NcmSendResult
ncm_device_sendv(NcmDevice *self, const GOutputVector *vectors, guint n_vectors)
{
	NcmSendResult ret = NCM_SEND_OK;
	NcmAckInfo ack;
	gsize len = 0;
	guint8 *p;

	for (guint i = 0; i < n_vectors; i++)
		len += vectors[i].size;
	if (len < NCM_ETH_MIN_FRAME || len > self->ntb.max_frame) {
		NCM_STAT_ADD(self, tx_invalid, 1);
		/* Once a session: an interface MTU raised past the device's drops
		 * every large frame, which only a counter would show. */
		if (len > self->ntb.max_frame && self->ntb.max_frame && self->info &&
		    g_atomic_int_compare_and_exchange(&self->tx_oversize_told, 0, 1))
			g_warning("%04x:%04x: a frame of %" G_GSIZE_FORMAT " bytes is over its maximum "
				  "of %u (MTU %u): dropped, as every such frame (counted in "
				  "tx_invalid); is the interface's MTU set higher?", self->info->vid,
				  self->info->pid, len, self->ntb.max_frame, self->ntb.max_frame - 14u);
		return NCM_SEND_INVALID;
	}
	ncm_mutex_lock(&self->tx_lock);
	if (!g_atomic_int_get(&self->running) || g_atomic_int_get(&self->gone)) {
		ncm_mutex_unlock(&self->tx_lock);
		return NCM_SEND_CLOSED;
	}
	if (merge_ack_locked(self, vectors, n_vectors, len, &ack)) {
		ncm_mutex_unlock(&self->tx_lock);
		return NCM_SEND_OK;
	}
	p = reserve_locked(self, len, &ret);
	if (p) {
		guint8 *frame = p;

		for (guint i = 0; i < n_vectors; i++) {
			memcpy(p, vectors[i].buffer, vectors[i].size);
			p += vectors[i].size;
		}
		/* The tail nudge learns the host's addresses from its own ARP
		 * and neighbour discovery packets; ncm-usb-timers.c takes them on the event thread. */
		if (ncm_nudge_learn_tx(&self->nudge_tx, frame, len) == NCM_NUDGE_TX_ASK)
			self->nudge_tx.asked_at = g_get_monotonic_time();
		self->tx[ncm_ntb_sched_open_slot(&self->sched)].bytes += (guint32)len;
		if (ack.tcp)
			ncm_ack_track(&self->tx_acks, self->packer.buf, self->packer.tail,
				      (guint32)(frame - self->packer.buf), len, &ack);
		else if (n_vectors > 1 && self->tx_acks.n > 0)
			ncm_ack_track_copied(&self->tx_acks, self->packer.buf, self->packer.tail,
					     (guint32)(frame - self->packer.buf), len);
		if (ncm_ntb_packer_count(&self->packer) >= self->packer.limit)
			close_ntb_locked(self, NCM_FLUSH_LIMIT);
	}
	ncm_mutex_unlock(&self->tx_lock);
	return ret;
}

NcmSendResult
ncm_device_send(NcmDevice *self, const guint8 *frame, gsize len)
{
	GOutputVector v = { frame, len };

	return ncm_device_sendv(self, &v, 1);
}

void
ncm_device_flush(NcmDevice *self)
{
	ncm_mutex_lock(&self->tx_lock);
	if (is_open_locked(self) && ncm_ntb_packer_count(&self->packer) > 0 &&
	    g_atomic_int_get(&self->running))
		close_ntb_locked(self, NCM_FLUSH_EXPLICIT);
	ncm_mutex_unlock(&self->tx_lock);
}

void
ncm_device_set_pacing(NcmDevice *self, guint64 bytes_per_sec)
{
	gint64 now = g_get_monotonic_time();

	ncm_mutex_lock(&self->tx_lock);
	ncm_ntb_sched_set_pace(&self->sched, bytes_per_sec, now);
	publish_queue_limit_locked(self);
	if (!bytes_per_sec)
		drain_paced_locked(self, now);
	ncm_mutex_unlock(&self->tx_lock);
}

/*
 * A device that stops completing OUT transfers fills the pool for good,
 * and producers only ever see NCM_SEND_WOULD_BLOCK. Say so once, after
 * NCM_TX_STUCK_US without a completion while something is in flight.
 */
static gint64
check_stuck_locked(NcmDevice *self, gint64 now)
{
	gint64 due = self->tx_busy_since + NCM_TX_STUCK_US;
	guint n = ncm_ntb_sched_in_flight(&self->sched);

	if (n == 0 || self->tx_stuck_told || !g_atomic_int_get(&self->running))
		return G_MAXINT64;
	if (now < due)
		return due;
	self->tx_stuck_told = TRUE;
	ncm_device_post_error(self, g_error_new(NCM_ERROR, NCM_ERROR_PROTOCOL,
				"sending stopped: %04x:%04x has taken no data for %d s (%u NTBs "
				"waiting); replug or reopen it", self->info->vid, self->info->pid,
				(int)(NCM_TX_STUCK_US / G_USEC_PER_SEC), n));
	return G_MAXINT64;
}

/* Event thread (ncm-usb-timers.c): the last-resort flush and paced NTBs due. */
gint64
ncm_device_tx_tick(NcmDevice *self, gint64 now)
{
	gint64 next;

	ncm_mutex_lock(&self->tx_lock);
	if (ncm_ntb_sched_flush_due(&self->sched, ncm_ntb_packer_count(&self->packer), now))
		close_ntb_locked(self, NCM_FLUSH_TIMER);
	if (ncm_ntb_sched_held(&self->sched))
		drain_paced_locked(self, now);
	next = ncm_ntb_sched_deadline(&self->sched,
				      is_open_locked(self) ? ncm_ntb_packer_count(&self->packer) : 0,
				      now);
	next = MIN(next, check_stuck_locked(self, now));
	ncm_mutex_unlock(&self->tx_lock);
	return next;
}

/* Event thread: what the host's ARP and ND packets taught TX since the last call. */
void
ncm_device_tx_take_nudge(NcmDevice *self, NcmNudgeTx *ret_tx)
{
	ncm_mutex_lock(&self->tx_lock);
	*ret_tx = self->nudge_tx;
	self->nudge_tx.v4.fresh = self->nudge_tx.v6.fresh = FALSE;
	self->nudge_tx.asked_at = 0;
	ncm_mutex_unlock(&self->tx_lock);
}

/* ---- Completion (libusb event thread) ------------------------------------ */

static void LIBUSB_CALL
tx_complete(struct libusb_transfer *xfer)
{
	NCM_COMPLETION_SCOPE();
	NcmSlot *slot = xfer->user_data;
	NcmDevice *self = slot->device;
	gboolean wake;
	gint64 now;
	NCM_HANDLING_SCOPE(self->context);  /* sink.writable runs user code */

	switch (xfer->status) {
	case LIBUSB_TRANSFER_COMPLETED:
		/* Counted only now: bytes the device accepted, not bytes we queued. */
		NCM_STAT_ADD(self, tx_ntbs, 1u + slot->chained);
		NCM_STAT_ADD(self, tx_transfers, 1);
		NCM_STAT_ADD(self, tx_datagrams, slot->datagrams);
		NCM_STAT_ADD(self, tx_bytes, slot->bytes);
		break;
	case LIBUSB_TRANSFER_CANCELLED:
		break;
	case LIBUSB_TRANSFER_NO_DEVICE:
		ncm_device_mark_gone(self);
		break;
	case LIBUSB_TRANSFER_STALL:
		/* This NTB is lost; the ones after it need the halt cleared. */
		NCM_STAT_ADD(self, tx_errors, 1);
		ncm_device_halt_clear_out(self);
		break;
	default:
		NCM_STAT_ADD(self, tx_errors, 1);
		break;
	}
	ncm_mutex_lock(&self->tx_lock);
	now = g_get_monotonic_time();
	self->tx_busy_since = now;
	self->tx_stuck_told = FALSE;
	ncm_ntb_sched_release(&self->sched, slot->index);
	if (ncm_ntb_sched_held(&self->sched))
		drain_paced_locked(self, now);
	wake = ncm_ntb_wake_completed(&self->tx_wake, self->writable_batched);
	ncm_mutex_unlock(&self->tx_lock);
	if (wake && self->sink.writable) {
		NCM_TOUCH(self, "sink.writable");
		self->sink.writable(self->sink_data);
	}
	/* Last: once the count drops, close() may free the device. */
	ncm_device_landed(self);
}

/*
 * Event thread, from the device's timeout between libusb's event batches
 * (ncm-usb-timers.c), for a sink that asked for it: every slot the batch's
 * completions freed, told once (ncm-ntb-wake.h). Close removes that
 * timeout before it frees anything, as for receive_done.
 */
void
ncm_device_tx_batch_end(NcmDevice *self)
{
	if (!ncm_ntb_wake_batch_end(&self->tx_wake) || !self->sink.writable)
		return;
	NCM_TOUCH(self, "sink.writable");
	self->sink.writable(self->sink_data);
}

void
ncm_device_tx_cancel(NcmDevice *self)
{
	ncm_mutex_lock(&self->tx_lock);
	/* Held-back NTBs were never submitted: they just go back to the pool. */
	ncm_ntb_sched_cancel(&self->sched);
	ncm_mutex_unlock(&self->tx_lock);
	for (guint i = 0; self->tx && i < self->n_tx; i++)
		libusb_cancel_transfer(self->tx[i].xfer);
}

void
ncm_device_tx_free(NcmDevice *self)
{
	ncm_mutex_lock(&self->tx_lock);
	for (guint i = 0; self->tx && i < self->n_tx; i++) {
		libusb_free_transfer(self->tx[i].xfer);
		ncm_device_buf_free(self, self->tx[i].buf, (gsize)self->tx_chain * self->ntb.tx_ntb_size);
	}
	g_clear_pointer(&self->tx, g_free);
	ncm_mutex_unlock(&self->tx_lock);
}
