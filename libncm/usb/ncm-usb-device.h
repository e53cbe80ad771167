/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-device.h: NcmDevice's state, shared by the driver's files, and what each of them offers the others. */
#pragma once

#include <libusb.h>

#include "ncm-ack.h"
#include "ncm-cdc.h"
#include "ncm-device.h"
#include "ncm-error.h"
#include "ncm-ntb-retry.h"
#include "ncm-ntb-sched.h"
#include "ncm-ntb-wake.h"
#include "ncm-ntb.h"
#include "ncm-nudge.h"
#include "ncm-sync.h"
#include "ncm-usb-context.h"
#include "ncm-usb-function.h"

/*
 * Who calls whom, so that no two files call each other:
 *
 *   ncm-usb-device.c   life cycle, getters ─┬─> open, rx, tx, notify, timers, halt
 *   ncm-usb-rx.c       bulk IN              ├─> timers (what RX saw), halt, retry, fault
 *   ncm-usb-notify.c   interrupt IN         ├─> halt, retry
 *   ncm-usb-timers.c   the one timeout      └─> tx (flush, pacing, nudge frames), retry
 *   ncm-usb-tx.c       bulk OUT
 *   ncm-usb-halt.c     clearing a STALL     ──> retry
 *   ncm-usb-retry.c    failed IN transfers back after their round
 *     ... all of them ─> ncm-usb-flight.c (submit/landed), ncm-usb-events.c
 *                        (signals to the owner), ncm-usb-buf.c, the context
 */

#define NCM_MAX_RX_TRANSFERS 64
#define NCM_MAX_TX_TRANSFERS NCM_NTB_SCHED_MAX_SLOTS
#define NCM_CONTROL_TIMEOUT_MS 3000

/* Datagrams of one NTB held for ACK thinning before delivery; an NTB with
 * more is delivered in runs of this many. */
#define NCM_RX_COLLECT 256

typedef struct {
	NcmDevice *device;
	struct libusb_transfer *xfer;
	guint8 *buf;         /* TX: the NTB (RX buffers live in xfer->buffer) */
	guint8 *spare;       /* RX: the buffer parsed while xfer's is back in flight */
	guint index;
	guint32 datagrams;   /* TX: datagrams in this transfer, for stats at completion */
	guint16 chained;     /* TX: full NTBs before the last one in this transfer */
	guint32 bytes;       /* TX: datagram bytes in this transfer */
} NcmSlot;

typedef enum {
	NCM_STATE_OPEN,      /* negotiated, nothing in flight */
	NCM_STATE_RUNNING,
	NCM_STATE_CLOSING,
	NCM_STATE_CLOSED,
} NcmState;

typedef enum {
	NCM_FLUSH_FULL,
	NCM_FLUSH_LIMIT,
	NCM_FLUSH_EXPLICIT,
	NCM_FLUSH_TIMER,
} NcmFlushReason;

struct _NcmDevice {
	GObject parent;
	NcmContext *context;
	GMainContext *owner;
	libusb_device_handle *handle;
	int fd;                   /* usbfs node we opened and wrapped, or -1 */
	NcmFunctionInfo *info;
	NcmDeviceOptions options;
	NcmNtbInfo ntb;
	guint8 mac[6];
	gboolean detached_comm;
	gboolean claimed_comm;
	gboolean claimed_data;
	GHashTable *dev_mem;      /* transfer buffers in usbfs-mapped memory (ncm-usb-buf.c) */

	/* Set before start, then read-only on the event thread. */
	NcmLinkSink sink;
	gpointer sink_data;
	gboolean writable_batched; /* the sink hears writable once per event batch */
	gboolean sender_flushes;   /* every sender flushes its bursts: no timer wake at open */
	/* Under libusb's event lock: NTBs were delivered since the sink last
	 * heard receive_done (ncm-usb-timers.c tells it once per event batch). */
	gboolean rx_done_pending;
	NcmNtbParseConfig parse_config;
	guint rx_max_frame;       /* set at open: the longest datagram accepted (ncm-usb-open.c) */
	guint64 rx_batch_bytes;   /* event thread only */
#ifdef NCM_TEST_HOOKS
	guint fault_one_in;       /* ncm-usb-fault.c: NCM_TEST_FAULT_ONE_IN at open */
	guint32 fault_state;      /* event thread only: xorshift for fault injection */
	guint fault_resubmit;     /* under flight_lock: NCM_TEST_FAIL_RESUBMIT's pipe, until used */
#endif
	NcmNudge nudge;           /* event thread only (RX reports, ncm-usb-timers.c sends) */
	/* ncm-usb-timers.c, event thread only: the host's unanswered requests
	 * (ARP, or neighbour solicitations). */
	gint64 rx_quiet_since;    /* the first one no NTB followed, or 0 */
	guint rx_quiet_asks;      /* ... and how many since */
	guint64 rx_quiet_tx_ntbs; /* stats.tx_ntbs when that spell began */
	gboolean rx_quiet_told;   /* "receiving stopped" went out for this spell */
	gboolean rx_quiet_v6;     /* ... whose asks were neighbour solicitations */

	/*
	 * Guards state, in_flight and the stalled list. Taken around every
	 * submission so that close() can stop resubmission and then cancel
	 * exactly what is in flight. Lock order: tx_lock, then flight_lock.
	 */
	GMutex flight_lock;
	GCond flight_cond;
	NcmState state;
	guint in_flight;
	GPtrArray *stalled;       /* NcmSlot* waiting for the halt to clear */
	/* ncm-usb-retry.c: failed IN transfers (bulk and the interrupt one)
	 * waiting for their retry round; out of the flight count. */
	struct libusb_transfer *parked[NCM_MAX_RX_TRANSFERS + 1];
	guint n_parked;           /* written under flight_lock, read atomically */
	GThread *clear_thread;    /* at most one, joined by close */
	gboolean clear_done;      /* clear_thread has finished its work */
	gboolean clear_out;       /* the bulk-OUT halt wants clearing */
	gboolean clear_intr;      /* the interrupt halt wants clearing (its transfer waits) */

	gint running;             /* atomic: started and not closing; TX checks it */
	gint tx_oversize_told;    /* atomic: the first frame over max_frame was said */
	gint gone;                /* atomic */
	gint removed_emitted;     /* atomic */
	gint link_up;             /* atomic */
	guint32 down_bps;         /* atomic */
	guint32 up_bps;           /* atomic */
	/* ncm-usb-events.c: link and speed reach the owner on change, one
	 * dispatch queued at a time. */
	gint link_known, link_pending;     /* atomic */
	gint64 link_assume_at;             /* atomic: no NETWORK_CONNECTION by then: up (0: none) */
	gint speed_known, speed_pending;   /* atomic */
	gint emitted_link;                 /* owner's context only; -1 = none yet */
	gboolean emitted_speed;            /* owner's context only */
	guint32 emitted_down, emitted_up;  /* owner's context only */

	NcmSlot *rx;
	guint n_rx;
	/* Under libusb's event lock (every completion and the timeouts):
	 * failures in a row and the retry rounds (ncm-ntb-retry.h). */
	NcmRetry rx_retry;
	NcmRetry intr_retry;
	struct libusb_transfer *intr;
	guint8 intr_buf[64];
	NcmNotifyParser notify;   /* event thread only */

	/* Guards everything TX below. Lock order: the context's lock (its timeouts
	 * tick TX), tx_lock, flight_lock (libncm/THREADING.md). */
	GMutex tx_lock;
	NcmSlot *tx;
	guint n_tx;
	guint tx_chain;           /* NTBs one OUT transfer may carry (ncm-usb-tx.c); 1 = one */
	NcmNtbSched sched;        /* which slot is open, free, held by the pacer */
	NcmNtbPacker packer;
	guint16 tx_sequence;
	NcmNtbWake tx_wake;       /* who hears writable, when (its own locking: ncm-ntb-wake.h) */
	gint64 tx_busy_since;     /* the last OUT completion, or the submit that ended an idle spell */
	gboolean tx_stuck_told;   /* the "takes no data" error went out since the last completion */
	NcmAckTable tx_acks;      /* pure ACKs in the open NTB (ncm-ack.h) */
	/* Event thread: one NTB's datagrams, collected before delivery so
	 * that superseded ACKs can be left out (ncm-usb-rx.c). */
	const guint8 *rx_frames[NCM_RX_COLLECT];
	gsize rx_lens[NCM_RX_COLLECT];
	bool rx_skip[NCM_RX_COLLECT];
	guint rx_n;
	NcmNudgeTx nudge_tx;      /* the host's ARP and ND packets, for the tail nudge */

	NcmStats stats;           /* every field updated with relaxed atomics */
};

#ifdef NCM_TEST_HOOKS
/* ncm-usb-landed.c (test builds only): a completion's touches of its
 * device after the in-flight count dropped abort (issue 16, item 10). */
int ncm_device_completion_begin(void);
void ncm_device_completion_end(int *scope);
gboolean ncm_device_in_completion(void);
void ncm_device_landed_mark(NcmDevice *self);
void ncm_device_touch_at(NcmDevice *self, const char *where, const char *what);
/* First in every transfer callback: the scope ends when it returns. */
#define NCM_COMPLETION_SCOPE() \
	G_GNUC_UNUSED __attribute__((cleanup(ncm_device_completion_end))) int ncm_completion_scope_ = \
		ncm_device_completion_begin()
#define NCM_TOUCH(dev, what) ncm_device_touch_at((dev), G_STRLOC, (what))
#else
#define NCM_COMPLETION_SCOPE() do { } while (0)
#define NCM_TOUCH(dev, what) do { } while (0)
#endif

#ifdef NCM_TEST_HOOKS
#define NCM_STAT_ADD(dev, field, n) \
	(NCM_TOUCH((dev), "NCM_STAT_ADD " #field), \
	 __atomic_add_fetch(&(dev)->stats.field, (n), __ATOMIC_RELAXED))
#else
#define NCM_STAT_ADD(dev, field, n) __atomic_add_fetch(&(dev)->stats.field, (n), __ATOMIC_RELAXED)
#endif

/* ncm-usb-events.c: control-plane events, posted to the owner's main context. */
void ncm_device_events_class_init(GObjectClass *klass);
void ncm_device_post_removed(NcmDevice *self);
void ncm_device_post_link(NcmDevice *self, gboolean up);
void ncm_device_post_speed(NcmDevice *self, guint32 down, guint32 up);
void ncm_device_post_error(NcmDevice *self, GError *error);
void ncm_device_mark_gone(NcmDevice *self);

/* ncm-usb-flight.c: every transfer in flight is counted, so close() can wait for them. */
/*
 * Submits under flight_lock unless closing. @counted: @xfer is a completed
 * transfer being resubmitted, already in the flight count. When that fails
 * the count stays: the caller calls ncm_device_landed() as its very last
 * touch of the device, since close() may free it as soon as the count
 * drops. Returns the libusb result.
 */
int ncm_device_submit(NcmDevice *self, struct libusb_transfer *xfer, gboolean counted);
/* A transfer left the flight (not resubmitted). The caller's last use of
 * the device: close() may free it from here on. */
void ncm_device_landed(NcmDevice *self);
/* The same with flight_lock held (the caller's last use once it unlocks). */
void ncm_device_landed_locked(NcmDevice *self);
/* Waits until nothing is in flight or @deadline (monotonic); FALSE on timeout. */
gboolean ncm_device_flight_wait(NcmDevice *self, gint64 deadline);

/* ncm-usb-open.c */
gboolean ncm_device_claim(NcmDevice *self, GError **error);
gboolean ncm_device_negotiate(NcmDevice *self, GError **error);
void ncm_device_release(NcmDevice *self);

/* ncm-usb-buf.c */
guint8 *ncm_device_buf_alloc(NcmDevice *self, gsize size);
void ncm_device_buf_free(NcmDevice *self, guint8 *buf, gsize size);
guint ncm_device_buf_mapped(NcmDevice *self);

/* ncm-usb-rx.c */
gboolean ncm_device_rx_setup(NcmDevice *self, GError **error);
gboolean ncm_device_rx_start(NcmDevice *self, GError **error);
void ncm_device_rx_cancel(NcmDevice *self);
void ncm_device_rx_free(NcmDevice *self);

/* ncm-usb-halt.c: a STALLed bulk-IN transfer waits for CLEAR_FEATURE on a thread. */
void ncm_device_halt_stalled(NcmDevice *self, NcmSlot *slot);
/* A STALLed bulk-OUT transfer: the endpoint's halt is cleared on that thread. */
void ncm_device_halt_clear_out(NcmDevice *self);
/* A STALLed interrupt transfer: out of flight until the halt is cleared, then resubmitted. */
void ncm_device_halt_intr(NcmDevice *self);
/* At close, once nothing resubmits: joins the clearing thread. */
void ncm_device_halt_stop(NcmDevice *self);

/* ncm-usb-retry.c: failed IN transfers wait for their round (ncm-ntb-retry.h). */
/* A completion that failed parks its transfer and drops it from the
 * flight count: the caller's last use of the device. */
void ncm_device_retry_park(NcmDevice *self, struct libusb_transfer *xfer);
/* The clearing thread: a transfer out of flight whose halt is cleared. */
void ncm_device_retry_return(NcmDevice *self, struct libusb_transfer *xfer);
/* Event thread: resubmits the transfers whose round is due; the next deadline. */
gint64 ncm_device_retry_tick(NcmDevice *self, gint64 now);

/* ncm-usb-tx.c */
gboolean ncm_device_tx_setup(NcmDevice *self, GError **error);
/* Event thread: the last-resort flush and paced NTBs due; returns the next deadline. */
gint64 ncm_device_tx_tick(NcmDevice *self, gint64 now);
/* Event thread: what the host's ARP and ND packets taught TX since the last call. */
void ncm_device_tx_take_nudge(NcmDevice *self, NcmNudgeTx *ret_tx);
/* Event thread, between event batches: a batched sink hears writable if
 * the batch's OUT completions freed room a producer was refused. */
void ncm_device_tx_batch_end(NcmDevice *self);
void ncm_device_tx_cancel(NcmDevice *self);
void ncm_device_tx_free(NcmDevice *self);

/* ncm-usb-notify.c */
gboolean ncm_device_intr_start(NcmDevice *self, GError **error);

/* ncm-usb-timers.c: the device's one timeout on the event thread (TX's
 * flush and pacing, the tail nudge), and what RX reports to the nudge. */
void ncm_device_timers_setup(NcmDevice *self);
void ncm_device_timers_start(NcmDevice *self);
void ncm_device_timers_stop(NcmDevice *self);
void ncm_device_nudge_ntb_begin(NcmDevice *self, gint64 now);
void ncm_device_nudge_learn(NcmDevice *self, const guint8 *frame, gsize len);
void ncm_device_nudge_ntb_end(NcmDevice *self);

#ifdef NCM_TEST_HOOKS
/* ncm-usb-fault.c (test builds only): damages 1 in NCM_TEST_FAULT_ONE_IN
 * received NTBs before @parse sees them. */
typedef void (*NcmParseFunc)(NcmDevice *self, const guint8 *buf, gsize len);
void ncm_device_fault_init(NcmDevice *self);
void ncm_device_fault_rx(NcmDevice *self, guint8 *buf, gsize len, NcmParseFunc parse);
/* ncm_device_submit()'s libusb_submit_transfer(), flight_lock held: with
 * NCM_TEST_FAIL_RESUBMIT=rx or intr, that pipe's first resubmission from
 * its own completion fails with LIBUSB_ERROR_NO_DEVICE instead. */
int ncm_device_fault_submit(NcmDevice *self, struct libusb_transfer *xfer);
#endif
