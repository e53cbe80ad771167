/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb.h: the pure NTB16/NTB32 codec: zero-copy parse and in-place pack. */
#pragma once

/*
 * This layer includes no libusb, GLib or lwIP header so that fuzzers and unit
 * tests link it directly. It never allocates. Every function is reentrant and
 * touches only the objects passed to it, so it may run on any thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	NCM_NTB_FORMAT_16 = 0,
	NCM_NTB_FORMAT_32 = 1,
} NcmNtbFormat;

/* Bits of bmNtbFormatsSupported, also used for "formats the parser accepts". */
#define NCM_NTB_FORMAT_BIT_16 0x01u
#define NCM_NTB_FORMAT_BIT_32 0x02u

#define NCM_NTH16_LEN 12u
#define NCM_NTH32_LEN 16u
#define NCM_NDP16_MIN_LEN 0x10u
#define NCM_NDP32_MIN_LEN 0x20u
#define NCM_ETH_MIN_FRAME 14u
/* NDP chains longer than this are treated as hostile (also breaks cycles). */
#define NCM_NTB_MAX_NDP_HOPS 32u

/* Signatures as little-endian 32-bit words, as they appear on the wire. */
#define NCM_NTH16_SIGNATURE 0x484D434Eu     /* "NCMH" */
#define NCM_NTH32_SIGNATURE 0x686D636Eu     /* "ncmh" */
#define NCM_NDP16_SIGNATURE 0x304D434Eu     /* "NCM0" */
#define NCM_NDP16_CRC_SIGNATURE 0x314D434Eu /* "NCM1": each datagram ends in a CRC-32 */
#define NCM_NDP32_SIGNATURE 0x306D636Eu     /* "ncm0" */
#define NCM_NDP32_CRC_SIGNATURE 0x316D636Eu /* "ncm1" */
/* NDP bytes before the first {index, length} entry, and the size of an entry. */
#define NCM_NDP16_HEADER_LEN 8u
#define NCM_NDP32_HEADER_LEN 16u
#define NCM_NDP16_ENTRY_LEN 4u
#define NCM_NDP32_ENTRY_LEN 8u
#define NCM_NTB_CRC_LEN 4u

/*
 * Why an NTB, an NDP or an entry was rejected. Each has its own counter, so a
 * user can tell a buggy device from a corrupting cable. Keep
 * ncm_ntb_error_name() in step.
 */
typedef enum {
	NCM_NTB_OK = 0,
	NCM_NTB_ERR_TRUNCATED,          /* transfer shorter than the NTH */
	NCM_NTB_ERR_NTH_SIGNATURE,      /* not NCMH/ncmh, or a format not accepted */
	NCM_NTB_ERR_NTH_HEADER_LENGTH,  /* wHeaderLength != 12 / 16 */
	NCM_NTB_ERR_BLOCK_LENGTH,       /* wBlockLength past the transfer */
	NCM_NTB_ERR_BLOCK_TOO_BIG,      /* wBlockLength past the negotiated maximum */
	NCM_NTB_ERR_NDP_ALIGN,          /* NDP index not a multiple of 4 */
	NCM_NTB_ERR_NDP_INDEX,          /* NDP index inside the NTH or past the block */
	NCM_NTB_ERR_NDP_SIGNATURE,      /* unknown NDP signature */
	NCM_NTB_ERR_NDP_CRC,            /* CRC NDP while CRC mode is off (or vice versa) */
	NCM_NTB_ERR_NDP_LENGTH,         /* NDP wLength below 0x10 / 0x20 */
	NCM_NTB_ERR_NDP_OVERRUN,        /* NDP runs past the block */
	NCM_NTB_ERR_NDP_CHAIN,          /* too many NDP hops, or a cycle */
	NCM_NTB_ERR_ENTRY_OVERRUN,      /* entry array runs past the NDP or buffer */
	NCM_NTB_ERR_DATAGRAM_BOUNDS,    /* datagram offset/length outside the block */
	NCM_NTB_ERR_DATAGRAM_SHORT,     /* datagram under 14 bytes */
	NCM_NTB_ERR_DATAGRAM_LONG,      /* datagram over the maximum datagram size */
	NCM_NTB_ERR_NO_NDP,             /* NTH points at no NDP at all (index 0) */
	NCM_NTB_ERR_OVER_BLOCK,         /* datagrams would add up to more than the block */
	NCM_NTB_N_ERRORS
} NcmNtbError;

/* Static, never NULL; "ok" for NCM_NTB_OK, "unknown" out of range. */
const char *ncm_ntb_error_name(NcmNtbError err);

typedef struct {
	uint8_t formats;        /* NCM_NTB_FORMAT_BIT_* accepted; 0 means both */
	bool crc;               /* CRC mode negotiated: expect NCM1/ncm1 and strip 4 bytes */
	uint32_t max_block;     /* negotiated dwNtbInMaxSize; 0 = only the transfer bounds */
	uint32_t max_datagram;  /* largest datagram accepted (Ethernet frame, no FCS) */
	uint32_t max_packet;    /* bulk-IN wMaxPacketSize: only a block of whole packets
	                         * may have an NTB after it (0 = any block) */
} NcmNtbParseConfig;

typedef struct {
	NcmNtbFormat format;    /* format of the NTH seen (valid if it was recognised) */
	uint16_t sequence;      /* wSequence of the (first) NTH */
	uint32_t ntbs;          /* NTBs walked, one with a bad NTH (which ends the walk)
	                         * included: more than 1 when they ran together */
	uint32_t bad_ntbs;      /* NTBs with at least one reject, one with a bad NTH included */
	uint32_t datagrams;     /* datagrams handed to the callback */
	uint32_t ndps;          /* NDPs walked, in all the NTBs */
	uint32_t rejects;       /* total of the counts below */
	uint32_t reasons[NCM_NTB_N_ERRORS]; /* per-reason reject counts for this NTB */
} NcmNtbParseResult;

/*
 * Called once per good datagram, in NDP order, with a pointer into the
 * caller's buffer (no copy). Returning false stops the parse early (for a
 * sink that is shutting down); that is not counted as an error.
 */
typedef bool (*NcmNtbDatagramFunc)(void *user_data, const uint8_t *datagram, size_t len);

/*
 * Parses one received transfer @buf of @len bytes. Good datagrams are
 * delivered even when a later part of the NTB is bad: a bad entry loses only
 * itself (the walk of its NDP goes on), a bad NDP loses only itself and the
 * NDPs chained after it. An NTH-level error loses the whole NTB, and any
 * run into the transfer after it.
 * Returns the first error met, or NCM_NTB_OK; @result (required) holds all.
 *
 * Details a device may rely on:
 * - wBlockLength 0 means the block is the whole transfer. Bytes after a
 *   block of whole packets (config->max_packet) that start with the same
 *   NTH signature are the next NTB, run into this transfer by a device that
 *   left out a ZLP: it is parsed as one more (result->ntbs), and so on to
 *   the transfer's end. Other bytes after the block (Windows' single zero
 *   byte, padding, even padding that starts like an NTH after a block that
 *   ended short of a packet, which would have ended the transfer) are
 *   ignored.
 * - An entry whose index or length is 0 ends its NDP, as in Linux' cdc_ncm:
 *   neither can describe a datagram. It is not counted as an error, and an
 *   NDP that ends at once is merely empty.
 * - An NDP whose wLength ends before a zero entry counts
 *   NCM_NTB_ERR_ENTRY_OVERRUN once; its datagrams before that point are kept
 *   and the chain goes on, since the NDP header itself was sound.
 * - With config->crc, only NCM1/ncm1 NDPs are accepted (a plain NDP then is
 *   NCM_NTB_ERR_NDP_CRC too: the device and host disagree about the mode,
 *   so the lengths cannot be trusted either way). The CRC is not checked,
 *   only stripped; what is left must still be at least 14 bytes.
 * - A revisited NDP index is a cycle: NCM_NTB_ERR_NDP_CHAIN, and nothing is
 *   delivered twice.
 * - The datagrams delivered from one NTB add up to at most its block
 *   length, as they must when none overlap: entries that point again and
 *   again at one frame would otherwise turn a 64 KiB NTB into ~750 MB of
 *   deliveries. Each entry past that is NCM_NTB_ERR_OVER_BLOCK.
 * - @config NULL means: both formats, no CRC, no limits but the transfer.
 * - @func may be NULL (count only).
 */
NcmNtbError ncm_ntb_parse(const NcmNtbParseConfig *config, const uint8_t *buf, size_t len,
			  NcmNtbDatagramFunc func, void *user_data, NcmNtbParseResult *result);

/* How the packer satisfies the USB short-packet rule (see ncm_ntb_packer_finish). */
typedef enum {
	NCM_NTB_SHORT_ZLP = 0,  /* caller sends a zero-length packet after the NTB */
	NCM_NTB_SHORT_PAD = 1,  /* packer appends one zero byte instead */
} NcmNtbShortMode;

/*
 * Layout: by default the NDP goes after the last datagram, so datagrams are
 * appended as they arrive; room for the NDP with one more entry (and its
 * zero terminator) is always kept. With ndp_first the NDP sits right after
 * the NTH (aligned) and room for `limit` entries is reserved up front; as
 * that reservation is paid by every NTB, the limit is then at most
 * NCM_NTB_PACK_NDP_FIRST_DATAGRAMS (the figure Linux' cdc_ncm reserves for).
 * Padding between the parts is zeroed.
 */
typedef struct {
	NcmNtbFormat format;
	/*
	 * dwNtbOutMaxSize (0 = unknown: only the buffer bounds). The NTB never
	 * exceeds it, the buffer, nor 65535 bytes for NTB16; the short-packet
	 * rule compares against this device value, not the buffer.
	 */
	uint32_t max_size;
	uint16_t divisor;         /* wNdpOutDivisor: power of two >= 4, else 4 */
	uint16_t remainder;       /* wNdpOutPayloadRemainder, taken modulo divisor */
	uint16_t alignment;       /* wNdpOutAlignment for the NDP: power of two >= 4, else 4 */
	uint16_t max_datagrams;   /* wNtbOutMaxDatagrams, 0 = no limit but the packer's own */
	uint16_t max_packet;      /* bulk OUT wMaxPacketSize, for the short-packet rule (0 = off) */
	NcmNtbShortMode short_mode;
	bool ndp_first;           /* put the NDP right after the NTH (reserving room) */
} NcmNtbPackConfig;

/* Hard cap on datagrams per NTB, whatever the device allows. */
#define NCM_NTB_PACK_MAX_DATAGRAMS 256u
/* Cap on datagrams per NTB when the NDP comes first (see above). */
#define NCM_NTB_PACK_NDP_FIRST_DATAGRAMS 40u

typedef enum {
	NCM_NTB_PACK_OK = 0,
	NCM_NTB_PACK_FULL,        /* no room (bytes or count): finish this NTB, retry in a new one */
	NCM_NTB_PACK_TOO_BIG,     /* the datagram can never fit any NTB of this config */
	NCM_NTB_PACK_TOO_SMALL,   /* under 14 bytes */
} NcmNtbPackStatus;

/* Opaque in spirit: callers use the functions, tests may peek. */
typedef struct {
	NcmNtbPackConfig config;  /* validated copy */
	uint8_t *buf;
	size_t capacity;          /* min(buffer size, max_size) */
	size_t tail;              /* end of the last datagram */
	uint16_t sequence;
	uint16_t count;
	uint16_t limit;           /* effective datagram limit */
	uint32_t offsets[NCM_NTB_PACK_MAX_DATAGRAMS];
	uint32_t lengths[NCM_NTB_PACK_MAX_DATAGRAMS];
} NcmNtbPacker;

/* Copies and validates @config, then starts an empty NTB with @sequence. */
void ncm_ntb_packer_init(NcmNtbPacker *packer, const NcmNtbPackConfig *config, uint8_t *buf,
			 size_t buf_size, uint16_t sequence);
/*
 * Starts a new empty NTB in the same buffer (or @buf if not NULL, which must
 * be at least as large). Also the way to reuse a packer after finish().
 */
void ncm_ntb_packer_reset(NcmNtbPacker *packer, uint8_t *buf, uint16_t sequence);
/* Appends a copy of @datagram. */
NcmNtbPackStatus ncm_ntb_packer_add(NcmNtbPacker *packer, const uint8_t *datagram, size_t len);
/*
 * Reserves @len bytes for a datagram the caller writes itself (scatter-gather
 * sources such as pbuf chains) and returns where, or NULL with @ret_status.
 */
uint8_t *ncm_ntb_packer_reserve(NcmNtbPacker *packer, size_t len, NcmNtbPackStatus *ret_status);
/* True when a datagram of @len bytes would fit now. */
bool ncm_ntb_packer_fits(const NcmNtbPacker *packer, size_t len);
/* The largest datagram that fits now (0: not even the smallest). On an
 * empty NTB: the largest frame this configuration can ever carry. */
size_t ncm_ntb_packer_room(const NcmNtbPacker *packer);
static inline uint16_t
ncm_ntb_packer_count(const NcmNtbPacker *packer)
{
	return packer->count;
}
/*
 * Writes the NTH and the NDP, and returns the NTB's length (0 if empty).
 * If the length is below max_size and a multiple of max_packet, the
 * short-packet rule applies: in NCM_NTB_SHORT_PAD mode one zero byte is
 * appended (and counted in the length); in NCM_NTB_SHORT_ZLP mode
 * *@ret_needs_zlp (may be NULL) is set and the caller must send a ZLP.
 * The pad byte is outside wBlockLength, as Linux' cdc_ncm does it; the packer
 * keeps a byte of room for it, so the result never exceeds max_size or the
 * buffer. *@ret_needs_zlp is always written (false unless needed).
 */
size_t ncm_ntb_packer_finish(NcmNtbPacker *packer, bool *ret_needs_zlp);

/*
 * Whether NTBs of @config can be finished full, given a buffer of at least
 * max_size: max_size (dwNtbOutMaxSize) is known, a multiple of max_packet,
 * and within what the format's block length can say.
 */
bool ncm_ntb_pack_config_can_finish_full(const NcmNtbPackConfig *config);
/* The same for a packer: its config allows it and its capacity is max_size. */
bool ncm_ntb_packer_can_finish_full(const NcmNtbPacker *packer);
/*
 * Like finish(), but the block runs to exactly max_size, zeroed past the
 * NDP, and needs no short packet. Returns max_size, or 0 when the NTB is
 * empty or the packer cannot (ncm_ntb_packer_can_finish_full()).
 *
 * Why: NCM ends an OUT NTB with a short packet or, at exactly
 * dwNtbOutMaxSize bytes, with none ("no ZLP shall be sent"): the device
 * reads blocks of that size. So NTBs of exactly that size may follow each
 * other in one bulk transfer, and on the wire that is what Linux' cdc_ncm
 * sends when it pads its NTBs to tx_max (its min_tx_pkt) so that they go
 * back to back. One transfer then carries several NTBs: a submit, a reap
 * and a wake-up for each of them is paid once.
 */
size_t ncm_ntb_packer_finish_full(NcmNtbPacker *packer);

/* Power-of-two-at-least-4 rule the kernel applies to divisors and alignments. */
uint16_t ncm_ntb_sanitize_pow2(uint16_t value);

#ifdef __cplusplus
}
#endif
