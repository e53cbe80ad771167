/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-parse.c: zero-copy NTB16/NTB32 parser for received transfers. */

/*
 * Everything here is device input, so every offset is checked against the
 * block before use, always in the subtraction form (`off > len || n > len -
 * off`) that cannot overflow, even with NTB32's 32-bit fields.
 *
 * Loss is kept as small as the damage: a bad entry loses only itself and the
 * walk of its NDP goes on; a bad NDP loses itself and the NDPs chained after
 * it (its next index cannot be trusted); an NTH error loses the NTB and
 * whatever follows it in the transfer. Frames are delivered as they are
 * found, so what came before a fault is never taken back. The entry walk
 * is bounded by the NDP's wLength, which is itself bounded by the block:
 * trusting wLength alone is how the kernel once read past its buffer.
 *
 * This runs per NTB on the libusb thread: no allocation, no division, and
 * the only memset is the caller's small result struct.
 *
 * The choices the spec leaves open (an entry with only one zero field, a
 * plain NDP in CRC mode, an NDP without its terminator) are listed at
 * ncm_ntb_parse() in ncm-ntb.h.
 */

#include <string.h>

#include "ncm-le.h"
#include "ncm-ntb.h"

const char *
ncm_ntb_error_name(NcmNtbError err)
{
	static const char *const names[NCM_NTB_N_ERRORS] = {
		[NCM_NTB_OK] = "ok",
		[NCM_NTB_ERR_TRUNCATED] = "truncated",
		[NCM_NTB_ERR_NTH_SIGNATURE] = "nth-signature",
		[NCM_NTB_ERR_NTH_HEADER_LENGTH] = "nth-header-length",
		[NCM_NTB_ERR_BLOCK_LENGTH] = "block-length",
		[NCM_NTB_ERR_BLOCK_TOO_BIG] = "block-too-big",
		[NCM_NTB_ERR_NDP_ALIGN] = "ndp-align",
		[NCM_NTB_ERR_NDP_INDEX] = "ndp-index",
		[NCM_NTB_ERR_NDP_SIGNATURE] = "ndp-signature",
		[NCM_NTB_ERR_NDP_CRC] = "ndp-crc",
		[NCM_NTB_ERR_NDP_LENGTH] = "ndp-length",
		[NCM_NTB_ERR_NDP_OVERRUN] = "ndp-overrun",
		[NCM_NTB_ERR_NDP_CHAIN] = "ndp-chain",
		[NCM_NTB_ERR_ENTRY_OVERRUN] = "entry-overrun",
		[NCM_NTB_ERR_DATAGRAM_BOUNDS] = "datagram-bounds",
		[NCM_NTB_ERR_DATAGRAM_SHORT] = "datagram-short",
		[NCM_NTB_ERR_DATAGRAM_LONG] = "datagram-long",
		[NCM_NTB_ERR_NO_NDP] = "no-ndp",
		[NCM_NTB_ERR_OVER_BLOCK] = "over-block",
	};

	if ((unsigned)err >= NCM_NTB_N_ERRORS || !names[err])
		return "unknown";
	return names[err];
}

/* What differs between NTB16 and NTB32. */
typedef struct {
	NcmNtbFormat format;
	uint8_t format_bit;
	bool wide;              /* 32-bit block length, indexes and entries */
	uint32_t ndp_signature;
	uint32_t ndp_crc_signature;
	size_t nth_len;
	size_t ndp_header_len;
	size_t ndp_min_len;
	size_t entry_len;
	size_t next_ndp_off;    /* of wNextNdpIndex / dwNextNdpIndex in the NDP */
} NtbLayout;

static const NtbLayout ntb_layout16 = {
	NCM_NTB_FORMAT_16, NCM_NTB_FORMAT_BIT_16, false,
	NCM_NDP16_SIGNATURE, NCM_NDP16_CRC_SIGNATURE,
	NCM_NTH16_LEN, NCM_NDP16_HEADER_LEN, NCM_NDP16_MIN_LEN, NCM_NDP16_ENTRY_LEN, 6,
};

static const NtbLayout ntb_layout32 = {
	NCM_NTB_FORMAT_32, NCM_NTB_FORMAT_BIT_32, true,
	NCM_NDP32_SIGNATURE, NCM_NDP32_CRC_SIGNATURE,
	NCM_NTH32_LEN, NCM_NDP32_HEADER_LEN, NCM_NDP32_MIN_LEN, NCM_NDP32_ENTRY_LEN, 8,
};

typedef struct {
	NcmNtbParseConfig config;
	const NtbLayout *layout;
	const uint8_t *buf;
	size_t block;           /* the bytes of the transfer that form the NTB */
	NcmNtbDatagramFunc func;
	void *user_data;
	NcmNtbParseResult *result;
	NcmNtbError first;
	bool stopped;           /* the callback asked to stop */
	size_t delivered;       /* datagram bytes handed over, at most block */
} NtbParser;

static void
ntb_reject(NtbParser *p, NcmNtbError err)
{
	p->result->reasons[err]++;
	p->result->rejects++;
	if (p->first == NCM_NTB_OK)
		p->first = err;
}

/* A 16- or 32-bit field of the layout inside the block. */
static size_t
ntb_field(const NtbParser *p, size_t off)
{
	if (p->layout->wide)
		return ncm_le32_at(p->buf, p->block, off);
	return ncm_le16_at(p->buf, p->block, off);
}

static NcmNtbError
ntb_parse_signature(NtbParser *p, size_t len)
{
	uint32_t signature;

	if (len < 4)
		return NCM_NTB_ERR_TRUNCATED;
	signature = ncm_le32_at(p->buf, len, 0);
	if (signature == NCM_NTH16_SIGNATURE)
		p->layout = &ntb_layout16;
	else if (signature == NCM_NTH32_SIGNATURE)
		p->layout = &ntb_layout32;
	else
		return NCM_NTB_ERR_NTH_SIGNATURE;
	p->result->format = p->layout->format;
	if (p->config.formats && !(p->config.formats & p->layout->format_bit))
		return NCM_NTB_ERR_NTH_SIGNATURE;
	if (len < p->layout->nth_len)
		return NCM_NTB_ERR_TRUNCATED;
	return NCM_NTB_OK;
}

/* Checks the NTH and sets p->block; returns the first NDP's index in @ret_ndp. */
static NcmNtbError
ntb_parse_nth(NtbParser *p, size_t len, size_t *ret_ndp)
{
	const NtbLayout *l;
	NcmNtbError err;
	size_t block;

	err = ntb_parse_signature(p, len);
	if (err != NCM_NTB_OK)
		return err;
	l = p->layout;
	if (p->result->ntbs == 1)
		p->result->sequence = ncm_le16_at(p->buf, len, 6);
	if (ncm_le16_at(p->buf, len, 4) != l->nth_len)
		return NCM_NTB_ERR_NTH_HEADER_LENGTH;
	block = l->wide ? ncm_le32_at(p->buf, len, 8) : ncm_le16_at(p->buf, len, 8);
	if (block == 0)
		block = len;
	if (p->config.max_block && block > p->config.max_block)
		return NCM_NTB_ERR_BLOCK_TOO_BIG;
	if (block > len || block < l->nth_len)
		return NCM_NTB_ERR_BLOCK_LENGTH;
	p->block = block;
	*ret_ndp = l->wide ? ncm_le32_at(p->buf, len, 12) : ncm_le16_at(p->buf, len, 10);
	if (*ret_ndp == 0)
		return NCM_NTB_ERR_NO_NDP;
	return NCM_NTB_OK;
}

/* Hands over one entry's datagram; false when the callback said stop. */
static bool
ntb_deliver(NtbParser *p, size_t off, size_t dlen, bool crc)
{
	if (off > p->block || dlen > p->block - off) {
		ntb_reject(p, NCM_NTB_ERR_DATAGRAM_BOUNDS);
		return true;
	}
	if (crc) {
		if (dlen < NCM_NTB_CRC_LEN + NCM_ETH_MIN_FRAME) {
			ntb_reject(p, NCM_NTB_ERR_DATAGRAM_SHORT);
			return true;
		}
		dlen -= NCM_NTB_CRC_LEN;
	}
	if (dlen < NCM_ETH_MIN_FRAME) {
		ntb_reject(p, NCM_NTB_ERR_DATAGRAM_SHORT);
		return true;
	}
	if (p->config.max_datagram && dlen > p->config.max_datagram) {
		ntb_reject(p, NCM_NTB_ERR_DATAGRAM_LONG);
		return true;
	}
	if (dlen > p->block - p->delivered) {
		ntb_reject(p, NCM_NTB_ERR_OVER_BLOCK);
		return true;
	}
	p->delivered += dlen;
	p->result->datagrams++;
	if (p->func && !p->func(p->user_data, p->buf + off, dlen)) {
		p->stopped = true;
		return false;
	}
	return true;
}

/* Walks the entries of the NDP at @ndp, @ndp_len bytes, already inside the block. */
static void
ntb_walk_entries(NtbParser *p, size_t ndp, size_t ndp_len, bool crc)
{
	const size_t entry_len = p->layout->entry_len;
	const size_t half = entry_len / 2;
	size_t pos = ndp + p->layout->ndp_header_len;
	const size_t end = ndp + ndp_len;
	size_t off, dlen;

	for (;;) {
		/* pos <= end holds: ndp_len >= the header, and each step checks. */
		if (entry_len > end - pos) {
			ntb_reject(p, NCM_NTB_ERR_ENTRY_OVERRUN);
			return;
		}
		off = ntb_field(p, pos);
		dlen = ntb_field(p, pos + half);
		pos += entry_len;
		if (off == 0 || dlen == 0)
			return;
		if (!ntb_deliver(p, off, dlen, crc))
			return;
	}
}

/* Checks the NDP at @ndp; on success gives its length, CRC flag and next index. */
static NcmNtbError
ntb_check_ndp(const NtbParser *p, size_t ndp, size_t *ret_len, bool *ret_crc,
	      size_t *ret_next)
{
	const NtbLayout *l = p->layout;
	uint32_t signature;
	size_t ndp_len;
	bool crc;

	if (ndp & 3)
		return NCM_NTB_ERR_NDP_ALIGN;
	if (ndp < l->nth_len || ndp >= p->block)
		return NCM_NTB_ERR_NDP_INDEX;
	if (l->ndp_header_len > p->block - ndp)
		return NCM_NTB_ERR_NDP_OVERRUN;
	signature = ncm_le32_at(p->buf, p->block, ndp);
	crc = signature == l->ndp_crc_signature;
	if (!crc && signature != l->ndp_signature)
		return NCM_NTB_ERR_NDP_SIGNATURE;
	if (crc != p->config.crc)
		return NCM_NTB_ERR_NDP_CRC;
	ndp_len = ncm_le16_at(p->buf, p->block, ndp + 4);
	if (ndp_len < l->ndp_min_len)
		return NCM_NTB_ERR_NDP_LENGTH;
	if (ndp_len > p->block - ndp)
		return NCM_NTB_ERR_NDP_OVERRUN;
	*ret_len = ndp_len;
	*ret_crc = crc;
	*ret_next = ntb_field(p, ndp + l->next_ndp_off);
	return NCM_NTB_OK;
}

static bool
ntb_seen(const size_t *seen, unsigned n, size_t ndp)
{
	for (unsigned i = 0; i < n; i++)
		if (seen[i] == ndp)
			return true;
	return false;
}

static void
ntb_walk_chain(NtbParser *p, size_t ndp)
{
	size_t seen[NCM_NTB_MAX_NDP_HOPS];
	unsigned hops = 0;
	size_t ndp_len, next;
	NcmNtbError err;
	bool crc;

	while (ndp != 0 && !p->stopped) {
		/* Revisiting an index would replay the same NDPs forever. */
		if (hops == NCM_NTB_MAX_NDP_HOPS || ntb_seen(seen, hops, ndp)) {
			ntb_reject(p, NCM_NTB_ERR_NDP_CHAIN);
			return;
		}
		seen[hops++] = ndp;
		err = ntb_check_ndp(p, ndp, &ndp_len, &crc, &next);
		if (err != NCM_NTB_OK) {
			ntb_reject(p, err);
			return;
		}
		p->result->ndps++;
		ntb_walk_entries(p, ndp, ndp_len, crc);
		ndp = next;
	}
}

/*
 * Whether the bytes after the block start another NTB of the same format:
 * a device that leaves out the ZLP after an NTB of a whole number of
 * packets (or one whose NTBs outgrow the host's read) runs the next NTB
 * into the same transfer, and its datagrams are as good as the first's.
 * Anything else after the block is padding (Windows' zero byte, a device
 * that pads to the packet size) and is ignored.
 */
static bool
ntb_follows(const NtbParser *p, size_t len)
{
	uint32_t signature = p->layout->wide ? NCM_NTH32_SIGNATURE : NCM_NTH16_SIGNATURE;

	/* A block that ends short of a packet ended the transfer with it. */
	if (p->config.max_packet && p->block % p->config.max_packet != 0)
		return false;
	return len - p->block >= 4 && ncm_le32_at(p->buf, len, p->block) == signature;
}

NcmNtbError
ncm_ntb_parse(const NcmNtbParseConfig *config, const uint8_t *buf, size_t len,
	      NcmNtbDatagramFunc func, void *user_data, NcmNtbParseResult *result)
{
	NtbParser p = {
		.buf = buf,
		.func = func,
		.user_data = user_data,
		.result = result,
	};
	NcmNtbError err;
	size_t ndp = 0;

	memset(result, 0, sizeof(*result));
	if (config)
		p.config = *config;
	if (!buf)
		len = 0;
	/* Each NTB takes at least its NTH's bytes: the loop ends within len / 12. */
	for (;;) {
		uint32_t rejects = result->rejects;

		result->ntbs++;
		err = ntb_parse_nth(&p, len, &ndp);
		if (err != NCM_NTB_OK) {
			ntb_reject(&p, err);
			result->bad_ntbs++;
			break;
		}
		ntb_walk_chain(&p, ndp);
		if (result->rejects != rejects)
			result->bad_ntbs++;
		if (p.stopped || !ntb_follows(&p, len))
			break;
		p.buf += p.block;
		len -= p.block;
		p.delivered = 0;
	}
	return p.first;
}
