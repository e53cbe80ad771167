/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-nudge.h: the tail nudge, a host-side workaround for gadgets that hold the last NTB of a burst. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Linux's f_ncm (every kernel to date, so Jetson and Raspberry Pi gadgets
 * too) flushes a partly filled NTB from a 300 us timer that is armed only
 * when the NTB is started. If every IN request is busy when it fires, the
 * flush is lost, and the NTB goes out only once 32 datagrams or a full
 * block have joined it. At the end of a burst nothing more comes: the last
 * segments and their retransmissions (one per backed-off RTO) wait in it
 * for minutes. The VM caught TCP downloads stuck 60 s and more.
 *
 * The held NTB also outlives the host's session: the next driver's first
 * ARP reply joins it, and the link looks dead until 31 datagrams have
 * (the "slow start" seen after a driver switch or a replug).
 *
 * The nudge: ask the device's own address 32 times (one small NTB): over
 * ARP, or, on a link where the host has spoken only IPv6, with neighbour
 * solicitations. Its replies fill the held NTB to the datagram limit,
 * which sends it. It goes out when RX has been quiet for a while after a
 * stream of NTBs, or after the host's own ARP request or solicitation got
 * no answer. When nothing was held, the cost is 32 replies. Nudges that
 * bring no RX at all (no device stack answering) back off, up to once a
 * minute.
 */

#define NCM_NUDGE_FRAMES 32           /* f_ncm's datagram limit per NTB */
#define NCM_NUDGE_FRAME_ARP_LEN 60    /* an ARP request, padded to the Ethernet minimum */
#define NCM_NUDGE_FRAME_NS_LEN 86     /* a neighbour solicitation with the host's MAC */
#define NCM_NUDGE_FRAME_MAX NCM_NUDGE_FRAME_NS_LEN
/* A stream: NTBs that arrive fast, or full ones. f_ncm fills an NTB past
 * its 300 us timer only when frames queue up, and only a backlog can keep
 * all its IN requests busy. */
#define NCM_NUDGE_STREAM_NTBS 8       /* NTBs ... */
#define NCM_NUDGE_STREAM_US 100000    /* ... within this long make a stream */
#define NCM_NUDGE_FULL_DATAGRAMS 16   /* an NTB with this many datagrams ... */
#define NCM_NUDGE_FULL_BYTES 8192     /* ... or bytes is a stream's */
#define NCM_NUDGE_TAIL_US 1000000     /* a quiet spell this soon after a stream may hide a tail */
#define NCM_NUDGE_BACKOFF_US 1000000  /* first wait after a fruitless nudge ... */
#define NCM_NUDGE_BACKOFF_MAX_US 60000000  /* ... doubling up to this */

/* What the host's own packets of one family said: ARP requests and
 * replies for IPv4, neighbour solicitations and advertisements for IPv6. */
typedef struct {
	uint8_t host_mac[6];
	uint8_t host_ip[16];  /* IPv4: the first 4 bytes */
	uint8_t peer_ip[16];
	bool fresh;        /* not yet merged (ncm_nudge_merge_tx()) */
	bool answer;       /* ... and it came from a reply, not a request */
} NcmNudgeSaid;

/* What the host's own packets say, learned where frames are sent. */
typedef struct {
	NcmNudgeSaid v4, v6;
	bool asked_v6;     /* the last ask was a solicitation, not an ARP request */
	int64_t asked_at;  /* when the last one (or the session) started, 0 once merged */
} NcmNudgeTx;

/* What a frame the host sends is to the nudge (ncm_nudge_learn_tx()). */
typedef enum {
	NCM_NUDGE_TX_OTHER,   /* teaches nothing */
	NCM_NUDGE_TX_ANSWER,  /* an ARP reply or a neighbour advertisement: the host's
	                       * addresses, and the asker's IP */
	NCM_NUDGE_TX_ASK,     /* an ARP request or a neighbour solicitation: the same, and an
	                       * ask that waits for RX */
} NcmNudgeTxKind;

/* One family's addresses as the nudge uses them: host_* and peer_ip from
 * the host's own packets (ncm_nudge_merge_tx()), peer_mac from the
 * device's reply about peer_ip (ncm_nudge_learn()). */
typedef struct {
	uint8_t host_mac[6];
	uint8_t host_ip[16];  /* IPv4: the first 4 bytes */
	uint8_t peer_mac[6];
	uint8_t peer_ip[16];
	bool have;              /* host_mac, host_ip and peer_ip */
	bool have_peer_mac;
	bool peer_from_answer;  /* peer_ip is who asked the host, not whom it asked */
} NcmNudgeAddrs;

typedef struct {
	/* IPv4 is asked over ARP when known; IPv6 only on a link without it. */
	NcmNudgeAddrs v4, v6;
	int64_t asked_at;  /* a host request (either family) not answered by any RX yet, or 0 */
	int64_t not_before;  /* backoff after a fruitless nudge */
	int64_t backoff;

	/* When the last NCM_NUDGE_STREAM_NTBS NTBs with data (not ARP or
	 * neighbour discovery alone, which the nudge's own replies are) arrived:
	 * a ring. */
	int64_t times[NCM_NUDGE_STREAM_NTBS];
	unsigned head;
	unsigned seen;
	int64_t last_rx;       /* the last NTB of any kind */
	int64_t ntb_at;        /* the NTB being parsed */
	int64_t last_data;     /* the last NTB with data */
	int64_t stream_at;     /* the last NTB that was part of a stream, or 0 */
	int64_t nudged_for;    /* last_data when the last nudge went out */
	bool sent;       /* a nudge went out; the next NTB tells what it freed */
	bool other;      /* the NTB being parsed carries data: frames other than ARP and ND */
	unsigned other_datagrams;  /* ... how many, */
	size_t other_bytes;        /* ... and their bytes */
} NcmNudge;

void ncm_nudge_init(NcmNudge *nudge);

/* One received frame (Ethernet header on). It teaches only the device's
 * MAC, from the device's ARP or neighbour discovery about the address the
 * host asked for; the host's addresses and the device's IP come from the
 * host's own packets alone (ncm_nudge_merge_tx()), so a nudge never speaks
 * for anyone but the host. ARP and neighbour discovery are not data: they
 * make no stream. */
void ncm_nudge_learn(NcmNudge *nudge, const uint8_t *frame, size_t len);

/* One received NTB, before its frames are learned from, at @now (us). */
void ncm_nudge_ntb_begin(NcmNudge *nudge, int64_t now);

/* After the NTB's frames: true when it followed a nudge and carried other
 * frames than ARP and ND, which were probably held by the device. Only those
 * frames say whether the NTB was full: 32 replies to a nudge sharing an
 * NTB with one other frame are not a stream (they re-armed the nudge). */
bool ncm_nudge_ntb_end(NcmNudge *nudge);

/*
 * A frame the host sends. Its ARP requests and replies, and its IPv6
 * neighbour solicitations and advertisements, speak for the host alone, and
 * @tx then holds their addresses (per family). Replies count
 * because a host stack may never ask: one that learnt the device's MAC
 * from the device's own request (lwIP does, and so does Linux) only
 * answers, and a nudge that waited for a request would never go out (a
 * TCP download through lwIP stalled for good on a held tail in the VM,
 * issue 20's vm-multi-lwip). On NCM_NUDGE_TX_ASK the caller sets
 * @tx->asked_at.
 */
NcmNudgeTxKind ncm_nudge_learn_tx(NcmNudgeTx *tx, const uint8_t *frame, size_t len);

/* Takes what @tx learned, and a pending ask, into @nudge (the two live on
 * different threads). Whom the host asked wins over who asked it: an
 * answer's address is taken only until a request's is known. A session's
 * start is an ask too: whatever the device held through the last session
 * must come now. */
void ncm_nudge_merge_tx(NcmNudge *nudge, NcmNudgeTx *tx);

/* A new session on the same function starts from what the last one learned:
 * a host stack that still knows the device's MAC does not ARP again. */
void ncm_nudge_carry(NcmNudge *nudge, const NcmNudge *last);

/* Whether the data received last was part of, or soon after, a stream
 * and has not been nudged for yet. */
bool ncm_nudge_armed(const NcmNudge *nudge);

/* When to nudge (us), or INT64_MAX: @quiet_us after the end of a stream or
 * after an unanswered ARP request from the host. */
int64_t ncm_nudge_due(const NcmNudge *nudge, int64_t quiet_us);

/* Writes the request (an ARP request, or a neighbour solicitation when
 * the host has spoken only IPv6) into @out and returns its length, or 0
 * when the addresses are not known yet. */
size_t ncm_nudge_frame(const NcmNudge *nudge, uint8_t out[NCM_NUDGE_FRAME_MAX]);

/* The nudge went out at @now. */
void ncm_nudge_sent(NcmNudge *nudge, int64_t now);
