/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-rx.h: whether a received NTB is parsed before or after its bulk-IN transfer goes back to the device (pure C). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * A completed IN transfer normally goes back with the slot's spare buffer
 * before the NTB is parsed, so the device finds reads queued however long
 * the sink takes (ncm-usb-rx.c says which gadget needs that). An NTB
 * shorter than one packet (a lone datagram, a few ACKs) is parsed first, in
 * its own buffer: a sink that writes a lone datagram at once (the TAP
 * backend) hands it on before the submit's syscall, and so short a parse
 * cannot use up the other reads. In ncm-tun's 64-byte round trip at 10/s,
 * the event thread's run from waking to the TAP write took (traced
 * medians) 0.56 ms before, 0.45 with the TAP's change alone and 0.30 with
 * this too (tests/bench/RESULTS.md, session 21). Only at a depth
 * (@depth: the transfers the device was given, some of which may be out
 * for a retry) of NCM_NTB_RX_PARSE_FIRST_DEPTH or more, so that even with
 * this one out the device finds more reads queued than f_ncm has IN
 * requests (10): the rule ncm-usb-rx.c's depths keep. High speed's 16 and
 * SuperSpeed's 32 qualify; full speed's 4 does not.
 */
#ifndef NCM_NTB_RX_PARSE_FIRST_DEPTH
#define NCM_NTB_RX_PARSE_FIRST_DEPTH 12
#endif

static inline bool
ncm_ntb_rx_parse_first(unsigned depth, size_t len, size_t max_packet)
{
	return depth >= NCM_NTB_RX_PARSE_FIRST_DEPTH && len < max_packet;
}
