/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ntb-vectors.h: hand-built NTBs, byte by byte, shared by the codec tests. */
#pragma once

#include <stdint.h>

/*
 * Payloads are fake Ethernet frames whose first byte is a tag, so a test can
 * tell which datagram it got as well as where and how long.
 */
#define P14(t) t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
#define P18(t) P14(t), 14, 15, 16, 17
#define P22(t) P18(t), 18, 19, 20, 21

/* NTB16, NDP after the datagrams (the kernel gadget's layout). */
static const uint8_t v_ntb16[] = {
	/* 0: NTH16: wHeaderLength 12, wSequence 0x1234, wBlockLength 68, wNdpIndex 48 */
	'N', 'C', 'M', 'H', 12, 0, 0x34, 0x12, 68, 0, 48, 0,
	/* 12: datagram A, 14 bytes, then 2 bytes to the divisor */
	P14(0xA1), 0, 0,
	/* 28: datagram B, 18 bytes, then 2 bytes to the NDP alignment */
	P18(0xB1), 0, 0,
	/* 48: NDP16: wLength 20, wNextNdpIndex 0, {12, 14}, {28, 18}, {0, 0} */
	'N', 'C', 'M', '0', 20, 0, 0, 0,
	12, 0, 14, 0,
	28, 0, 18, 0,
	0, 0, 0, 0,
};
#define V_NTB16_NTH_NDP_INDEX 10
#define V_NTB16_NDP 48

/* NTB16, NDP right after the NTH. */
static const uint8_t v_ntb16_ndp_first[] = {
	/* 0: NTH16: wBlockLength 66, wNdpIndex 12 */
	'N', 'C', 'M', 'H', 12, 0, 0x01, 0x00, 66, 0, 12, 0,
	/* 12: NDP16: {32, 14}, {48, 18}, {0, 0} */
	'N', 'C', 'M', '0', 20, 0, 0, 0,
	32, 0, 14, 0,
	48, 0, 18, 0,
	0, 0, 0, 0,
	/* 32: datagram A */
	P14(0xA2), 0, 0,
	/* 48: datagram B ends the block */
	P18(0xB2),
};

/* NTB32 (what Windows sends). */
static const uint8_t v_ntb32[] = {
	/* 0: NTH32: wHeaderLength 16, wSequence 7, dwBlockLength 92, dwNdpIndex 52 */
	'n', 'c', 'm', 'h', 16, 0, 7, 0, 92, 0, 0, 0, 52, 0, 0, 0,
	/* 16: datagram A */
	P14(0xA3), 0, 0,
	/* 32: datagram B */
	P18(0xB3), 0, 0,
	/* 52: NDP32: wLength 40, wReserved6, dwNextNdpIndex 0, dwReserved12 */
	'n', 'c', 'm', '0', 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	16, 0, 0, 0, 14, 0, 0, 0,
	32, 0, 0, 0, 18, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0,
};
#define V_NTB32_NDP 52

/* NTB16 with a CRC NDP: each length counts the 4-byte CRC (not checked). */
static const uint8_t v_crc16[] = {
	/* 0: NTH16: wBlockLength 76, wNdpIndex 56 */
	'N', 'C', 'M', 'H', 12, 0, 2, 0, 76, 0, 56, 0,
	/* 12: datagram A, 14 + CRC */
	P18(0xA4), 0, 0,
	/* 32: datagram B, 18 + CRC */
	P22(0xB4), 0, 0,
	/* 56: NDP16 "NCM1": {12, 18}, {32, 22}, {0, 0} */
	'N', 'C', 'M', '1', 20, 0, 0, 0,
	12, 0, 18, 0,
	32, 0, 22, 0,
	0, 0, 0, 0,
};
#define V_CRC16_NDP 56

/* NTB32 with a CRC NDP. */
static const uint8_t v_crc32[] = {
	/* 0: NTH32: dwBlockLength 100, dwNdpIndex 60 */
	'n', 'c', 'm', 'h', 16, 0, 3, 0, 100, 0, 0, 0, 60, 0, 0, 0,
	/* 16: datagram A, 14 + CRC */
	P18(0xA5), 0, 0,
	/* 36: datagram B, 18 + CRC */
	P22(0xB5), 0, 0,
	/* 60: NDP32 "ncm1": {16, 18}, {36, 22}, {0, 0} */
	'n', 'c', 'm', '1', 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	16, 0, 0, 0, 18, 0, 0, 0,
	36, 0, 0, 0, 22, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0,
};

/* NTB16 with two chained NDPs, one before and one after the datagrams. */
static const uint8_t v_chain16[] = {
	/* 0: NTH16: wBlockLength 76, wNdpIndex 12 */
	'N', 'C', 'M', 'H', 12, 0, 4, 0, 76, 0, 12, 0,
	/* 12: NDP16 #1: wNextNdpIndex 60, {28, 14}, {0, 0} */
	'N', 'C', 'M', '0', 16, 0, 60, 0,
	28, 0, 14, 0,
	0, 0, 0, 0,
	/* 28: datagram A */
	P14(0xA6), 0, 0,
	/* 44: datagram B */
	P14(0xB6), 0, 0,
	/* 60: NDP16 #2: wNextNdpIndex 0, {44, 14}, {0, 0} */
	'N', 'C', 'M', '0', 16, 0, 0, 0,
	44, 0, 14, 0,
	0, 0, 0, 0,
};
#define V_CHAIN16_NDP1 12
#define V_CHAIN16_NDP2 60

/* NTB32 with two chained NDPs, the second one first in the block. */
static const uint8_t v_chain32[] = {
	/* 0: NTH32: dwBlockLength 112, dwNdpIndex 80 */
	'n', 'c', 'm', 'h', 16, 0, 5, 0, 112, 0, 0, 0, 80, 0, 0, 0,
	/* 16: NDP32 #2: {64, 14}, {0, 0} */
	'n', 'c', 'm', '0', 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	64, 0, 0, 0, 14, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0,
	/* 48: datagram A */
	P14(0xA7), 0, 0,
	/* 64: datagram B */
	P14(0xB7), 0, 0,
	/* 80: NDP32 #1: dwNextNdpIndex 16, {48, 14}, {0, 0} */
	'n', 'c', 'm', '0', 32, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0,
	48, 0, 0, 0, 14, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0,
};

/* NTB16 with wBlockLength 0: the block ends with the transfer. */
static const uint8_t v_block0[] = {
	/* 0: NTH16: wBlockLength 0, wNdpIndex 12 */
	'N', 'C', 'M', 'H', 12, 0, 6, 0, 0, 0, 12, 0,
	/* 12: NDP16: {28, 14}, {0, 0} */
	'N', 'C', 'M', '0', 16, 0, 0, 0,
	28, 0, 14, 0,
	0, 0, 0, 0,
	/* 28: datagram A ends the transfer */
	P14(0xA8),
};

/* NTB32 followed by the single zero byte Windows may add after a block. */
static const uint8_t v_trailing_zero[] = {
	/* 0: NTH32: dwBlockLength 64, dwNdpIndex 16 */
	'n', 'c', 'm', 'h', 16, 0, 8, 0, 64, 0, 0, 0, 16, 0, 0, 0,
	/* 16: NDP32: {48, 14}, {0, 0} */
	'n', 'c', 'm', '0', 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	48, 0, 0, 0, 14, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0,
	/* 48: datagram A, then 2 bytes of padding end the block */
	P14(0xA9), 0, 0,
	/* 64: outside the block */
	0,
};
