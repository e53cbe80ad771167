/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-ntb-roundtrip.c: fuzz target packing datagrams and parsing them back. */

/*
 * Input: a 17-byte packer config, then 4 bytes per datagram.
 *   [0]      bit 0: NTB32, bit 1: NDP first, bit 2: PAD (else ZLP),
 *            bit 3: buffer size + 64 KiB, bit 4: max_size + 64 KiB
 *   [1..2]   buffer size     [3..4]   max_size (dwNtbOutMaxSize)
 *   [5..6]   divisor         [7..8]   remainder
 *   [9..10]  alignment       [11..12] max_datagrams
 *   [13..14] max_packet      [15..16] first sequence number
 *   then per datagram: length (le16), content seed, bit 0 of a mode byte:
 *   write it through reserve() instead of add().
 * Divisors and alignments arrive raw, so invalid ones are exercised too.
 * Every NTB finished must parse back to exactly the datagrams packed, with
 * their offsets, the NDP alignment, the size limits and the short-packet
 * rule honoured; fits() must always predict add(). A model of the layout
 * rules, written here apart from the packer, must agree with every status
 * and offset, so the packer can neither waste room nor overstep it.
 */

#include <string.h>

#include "fuzz.h"
#include "ncm-le.h"
#include "ncm-ntb.h"

#define CONFIG_LEN 17
#define RECORD_LEN 4
/* Keeps one input's work bounded whatever the lengths ask for. */
#define MAX_BYTES_PER_INPUT (1u << 20)

typedef struct {
	NcmNtbPackConfig config;
	size_t buf_size;
	uint8_t *buf;
	/* the model: the rules, computed here */
	size_t divisor, remainder, alignment;
	size_t capacity, limit, nth_len, start;
	/* the NTB being packed */
	size_t n;
	size_t tail;
	size_t off[NCM_NTB_PACK_MAX_DATAGRAMS];
	size_t len[NCM_NTB_PACK_MAX_DATAGRAMS];
	uint8_t seed[NCM_NTB_PACK_MAX_DATAGRAMS];
	size_t seen;
} Trip;

static size_t
pow2_at_least_4(uint16_t value)
{
	return value >= 4 && !(value & (value - 1)) ? value : 4;
}

static size_t
round_up(size_t value, size_t to)
{
	return (value + to - 1) / to * to;
}

static size_t
model_ndp_len(const Trip *t, size_t entries)
{
	const bool wide = t->config.format == NCM_NTB_FORMAT_32;

	return (wide ? 16 : 8) + (entries + 1) * (wide ? 8 : 4);
}

static void
model_init(Trip *t)
{
	const NcmNtbPackConfig *c = &t->config;
	const size_t max = c->max_size ? c->max_size : SIZE_MAX;
	const bool wide = c->format == NCM_NTB_FORMAT_32;

	t->divisor = pow2_at_least_4(c->divisor);
	t->remainder = c->remainder % t->divisor;
	t->alignment = pow2_at_least_4(c->alignment);
	t->limit = c->ndp_first ? 40 : 256;
	if (c->max_datagrams && c->max_datagrams < t->limit)
		t->limit = c->max_datagrams;
	t->capacity = t->buf_size < max ? t->buf_size : max;
	if (!wide && t->capacity > 0xFFFF)
		t->capacity = 0xFFFF;
	if (c->short_mode == NCM_NTB_SHORT_PAD && c->max_packet && t->capacity &&
	    t->capacity < max)
		t->capacity--;
	t->nth_len = wide ? 16 : 12;
	t->start = t->nth_len;
	if (c->ndp_first)
		t->start = round_up(t->nth_len, t->alignment) + model_ndp_len(t, t->limit);
}

static bool
model_place(const Trip *t, size_t tail, size_t count, size_t len, size_t *ret_off)
{
	const size_t off = tail + (t->remainder + t->divisor - tail % t->divisor) % t->divisor;
	const size_t end = off + len;

	if (count >= t->limit || end > t->capacity)
		return false;
	if (!t->config.ndp_first &&
	    round_up(end, t->alignment) + model_ndp_len(t, count + 1) > t->capacity)
		return false;
	*ret_off = off;
	return true;
}

static NcmNtbPackStatus
model_status(const Trip *t, size_t len, size_t *ret_off)
{
	size_t unused;

	if (len < NCM_ETH_MIN_FRAME)
		return NCM_NTB_PACK_TOO_SMALL;
	if (model_place(t, t->tail, t->n, len, ret_off))
		return NCM_NTB_PACK_OK;
	if (model_place(t, t->start, 0, len, &unused))
		return NCM_NTB_PACK_FULL;
	return NCM_NTB_PACK_TOO_BIG;
}

/*
 * Datagram contents are slices of one pseudo-random pattern, picked by seed
 * and position: distinct per datagram, and copied and compared with
 * memcpy/memcmp, since per-byte loops in the harness cost most of the time
 * under comparison tracing.
 */
static uint8_t pattern[2 * 0x10000];

static const uint8_t *
content(uint8_t seed, size_t index)
{
	static bool ready;

	if (!ready) {
		uint32_t x = 0x4e434d21;

		for (size_t i = 0; i < sizeof(pattern); i++) {
			x = x * 1103515245u + 12345u;
			pattern[i] = (uint8_t)(x >> 16);
		}
		ready = true;
	}
	return pattern + ((seed * 257u + index * 7919u) & 0xFFFFu);
}

static bool
on_datagram(void *user_data, const uint8_t *datagram, size_t len)
{
	Trip *t = user_data;
	size_t i = t->seen++;
	size_t off = (size_t)(datagram - t->buf);

	FUZZ_CHECK(i < t->n);
	FUZZ_CHECK(len == t->len[i]);
	FUZZ_CHECK(off == t->off[i]);
	FUZZ_CHECK(off % t->divisor == t->remainder);
	FUZZ_CHECK(memcmp(datagram, content(t->seed[i], i), len) == 0);
	return true;
}

/* Checks the short-packet rule and the size limits on an NTB of @n bytes. */
static void
check_lengths(const Trip *t, size_t n, size_t block, bool zlp)
{
	const NcmNtbPackConfig *c = &t->config;
	const size_t max = c->max_size ? c->max_size : SIZE_MAX;
	bool rule = c->max_packet && block % c->max_packet == 0 && block < max;

	FUZZ_CHECK(n <= t->buf_size && n <= max);
	FUZZ_CHECK(c->format == NCM_NTB_FORMAT_32 || n <= 0xFFFF);
	if (c->short_mode == NCM_NTB_SHORT_PAD && rule) {
		FUZZ_CHECK(n == block + 1 && t->buf[block] == 0);
		FUZZ_CHECK(!zlp);
	} else {
		FUZZ_CHECK(n == block);
		FUZZ_CHECK(zlp == rule);
	}
}

static void
finish_and_check(Trip *t, NcmNtbPacker *p)
{
	const bool wide = t->config.format == NCM_NTB_FORMAT_32;
	NcmNtbParseConfig pc = { 0, false, t->config.max_size, 0, 0 };
	NcmNtbParseResult r;
	size_t n, block, ndp;
	bool zlp = true;

	n = ncm_ntb_packer_finish(p, &zlp);
	if (t->n == 0) {
		FUZZ_CHECK(n == 0 && !zlp);
		return;
	}
	block = wide ? ncm_le32_at(t->buf, n, 8) : ncm_le16_at(t->buf, n, 8);
	ndp = wide ? ncm_le32_at(t->buf, n, 12) : ncm_le16_at(t->buf, n, 10);
	check_lengths(t, n, block, zlp);
	FUZZ_CHECK(ndp % t->alignment == 0);
	if (t->config.ndp_first) {
		FUZZ_CHECK(ndp == round_up(t->nth_len, t->alignment));
		FUZZ_CHECK(block == t->tail);
	} else {
		FUZZ_CHECK(ndp == round_up(t->tail, t->alignment));
		FUZZ_CHECK(block == ndp + model_ndp_len(t, t->n));
	}
	t->seen = 0;
	FUZZ_CHECK(ncm_ntb_parse(&pc, t->buf, n, on_datagram, t, &r) == NCM_NTB_OK);
	FUZZ_CHECK(r.rejects == 0 && r.datagrams == t->n && t->seen == t->n);
	FUZZ_CHECK(r.sequence == p->sequence);
	FUZZ_CHECK(r.format == t->config.format);
}

static NcmNtbPackStatus
add_one(Trip *t, NcmNtbPacker *p, size_t len, uint8_t seed, bool by_reserve)
{
	bool fits = ncm_ntb_packer_fits(p, len);
	NcmNtbPackStatus status, expected;
	size_t off = 0;
	uint8_t *dst = NULL;

	expected = model_status(t, len, &off);
	/* len <= 0xFFFF, so the slice stays inside the pattern. */
	if (by_reserve) {
		dst = ncm_ntb_packer_reserve(p, len, &status);
		FUZZ_CHECK((dst != NULL) == (status == NCM_NTB_PACK_OK));
		if (dst)
			memcpy(dst, content(seed, t->n), len);
	} else {
		status = ncm_ntb_packer_add(p, content(seed, t->n), len);
	}
	FUZZ_CHECK(fits == (status == NCM_NTB_PACK_OK));
	FUZZ_CHECK(status == expected);
	if (status == NCM_NTB_PACK_OK) {
		FUZZ_CHECK(dst == NULL || dst == t->buf + off);
		t->tail = off + len;
		t->off[t->n] = off;
		t->len[t->n] = len;
		t->seed[t->n] = seed;
		t->n++;
		FUZZ_CHECK(ncm_ntb_packer_count(p) == t->n);
	}
	return status;
}

static void
read_config(Trip *t, const uint8_t *d, size_t size)
{
	NcmNtbPackConfig *c = &t->config;

	memset(c, 0, sizeof(*c));
	c->format = d[0] & 1 ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16;
	c->ndp_first = d[0] & 2;
	c->short_mode = d[0] & 4 ? NCM_NTB_SHORT_PAD : NCM_NTB_SHORT_ZLP;
	t->buf_size = ncm_le16_at(d, size, 1) + (d[0] & 8 ? 0x10000u : 0);
	c->max_size = ncm_le16_at(d, size, 3) + (d[0] & 16 ? 0x10000u : 0);
	c->divisor = ncm_le16_at(d, size, 5);
	c->remainder = ncm_le16_at(d, size, 7);
	c->alignment = ncm_le16_at(d, size, 9);
	c->max_datagrams = ncm_le16_at(d, size, 11);
	c->max_packet = ncm_le16_at(d, size, 13);
	model_init(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static Trip t;
	NcmNtbPacker p;
	NcmNtbPackStatus status;
	uint16_t sequence;
	size_t budget = MAX_BYTES_PER_INPUT;

	if (size < CONFIG_LEN)
		return 0;
	read_config(&t, data, size);
	sequence = ncm_le16_at(data, size, 15);
	t.buf = malloc(t.buf_size ? t.buf_size : 1);
	FUZZ_CHECK(t.buf);
	ncm_ntb_packer_init(&p, &t.config, t.buf, t.buf_size, sequence);
	FUZZ_CHECK(p.capacity == t.capacity && p.limit == t.limit);
	t.n = 0;
	t.tail = t.start;
	for (size_t pos = CONFIG_LEN; size - pos >= RECORD_LEN && budget; pos += RECORD_LEN) {
		size_t len = ncm_le16_at(data, size, pos);
		uint8_t seed = data[pos + 2];
		bool by_reserve = data[pos + 3] & 1;

		status = add_one(&t, &p, len, seed, by_reserve);
		if (status == NCM_NTB_PACK_OK || status == NCM_NTB_PACK_FULL)
			budget = len < budget ? budget - len : 0;
		if (status != NCM_NTB_PACK_FULL)
			continue;
		/* FULL promises the datagram fits a new NTB. */
		FUZZ_CHECK(t.n > 0);
		finish_and_check(&t, &p);
		ncm_ntb_packer_reset(&p, NULL, ++sequence);
		t.n = 0;
		t.tail = t.start;
		FUZZ_CHECK(add_one(&t, &p, len, seed, by_reserve) == NCM_NTB_PACK_OK);
	}
	finish_and_check(&t, &p);
	free(t.buf);
	return 0;
}
