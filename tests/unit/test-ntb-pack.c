/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ntb-pack.c: the NTB packer, checked against a model and by parsing back. */

#include <glib.h>
#include <string.h>

#include "ncm-le.h"
#include "ncm-ntb.h"
#include "ntb-vectors.h"

/*
 * An independent statement of the layout rules, written from the spec and
 * the header rather than from the packer: where the next datagram must go
 * and whether it fits. The packer must agree with it on every call.
 */
typedef struct {
	bool wide;
	bool ndp_first;
	size_t capacity;
	size_t divisor;
	size_t remainder;
	size_t alignment;
	size_t limit;
	size_t nth_len;
	size_t start;
} Model;

static size_t
model_ndp_len(const Model *m, size_t entries)
{
	return (m->wide ? 16 : 8) + (entries + 1) * (m->wide ? 8 : 4);
}

static size_t
round_up(size_t value, size_t to)
{
	return (value + to - 1) / to * to;
}

static bool
is_pow2_4(unsigned v)
{
	return v >= 4 && (v & (v - 1)) == 0;
}

static void
model_init(Model *m, const NcmNtbPackConfig *c, size_t buf_size)
{
	size_t max = c->max_size ? c->max_size : SIZE_MAX;

	m->wide = c->format == NCM_NTB_FORMAT_32;
	m->ndp_first = c->ndp_first;
	m->divisor = is_pow2_4(c->divisor) ? c->divisor : 4;
	m->remainder = c->remainder % m->divisor;
	m->alignment = is_pow2_4(c->alignment) ? c->alignment : 4;
	m->limit = c->ndp_first ? 40 : 256;
	if (c->max_datagrams && c->max_datagrams < m->limit)
		m->limit = c->max_datagrams;
	m->capacity = MIN(buf_size, max);
	if (!m->wide)
		m->capacity = MIN(m->capacity, 65535);
	/* Room for the pad byte when an NTB can end short of max_size. */
	if (c->short_mode == NCM_NTB_SHORT_PAD && c->max_packet && m->capacity && m->capacity < max)
		m->capacity--;
	m->nth_len = m->wide ? 16 : 12;
	m->start = m->nth_len;
	if (m->ndp_first)
		m->start = round_up(m->nth_len, m->alignment) + model_ndp_len(m, m->limit);
}

static bool
model_place(const Model *m, size_t tail, size_t count, size_t len, size_t *ret_off)
{
	size_t off = tail + (m->remainder + m->divisor - tail % m->divisor) % m->divisor;
	size_t end = off + len;

	if (count >= m->limit || end > m->capacity)
		return false;
	if (!m->ndp_first && round_up(end, m->alignment) + model_ndp_len(m, count + 1) > m->capacity)
		return false;
	*ret_off = off;
	return true;
}

/* Datagram contents derive from a seed, so they can be checked after the trip. */
static void
fill(uint8_t *dst, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		dst[i] = (uint8_t)(x >> 16);
	}
}

typedef struct {
	size_t n;
	size_t off[NCM_NTB_PACK_MAX_DATAGRAMS];
	size_t len[NCM_NTB_PACK_MAX_DATAGRAMS];
	uint32_t seed[NCM_NTB_PACK_MAX_DATAGRAMS];
	/* filled while parsing back */
	const uint8_t *base;
	size_t seen;
	const Model *model;
} Expected;

static bool
check_datagram(void *user_data, const uint8_t *datagram, size_t len)
{
	Expected *e = user_data;
	size_t i = e->seen++;
	uint8_t *want;

	g_assert_cmpuint(i, <, e->n);
	g_assert_cmpuint((size_t)(datagram - e->base), ==, e->off[i]);
	g_assert_cmpuint(e->off[i] % e->model->divisor, ==, e->model->remainder);
	g_assert_cmpuint(len, ==, e->len[i]);
	want = g_malloc(len);
	fill(want, len, e->seed[i]);
	g_assert_cmpmem(datagram, len, want, len);
	g_free(want);
	return true;
}

/* What the random round trip went through, so it cannot pass by testing nothing. */
static struct {
	guint status[4];
	guint ntbs;
	guint pads;
	guint zlps;
	guint wide;
	guint ndp_first;
} seen;

/* Checks a finished NTB of @n bytes by parsing it back. */
static void
verify_ntb(const NcmNtbPacker *p, const Model *m, size_t n, bool zlp, Expected *e)
{
	const NcmNtbPackConfig *c = &p->config;
	NcmNtbParseConfig pc = { 0, false, c->max_size, 0, 0 };
	const size_t max = c->max_size ? c->max_size : SIZE_MAX;
	NcmNtbParseResult r;
	size_t block, ndp;
	bool short_needed;

	g_assert_cmpuint(n, <=, max);
	block = m->wide ? ncm_le32_at(p->buf, n, 8) : ncm_le16_at(p->buf, n, 8);
	ndp = m->wide ? ncm_le32_at(p->buf, n, 12) : ncm_le16_at(p->buf, n, 10);
	g_assert_cmpuint(ndp % m->alignment, ==, 0);
	if (m->ndp_first)
		g_assert_cmpuint(ndp, ==, round_up(m->nth_len, m->alignment));
	else
		g_assert_cmpuint(ndp, >=, e->off[e->n - 1] + e->len[e->n - 1]);
	short_needed = c->max_packet && block % c->max_packet == 0 && block < max;
	if (c->short_mode == NCM_NTB_SHORT_PAD && short_needed) {
		g_assert_cmpuint(n, ==, block + 1);
		g_assert_cmpuint(p->buf[block], ==, 0);
	} else {
		g_assert_cmpuint(n, ==, block);
	}
	g_assert_cmpint(zlp, ==, c->short_mode == NCM_NTB_SHORT_ZLP && short_needed);
	seen.ntbs++;
	seen.zlps += zlp;
	seen.pads += n == block + 1;
	seen.wide += m->wide;
	seen.ndp_first += m->ndp_first;
	/* Whatever is sent, the receiver sees a short packet or a full NTB. */
	g_assert_true(zlp || !c->max_packet || n % c->max_packet || n >= max);
	e->base = p->buf;
	e->seen = 0;
	e->model = m;
	g_assert_cmpint(ncm_ntb_parse(&pc, p->buf, n, check_datagram, e, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.rejects, ==, 0);
	g_assert_cmpuint(r.datagrams, ==, e->n);
	g_assert_cmpuint(r.sequence, ==, p->sequence);
	g_assert_cmpint(r.format, ==, m->wide ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16);
}

static uint16_t
random_pow2ish(GRand *rand)
{
	switch (g_rand_int_range(rand, 0, 4)) {
	case 0:
		return (uint16_t)g_rand_int_range(rand, 0, 0x10000);
	case 1:
		return (uint16_t)(1u << g_rand_int_range(rand, 0, 11));
	case 2:
		return 4;
	default:
		return (uint16_t)g_rand_int_range(rand, 0, 9);
	}
}

static void
random_config(GRand *rand, NcmNtbPackConfig *c, size_t *ret_buf_size)
{
	static const uint16_t packets[] = { 0, 64, 512, 1024, 8, 100 };
	size_t buf_size;

	memset(c, 0, sizeof(*c));
	c->format = g_rand_boolean(rand) ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16;
	c->divisor = random_pow2ish(rand);
	c->remainder = (uint16_t)g_rand_int_range(rand, 0, 0x10000);
	c->alignment = random_pow2ish(rand);
	c->max_datagrams = g_rand_boolean(rand) ? 0 : (uint16_t)g_rand_int_range(rand, 1, 300);
	c->max_packet = packets[g_rand_int_range(rand, 0, G_N_ELEMENTS(packets))];
	c->short_mode = g_rand_boolean(rand) ? NCM_NTB_SHORT_PAD : NCM_NTB_SHORT_ZLP;
	c->ndp_first = g_rand_boolean(rand);
	switch (g_rand_int_range(rand, 0, 3)) {
	case 0:
		buf_size = (size_t)g_rand_int_range(rand, 0, 400);
		break;
	case 1:
		buf_size = (size_t)g_rand_int_range(rand, 400, 20000);
		break;
	default:
		buf_size = (size_t)g_rand_int_range(rand, 60000, 70000);
		break;
	}
	switch (g_rand_int_range(rand, 0, 3)) {
	case 0:
		c->max_size = 0;
		break;
	case 1:
		c->max_size = (uint32_t)buf_size;
		break;
	default:
		c->max_size = (uint32_t)g_rand_int_range(rand, 0, 70000);
		break;
	}
	*ret_buf_size = buf_size;
}

static size_t
random_datagram_len(GRand *rand)
{
	switch (g_rand_int_range(rand, 0, 8)) {
	case 0:
		return (size_t)g_rand_int_range(rand, 0, 20);
	case 1:
		return (size_t)g_rand_int_range(rand, 1500, 70000);
	default:
		return (size_t)g_rand_int_range(rand, 14, 1515);
	}
}

/* Adds one datagram and checks the outcome against the model. */
static NcmNtbPackStatus
add_checked(NcmNtbPacker *p, const Model *m, Expected *e, size_t len, uint32_t seed,
	    bool by_reserve)
{
	size_t want_off = 0, unused;
	bool fits_model = model_place(m, p->tail, p->count, len, &want_off);
	bool fits_empty = model_place(m, m->start, 0, len, &unused);
	NcmNtbPackStatus status;
	uint8_t *copy, *dst;

	g_assert_cmpint(ncm_ntb_packer_fits(p, len), ==, len >= 14 && fits_model);
	if (by_reserve) {
		dst = ncm_ntb_packer_reserve(p, len, &status);
		if (dst)
			fill(dst, len, seed);
	} else if (len >= 14 && fits_model) {
		copy = g_malloc(len);
		fill(copy, len, seed);
		status = ncm_ntb_packer_add(p, copy, len);
		g_free(copy);
	} else {
		/* Must be refused before a byte is read, so no need to fill it. */
		static const uint8_t nothing[1];

		status = ncm_ntb_packer_add(p, nothing, len);
	}
	if (len < 14)
		g_assert_cmpint(status, ==, NCM_NTB_PACK_TOO_SMALL);
	else if (fits_model)
		g_assert_cmpint(status, ==, NCM_NTB_PACK_OK);
	else
		g_assert_cmpint(status, ==, fits_empty ? NCM_NTB_PACK_FULL : NCM_NTB_PACK_TOO_BIG);
	seen.status[status]++;
	if (status == NCM_NTB_PACK_OK) {
		e->off[e->n] = want_off;
		e->len[e->n] = len;
		e->seed[e->n] = seed;
		e->n++;
		g_assert_cmpuint(p->count, ==, e->n);
	}
	return status;
}

static void
finish_checked(NcmNtbPacker *p, const Model *m, Expected *e)
{
	bool zlp = true;
	size_t n = ncm_ntb_packer_finish(p, &zlp);

	if (e->n == 0) {
		g_assert_cmpuint(n, ==, 0);
		g_assert_false(zlp);
		return;
	}
	verify_ntb(p, m, n, zlp, e);
}

static void
roundtrip_once(GRand *rand)
{
	NcmNtbPackConfig c;
	NcmNtbPacker p;
	Expected e = { 0 };
	size_t buf_size, len;
	uint16_t seq = (uint16_t)g_rand_int(rand);
	guint ntbs = 0, tries = (guint)g_rand_int_range(rand, 1, 400);
	uint8_t *buf;
	Model m;

	random_config(rand, &c, &buf_size);
	buf = g_malloc(buf_size ? buf_size : 1);
	ncm_ntb_packer_init(&p, &c, buf, buf_size, seq);
	model_init(&m, &c, buf_size);
	g_assert_cmpuint(p.capacity, ==, m.capacity);
	for (guint i = 0; i < tries && ntbs < 3; i++) {
		len = random_datagram_len(rand);
		if (add_checked(&p, &m, &e, len, i, g_rand_boolean(rand)) != NCM_NTB_PACK_FULL)
			continue;
		g_assert_cmpuint(e.n, >, 0);
		finish_checked(&p, &m, &e);
		ntbs++;
		ncm_ntb_packer_reset(&p, NULL, ++seq);
		e.n = 0;
		/* FULL promises the datagram fits a new NTB. */
		g_assert_cmpint(add_checked(&p, &m, &e, len, i, false), ==, NCM_NTB_PACK_OK);
	}
	finish_checked(&p, &m, &e);
	g_free(buf);
}

static void
test_roundtrip(void)
{
	GRand *rand = g_rand_new_with_seed(0x4e434d31);
	guint iterations = g_test_slow() ? 50000 : 4000;

	memset(&seen, 0, sizeof(seen));
	for (guint i = 0; i < iterations; i++)
		roundtrip_once(rand);
	g_rand_free(rand);
	g_test_message("%u NTBs: %u OK, %u FULL, %u TOO_BIG, %u TOO_SMALL; %u padded, %u ZLP, "
		       "%u NTB32, %u NDP first", seen.ntbs, seen.status[NCM_NTB_PACK_OK],
		       seen.status[NCM_NTB_PACK_FULL], seen.status[NCM_NTB_PACK_TOO_BIG],
		       seen.status[NCM_NTB_PACK_TOO_SMALL], seen.pads, seen.zlps, seen.wide,
		       seen.ndp_first);
	g_assert_cmpuint(seen.ntbs, >, iterations);
	g_assert_cmpuint(seen.status[NCM_NTB_PACK_FULL], >, iterations / 10);
	g_assert_cmpuint(seen.status[NCM_NTB_PACK_TOO_BIG], >, iterations / 10);
	g_assert_cmpuint(seen.status[NCM_NTB_PACK_TOO_SMALL], >, iterations / 10);
	g_assert_cmpuint(seen.pads, >, 10);
	g_assert_cmpuint(seen.zlps, >, 10);
	g_assert_cmpuint(seen.wide, >, seen.ntbs / 4);
	g_assert_cmpuint(seen.ndp_first, >, seen.ntbs / 4);
}

/* Every valid divisor, remainder and alignment, with odd-sized datagrams. */
static void
test_offset_property(void)
{
	static uint8_t buf[65536];
	NcmNtbPackConfig c = { .max_size = sizeof(buf) };
	NcmNtbPacker p;
	Expected e;
	Model m;

	for (unsigned d = 4; d <= 1024; d <<= 1)
		for (unsigned rem = 0; rem < d; rem += d / 4 + 1)
			for (unsigned a = 4; a <= 1024; a <<= 2)
				for (int f = 0; f < 4; f++) {
					c.format = f & 1 ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16;
					c.ndp_first = f & 2;
					c.divisor = (uint16_t)d;
					c.remainder = (uint16_t)rem;
					c.alignment = (uint16_t)a;
					ncm_ntb_packer_init(&p, &c, buf, sizeof(buf), 1);
					model_init(&m, &c, sizeof(buf));
					e.n = 0;
					for (uint32_t i = 0; i < 7; i++)
						g_assert_cmpint(add_checked(&p, &m, &e, 15 + 2 * i, i, false), ==,
								NCM_NTB_PACK_OK);
					finish_checked(&p, &m, &e);
				}
}

static void
test_sanitize(void)
{
	static const uint16_t in[] = { 0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 0x8000, 0xFFFF, 0x0C00 };
	static const uint16_t out[] = { 4, 4, 4, 4, 4, 4, 4, 8, 4, 16, 0x8000, 4, 4 };

	for (size_t i = 0; i < G_N_ELEMENTS(in); i++)
		g_assert_cmpuint(ncm_ntb_sanitize_pow2(in[i]), ==, out[i]);
}

static NcmNtbPacker *
packer_new(const NcmNtbPackConfig *c, size_t buf_size)
{
	NcmNtbPacker *p = g_new0(NcmNtbPacker, 1);

	ncm_ntb_packer_init(p, c, buf_size ? g_malloc(buf_size) : NULL, buf_size, 1);
	return p;
}

static void
packer_free(NcmNtbPacker *p)
{
	g_free(p->buf);
	g_free(p);
}

static size_t
capacity_of(NcmNtbFormat format, uint32_t max_size, uint16_t max_packet,
	    NcmNtbShortMode mode, size_t buf_size)
{
	NcmNtbPackConfig c = { format, max_size, 4, 0, 4, 0, max_packet, mode, false };
	NcmNtbPacker *p = packer_new(&c, buf_size);
	size_t capacity = p->capacity;

	packer_free(p);
	return capacity;
}

static uint16_t
limit_of(bool ndp_first, uint16_t max_datagrams)
{
	NcmNtbPackConfig c = { .max_datagrams = max_datagrams, .ndp_first = ndp_first };
	NcmNtbPacker *p = packer_new(&c, 100);
	uint16_t limit = p->limit;

	packer_free(p);
	return limit;
}

static void
test_config(void)
{
	NcmNtbPackConfig c = { (NcmNtbFormat)7, 0, 6, 13, 0, 0, 0, (NcmNtbShortMode)9, false };
	NcmNtbPacker *p = packer_new(&c, 100);

	g_assert_cmpint(p->config.format, ==, NCM_NTB_FORMAT_16);
	g_assert_cmpuint(p->config.divisor, ==, 4);
	g_assert_cmpuint(p->config.remainder, ==, 1);
	g_assert_cmpuint(p->config.alignment, ==, 4);
	g_assert_cmpint(p->config.short_mode, ==, NCM_NTB_SHORT_ZLP);
	packer_free(p);
	g_assert_cmpuint(limit_of(false, 0), ==, NCM_NTB_PACK_MAX_DATAGRAMS);
	g_assert_cmpuint(limit_of(false, 300), ==, NCM_NTB_PACK_MAX_DATAGRAMS);
	g_assert_cmpuint(limit_of(false, 3), ==, 3);
	g_assert_cmpuint(limit_of(true, 0), ==, NCM_NTB_PACK_NDP_FIRST_DATAGRAMS);
	g_assert_cmpuint(limit_of(true, 100), ==, NCM_NTB_PACK_NDP_FIRST_DATAGRAMS);
	g_assert_cmpuint(limit_of(true, 10), ==, 10);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_16, 0, 0, 0, 100000), ==, 65535);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_32, 0, 0, 0, 100000), ==, 100000);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_32, 2048, 0, 0, 4096), ==, 2048);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_32, 2048, 0, 0, 1000), ==, 1000);
	/* PAD keeps a byte when an NTB can end short of max_size. */
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_32, 2048, 512, 1, 1000), ==, 999);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_32, 2048, 512, 1, 4096), ==, 2048);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_32, 0, 512, 1, 4096), ==, 4095);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_32, 2048, 0, 1, 1000), ==, 1000);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_16, 100000, 512, 1, 100000), ==, 65534);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_16, 100000, 512, 0, 100000), ==, 65535);
	g_assert_cmpuint(capacity_of(NCM_NTB_FORMAT_16, 0, 0, 0, 0), ==, 0);
}

/* Packs the two datagrams of a hand-built vector and expects it byte for byte. */
static void
assert_packs_to(const NcmNtbPackConfig *c, uint16_t seq, const uint8_t *v, size_t len,
		size_t a_off, size_t a_len, size_t b_off, size_t b_len)
{
	uint8_t buf[256];
	NcmNtbPacker p;
	bool zlp = true;

	memset(buf, 0xEE, sizeof(buf));
	ncm_ntb_packer_init(&p, c, buf, sizeof(buf), seq);
	g_assert_cmpint(ncm_ntb_packer_add(&p, v + a_off, a_len), ==, NCM_NTB_PACK_OK);
	g_assert_cmpint(ncm_ntb_packer_add(&p, v + b_off, b_len), ==, NCM_NTB_PACK_OK);
	g_assert_cmpuint(ncm_ntb_packer_count(&p), ==, 2);
	g_assert_cmpuint(ncm_ntb_packer_finish(&p, &zlp), ==, len);
	g_assert_false(zlp);
	g_assert_cmpmem(buf, len, v, len);
}

static void
test_vectors(void)
{
	NcmNtbPackConfig c = { NCM_NTB_FORMAT_16, 0, 4, 0, 4, 0, 0, NCM_NTB_SHORT_ZLP, false };

	assert_packs_to(&c, 0x1234, v_ntb16, sizeof(v_ntb16), 12, 14, 28, 18);
	c.format = NCM_NTB_FORMAT_32;
	assert_packs_to(&c, 7, v_ntb32, sizeof(v_ntb32), 16, 14, 32, 18);
	c.format = NCM_NTB_FORMAT_16;
	c.ndp_first = true;
	c.max_datagrams = 2;
	assert_packs_to(&c, 1, v_ntb16_ndp_first, sizeof(v_ntb16_ndp_first), 32, 14, 48, 18);
}

/* Packs one datagram of @len into a fresh NTB16 and finishes it. */
static size_t
pack_one(NcmNtbPackConfig *c, size_t buf_size, size_t len, NcmNtbPackStatus *ret_status,
	 bool *ret_zlp, uint8_t *ret_pad)
{
	NcmNtbPacker *p = packer_new(c, buf_size);
	uint8_t frame[2048] = { 0x42 };
	NcmNtbParseResult r;
	size_t n;

	*ret_status = ncm_ntb_packer_add(p, frame, len);
	n = ncm_ntb_packer_finish(p, ret_zlp);
	if (n) {
		g_assert_cmpint(ncm_ntb_parse(NULL, p->buf, n, NULL, NULL, &r), ==, NCM_NTB_OK);
		g_assert_cmpuint(r.datagrams, ==, 1);
		*ret_pad = n > ncm_le16_at(p->buf, n, 8) ? p->buf[n - 1] : 0xFF;
	}
	packer_free(p);
	return n;
}

static void
test_short_packet(void)
{
	/* One 100-byte datagram: NTH 12 + 100, NDP16 at 112, 16 bytes: 128 = 2 x 64. */
	NcmNtbPackConfig c = { NCM_NTB_FORMAT_16, 2048, 4, 0, 4, 0, 64, NCM_NTB_SHORT_ZLP, false };
	NcmNtbPackStatus status;
	uint8_t pad = 0xFF;
	bool zlp;

	g_assert_cmpuint(pack_one(&c, 2048, 100, &status, &zlp, &pad), ==, 128);
	g_assert_true(zlp);
	g_assert_cmpuint(pad, ==, 0xFF);
	g_assert_cmpuint(pack_one(&c, 2048, 101, &status, &zlp, &pad), ==, 132);
	g_assert_false(zlp);
	c.short_mode = NCM_NTB_SHORT_PAD;
	g_assert_cmpuint(pack_one(&c, 2048, 100, &status, &zlp, &pad), ==, 129);
	g_assert_false(zlp);
	g_assert_cmpuint(pad, ==, 0);
	/* An NTB of exactly max_size ends the transfer by itself. */
	c.max_size = 128;
	g_assert_cmpuint(pack_one(&c, 2048, 100, &status, &zlp, &pad), ==, 128);
	g_assert_false(zlp);
	c.short_mode = NCM_NTB_SHORT_ZLP;
	g_assert_cmpuint(pack_one(&c, 2048, 100, &status, &zlp, &pad), ==, 128);
	g_assert_false(zlp);
	/* Unknown max_size: the rule applies to every multiple. */
	c.max_size = 0;
	g_assert_cmpuint(pack_one(&c, 2048, 100, &status, &zlp, &pad), ==, 128);
	g_assert_true(zlp);
	/* No packet size, no rule. */
	c.max_packet = 0;
	g_assert_cmpuint(pack_one(&c, 2048, 100, &status, &zlp, &pad), ==, 128);
	g_assert_false(zlp);
	/* A 128-byte buffer holds the NTB in ZLP mode but not with the pad byte. */
	c.max_packet = 64;
	c.max_size = 2048;
	g_assert_cmpuint(pack_one(&c, 128, 100, &status, &zlp, &pad), ==, 128);
	g_assert_true(zlp);
	c.short_mode = NCM_NTB_SHORT_PAD;
	g_assert_cmpuint(pack_one(&c, 128, 100, &status, &zlp, &pad), ==, 0);
	g_assert_cmpint(status, ==, NCM_NTB_PACK_TOO_BIG);
	g_assert_cmpuint(pack_one(&c, 128, 96, &status, &zlp, &pad), ==, 124);
	g_assert_cmpint(status, ==, NCM_NTB_PACK_OK);
}

static void
fill_until_full(NcmNtbPacker *p, size_t len, guint expect)
{
	uint8_t frame[64] = { 0 };

	for (guint i = 0; i < expect; i++)
		g_assert_cmpint(ncm_ntb_packer_add(p, frame, len), ==, NCM_NTB_PACK_OK);
	g_assert_false(ncm_ntb_packer_fits(p, len));
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, len), ==, NCM_NTB_PACK_FULL);
	g_assert_cmpuint(ncm_ntb_packer_count(p), ==, expect);
}

static void
test_datagram_limit(void)
{
	NcmNtbPackConfig c = { NCM_NTB_FORMAT_32, 0, 4, 0, 4, 3, 0, NCM_NTB_SHORT_ZLP, false };
	NcmNtbPacker *p = packer_new(&c, 16384);
	NcmNtbParseResult r;
	size_t n;

	fill_until_full(p, 60, 3);
	n = ncm_ntb_packer_finish(p, NULL);
	g_assert_cmpint(ncm_ntb_parse(NULL, p->buf, n, NULL, NULL, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.datagrams, ==, 3);
	ncm_ntb_packer_reset(p, NULL, 2);
	g_assert_true(ncm_ntb_packer_fits(p, 60));
	packer_free(p);
	/* No device limit: the packer's own. */
	c.max_datagrams = 0;
	p = packer_new(&c, 16384);
	fill_until_full(p, 14, NCM_NTB_PACK_MAX_DATAGRAMS);
	n = ncm_ntb_packer_finish(p, NULL);
	g_assert_cmpint(ncm_ntb_parse(NULL, p->buf, n, NULL, NULL, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.datagrams, ==, NCM_NTB_PACK_MAX_DATAGRAMS);
	packer_free(p);
	c.ndp_first = true;
	p = packer_new(&c, 16384);
	fill_until_full(p, 14, NCM_NTB_PACK_NDP_FIRST_DATAGRAMS);
	packer_free(p);
}

static void
test_full_bytes(void)
{
	NcmNtbPackConfig c = { NCM_NTB_FORMAT_16, 200, 4, 0, 4, 0, 0, NCM_NTB_SHORT_ZLP, false };
	NcmNtbPacker *p = packer_new(&c, 1000);
	uint8_t frame[200] = { 0 };
	NcmNtbPackStatus status;

	/* 50-byte datagrams at 12, 64, 116; the NDP then needs 168 + 24 = 192. */
	fill_until_full(p, 50, 3);
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, 14), ==, NCM_NTB_PACK_FULL);
	g_assert_cmpuint(ncm_ntb_packer_finish(p, NULL), ==, 192);
	/* The largest datagram fills the 200 bytes exactly: 12 + 172 + NDP 16. */
	ncm_ntb_packer_reset(p, NULL, 2);
	g_assert_true(ncm_ntb_packer_fits(p, 172));
	g_assert_false(ncm_ntb_packer_fits(p, 173));
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, 173), ==, NCM_NTB_PACK_TOO_BIG);
	g_assert_null(ncm_ntb_packer_reserve(p, 173, &status));
	g_assert_cmpint(status, ==, NCM_NTB_PACK_TOO_BIG);
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, 172), ==, NCM_NTB_PACK_OK);
	g_assert_cmpuint(ncm_ntb_packer_finish(p, NULL), ==, 200);
	packer_free(p);
	/* NDP first with room for 2 entries: datagrams start at 12 + 20. */
	c.ndp_first = true;
	c.max_datagrams = 2;
	p = packer_new(&c, 1000);
	g_assert_true(ncm_ntb_packer_fits(p, 168));
	g_assert_false(ncm_ntb_packer_fits(p, 169));
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, 169), ==, NCM_NTB_PACK_TOO_BIG);
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, 168), ==, NCM_NTB_PACK_OK);
	g_assert_cmpuint(ncm_ntb_packer_finish(p, NULL), ==, 200);
	packer_free(p);
}

static void
test_too_small(void)
{
	NcmNtbPackConfig c = { 0 };
	NcmNtbPacker *p = packer_new(&c, 1000);
	uint8_t frame[14] = { 0 };
	NcmNtbPackStatus status = NCM_NTB_PACK_OK;

	g_assert_false(ncm_ntb_packer_fits(p, 13));
	g_assert_false(ncm_ntb_packer_fits(p, 0));
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, 13), ==, NCM_NTB_PACK_TOO_SMALL);
	g_assert_null(ncm_ntb_packer_reserve(p, 0, &status));
	g_assert_cmpint(status, ==, NCM_NTB_PACK_TOO_SMALL);
	g_assert_cmpuint(ncm_ntb_packer_count(p), ==, 0);
	g_assert_true(ncm_ntb_packer_fits(p, 14));
	packer_free(p);
	/* No buffer, no room. */
	p = packer_new(&c, 0);
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, 14), ==, NCM_NTB_PACK_TOO_BIG);
	g_assert_cmpuint(ncm_ntb_packer_finish(p, NULL), ==, 0);
	packer_free(p);
}

static void
test_reserve_and_reset(void)
{
	NcmNtbPackConfig c = { NCM_NTB_FORMAT_32, 0, 8, 2, 16, 0, 0, NCM_NTB_SHORT_ZLP, false };
	NcmNtbPacker *p = packer_new(&c, 1000);
	uint8_t *other = g_malloc(1000), *first, *snapshot, *dst;
	NcmNtbParseResult r;
	size_t n;
	bool zlp = true;

	g_assert_cmpuint(ncm_ntb_packer_finish(p, &zlp), ==, 0);
	g_assert_false(zlp);
	dst = ncm_ntb_packer_reserve(p, 20, NULL);
	g_assert_nonnull(dst);
	g_assert_cmpuint((size_t)(dst - p->buf), ==, 18);
	memset(dst, 0x77, 20);
	n = ncm_ntb_packer_finish(p, NULL);
	first = p->buf;
	snapshot = g_memdup2(first, n);
	/* A new buffer and sequence; the old NTB stays as finished. */
	ncm_ntb_packer_reset(p, other, 9);
	g_assert_cmpuint(ncm_ntb_packer_count(p), ==, 0);
	dst = ncm_ntb_packer_reserve(p, 30, NULL);
	g_assert_true(dst >= other && dst < other + 1000);
	memset(dst, 0x55, 30);
	n = ncm_ntb_packer_finish(p, NULL);
	g_assert_cmpint(ncm_ntb_parse(NULL, other, n, NULL, NULL, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.sequence, ==, 9);
	g_assert_cmpuint(r.datagrams, ==, 1);
	g_assert_cmpmem(first, ncm_le32_at(snapshot, 16, 8), snapshot, ncm_le32_at(snapshot, 16, 8));
	g_assert_cmpint(ncm_ntb_parse(NULL, first, ncm_le32_at(first, 16, 8), NULL, NULL, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(r.sequence, ==, 1);
	g_free(snapshot);
	g_free(first);
	packer_free(p);
}

static void
test_big_buffers(void)
{
	NcmNtbPackConfig c = { NCM_NTB_FORMAT_16, 0, 4, 0, 4, 0, 512, NCM_NTB_SHORT_PAD, false };
	NcmNtbPacker *p = packer_new(&c, 100000);
	uint8_t frame[1514] = { 0 };
	NcmNtbParseResult r;
	size_t n;

	/* NTB16 stops below 64 KiB whatever the buffer and max_size. */
	while (ncm_ntb_packer_add(p, frame, sizeof(frame)) == NCM_NTB_PACK_OK)
		;
	n = ncm_ntb_packer_finish(p, NULL);
	g_assert_cmpuint(n, <=, 65535);
	g_assert_cmpuint(n, >, 65535 - 1514 - 64);
	g_assert_cmpint(ncm_ntb_parse(NULL, p->buf, n, NULL, NULL, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.datagrams, ==, ncm_ntb_packer_count(p));
	packer_free(p);
	/* NTB32 goes past it. */
	c.format = NCM_NTB_FORMAT_32;
	p = packer_new(&c, 100000);
	while (ncm_ntb_packer_add(p, frame, sizeof(frame)) == NCM_NTB_PACK_OK)
		;
	n = ncm_ntb_packer_finish(p, NULL);
	g_assert_cmpuint(n, >, 65535);
	g_assert_cmpuint(n, <=, 100000);
	g_assert_cmpint(ncm_ntb_parse(NULL, p->buf, n, NULL, NULL, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.datagrams, ==, ncm_ntb_packer_count(p));
	packer_free(p);
}

/*
 * Issue 16: the largest frame an empty NTB takes, so the driver can lower
 * the MTU rather than refuse every large frame. It must fit, one byte more
 * must not, and the NTB it makes must parse back whole.
 */
static void
test_room(void)
{
	const NcmNtbPackConfig configs[] = {
		{ NCM_NTB_FORMAT_16, 16384, 4, 0, 4, 0, 512, NCM_NTB_SHORT_ZLP, false },
		{ NCM_NTB_FORMAT_32, 16384, 4, 0, 4, 0, 512, NCM_NTB_SHORT_PAD, false },
		{ NCM_NTB_FORMAT_16, 2048, 512, 14, 512, 0, 512, NCM_NTB_SHORT_ZLP, false },
		{ NCM_NTB_FORMAT_32, 2048, 8, 2, 16, 0, 64, NCM_NTB_SHORT_PAD, true },
		{ NCM_NTB_FORMAT_16, 0, 4, 0, 4, 1, 512, NCM_NTB_SHORT_ZLP, false },
	};

	for (gsize i = 0; i < G_N_ELEMENTS(configs); i++) {
		NcmNtbPacker *p = packer_new(&configs[i], 4096);
		size_t room = ncm_ntb_packer_room(p), n;
		g_autofree uint8_t *frame = g_malloc0(room + 1);
		NcmNtbParseResult r;

		g_assert_cmpuint(room, >=, 1514);
		g_assert_cmpuint(room, <, configs[i].max_size ? configs[i].max_size : 4096);
		g_assert_true(ncm_ntb_packer_fits(p, room));
		g_assert_false(ncm_ntb_packer_fits(p, room + 1));
		g_assert_cmpint(ncm_ntb_packer_add(p, frame, room), ==, NCM_NTB_PACK_OK);
		/* Full now: nothing else fits beside it. */
		g_assert_cmpuint(ncm_ntb_packer_room(p), ==, 0);
		n = ncm_ntb_packer_finish(p, NULL);
		g_assert_cmpint(ncm_ntb_parse(NULL, p->buf, n, NULL, NULL, &r), ==, NCM_NTB_OK);
		g_assert_cmpuint(r.datagrams, ==, 1);
		packer_free(p);
	}
}

static bool
count_datagram(void *user_data, const uint8_t *datagram, size_t len)
{
	uint8_t want[300];

	g_assert_cmpuint(len, ==, sizeof(want));
	fill(want, len, (uint32_t)(*(size_t *)user_data)++);
	g_assert_cmpmem(datagram, len, want, len);
	return true;
}

/* Parses @len bytes at @buf as one NTB of @datagrams 300-byte datagrams seeded from @seed on. */
static void
assert_parses(const uint8_t *buf, size_t len, size_t max_size, size_t seed, size_t datagrams)
{
	NcmNtbParseConfig pc = { 0, false, max_size, 0, 0 };
	NcmNtbParseResult r;
	size_t next = seed;

	g_assert_cmpint(ncm_ntb_parse(&pc, buf, len, count_datagram, &next, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.rejects, ==, 0);
	g_assert_cmpuint(r.datagrams, ==, datagrams);
	g_assert_cmpuint(next, ==, seed + datagrams);
}

/*
 * Full NTBs back to back in one transfer, as the TX path chains them: each
 * but the last runs to exactly max_size, zeroed past its NDP, and each
 * parses on its own at its offset.
 */
static void
test_finish_full(void)
{
	for (int wide = 0; wide < 2; wide++) {
		for (int first = 0; first < 2; first++) {
			NcmNtbPackConfig c = { wide ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16, 2048, 4, 0,
					       4, 0, 512, NCM_NTB_SHORT_ZLP, first };
			uint8_t *buf = g_malloc(3 * 2048);
			uint8_t frame[300];
			NcmNtbPacker p;
			size_t n = 0, block, len;
			bool zlp;

			memset(buf, 0xAA, 3 * 2048);
			ncm_ntb_packer_init(&p, &c, buf, 2048, 1);
			g_assert_true(ncm_ntb_packer_can_finish_full(&p));
			g_assert_cmpuint(ncm_ntb_packer_finish_full(&p), ==, 0);
			for (;; n++) {
				fill(frame, sizeof(frame), (uint32_t)n);
				if (ncm_ntb_packer_add(&p, frame, sizeof(frame)) != NCM_NTB_PACK_OK)
					break;
			}
			g_assert_cmpuint(n, >=, 5);
			g_assert_cmpuint(ncm_ntb_packer_finish_full(&p), ==, 2048);
			block = wide ? ncm_le32_at(buf, 2048, 8) : ncm_le16_at(buf, 2048, 8);
			g_assert_cmpuint(block, ==, 2048);
			/* Every byte of the block was written: no 0xAA of an earlier use goes out. */
			g_assert_null(memchr(buf + 2048 - 64, 0xAA, 64));
			assert_parses(buf, 2048, 2048, 0, n);
			/* The next NTB right behind it, ended the usual way. */
			ncm_ntb_packer_reset(&p, buf + 2048, 2);
			for (size_t i = 0; i < 2; i++) {
				fill(frame, sizeof(frame), (uint32_t)(n + i));
				g_assert_cmpint(ncm_ntb_packer_add(&p, frame, sizeof(frame)), ==, NCM_NTB_PACK_OK);
			}
			len = ncm_ntb_packer_finish(&p, &zlp);
			g_assert_cmpuint(len, <, 2048);
			assert_parses(buf + 2048, len, 2048, n, 2);
			assert_parses(buf, 2048, 2048, 0, n);
			g_free(buf);
		}
	}
}

/* Only a packer whose NTB can be exactly the device's size, a multiple of its packet. */
static void
test_finish_full_refused(void)
{
	NcmNtbPackConfig c = { NCM_NTB_FORMAT_16, 2048, 4, 0, 4, 0, 512, NCM_NTB_SHORT_ZLP, false };
	uint8_t frame[300] = { 0 };
	NcmNtbPacker *p;

	p = packer_new(&c, 1000);  /* a buffer under max_size */
	g_assert_false(ncm_ntb_packer_can_finish_full(p));
	g_assert_cmpint(ncm_ntb_packer_add(p, frame, sizeof(frame)), ==, NCM_NTB_PACK_OK);
	g_assert_cmpuint(ncm_ntb_packer_finish_full(p), ==, 0);
	packer_free(p);
	c.max_packet = 0;          /* no packet size known */
	p = packer_new(&c, 2048);
	g_assert_false(ncm_ntb_packer_can_finish_full(p));
	packer_free(p);
	c.max_packet = 500;        /* not a multiple: the device would need a short packet */
	p = packer_new(&c, 2048);
	g_assert_false(ncm_ntb_packer_can_finish_full(p));
	packer_free(p);
	c.max_packet = 512;
	c.max_size = 0;            /* the device's size unknown */
	p = packer_new(&c, 2048);
	g_assert_false(ncm_ntb_packer_can_finish_full(p));
	packer_free(p);
	c.max_size = 65536;        /* an NTB16 cannot say 65536 */
	p = packer_new(&c, 65536);
	g_assert_false(ncm_ntb_packer_can_finish_full(p));
	packer_free(p);
	c.format = NCM_NTB_FORMAT_32;
	p = packer_new(&c, 65536);
	g_assert_true(ncm_ntb_packer_can_finish_full(p));
	packer_free(p);
	/* The pad byte's room is kept only below max_size. */
	c.format = NCM_NTB_FORMAT_16;
	c.max_size = 2048;
	c.short_mode = NCM_NTB_SHORT_PAD;
	p = packer_new(&c, 2048);
	g_assert_true(ncm_ntb_packer_can_finish_full(p));
	packer_free(p);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/ntb/pack/roundtrip", test_roundtrip);
	g_test_add_func("/ntb/pack/offset-property", test_offset_property);
	g_test_add_func("/ntb/pack/sanitize", test_sanitize);
	g_test_add_func("/ntb/pack/config", test_config);
	g_test_add_func("/ntb/pack/vectors", test_vectors);
	g_test_add_func("/ntb/pack/short-packet", test_short_packet);
	g_test_add_func("/ntb/pack/datagram-limit", test_datagram_limit);
	g_test_add_func("/ntb/pack/full", test_full_bytes);
	g_test_add_func("/ntb/pack/too-small", test_too_small);
	g_test_add_func("/ntb/pack/reserve-and-reset", test_reserve_and_reset);
	g_test_add_func("/ntb/pack/big-buffers", test_big_buffers);
	g_test_add_func("/ntb/pack/room", test_room);
	g_test_add_func("/ntb/pack/finish-full", test_finish_full);
	g_test_add_func("/ntb/pack/finish-full-refused", test_finish_full_refused);
	return g_test_run();
}
