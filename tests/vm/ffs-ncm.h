/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ffs-ncm.h: what ffs-ncm's files share: the profile, the state under `lock`, the counters and the endpoint files. */
#pragma once

#include <linux/usb/ch9.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ncm-ntb.h"

#define NTB_BUF_MAX 65536u
#define IN_BUF_MAX 131072u         /* the largest IN NTB it sends (NTB32 above 64 KiB) */
#define IN_MAX_ADVERTISED (4u << 20) /* --in-max may promise more than it sends */
#define FRAME_MAX 1514u
/* The longest datagram libncm takes from a device of FRAME_MAX: two VLAN tags more. */
#define HOST_RX_MAX (FRAME_MAX + 8u)
#define HS_BULK_MPS 512u
#define FS_BULK_MPS 64u
#define INTR_MPS 16u             /* the interrupt endpoint's wMaxPacketSize, unless --intr-mps */
#define INTR_MPS_MAX 64u
#define MAX_PRINTED_VIOLATIONS 20u
#define TX_MAX_DATAGRAMS 32u
#define TX_MAX_DATAGRAMS_BATCHED 128u
#define HALT_REPEAT_US 5000u
#define MAX_VANISH 8u
#define MAX_REPLAYS 256u
#define REPLAY_MAX_BYTES IN_BUF_MAX

/* ---- the profile ------------------------------------------------------- */

typedef struct {
	const char *name;
	unsigned formats;          /* NCM_NTB_FORMAT_BIT_* */
	uint32_t in_max;           /* dwNtbInMaxSize */
	uint16_t in_div, in_rem, in_align;
	uint32_t out_max;          /* dwNtbOutMaxSize */
	uint16_t out_div, out_rem, out_align;
	uint16_t out_max_datagrams;
	uint8_t caps;              /* bmNetworkCapabilities (answered requests) */
	bool intr;                 /* interrupt IN endpoint */
	bool cs_desc;              /* CDC functional descriptors (f_fs 6.1 rejects them) */
	bool alt1;                 /* data alt 0 empty, bulk pair in alt 1 (6.1 stalls alt 1) */
	bool mac;                  /* iMACAddress string (with cs_desc) */
	bool mac_string_missing;   /* gadgetfs: iMACAddress names a string that is STALLed */
	bool no_langids;           /* gadgetfs: string 0 lists no language (2 bytes) */
	bool refuse_crc;           /* STALL SET_CRC_MODE although bmNetworkCapabilities offers it */
	uint8_t iad_first;         /* the IAD's bFirstInterface, which f_fs leaves as written */
	uint8_t mac_addr[6];
	unsigned flood_s;          /* NETWORK_CONNECTION on every poll for this long */
	bool stall_intr;           /* halt the interrupt endpoint after the first notifications */
	unsigned stall_in_at;      /* STALL bulk IN once, before this IN NTB (0 = never) */
	unsigned stall_in_always;  /* ... and keep it halted from this IN NTB on */
	unsigned stall_out_at;     /* STALL bulk OUT once, before reading this OUT NTB */
	unsigned stall_out_always; /* ... and keep it halted from this OUT NTB on */
	bool no_out_read;          /* never read bulk OUT */
	bool refuse_input_size;    /* STALL SET_NTB_INPUT_SIZE */
	unsigned refuse_params;    /* STALL the first N GET_NTB_PARAMETERS (a failing open) */
	unsigned intr_mps;         /* the interrupt endpoint's wMaxPacketSize */
	bool refuse_ntb_format;    /* STALL SET_NTB_FORMAT although both formats are listed */
	bool ignore_input_size;    /* accept it, keep dwNtbInMaxSize */
	int max_datagram_reply;    /* GET_MAX_DATAGRAM_SIZE answers this (-1: what was set) */
	uint16_t max_segment;      /* wMaxSegmentSize (with cs_desc) */
	unsigned in_batch_ms;      /* collect TAP frames this long into one IN NTB */
	unsigned ep0_delay_ms;     /* gadgetfs: answer each request this late */
	unsigned bulk_mps;         /* the bulk packets' size on the bus: 64 at full speed */
	bool in_ndp_first;         /* IN NDP right after the NTH, room for in_max_datagrams */
	uint16_t in_max_datagrams; /* datagrams per IN NTB (0: the packer's own limit) */
	bool params_only;          /* STALL every class request but GET_NTB_PARAMETERS */
	bool speed_first;          /* CONNECTION_SPEED_CHANGE before NETWORK_CONNECTION */
	bool notify_once;          /* the first ENABLE's notifications only (none after a reopen) */

	/* Bulk IN beyond valid NTBs (ffs-ncm-hostile.c). */
	unsigned hostile_one_in;   /* one IN transfer in N is a crafted, malformed NTB */
	bool zlp_after_ntb;        /* a zero-length packet after every IN NTB */
	bool join_ntbs;            /* two NTBs run together in one IN transfer, no ZLP */
	unsigned runt_one_in;      /* a runt transfer (1..11 bytes) before one IN NTB in N */
	unsigned in_stop_after;    /* after this many IN NTBs of the host's session, send none */

	/* The interrupt endpoint, once, 1 s into the host's session (ffs-ncm-notify.c). */
	bool stall_intr_once;      /* halt it, so the host must clear the halt */
	uint32_t speed_down, speed_up;  /* a late CONNECTION_SPEED_CHANGE (0: none) ... */
	bool speed_split;          /* ... as two transfers: header, then data */
	bool notify_overlong;      /* notifications with bytes past their wLength */
	unsigned link_flaps;       /* NETWORK_CONNECTION down then up, this many times */
	unsigned flap_ms;          /* ... each state held this long */

	/* Host -> peer: a gadget that holds frames under load (ffs-ncm-hold.c). */
	unsigned hold_after;       /* more than this many frames queued toward the peer ... */
	unsigned hold_ms;          /* ... hold the next ones this long */
	unsigned drain_kbit;       /* the queue's drain rate toward the peer */

	/* ep0: the device vanishes (its UDC unbound) while a request is pending. */
	uint8_t vanish_on[MAX_VANISH];  /* bRequest codes, each once, in this order */
	unsigned n_vanish;
	int udc_fd;                /* configfs UDC file, or (gadgetfs) soft_connect; the caller opens it */
} Profile;

extern Profile prof;

/* ---- state shared by the threads, under `lock` --------------------------- */

extern pthread_mutex_t lock;
extern pthread_cond_t changed;    /* enabled, enable_gen or host_negotiated changed */
extern unsigned enable_gen;       /* bumped on every FUNCTIONFS_ENABLE */
extern bool enabled;
extern NcmNtbFormat format;
extern uint32_t input_size;       /* SET_NTB_INPUT_SIZE, else in_max */
extern unsigned in_since_nego;    /* IN NTBs since the host's last SET_NTB_INPUT_SIZE */
extern bool host_negotiated;      /* a SET_NTB_INPUT_SIZE came (even a refused one) */

/* Counters: atomics, read by the summary. */
extern unsigned long st_ntbs_out, st_dgrams_out, st_ntbs_in, st_dgrams_in, st_tap_errors,
	st_in_errors, st_out_errors, st_violations, st_notifications, st_stalls, st_requests,
	st_stalled_requests, st_max_ntb_in, st_hostile, st_zlps, st_runts, st_holds,
	st_hold_drops, st_stranded_requests, st_joins, st_max_ntb_out;

extern int ep0, ep_intr, ep_in, ep_out, tap;
extern bool ep0_gadgetfs;         /* ep0 is gadgetfs's device file, not FunctionFS's ep0 */

#define COUNT(c, n) __atomic_add_fetch(&(c), (n), __ATOMIC_RELAXED)
#define READ(c) __atomic_load_n(&(c), __ATOMIC_RELAXED)

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void put16(uint8_t *b, size_t len, size_t off, uint16_t v);
void put32(uint8_t *b, size_t len, size_t off, uint32_t v);
void wait_enabled(void);
/* --ready: the descriptors are written (FunctionFS: bind the UDC now). */
void touch_ready(const char *ready);
/* Blocks until the host has sent SET_NTB_INPUT_SIZE (its session began). */
void wait_host_session(void);
/* A frame from the host, to the peer's TAP. */
void tap_write(const uint8_t *frame, size_t len);

/* ---- ep0, shared by FunctionFS (ffs-ncm.c) and gadgetfs (ffs-ncm-gadgetfs.c) -- */

typedef struct {
	uint8_t b[512];
	size_t len;
	unsigned count;
} Blob;

#define MAC_HEX_LEN 13u

void blob_put(Blob *d, const uint8_t *p, size_t n);
/* The function's interface, class and endpoint descriptors for one speed. */
void ncm_descs(Blob *d, bool hs);
void mac_hex(char out[MAC_HEX_LEN]);
/* A request addressed to the function's interfaces: answered, or stalled. */
void on_setup(const struct usb_ctrlrequest *rq);
/* --vanish-on: true when the device went away instead of answering rq. */
bool vanish(const struct usb_ctrlrequest *rq);
void stall(const struct usb_ctrlrequest *rq);
/* ffs-ncm-trace.c: each ep0 call, timed, kept in a ring that SIGHUP prints. */
void trace_ep0(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ... a call's, with its result @r (and errno's meaning when negative). */
void trace_ep0_call(ssize_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void trace_setup(const struct usb_ctrlrequest *rq);
void trace_ep0_print(void);
/* The data path's endpoints are (not) usable: FUNCTIONFS_ENABLE, data alt 1. */
void set_enabled(bool on);

/* ---- ffs-ncm-gadgetfs.c: the whole device through gadgetfs --------------- */

typedef struct {
	uint16_t vid, pid;
	const char *serial;
} GadgetfsIds;

/* Writes the device and configuration descriptors to DIR's controller file:
 * the UDC binds, the host enumerates. */
void gadgetfs_start(const char *dir, const GadgetfsIds *ids);
/* Serves ep0 until the host set the configuration and the endpoints are open. */
void gadgetfs_until_configured(void);
/* An OUT request's data stage, read without gadgetfs's hang (see there). */
ssize_t gadgetfs_read_out(uint8_t *b, size_t n);
void gadgetfs_loop(void) __attribute__((noreturn));

/* ---- ffs-ncm-notify.c: the interrupt endpoint ---------------------------- */

void *notify_thread(void *arg);
/* Once per run, 1 s into the host's first session: what the late options ask. */
void *notify_late_thread(void *arg);

/* ---- ffs-ncm-hostile.c: IN transfers that are not valid NTBs ------------- */

/*
 * Called by the TX thread after each valid IN NTB: sends what the profile
 * asks to follow it (a ZLP, a runt, a crafted NTB) and counts it.
 */
void hostile_after_ntb(uint16_t *seq);
/* Called before each valid IN NTB: with --in-stop-after, never returns once
 * the host's session has had that many. */
void hostile_in_gate(unsigned ntb_in_session);
/* The crafted NTBs sent so far, and the rejects a conforming host counts. */
void hostile_summary(void);
/* Each crafted class against libncm's parser: the reasons it promises. */
bool hostile_self_test(void);
/* SIGUSR2: no crafted NTB after this returns (one in progress is finished). */
void hostile_quiesce(void);

/* ---- ffs-ncm-replay.c: --replay, crafted transfers from files ------------ */

/* A file (one transfer) or a directory (each file in it, by name); loaded by replay_load. */
void replay_add(const char *path);
/* Reads them, each without its first `skip` bytes (a fuzz target's config prefix). */
void replay_load(size_t skip);
unsigned replay_count(void);
/*
 * Transfer i (mod the count) and what libncm's parser counts for it under
 * the host's format and input size; false if it cannot fit the host's
 * transfer. Under the caller's lock, as are replay_sent and replay_summary.
 */
bool replay_next(unsigned i, bool n32, uint32_t isize, const uint8_t **b, size_t *len,
		 NcmNtbParseResult *want);
void replay_sent(unsigned i);
void replay_summary(void);

/* ---- ffs-ncm-apple.c: --apple-modes, the PTP/usbmux side of an Apple device -- */

int apple_main(const char *dir, const char *ready);

/* ---- ffs-ncm-hold.c: frames toward the peer, held under load ------------- */

void hold_start(void);
void hold_push(const uint8_t *frame, size_t len);
