/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ack.h: a newer pure TCP ACK replaces an older one of its flow still in the open NTB. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Why: a receiving TCP acknowledges every second segment, and each ACK costs
 * the device a datagram to unwrap and its sender a trip through its TCP
 * input. While an OUT NTB is open, a later cumulative ACK of the same flow
 * says everything an earlier one does, so it takes the earlier one's place
 * and the NTB carries one per flow (lwIP sent ~350 per MB down a TCP stream,
 * against ~40 from Linux, whose GRO already stretches them). What the
 * sender must still see is kept:
 * - duplicate ACKs (the same ack number): fast retransmit counts them;
 * - window updates without new data acknowledged (same ack number);
 * - ACKs with SACK or any option but timestamps, and any flag but ACK;
 * - order: a flow's entry is dropped when any other segment of that flow
 *   joins the NTB after it, so a replacement never jumps over one.
 * Only frames of equal length and layout are replaced, in place.
 */

#define NCM_ACK_TRACK 8

typedef struct {
	bool tcp;        /* TCP over IPv4 (unfragmented) or IPv6 (no extension headers) */
	bool pure;       /* flags exactly ACK, no payload, only NOP/EOL/timestamp options */
	bool v6;
	bool payload;    /* bytes follow the TCP header (within the IP length) */
	uint16_t l3, l4; /* offsets of the IP and TCP headers in the frame */
	uint32_t ack;
} NcmAckInfo;

typedef struct {
	uint32_t offset; /* of the frame in the NTB buffer */
	uint16_t len;
	NcmAckInfo info;
} NcmAckEntry;

typedef struct {
	NcmAckEntry e[NCM_ACK_TRACK];
	unsigned n;
} NcmAckTable;

/* Reads @frame's headers into @ret; false when it is not TCP (ret->tcp false too). */
bool ncm_ack_classify(const uint8_t *frame, size_t len, NcmAckInfo *ret);

static inline void
ncm_ack_reset(NcmAckTable *table)
{
	table->n = 0;
}

/*
 * When @frame (classified in @info) is a pure ACK that supersedes one the
 * table holds in @buf (the open NTB), overwrites that one with it and
 * returns true: the caller then does not add @frame.
 */
bool ncm_ack_merge(NcmAckTable *table, uint8_t *buf, size_t buf_len, const uint8_t *frame, size_t len,
		   const NcmAckInfo *info);

/*
 * @frame was just added at @offset of @buf: a pure ACK becomes its flow's
 * entry; any other TCP segment drops its flow's entry.
 */
void ncm_ack_track(NcmAckTable *table, const uint8_t *buf, size_t buf_len, uint32_t offset, size_t len,
		   const NcmAckInfo *info);

/*
 * A frame that reached the NTB in pieces (a TSO segment cut as headers plus
 * payload), for which no merge was tried: classified where it lies in @buf
 * and tracked as ncm_ack_track() does, so that a later ACK of its flow never
 * takes an earlier place past it.
 */
void ncm_ack_track_copied(NcmAckTable *table, const uint8_t *buf, size_t buf_len, uint32_t offset,
			  size_t len);

/*
 * The same rule on receive, over one NTB's datagrams (@frames, @lens, in
 * order): sets @skip[i] for each pure ACK that a later pure ACK of its flow
 * in the NTB supersedes, with no other segment of that flow between them,
 * and returns how many. The peer's receiver also acknowledges every second
 * segment, and each ACK costs the host a TAP write or a pass through lwIP.
 */
unsigned ncm_ack_thin(const uint8_t *const *frames, const size_t *lens, unsigned n, bool *skip);
