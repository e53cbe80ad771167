/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-pack.c: in-place NTB16/NTB32 packer for transmitted datagrams. */

/*
 * Datagrams are copied (or written by the caller) straight to their final
 * place; the NTH and NDP are written last, by finish(). Whether a datagram
 * fits is decided by one function, ntb_pack_place(), used by add, reserve
 * and fits alike, so fits() can never disagree with add().
 *
 * Divisors and alignments are powers of two once sanitised, so every
 * rounding is a mask. Sizes are bounded by the capacity (at most 65535 for
 * NTB16, a little under 4 GiB for NTB32), so no sum below can overflow.
 */

#include <string.h>

#include "ncm-le.h"
#include "ncm-ntb.h"

/* Leaves room to round any offset up by a 16-bit alignment within 32 bits. */
#define NTB_PACK_MAX32 (UINT32_MAX - 0x10000u)
#define NTB_PACK_MAX16 0xFFFFu

uint16_t
ncm_ntb_sanitize_pow2(uint16_t value)
{
	if (value < 4 || (value & (value - 1)))
		return 4;
	return value;
}

static bool
ntb_pack_wide(const NcmNtbPacker *p)
{
	return p->config.format == NCM_NTB_FORMAT_32;
}

static size_t
ntb_pack_nth_len(const NcmNtbPacker *p)
{
	return ntb_pack_wide(p) ? NCM_NTH32_LEN : NCM_NTH16_LEN;
}

/* Bytes of an NDP holding @entries datagram entries plus its zero terminator. */
static size_t
ntb_pack_ndp_len(const NcmNtbPacker *p, size_t entries)
{
	if (ntb_pack_wide(p))
		return NCM_NDP32_HEADER_LEN + (entries + 1) * NCM_NDP32_ENTRY_LEN;
	return NCM_NDP16_HEADER_LEN + (entries + 1) * NCM_NDP16_ENTRY_LEN;
}

static size_t
ntb_pack_align_up(size_t value, size_t pow2)
{
	return (value + pow2 - 1) & ~(pow2 - 1);
}

/* Where the NDP goes in ndp_first mode. */
static size_t
ntb_pack_first_ndp(const NcmNtbPacker *p)
{
	return ntb_pack_align_up(ntb_pack_nth_len(p), p->config.alignment);
}

/* Where the first datagram may start in an empty NTB. */
static size_t
ntb_pack_start(const NcmNtbPacker *p)
{
	if (!p->config.ndp_first)
		return ntb_pack_nth_len(p);
	return ntb_pack_first_ndp(p) + ntb_pack_ndp_len(p, p->limit);
}

/*
 * Where a datagram of @len would go after @count datagrams ending at @tail,
 * or false when it does not fit (bytes or count). The NDP-last layout must
 * keep room behind it for the NDP with one more entry.
 */
static bool
ntb_pack_place(const NcmNtbPacker *p, size_t tail, size_t count, size_t len,
	       size_t *ret_off)
{
	const size_t mask = (size_t)p->config.divisor - 1;
	const size_t off = tail + (((size_t)p->config.remainder - tail) & mask);
	size_t ndp;

	if (count >= p->limit || off > p->capacity || len > p->capacity - off)
		return false;
	if (!p->config.ndp_first) {
		ndp = ntb_pack_align_up(off + len, p->config.alignment);
		if (ndp > p->capacity || ntb_pack_ndp_len(p, count + 1) > p->capacity - ndp)
			return false;
	}
	*ret_off = off;
	return true;
}

static NcmNtbPackStatus
ntb_pack_status(const NcmNtbPacker *p, size_t len, size_t *ret_off)
{
	size_t unused;

	if (len < NCM_ETH_MIN_FRAME)
		return NCM_NTB_PACK_TOO_SMALL;
	if (ntb_pack_place(p, p->tail, p->count, len, ret_off))
		return NCM_NTB_PACK_OK;
	if (ntb_pack_place(p, ntb_pack_start(p), 0, len, &unused))
		return NCM_NTB_PACK_FULL;
	return NCM_NTB_PACK_TOO_BIG;
}

static uint16_t
ntb_pack_limit(const NcmNtbPackConfig *config)
{
	uint16_t limit = NCM_NTB_PACK_MAX_DATAGRAMS;

	if (config->ndp_first)
		limit = NCM_NTB_PACK_NDP_FIRST_DATAGRAMS;
	if (config->max_datagrams && config->max_datagrams < limit)
		limit = config->max_datagrams;
	return limit;
}

static size_t
ntb_pack_capacity(const NcmNtbPacker *p, size_t buf_size)
{
	const NcmNtbPackConfig *c = &p->config;
	size_t capacity = buf_size;
	size_t hard = ntb_pack_wide(p) ? NTB_PACK_MAX32 : NTB_PACK_MAX16;

	if (capacity > hard)
		capacity = hard;
	if (c->max_size && capacity > c->max_size)
		capacity = c->max_size;
	/* An NTB short of max_size may need the pad byte: keep room for it. */
	if (c->short_mode == NCM_NTB_SHORT_PAD && c->max_packet && capacity > 0 &&
	    (c->max_size == 0 || capacity < c->max_size))
		capacity--;
	return capacity;
}

void
ncm_ntb_packer_init(NcmNtbPacker *packer, const NcmNtbPackConfig *config, uint8_t *buf,
		    size_t buf_size, uint16_t sequence)
{
	NcmNtbPackConfig *c = &packer->config;

	*c = *config;
	if (c->format != NCM_NTB_FORMAT_32)
		c->format = NCM_NTB_FORMAT_16;
	if (c->short_mode != NCM_NTB_SHORT_PAD)
		c->short_mode = NCM_NTB_SHORT_ZLP;
	c->divisor = ncm_ntb_sanitize_pow2(c->divisor);
	c->remainder &= (uint16_t)(c->divisor - 1);
	c->alignment = ncm_ntb_sanitize_pow2(c->alignment);
	packer->limit = ntb_pack_limit(c);
	packer->capacity = ntb_pack_capacity(packer, buf ? buf_size : 0);
	packer->buf = buf;
	ncm_ntb_packer_reset(packer, NULL, sequence);
}

void
ncm_ntb_packer_reset(NcmNtbPacker *packer, uint8_t *buf, uint16_t sequence)
{
	if (buf)
		packer->buf = buf;
	packer->sequence = sequence;
	packer->count = 0;
	packer->tail = ntb_pack_start(packer);
}

bool
ncm_ntb_packer_fits(const NcmNtbPacker *packer, size_t len)
{
	size_t unused;

	return ntb_pack_status(packer, len, &unused) == NCM_NTB_PACK_OK;
}

size_t
ncm_ntb_packer_room(const NcmNtbPacker *packer)
{
	size_t lo = NCM_ETH_MIN_FRAME, hi = packer->capacity;

	if (!ncm_ntb_packer_fits(packer, lo))
		return 0;
	/* fits() is monotone in the length: the largest that fits lies in [lo, hi]. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;

		if (ncm_ntb_packer_fits(packer, mid))
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

uint8_t *
ncm_ntb_packer_reserve(NcmNtbPacker *packer, size_t len, NcmNtbPackStatus *ret_status)
{
	NcmNtbPackStatus status;
	size_t off = 0;

	status = ntb_pack_status(packer, len, &off);
	if (ret_status)
		*ret_status = status;
	if (status != NCM_NTB_PACK_OK)
		return NULL;
	/* Zeroed padding: no stale bytes of an earlier NTB go to the device. */
	memset(packer->buf + packer->tail, 0, off - packer->tail);
	packer->offsets[packer->count] = (uint32_t)off;
	packer->lengths[packer->count] = (uint32_t)len;
	packer->count++;
	packer->tail = off + len;
	return packer->buf + off;
}

NcmNtbPackStatus
ncm_ntb_packer_add(NcmNtbPacker *packer, const uint8_t *datagram, size_t len)
{
	NcmNtbPackStatus status;
	uint8_t *dst;

	dst = ncm_ntb_packer_reserve(packer, len, &status);
	if (dst)
		memcpy(dst, datagram, len);
	return status;
}

static void
ntb_pack_write_nth(NcmNtbPacker *p, size_t block, size_t ndp)
{
	uint8_t *b = p->buf;
	const size_t n = p->capacity;

	if (ntb_pack_wide(p)) {
		ncm_le32_put(b, n, 0, NCM_NTH32_SIGNATURE);
		ncm_le16_put(b, n, 4, NCM_NTH32_LEN);
		ncm_le16_put(b, n, 6, p->sequence);
		ncm_le32_put(b, n, 8, (uint32_t)block);
		ncm_le32_put(b, n, 12, (uint32_t)ndp);
	} else {
		ncm_le32_put(b, n, 0, NCM_NTH16_SIGNATURE);
		ncm_le16_put(b, n, 4, NCM_NTH16_LEN);
		ncm_le16_put(b, n, 6, p->sequence);
		ncm_le16_put(b, n, 8, (uint16_t)block);
		ncm_le16_put(b, n, 10, (uint16_t)ndp);
	}
}

/* Writes the NDP at @ndp with every entry and the terminator. */
static void
ntb_pack_write_ndp(NcmNtbPacker *p, size_t ndp)
{
	const size_t ndp_len = ntb_pack_ndp_len(p, p->count);
	uint8_t *b = p->buf;
	const size_t n = p->capacity;
	size_t pos;

	/* Zeroing first yields the reserved fields and the terminator. */
	memset(b + ndp, 0, ndp_len);
	if (ntb_pack_wide(p)) {
		ncm_le32_put(b, n, ndp, NCM_NDP32_SIGNATURE);
		ncm_le16_put(b, n, ndp + 4, (uint16_t)ndp_len);
		pos = ndp + NCM_NDP32_HEADER_LEN;
		for (size_t i = 0; i < p->count; i++, pos += NCM_NDP32_ENTRY_LEN) {
			ncm_le32_put(b, n, pos, p->offsets[i]);
			ncm_le32_put(b, n, pos + 4, p->lengths[i]);
		}
	} else {
		ncm_le32_put(b, n, ndp, NCM_NDP16_SIGNATURE);
		ncm_le16_put(b, n, ndp + 4, (uint16_t)ndp_len);
		pos = ndp + NCM_NDP16_HEADER_LEN;
		for (size_t i = 0; i < p->count; i++, pos += NCM_NDP16_ENTRY_LEN) {
			ncm_le16_put(b, n, pos, (uint16_t)p->offsets[i]);
			ncm_le16_put(b, n, pos + 2, (uint16_t)p->lengths[i]);
		}
	}
}

/* Applies the short-packet rule to an NTB of @len bytes; returns the length to send. */
static size_t
ntb_pack_short_rule(NcmNtbPacker *p, size_t len, bool *ret_needs_zlp)
{
	const NcmNtbPackConfig *c = &p->config;

	if (c->max_packet == 0 || len % c->max_packet != 0)
		return len;
	if (c->max_size != 0 && len >= c->max_size)
		return len;
	if (c->short_mode == NCM_NTB_SHORT_PAD) {
		/* ntb_pack_capacity() kept this byte free. */
		p->buf[len] = 0;
		return len + 1;
	}
	if (ret_needs_zlp)
		*ret_needs_zlp = true;
	return len;
}

/* Writes the NDP and the NTH; the block runs to @full when not 0 (zeroed
 * past the NDP). Returns the block's length; 0 when empty. */
static size_t
ntb_pack_close(NcmNtbPacker *packer, size_t full)
{
	const size_t nth_len = ntb_pack_nth_len(packer);
	uint8_t *b = packer->buf;
	size_t ndp, ndp_len, block;

	if (packer->count == 0)
		return 0;
	ndp_len = ntb_pack_ndp_len(packer, packer->count);
	if (packer->config.ndp_first) {
		ndp = ntb_pack_first_ndp(packer);
		block = packer->tail;
		/* The gap before the NDP and the unused end of its reservation. */
		memset(b + nth_len, 0, ndp - nth_len);
		memset(b + ndp + ndp_len, 0, ntb_pack_start(packer) - ndp - ndp_len);
	} else {
		ndp = ntb_pack_align_up(packer->tail, packer->config.alignment);
		block = ndp + ndp_len;
		memset(b + packer->tail, 0, ndp - packer->tail);
	}
	ntb_pack_write_ndp(packer, ndp);
	if (full) {
		memset(b + block, 0, full - block);
		block = full;
	}
	ntb_pack_write_nth(packer, block, ndp);
	return block;
}

size_t
ncm_ntb_packer_finish(NcmNtbPacker *packer, bool *ret_needs_zlp)
{
	size_t block = ntb_pack_close(packer, 0);

	if (ret_needs_zlp)
		*ret_needs_zlp = false;
	if (block == 0)
		return 0;
	return ntb_pack_short_rule(packer, block, ret_needs_zlp);
}

bool
ncm_ntb_pack_config_can_finish_full(const NcmNtbPackConfig *config)
{
	size_t hard = config->format == NCM_NTB_FORMAT_32 ? NTB_PACK_MAX32 : NTB_PACK_MAX16;

	return config->max_size != 0 && config->max_size <= hard && config->max_packet != 0 &&
	       config->max_size % config->max_packet == 0;
}

bool
ncm_ntb_packer_can_finish_full(const NcmNtbPacker *packer)
{
	return packer->capacity == packer->config.max_size &&
	       ncm_ntb_pack_config_can_finish_full(&packer->config);
}

size_t
ncm_ntb_packer_finish_full(NcmNtbPacker *packer)
{
	if (!ncm_ntb_packer_can_finish_full(packer))
		return 0;
	return ntb_pack_close(packer, packer->config.max_size);
}
