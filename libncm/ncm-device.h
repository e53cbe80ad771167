/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-device.h: NcmDevice, one claimed NCM function and its data path. */
#pragma once

#include <gio/gio.h>

#include "ncm-context.h"
#include "ncm-version.h"

G_BEGIN_DECLS

/**
 * NcmDeviceOptions:
 *
 * Initialise with ncm_device_options_init(), then change what you need.
 *
 * ABI: 256 bytes (LP64) in every libncm.so.1. The library reads the whole
 * struct, so it never grows: an option added later takes the front of the
 * private reserve, and its zero keeps what the library did before it (as
 * every option's but @detach_kernel_driver does), since a program that
 * zeroes the struct instead of calling ncm_device_options_init() passes 0.
 */
typedef struct {
	gboolean ntb32;              /* ask for NTB32 when the device supports it */
	guint rx_ntb_size;           /* 0 = device maximum, capped at 65536 */
	guint tx_ntb_size;           /* 0 = device maximum, capped at 65536 */
	guint rx_transfers;          /* bulk-IN transfers in flight; 0 = by USB speed,
	                              * fewer if their buffers would pass 4 MiB */
	guint tx_transfers;          /* bulk-OUT transfers in flight; 0 = 8 when they carry
	                              * several NTBs (tx_ntbs_per_transfer), else as many as
	                              * hold 256 KiB, 8 to 16 */
	guint64 pace_bytes_per_sec;  /* TX pacing cap, 0 = off */
	guint flush_timeout_us;      /* last-resort flush of an open NTB; 0 = 2000 */
	gboolean switch_config;      /* allow SET_CONFIGURATION when the function is inactive */
	gboolean detach_kernel_driver; /* detach cdc_ncm & co (re-attached on close); TRUE */
	gboolean ndp_first;          /* put the TX NDP after the NTH instead of at the end */
	guint8 packet_filter;        /* SET_ETHERNET_PACKET_FILTER bits; 0 = default */
	/* RX quiet after a stream before the tail nudge, a workaround for
	 * gadgets (Linux f_ncm) that hold a burst's last NTB: 32 ARP requests
	 * to the device (IPv6 neighbour solicitations on a link where the host
	 * speaks only IPv6), once per stream end. 0 = 100 ms; NCM_NUDGE_OFF =
	 * never. */
	guint nudge_ms;
	/* Send and deliver every pure TCP ACK. By default a newer cumulative
	 * ACK of a flow replaces an older one still in the open NTB, and a
	 * received one a later one in the same NTB supersedes is not delivered
	 * (never a duplicate ACK, a window update, SACK, or across another
	 * segment of the flow): fewer datagrams for the device, the sink and
	 * the senders' TCP to process. */
	gboolean no_ack_merge;
	/* Full NTBs one bulk-OUT transfer may carry, back to back: 0 = as
	 * many as 128 KiB holds (8 of f_ncm's 16 KiB), 1 = one per transfer.
	 * Only NTBs of exactly the device's dwNtbOutMaxSize go so (NCM ends
	 * those without a short packet, and Linux' cdc_ncm pads to that size
	 * to send them back to back); a transfer takes another only while
	 * others are in flight. Each transfer costs a submit, a reap and
	 * usually a wake-up of the event thread. Set 1 for a device that
	 * loses data when several NTBs come in one transfer. */
	guint tx_ntbs_per_transfer;
	/*< private >*/
	guint32 _reserved[48];       /* zero; new options come from here */
} NcmDeviceOptions;

#define NCM_NUDGE_OFF G_MAXUINT

/**
 * ncm_device_options_init:
 * @options: (out caller-allocates): the options to fill.
 *
 * Sets every field to its default: zero, except @detach_kernel_driver.
 * Thread: any.
 */
NCM_EXPORT void ncm_device_options_init(NcmDeviceOptions *options);

/**
 * NcmLinkSink:
 * @receive: one Ethernet frame (no FCS); the frame points into the transfer
 *   buffer and is valid only during the call. At least 14 bytes; it may be
 *   longer than ncm_device_get_max_frame(), as Linux' cdc_ncm takes it: by
 *   two VLAN tags (wMaxSegmentSize + 8), or up to a larger maximum the
 *   device answered to GET_MAX_DATAGRAM_SIZE (+ 8).
 * @receive_done: the end of a burst of received NTBs (all that one libusb
 *   event batch reaped): flush what the frames caused.
 * @writable: TX room came back after ncm_device_send() returned
 *   %NCM_SEND_WOULD_BLOCK: at the OUT completion that freed it, or, after
 *   ncm_device_set_writable_batched(), once at the end of the libusb event
 *   batch whose completions freed it.
 *
 * Where received datagrams go. Every callback runs on the libusb event thread
 * and must not block or call synchronous libusb functions. Each gets the
 * user_data given to ncm_device_set_sink() first.
 *
 * ABI: eight pointers in every libncm.so.1. ncm_device_set_sink() copies
 * the whole struct, so initialise all of it: an initializer naming the
 * callbacks (`{ .receive = on_frame, ... }`) zeroes the rest. A callback
 * added later takes a slot of the private reserve, and the library calls
 * it only when it is not %NULL, as a program built before it leaves it.
 *
 * The raw data path is for C: from other languages use the lwIP netstack
 * (ncm_lwip_stack_add_device()), whose streams those languages read.
 */
typedef struct {
	void (*receive)(gpointer user_data, const guint8 *frame, gsize len);
	void (*receive_done)(gpointer user_data);
	void (*writable)(gpointer user_data);
	/*< private >*/
	gpointer _reserved[5];       /* NULL; new callbacks come from here */
} NcmLinkSink;

/**
 * NcmSendResult:
 * @NCM_SEND_OK: packed into the open NTB.
 * @NCM_SEND_WOULD_BLOCK: every TX buffer is in flight: wait for the sink's
 *   @writable.
 * @NCM_SEND_INVALID: shorter than 14 bytes or longer than the max datagram.
 * @NCM_SEND_CLOSED: not started, closed or gone.
 *
 * What ncm_device_send() did with a frame. The data path returns codes,
 * never a #GError: nothing on it allocates.
 */
typedef enum {
	NCM_SEND_OK,
	NCM_SEND_WOULD_BLOCK,
	NCM_SEND_INVALID,
	NCM_SEND_CLOSED,
} NcmSendResult;

/**
 * NcmStats:
 *
 * Counters since open. Snapshot with ncm_device_get_stats() from any thread.
 *
 * ABI: 1024 bytes, all guint64, in every libncm.so.1.
 * ncm_device_get_stats() writes the whole struct, so it never grows: a
 * counter added later takes the front of the private reserve. The library
 * writes zeros over the reserve, so a program built against a newer header
 * than its library reads 0 for the counters that library lacks.
 */
typedef struct {
	guint64 rx_ntbs;
	guint64 rx_datagrams;
	guint64 rx_bytes;              /* datagram bytes */
	guint64 rx_bad_ntbs;           /* NTBs with at least one reject */
	guint64 rx_rejects[32];        /* by reason, indexed like ncm_stats_reject_name();
	                                * room for reasons added later */
	guint64 rx_overflows;
	guint64 rx_stalls;
	guint64 rx_errors;             /* other transfer errors */
	guint64 rx_sink_drops;         /* frames the sink refused (counted by sinks) */
	guint64 tx_ntbs;
	guint64 tx_datagrams;
	guint64 tx_bytes;
	guint64 tx_flush_full;         /* NTB closed because the next frame did not fit */
	guint64 tx_flush_limit;        /* ... because it reached the datagram limit */
	guint64 tx_flush_explicit;     /* ... because the producer called flush */
	guint64 tx_flush_timer;        /* ... by the last-resort timer */
	guint64 tx_would_block;
	guint64 tx_invalid;
	guint64 tx_errors;             /* OUT transfers that failed */
	guint64 tx_paced_waits;        /* NTBs held back by the pacing cap */
	guint64 intr_events;
	guint64 intr_malformed;
	guint64 main_dispatches;       /* callbacks queued on the owner's main context */
	guint64 rx_nudges;             /* tail nudges sent (NcmDeviceOptions.nudge_ms) */
	guint64 rx_nudge_freed;        /* ... after which frames other than ARP or neighbour
	                                * discovery came first:
	                                * the device had probably held them */
	guint64 tx_acks_merged;        /* pure TCP ACKs that replaced an older one of their
	                                * flow in the open NTB (NcmDeviceOptions.no_ack_merge) */
	guint64 rx_batches;            /* receive_done calls: bursts of NTBs the sink got at once */
	guint64 rx_acks_thinned;       /* received pure TCP ACKs not delivered: a later one of
	                                * their flow in the same NTB superseded them */
	guint64 tx_transfers;          /* OUT transfers that carried tx_ntbs (several NTBs
	                                * each, NcmDeviceOptions.tx_ntbs_per_transfer) */
	/* Not a counter: the bytes of NTBs libncm lets queue for a paced
	 * device, 16 ms of the pacing rate and at least 4 NTBs, or for any
	 * device below high speed, 16 ms of the bus (whichever is less); 0
	 * otherwise (the OUT transfers alone limit it).
	 * ncm_device_get_tx_queue_limit() reads it alone. */
	guint64 tx_queue_limit;
	guint64 rx_joined_ntbs;        /* NTBs that shared their transfer with the NTB before:
	                                * the device left out a ZLP (since 0.2) */
	/*< private >*/
	guint64 _reserved[66];         /* zero; new counters come from here */
} NcmStats;

/**
 * ncm_stats_reject_name:
 * @index: an index into #NcmStats.rx_rejects.
 *
 * Names the reject reasons #NcmStats.rx_rejects counts.
 *
 * Thread: any.
 *
 * Returns: (nullable): the reason counted at @index ("nth-signature", ...),
 *   a static string, or %NULL past the last reason.
 */
NCM_EXPORT const gchar *ncm_stats_reject_name(guint index);

/**
 * NcmDevice:
 *
 * One claimed NCM function: its control plane (open, start, close, the
 * signals) and its data path (ncm_device_send(), the #NcmLinkSink).
 * libncm/THREADING.md draws which thread does what.
 *
 * ncm_device_get_type(): the #GType. Thread: any.
 */
#define NCM_TYPE_DEVICE (ncm_device_get_type())
NCM_EXPORT G_DECLARE_FINAL_TYPE(NcmDevice, ncm_device, NCM, DEVICE, GObject)

/**
 * ncm_device_open:
 * @context: the #NcmContext that found @info.
 * @info: the function to open, from ncm_context_enumerate() or
 *   #NcmContext::function-added.
 * @options: (nullable): what to ask for; %NULL for the defaults of
 *   ncm_device_options_init().
 * @error: return location for a #GError in the %NCM_ERROR domain, whose
 *   message says what to do.
 *
 * Claims @info's function (detaching kernel drivers from its two interfaces
 * only), negotiates NTB parameters and sets the data interface to its data
 * alt setting. Nothing moves until ncm_device_start(). Blocks for several
 * control transfers (up to 3 s each when the device does not answer):
 * ncm_device_open_async() does not.
 *
 * Thread: any thread but the libusb event thread. The device's signals
 *   ("link-changed", "speed-changed", "removed", "error") are emitted on the
 *   caller's thread-default main context (the device's owner).
 *
 * Returns: (transfer full) (nullable): the open device, or %NULL with @error set.
 */
NCM_EXPORT NcmDevice *ncm_device_open(NcmContext *context, const NcmFunctionInfo *info,
				      const NcmDeviceOptions *options, GError **error);

/**
 * ncm_device_open_async:
 * @context: the #NcmContext that found @info.
 * @info: the function to open, from ncm_context_enumerate() or
 *   #NcmContext::function-added.
 * @options: (nullable): as for ncm_device_open(); copied, so it may be freed
 *   at once. %NULL for the defaults.
 * @cancellable: (nullable): a #GCancellable.
 * @callback: called once, with the result for ncm_device_open_finish().
 * @user_data: passed to @callback.
 *
 * Opens like ncm_device_open(), without blocking the caller. Opening does several
 * synchronous USB control transfers (claiming, GET_NTB_PARAMETERS, the
 * SET_ requests, the alt setting), each with a 3 s timeout when a device
 * does not answer, and libusb offers them only synchronously or as
 * transfers the event thread completes; a GUI's main loop must not wait
 * on them. So the same open runs on a GTask worker thread.
 *
 * When @cancellable fires, ncm_device_open_finish() reports
 * %G_IO_ERROR_CANCELLED at once: a control transfer already under way is
 * not interrupted, the worker finishes it and closes whatever it opened,
 * so the function is free again shortly after (within the timeouts above).
 * If the open had already succeeded when the cancellation came, the
 * device is closed as well.
 *
 * Thread: any thread but the libusb event thread. @callback runs on the
 * calling thread's thread-default #GMainContext, which must be iterated;
 * the device's signals are emitted there too, as with ncm_device_open().
 */
NCM_EXPORT void ncm_device_open_async(NcmContext *context, const NcmFunctionInfo *info,
				      const NcmDeviceOptions *options,
				      GCancellable *cancellable, GAsyncReadyCallback callback,
				      gpointer user_data);

/**
 * ncm_device_open_finish:
 * @result: the #GAsyncResult given to the callback of ncm_device_open_async().
 * @error: return location for a #GError: %NCM_ERROR as from ncm_device_open(),
 *   or %G_IO_ERROR_CANCELLED.
 *
 * Ends ncm_device_open_async().
 *
 * Thread: the thread-default main context ncm_device_open_async() was
 *   called from (in its callback).
 *
 * Returns: (transfer full) (nullable): the open device, as ncm_device_open()
 *   returns it (call ncm_device_start() next), or %NULL with @error set.
 */
NCM_EXPORT NcmDevice *ncm_device_open_finish(GAsyncResult *result, GError **error);

/**
 * ncm_device_set_sink: (skip)
 * @self: an open, not yet started #NcmDevice.
 * @sink: (nullable): where received frames go; copied. %NULL drops them.
 * @user_data: passed to every callback of @sink.
 *
 * Attaches the sink. Call before ncm_device_start(); later it is a
 * programming error (a critical) and changes nothing. Not for bindings:
 * its callbacks run per frame on the libusb event thread, where no
 * interpreter should wait for its lock; they use the lwIP netstack.
 * Thread: any. The sink's callbacks run on the libusb event thread.
 */
NCM_EXPORT void ncm_device_set_sink(NcmDevice *self, const NcmLinkSink *sink,
				    gpointer user_data);

/**
 * ncm_device_set_writable_batched: (skip)
 * @self: an open, not yet started #NcmDevice.
 * @batched: %TRUE: the sink hears @writable once per libusb event batch;
 *   %FALSE (the default): at each OUT completion that freed room.
 *
 * Controllers complete OUT transfers in bursts. A sink that refills the
 * freed room inside @writable itself (lwIP's netif sends its queued
 * frames there) does it in one call per burst when batched, instead of one
 * call per freed buffer: fewer lock rounds and flushes, and the transfers
 * go out back to back. A sink whose @writable only wakes another thread
 * should stay per completion: told later, that thread refills later.
 * Either way a producer refused with %NCM_SEND_WOULD_BLOCK hears @writable
 * once room came back. Call before ncm_device_start(); later it is a
 * programming error (a critical) and changes nothing.
 *
 * Thread: any. @writable runs on the libusb event thread either way.
 *
 * Since: 0.2
 */
NCM_EXPORT void ncm_device_set_writable_batched(NcmDevice *self, gboolean batched);

/**
 * ncm_device_set_sender_flushes: (skip)
 * @self: an open, not yet started #NcmDevice.
 * @flushes: %TRUE: every sender calls ncm_device_flush() once it has
 *   nothing more to send, and waits for nothing with data packed but room
 *   (%NCM_SEND_WOULD_BLOCK); %FALSE (the default): no promise.
 *
 * An NTB that opens while no transfer is in flight needs the last-resort
 * flush (@flush_timeout_us of #NcmDeviceOptions), and arming it interrupts
 * the libusb event thread: a syscall on the sender's thread, and a
 * wake-up of the event thread that then runs beside the sender and the
 * device. For a lone datagram that was a quarter of a millisecond of the
 * round trip in the VM (ncm-tun's TAP backend, whose reader flushes after
 * every burst: tests/bench/RESULTS.md, session 20). With the promise that
 * interrupt is left out; the deadline still counts from the next time the
 * event thread looks (a completion, or its idle ceiling of 5 s). Call
 * before ncm_device_start(); later it is a programming error (a critical)
 * and changes nothing.
 *
 * Thread: any.
 *
 * Since: 0.2
 */
NCM_EXPORT void ncm_device_set_sender_flushes(NcmDevice *self, gboolean flushes);

/**
 * ncm_device_start:
 * @self: an open #NcmDevice.
 * @error: return location for a #GError: %NCM_ERROR_CLOSED when started or
 *   closed already, else why a transfer could not be submitted.
 *
 * Submits the receive and interrupt transfers. From here on the sink's
 * callbacks may run, and ncm_device_send() is accepted. On failure the
 * device is closed.
 *
 * Thread: any thread but the libusb event thread.
 *
 * Returns: %TRUE when running.
 */
NCM_EXPORT gboolean ncm_device_start(NcmDevice *self, GError **error);

/**
 * ncm_device_close:
 * @self: an #NcmDevice.
 *
 * Cancels transfers and waits for them, releases the interfaces, sets alt 0
 * and re-attaches kernel drivers. Safe if the device is gone, idempotent;
 * the last unref closes too. Once it returns no sink callback runs. After
 * it, ncm_device_send() returns %NCM_SEND_CLOSED and the getters keep
 * answering.
 * Thread: any thread but the libusb event thread (it waits for that thread:
 *   a critical, and nothing done, when called there).
 */
NCM_EXPORT void ncm_device_close(NcmDevice *self);

/**
 * ncm_device_send:
 * @self: a started #NcmDevice.
 * @frame: (array length=len): one Ethernet frame without FCS (destination,
 *   source, type, payload); copied before the call returns.
 * @len: its length, 14 to ncm_device_get_max_frame() bytes.
 *
 * Packs one Ethernet frame into the open NTB. The NTB goes out when full,
 * at the datagram limit, on ncm_device_flush(), or by the last-resort timer.
 * Never blocks and never allocates.
 *
 * Thread: any, also the libusb event thread (from a sink callback) and
 *   several producers at once (they serialise on the device's TX lock).
 *
 * Returns: %NCM_SEND_OK when packed; %NCM_SEND_WOULD_BLOCK when every TX
 *   buffer is in flight (the sink's @writable follows), %NCM_SEND_INVALID,
 *   %NCM_SEND_CLOSED.
 */
NCM_EXPORT NcmSendResult ncm_device_send(NcmDevice *self, const guint8 *frame, gsize len);

/**
 * ncm_device_sendv: (skip)
 * @self: a started #NcmDevice.
 * @vectors: (array length=n_vectors): the pieces of one frame, in order
 *   (e.g. a pbuf chain); copied before the call returns.
 * @n_vectors: how many.
 *
 * Sends like ncm_device_send(), a frame in several pieces.
 *
 * Thread: any, as ncm_device_send().
 *
 * Returns: as ncm_device_send().
 */
NCM_EXPORT NcmSendResult ncm_device_sendv(NcmDevice *self, const GOutputVector *vectors,
					  guint n_vectors);

/**
 * ncm_device_flush:
 * @self: an #NcmDevice.
 *
 * The producer has nothing more queued: send the open NTB now. Does
 * nothing when it is empty, or the device is not running.
 * Thread: any, as ncm_device_send().
 */
NCM_EXPORT void ncm_device_flush(NcmDevice *self);

/**
 * ncm_device_get_stats:
 * @self: an #NcmDevice.
 * @ret_stats: (out caller-allocates): the counters since open.
 *
 * Each counter is read atomically; the set is not one instant's snapshot.
 * Thread: any.
 */
NCM_EXPORT void ncm_device_get_stats(NcmDevice *self, NcmStats *ret_stats);

/**
 * ncm_device_get_info:
 * @self: an #NcmDevice.
 *
 * The function @self was opened on.
 *
 * Thread: any.
 *
 * Returns: (transfer none): the function @self was opened on; valid as
 *   long as @self is (ncm_function_info_ref() to keep it longer).
 */
NCM_EXPORT const NcmFunctionInfo *ncm_device_get_info(NcmDevice *self);

/**
 * ncm_device_get_mac:
 * @self: an open #NcmDevice.
 * @ret_mac: (out caller-allocates) (array fixed-size=6): the host side's
 *   MAC address: the function's iMACAddress, or a stable locally
 *   administered one derived from the function when the device gives none.
 *
 * Thread: any.
 */
NCM_EXPORT void ncm_device_get_mac(NcmDevice *self, guint8 ret_mac[6]);

/**
 * ncm_device_get_max_frame:
 * @self: an open #NcmDevice.
 *
 * The largest frame the device takes.
 *
 * Thread: any.
 *
 * Returns: the largest Ethernet frame ncm_device_send() takes
 *   (wMaxSegmentSize, at least 1514, or less when the device asks for
 *   less); received frames may be longer (#NcmLinkSink).
 */
NCM_EXPORT guint ncm_device_get_max_frame(NcmDevice *self);

/**
 * ncm_device_get_mtu:
 * @self: an open #NcmDevice.
 *
 * The IP MTU over the device.
 *
 * Thread: any.
 *
 * Returns: the IP MTU: ncm_device_get_max_frame() - 14.
 */
NCM_EXPORT guint ncm_device_get_mtu(NcmDevice *self);

/**
 * ncm_device_get_link_up:
 * @self: an #NcmDevice.
 *
 * Whether the device last said its network link is up.
 *
 * Thread: any.
 *
 * Returns: the last NETWORK_CONNECTION state the device reported; %FALSE
 *   until it reports one. A device that reports none within 2 s of
 *   ncm_device_start() is taken as up (TinyUSB's NCM sends it only after a
 *   bus reset, so a host that opens it after another driver, or again,
 *   hears nothing); one without an interrupt endpoint is up from the open.
 *   "link-changed" follows changes on the owner's context.
 */
NCM_EXPORT gboolean ncm_device_get_link_up(NcmDevice *self);

/**
 * ncm_device_is_gone:
 * @self: an #NcmDevice.
 *
 * Whether the device went away (unplugged or reset). Set on the libusb
 * event thread before "removed" is queued for the owner, so a producer
 * thread that got %NCM_SEND_CLOSED can tell an unplug from a close
 * without waiting for the signal. %FALSE for a device closed, or never
 * opened, while present.
 *
 * Thread: any.
 *
 * Returns: %TRUE once the device is gone.
 */
NCM_EXPORT gboolean ncm_device_is_gone(NcmDevice *self);

/**
 * ncm_device_get_tx_queue_limit:
 * @self: an #NcmDevice.
 *
 * How many bytes of NTBs libncm lets queue for a paced device
 * (#NcmDeviceOptions.pace_bytes_per_sec, ncm_device_set_pacing()): 16 ms
 * of the rate, at least 4 NTBs. A device below high speed (a full-speed
 * microcontroller) gets the same from its bus's rate, paced or not (since
 * 0.2). Without either the OUT transfers alone limit the queue (1 MiB by
 * default), and at a slow device's rate every frame sent behind a bulk
 * upload waits for all of it: 170 ms at 50 Mbit/s, ~1 s at full speed. A
 * producer that keeps a queue of its own in front of ncm_device_send()
 * (ncm-tun's TAP reader does) can hold about as much, so that a frame
 * waits about as long there as in the driver.
 *
 * Thread: any.
 *
 * Returns: the limit in bytes (#NcmStats.tx_queue_limit); 0 when unpaced
 *   at high speed or above.
 *
 * Since: 0.2
 */
NCM_EXPORT guint64 ncm_device_get_tx_queue_limit(NcmDevice *self);

/**
 * ncm_device_set_pacing:
 * @self: an #NcmDevice.
 * @bytes_per_sec: the new TX cap in NTB bytes per second; 0 turns pacing off
 *   and sends what the old cap held back at once.
 *
 * Changes #NcmDeviceOptions.pace_bytes_per_sec while the device runs: an
 * application that measures the link (or is told the gadget drops under
 * load) sets the cap without reopening. The pacer's bucket starts empty.
 * Safe on a device that is closed or was never opened: it then only
 * changes the setting.
 * Thread: any, as ncm_device_send().
 */
NCM_EXPORT void ncm_device_set_pacing(NcmDevice *self, guint64 bytes_per_sec);

/**
 * NcmNtbInfo:
 *
 * What GET_NTB_PARAMETERS said and what was negotiated.
 *
 * ABI: 128 bytes in every libncm.so.1. ncm_device_get_ntb_info() writes
 * the whole struct, so it never grows: a field added later takes the front
 * of the private reserve, over which the library writes zeros.
 */
typedef struct {
	guint16 formats;            /* bit0 NTB16, bit1 NTB32 */
	guint32 in_max_size;
	guint16 in_divisor, in_remainder, in_alignment;
	guint32 out_max_size;
	guint16 out_divisor, out_remainder, out_alignment;
	guint16 out_max_datagrams;
	/* negotiated */
	gboolean ntb32;
	guint32 rx_ntb_size;
	guint32 tx_ntb_size;
	guint rx_transfers;
	guint tx_transfers;
	guint max_frame;
	/* Transfer buffers in usbfs-mapped memory: no kernel copy per transfer (Linux). */
	guint mapped_buffers;
	guint tx_ntbs_per_transfer;  /* full NTBs one OUT transfer carries at most; 1 = one */
	/*< private >*/
	guint32 _reserved[17];       /* zero; new fields come from here */
} NcmNtbInfo;

/**
 * ncm_device_get_ntb_info:
 * @self: an open #NcmDevice.
 * @ret_info: (out caller-allocates): what the device offered and what was
 *   negotiated at open.
 *
 * Thread: any.
 */
NCM_EXPORT void ncm_device_get_ntb_info(NcmDevice *self, NcmNtbInfo *ret_info);

G_END_DECLS
