/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ntb-parse.c: the NTB parser against hand-built vectors and every reject reason. */

#include <glib.h>
#include <string.h>

#include "ncm-le.h"
#include "ncm-ntb.h"
#include "ntb-vectors.h"

G_STATIC_ASSERT(sizeof(v_ntb16) == 68);
G_STATIC_ASSERT(sizeof(v_ntb16_ndp_first) == 66);
G_STATIC_ASSERT(sizeof(v_ntb32) == 92);
G_STATIC_ASSERT(sizeof(v_crc16) == 76);
G_STATIC_ASSERT(sizeof(v_crc32) == 100);
G_STATIC_ASSERT(sizeof(v_chain16) == 76);
G_STATIC_ASSERT(sizeof(v_chain32) == 112);
G_STATIC_ASSERT(sizeof(v_block0) == 42);
G_STATIC_ASSERT(sizeof(v_trailing_zero) == 65);

#define MAX_GOT 64

/* What the callback saw, as offsets into the transfer. */
typedef struct {
	const uint8_t *base;
	size_t len;
	guint n;
	guint stop_after;       /* 0 = never ask to stop */
	size_t off[MAX_GOT];
	size_t dlen[MAX_GOT];
	uint8_t tag[MAX_GOT];
} Got;

static bool
on_datagram(void *user_data, const uint8_t *datagram, size_t len)
{
	Got *got = user_data;

	g_assert_true(datagram >= got->base);
	g_assert_cmpuint(datagram - got->base, <=, got->len);
	g_assert_cmpuint(len, <=, got->len - (size_t)(datagram - got->base));
	g_assert_cmpuint(got->n, <, MAX_GOT);
	got->off[got->n] = (size_t)(datagram - got->base);
	got->dlen[got->n] = len;
	got->tag[got->n] = datagram[0];
	got->n++;
	return got->stop_after == 0 || got->n < got->stop_after;
}

/* Parses a heap copy of exactly @len bytes, so ASan sees any overread. */
static NcmNtbError
parse(const NcmNtbParseConfig *config, const uint8_t *v, size_t len, Got *got,
      NcmNtbParseResult *result)
{
	uint8_t *copy = g_malloc(len ? len : 1);
	NcmNtbError err;
	guint sum = 0;

	memcpy(copy, v, len);
	got->base = copy;
	got->len = len;
	got->n = 0;
	memset(result, 0xA5, sizeof(*result));
	err = ncm_ntb_parse(config, copy, len, on_datagram, got, result);
	g_free(copy);
	got->base = NULL;
	for (guint i = 0; i < NCM_NTB_N_ERRORS; i++)
		sum += result->reasons[i];
	g_assert_cmpuint(result->rejects, ==, sum);
	g_assert_cmpuint(result->reasons[NCM_NTB_OK], ==, 0);
	g_assert_cmpuint(result->datagrams, ==, got->n);
	if (err == NCM_NTB_OK)
		g_assert_cmpuint(result->rejects, ==, 0);
	else
		g_assert_cmpuint(result->reasons[err], >=, 1);
	return err;
}

static void
assert_only(const NcmNtbParseResult *r, NcmNtbError reason, guint count)
{
	g_assert_cmpuint(r->reasons[reason], ==, count);
	g_assert_cmpuint(r->rejects, ==, count);
}

static void
assert_got(const Got *got, guint i, size_t off, size_t dlen, uint8_t tag)
{
	g_assert_cmpuint(got->n, >, i);
	g_assert_cmpuint(got->off[i], ==, off);
	g_assert_cmpuint(got->dlen[i], ==, dlen);
	g_assert_cmpuint(got->tag[i], ==, tag);
}

/* A writable heap copy of a vector, for mutations. */
static uint8_t *
mutable_copy(const uint8_t *v, size_t len)
{
	return g_memdup2(v, len);
}

static void
put16(uint8_t *b, size_t off, uint16_t value)
{
	g_assert_true(ncm_le16_put(b, off + 2, off, value));
}

static void
put32(uint8_t *b, size_t off, uint32_t value)
{
	g_assert_true(ncm_le32_put(b, off + 4, off, value));
}

static const NcmNtbParseConfig config_plain = { 0, false, 0, 0, 0 };
static const NcmNtbParseConfig config_crc = { 0, true, 0, 0, 0 };

/* ---- formats ---- */

static void
test_ntb16(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&config_plain, v_ntb16, sizeof(v_ntb16), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpint(r.format, ==, NCM_NTB_FORMAT_16);
	g_assert_cmpuint(r.sequence, ==, 0x1234);
	g_assert_cmpuint(r.ndps, ==, 1);
	g_assert_cmpuint(r.datagrams, ==, 2);
	assert_got(&got, 0, 12, 14, 0xA1);
	assert_got(&got, 1, 28, 18, 0xB1);
	assert_only(&r, NCM_NTB_OK, 0);
}

static void
test_ntb16_ndp_first(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&config_plain, v_ntb16_ndp_first, sizeof(v_ntb16_ndp_first), &got,
			      &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.datagrams, ==, 2);
	assert_got(&got, 0, 32, 14, 0xA2);
	assert_got(&got, 1, 48, 18, 0xB2);
}

static void
test_ntb32(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&config_plain, v_ntb32, sizeof(v_ntb32), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpint(r.format, ==, NCM_NTB_FORMAT_32);
	g_assert_cmpuint(r.sequence, ==, 7);
	g_assert_cmpuint(r.ndps, ==, 1);
	assert_got(&got, 0, 16, 14, 0xA3);
	assert_got(&got, 1, 32, 18, 0xB3);
	g_assert_cmpuint(got.n, ==, 2);
}

static void
test_crc(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };

	/* The CRC is stripped from each length, never checked. */
	g_assert_cmpint(parse(&config_crc, v_crc16, sizeof(v_crc16), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 2);
	assert_got(&got, 0, 12, 14, 0xA4);
	assert_got(&got, 1, 32, 18, 0xB4);
	g_assert_cmpint(parse(&config_crc, v_crc32, sizeof(v_crc32), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 2);
	assert_got(&got, 0, 16, 14, 0xA5);
	assert_got(&got, 1, 36, 18, 0xB5);
}

static void
test_chain(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&config_plain, v_chain16, sizeof(v_chain16), &got, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(r.ndps, ==, 2);
	g_assert_cmpuint(got.n, ==, 2);
	assert_got(&got, 0, 28, 14, 0xA6);
	assert_got(&got, 1, 44, 14, 0xB6);
	g_assert_cmpint(parse(&config_plain, v_chain32, sizeof(v_chain32), &got, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(r.ndps, ==, 2);
	g_assert_cmpuint(got.n, ==, 2);
	assert_got(&got, 0, 48, 14, 0xA7);
	assert_got(&got, 1, 64, 14, 0xB7);
}

static void
test_block_length_zero(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&config_plain, v_block0, sizeof(v_block0), &got, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 1);
	assert_got(&got, 0, 28, 14, 0xA8);
	/* One byte less and the datagram runs past the transfer, hence the block. */
	g_assert_cmpint(parse(&config_plain, v_block0, sizeof(v_block0) - 1, &got, &r), ==,
			NCM_NTB_ERR_DATAGRAM_BOUNDS);
	g_assert_cmpuint(got.n, ==, 0);
	assert_only(&r, NCM_NTB_ERR_DATAGRAM_BOUNDS, 1);
}

static void
test_trailing_bytes(void)
{
	uint8_t *v = mutable_copy(v_trailing_zero, sizeof(v_trailing_zero));
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&config_plain, v, sizeof(v_trailing_zero), &got, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 1);
	assert_got(&got, 0, 48, 14, 0xA9);
	/* Bytes after the block are not part of it, whatever they hold. */
	v[64] = 0xEE;
	put32(v, 16 + 16 + 4, 17);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_trailing_zero), &got, &r), ==,
			NCM_NTB_ERR_DATAGRAM_BOUNDS);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v);
}

/* @a then @b in one transfer, as a device that left out the ZLP sends them. */
static uint8_t *
joined(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
	uint8_t *v = g_malloc(a_len + b_len);

	memcpy(v, a, a_len);
	memcpy(v + a_len, b, b_len);
	return v;
}

static void
test_joined_ntbs(void)
{
	uint8_t *v = joined(v_ntb16, sizeof(v_ntb16), v_ntb16_ndp_first, sizeof(v_ntb16_ndp_first));
	const size_t len = sizeof(v_ntb16) + sizeof(v_ntb16_ndp_first);
	const size_t b = sizeof(v_ntb16);
	NcmNtbParseConfig limits = { 0, false, 68, 1514, 0 };
	NcmNtbParseResult r;
	Got got = { 0 };

	/* Both NTBs' datagrams, each at its place in the transfer. */
	g_assert_cmpint(parse(&limits, v, len, &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.ntbs, ==, 2);
	g_assert_cmpuint(r.bad_ntbs, ==, 0);
	g_assert_cmpuint(r.ndps, ==, 2);
	g_assert_cmpuint(r.sequence, ==, 0x1234);
	g_assert_cmpuint(got.n, ==, 4);
	assert_got(&got, 0, 12, 14, 0xA1);
	assert_got(&got, 1, 28, 18, 0xB1);
	assert_got(&got, 2, b + 32, 14, 0xA2);
	assert_got(&got, 3, b + 48, 18, 0xB2);

	/* The second NTB's offsets are its own: one pointing past it is out
	 * of bounds even though the transfer goes on. */
	put16(v, b + 12 + 8, 66);
	g_assert_cmpint(parse(&limits, v, len, &got, &r), ==, NCM_NTB_ERR_DATAGRAM_BOUNDS);
	assert_only(&r, NCM_NTB_ERR_DATAGRAM_BOUNDS, 1);
	g_assert_cmpuint(r.bad_ntbs, ==, 1);
	g_assert_cmpuint(got.n, ==, 3);
	put16(v, b + 12 + 8, 32);

	/* Only a block of whole packets can have run into the next NTB: one
	 * that ended short of a packet ended the transfer, and what follows
	 * is padding, however it starts. */
	limits.max_packet = 68;
	g_assert_cmpint(parse(&limits, v, len, &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.ntbs, ==, 2);
	limits.max_packet = 64;
	g_assert_cmpint(parse(&limits, v, len, &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.ntbs, ==, 1);
	g_assert_cmpuint(got.n, ==, 2);
	limits.max_packet = 0;

	/* Cut short (the host's read ended inside it): the first NTB's
	 * datagrams stay, the cut one is a bad block. */
	g_assert_cmpint(parse(&limits, v, len - 1, &got, &r), ==, NCM_NTB_ERR_BLOCK_LENGTH);
	assert_only(&r, NCM_NTB_ERR_BLOCK_LENGTH, 1);
	g_assert_cmpuint(r.ntbs, ==, 2);
	g_assert_cmpuint(r.bad_ntbs, ==, 1);
	g_assert_cmpuint(got.n, ==, 2);

	/* A bad first NTH: its block is unknown, so nothing after it is read. */
	v[0] = 'X';
	g_assert_cmpint(parse(&limits, v, len, &got, &r), ==, NCM_NTB_ERR_NTH_SIGNATURE);
	assert_only(&r, NCM_NTB_ERR_NTH_SIGNATURE, 1);
	g_assert_cmpuint(r.ntbs, ==, 1);
	g_assert_cmpuint(r.bad_ntbs, ==, 1);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v);

	/* Only the same format follows: NTB32 bytes after an NTB16 are padding. */
	v = joined(v_ntb16, sizeof(v_ntb16), v_ntb32, sizeof(v_ntb32));
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_ntb16) + sizeof(v_ntb32), &got, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(r.ntbs, ==, 1);
	g_assert_cmpuint(got.n, ==, 2);
	g_free(v);

	v = joined(v_ntb32, sizeof(v_ntb32), v_ntb32, sizeof(v_ntb32));
	g_assert_cmpint(parse(&config_plain, v, 2 * sizeof(v_ntb32), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.ntbs, ==, 2);
	g_assert_cmpuint(got.n, ==, 4);
	assert_got(&got, 3, sizeof(v_ntb32) + 32, 18, 0xB3);
	g_free(v);
}

/* A transfer of bare NTHs, each pointing at an NDP it cannot hold: every
 * one is walked and rejected once, and the walk ends at the transfer's end. */
static void
test_joined_many(void)
{
	enum { N = 1000 };
	uint8_t *v = g_malloc0(N * NCM_NTH16_LEN);
	NcmNtbParseResult r;
	Got got = { 0 };

	for (guint i = 0; i < N; i++) {
		memcpy(v + i * NCM_NTH16_LEN, "NCMH", 4);
		put16(v, i * NCM_NTH16_LEN + 4, NCM_NTH16_LEN);
		put16(v, i * NCM_NTH16_LEN + 8, NCM_NTH16_LEN);
		put16(v, i * NCM_NTH16_LEN + 10, NCM_NTH16_LEN);
	}
	g_assert_cmpint(parse(&config_plain, v, N * NCM_NTH16_LEN, &got, &r), ==,
			NCM_NTB_ERR_NDP_INDEX);
	g_assert_cmpuint(r.ntbs, ==, N);
	g_assert_cmpuint(r.bad_ntbs, ==, N);
	assert_only(&r, NCM_NTB_ERR_NDP_INDEX, N);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v);
}

static void
test_format_filter(void)
{
	NcmNtbParseConfig only32 = { NCM_NTB_FORMAT_BIT_32, false, 0, 0, 0 };
	NcmNtbParseConfig only16 = { NCM_NTB_FORMAT_BIT_16, false, 0, 0, 0 };
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&only32, v_ntb16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NTH_SIGNATURE);
	assert_only(&r, NCM_NTB_ERR_NTH_SIGNATURE, 1);
	g_assert_cmpuint(got.n, ==, 0);
	g_assert_cmpint(parse(&only32, v_ntb32, sizeof(v_ntb32), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpint(parse(&only16, v_ntb32, sizeof(v_ntb32), &got, &r), ==,
			NCM_NTB_ERR_NTH_SIGNATURE);
	g_assert_cmpint(parse(&only16, v_ntb16, sizeof(v_ntb16), &got, &r), ==, NCM_NTB_OK);
	/* NULL config: both formats, no limits. */
	g_assert_cmpint(parse(NULL, v_ntb32, sizeof(v_ntb32), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 2);
}

static void
test_zero_entry_ends_ndp(void)
{
	uint8_t *v = mutable_copy(v_ntb16, sizeof(v_ntb16));
	NcmNtbParseResult r;
	Got got = { 0 };

	/* {12, 0}: ends the NDP, B is not reached, and it is no error. */
	put16(v, V_NTB16_NDP + 8 + 2, 0);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_ntb16), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 0);
	g_assert_cmpuint(r.ndps, ==, 1);
	/* {0, 14} as well. */
	put16(v, V_NTB16_NDP + 8, 0);
	put16(v, V_NTB16_NDP + 8 + 2, 14);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_ntb16), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 0);
	/* A zero length in the second entry keeps the first. */
	memcpy(v, v_ntb16, sizeof(v_ntb16));
	put16(v, V_NTB16_NDP + 12 + 2, 0);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_ntb16), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 1);
	assert_got(&got, 0, 12, 14, 0xA1);
	g_free(v);
}

static void
test_callback_stop(void)
{
	NcmNtbParseResult r;
	Got got = { .stop_after = 1 };

	/* Stopping in the first NDP also skips the chained one, without error. */
	g_assert_cmpint(parse(&config_plain, v_chain16, sizeof(v_chain16), &got, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 1);
	g_assert_cmpuint(r.datagrams, ==, 1);
	g_assert_cmpuint(r.ndps, ==, 1);
	g_assert_cmpuint(r.rejects, ==, 0);
	got.stop_after = 1;
	g_assert_cmpint(parse(&config_plain, v_ntb16, sizeof(v_ntb16), &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 1);
}

static void
test_null_callback(void)
{
	NcmNtbParseResult r;

	g_assert_cmpint(ncm_ntb_parse(NULL, v_ntb16, sizeof(v_ntb16), NULL, NULL, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(r.datagrams, ==, 2);
}

static void
test_error_names(void)
{
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);

	g_assert_cmpstr(ncm_ntb_error_name(NCM_NTB_OK), ==, "ok");
	g_assert_cmpstr(ncm_ntb_error_name(NCM_NTB_N_ERRORS), ==, "unknown");
	g_assert_cmpstr(ncm_ntb_error_name((NcmNtbError)1000), ==, "unknown");
	for (int i = 0; i < NCM_NTB_N_ERRORS; i++) {
		const char *name = ncm_ntb_error_name((NcmNtbError)i);

		g_assert_nonnull(name);
		g_assert_cmpstr(name, !=, "unknown");
		g_assert_false(g_hash_table_contains(seen, name));
		g_hash_table_add(seen, (gpointer)name);
	}
	g_hash_table_unref(seen);
}

/* ---- NTH-level rejects: the whole NTB is lost ---- */

static void
test_reject_truncated(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&config_plain, v_ntb16, 0, &got, &r), ==, NCM_NTB_ERR_TRUNCATED);
	assert_only(&r, NCM_NTB_ERR_TRUNCATED, 1);
	g_assert_cmpint(parse(&config_plain, v_ntb16, 3, &got, &r), ==, NCM_NTB_ERR_TRUNCATED);
	assert_only(&r, NCM_NTB_ERR_TRUNCATED, 1);
	g_assert_cmpint(parse(&config_plain, v_ntb16, NCM_NTH16_LEN - 1, &got, &r), ==,
			NCM_NTB_ERR_TRUNCATED);
	assert_only(&r, NCM_NTB_ERR_TRUNCATED, 1);
	g_assert_cmpint(parse(&config_plain, v_ntb32, NCM_NTH32_LEN - 1, &got, &r), ==,
			NCM_NTB_ERR_TRUNCATED);
	assert_only(&r, NCM_NTB_ERR_TRUNCATED, 1);
	g_assert_cmpint(r.format, ==, NCM_NTB_FORMAT_32);
	g_assert_cmpuint(got.n, ==, 0);
	g_assert_cmpint(ncm_ntb_parse(&config_plain, NULL, 100, NULL, NULL, &r), ==,
			NCM_NTB_ERR_TRUNCATED);
}

static void
test_reject_nth_signature(void)
{
	uint8_t *v = mutable_copy(v_ntb16, sizeof(v_ntb16));
	NcmNtbParseResult r;
	Got got = { 0 };

	v[3] = 'X';
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NTH_SIGNATURE);
	assert_only(&r, NCM_NTB_ERR_NTH_SIGNATURE, 1);
	g_assert_cmpuint(got.n, ==, 0);
	/* Mixed case is neither format. */
	memcpy(v, "NCMh", 4);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NTH_SIGNATURE);
	g_free(v);
}

static void
test_reject_nth_header_length(void)
{
	uint8_t *v16 = mutable_copy(v_ntb16, sizeof(v_ntb16));
	uint8_t *v32 = mutable_copy(v_ntb32, sizeof(v_ntb32));
	NcmNtbParseResult r;
	Got got = { 0 };

	put16(v16, 4, 16);
	g_assert_cmpint(parse(&config_plain, v16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NTH_HEADER_LENGTH);
	assert_only(&r, NCM_NTB_ERR_NTH_HEADER_LENGTH, 1);
	put16(v32, 4, 12);
	g_assert_cmpint(parse(&config_plain, v32, sizeof(v_ntb32), &got, &r), ==,
			NCM_NTB_ERR_NTH_HEADER_LENGTH);
	assert_only(&r, NCM_NTB_ERR_NTH_HEADER_LENGTH, 1);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v16);
	g_free(v32);
}

static void
test_reject_block_length(void)
{
	uint8_t *v16 = mutable_copy(v_ntb16, sizeof(v_ntb16));
	uint8_t *v32 = mutable_copy(v_ntb32, sizeof(v_ntb32));
	NcmNtbParseResult r;
	Got got = { 0 };

	/* One byte past the transfer. */
	put16(v16, 8, sizeof(v_ntb16) + 1);
	g_assert_cmpint(parse(&config_plain, v16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_BLOCK_LENGTH);
	assert_only(&r, NCM_NTB_ERR_BLOCK_LENGTH, 1);
	/* Shorter than its own NTH. */
	put16(v16, 8, NCM_NTH16_LEN - 1);
	g_assert_cmpint(parse(&config_plain, v16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_BLOCK_LENGTH);
	assert_only(&r, NCM_NTB_ERR_BLOCK_LENGTH, 1);
	/* A 32-bit length far past the transfer. */
	put32(v32, 8, 0xFFFFFFF0u);
	g_assert_cmpint(parse(&config_plain, v32, sizeof(v_ntb32), &got, &r), ==,
			NCM_NTB_ERR_BLOCK_LENGTH);
	assert_only(&r, NCM_NTB_ERR_BLOCK_LENGTH, 1);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v16);
	g_free(v32);
}

static void
test_reject_block_too_big(void)
{
	NcmNtbParseConfig max = { 0, false, sizeof(v_ntb16) - 1, 0, 0 };
	NcmNtbParseResult r;
	Got got = { 0 };

	g_assert_cmpint(parse(&max, v_ntb16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_BLOCK_TOO_BIG);
	assert_only(&r, NCM_NTB_ERR_BLOCK_TOO_BIG, 1);
	g_assert_cmpuint(got.n, ==, 0);
	max.max_block = sizeof(v_ntb16);
	g_assert_cmpint(parse(&max, v_ntb16, sizeof(v_ntb16), &got, &r), ==, NCM_NTB_OK);
	/* wBlockLength 0: the transfer is the block, so it is what must fit. */
	max.max_block = sizeof(v_block0) - 1;
	g_assert_cmpint(parse(&max, v_block0, sizeof(v_block0), &got, &r), ==,
			NCM_NTB_ERR_BLOCK_TOO_BIG);
	assert_only(&r, NCM_NTB_ERR_BLOCK_TOO_BIG, 1);
	/* Bytes after the block do not count against the maximum. */
	max.max_block = 64;
	g_assert_cmpint(parse(&max, v_trailing_zero, sizeof(v_trailing_zero), &got, &r), ==,
			NCM_NTB_OK);
	g_assert_cmpuint(got.n, ==, 1);
}

static void
test_reject_no_ndp(void)
{
	uint8_t *v = mutable_copy(v_ntb16, sizeof(v_ntb16));
	NcmNtbParseResult r;
	Got got = { 0 };

	put16(v, V_NTB16_NTH_NDP_INDEX, 0);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NO_NDP);
	assert_only(&r, NCM_NTB_ERR_NO_NDP, 1);
	g_assert_cmpuint(r.ndps, ==, 0);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v);
}

/* ---- NDP-level rejects on the first NDP ---- */

/* Parses v_ntb16 with the NDP index in the NTH set to @ndp. */
static NcmNtbError
parse_ntb16_ndp_at(uint16_t ndp, NcmNtbParseResult *r)
{
	uint8_t *v = mutable_copy(v_ntb16, sizeof(v_ntb16));
	Got got = { 0 };
	NcmNtbError err;

	put16(v, V_NTB16_NTH_NDP_INDEX, ndp);
	err = parse(&config_plain, v, sizeof(v_ntb16), &got, r);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v);
	return err;
}

static void
test_reject_ndp_align(void)
{
	NcmNtbParseResult r;

	g_assert_cmpint(parse_ntb16_ndp_at(V_NTB16_NDP + 2, &r), ==, NCM_NTB_ERR_NDP_ALIGN);
	assert_only(&r, NCM_NTB_ERR_NDP_ALIGN, 1);
	g_assert_cmpint(parse_ntb16_ndp_at(V_NTB16_NDP + 1, &r), ==, NCM_NTB_ERR_NDP_ALIGN);
	assert_only(&r, NCM_NTB_ERR_NDP_ALIGN, 1);
}

static void
test_reject_ndp_index(void)
{
	NcmNtbParseResult r;

	/* Inside the NTH. */
	g_assert_cmpint(parse_ntb16_ndp_at(8, &r), ==, NCM_NTB_ERR_NDP_INDEX);
	assert_only(&r, NCM_NTB_ERR_NDP_INDEX, 1);
	g_assert_cmpint(parse_ntb16_ndp_at(4, &r), ==, NCM_NTB_ERR_NDP_INDEX);
	assert_only(&r, NCM_NTB_ERR_NDP_INDEX, 1);
	/* At and past the block's end. */
	g_assert_cmpint(parse_ntb16_ndp_at(sizeof(v_ntb16), &r), ==, NCM_NTB_ERR_NDP_INDEX);
	assert_only(&r, NCM_NTB_ERR_NDP_INDEX, 1);
	g_assert_cmpint(parse_ntb16_ndp_at(0xFFFC, &r), ==, NCM_NTB_ERR_NDP_INDEX);
	assert_only(&r, NCM_NTB_ERR_NDP_INDEX, 1);
}

static void
test_reject_ndp_signature(void)
{
	uint8_t *v16 = mutable_copy(v_ntb16, sizeof(v_ntb16));
	uint8_t *v32 = mutable_copy(v_ntb32, sizeof(v_ntb32));
	NcmNtbParseResult r;
	Got got = { 0 };

	memcpy(v16 + V_NTB16_NDP, "NCMX", 4);
	g_assert_cmpint(parse(&config_plain, v16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NDP_SIGNATURE);
	assert_only(&r, NCM_NTB_ERR_NDP_SIGNATURE, 1);
	/* An NDP of the other format does not belong in this NTB. */
	memcpy(v16 + V_NTB16_NDP, "ncm0", 4);
	g_assert_cmpint(parse(&config_plain, v16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NDP_SIGNATURE);
	assert_only(&r, NCM_NTB_ERR_NDP_SIGNATURE, 1);
	memcpy(v32 + V_NTB32_NDP, "NCM0", 4);
	g_assert_cmpint(parse(&config_plain, v32, sizeof(v_ntb32), &got, &r), ==,
			NCM_NTB_ERR_NDP_SIGNATURE);
	assert_only(&r, NCM_NTB_ERR_NDP_SIGNATURE, 1);
	g_assert_cmpuint(r.ndps, ==, 0);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v16);
	g_free(v32);
}

static void
test_reject_ndp_crc(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };

	/* A CRC NDP while CRC mode is off. */
	g_assert_cmpint(parse(&config_plain, v_crc16, sizeof(v_crc16), &got, &r), ==,
			NCM_NTB_ERR_NDP_CRC);
	assert_only(&r, NCM_NTB_ERR_NDP_CRC, 1);
	g_assert_cmpint(parse(&config_plain, v_crc32, sizeof(v_crc32), &got, &r), ==,
			NCM_NTB_ERR_NDP_CRC);
	assert_only(&r, NCM_NTB_ERR_NDP_CRC, 1);
	/* A plain NDP while CRC mode is on. */
	g_assert_cmpint(parse(&config_crc, v_ntb16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NDP_CRC);
	assert_only(&r, NCM_NTB_ERR_NDP_CRC, 1);
	g_assert_cmpint(parse(&config_crc, v_ntb32, sizeof(v_ntb32), &got, &r), ==,
			NCM_NTB_ERR_NDP_CRC);
	assert_only(&r, NCM_NTB_ERR_NDP_CRC, 1);
	g_assert_cmpuint(got.n, ==, 0);
}

static void
test_reject_ndp_length(void)
{
	uint8_t *v16 = mutable_copy(v_ntb16, sizeof(v_ntb16));
	uint8_t *v32 = mutable_copy(v_ntb32, sizeof(v_ntb32));
	NcmNtbParseResult r;
	Got got = { 0 };

	put16(v16, V_NTB16_NDP + 4, NCM_NDP16_MIN_LEN - 4);
	g_assert_cmpint(parse(&config_plain, v16, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NDP_LENGTH);
	assert_only(&r, NCM_NTB_ERR_NDP_LENGTH, 1);
	put16(v32, V_NTB32_NDP + 4, NCM_NDP32_MIN_LEN - 8);
	g_assert_cmpint(parse(&config_plain, v32, sizeof(v_ntb32), &got, &r), ==,
			NCM_NTB_ERR_NDP_LENGTH);
	assert_only(&r, NCM_NTB_ERR_NDP_LENGTH, 1);
	put16(v32, V_NTB32_NDP + 4, 0);
	g_assert_cmpint(parse(&config_plain, v32, sizeof(v_ntb32), &got, &r), ==,
			NCM_NTB_ERR_NDP_LENGTH);
	g_assert_cmpuint(got.n, ==, 0);
	g_free(v16);
	g_free(v32);
}

static void
test_reject_ndp_overrun(void)
{
	uint8_t *v = mutable_copy(v_ntb16, sizeof(v_ntb16));
	NcmNtbParseResult r;
	Got got = { 0 };

	/* wLength one entry past the block. */
	put16(v, V_NTB16_NDP + 4, 24);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_ntb16), &got, &r), ==,
			NCM_NTB_ERR_NDP_OVERRUN);
	assert_only(&r, NCM_NTB_ERR_NDP_OVERRUN, 1);
	g_assert_cmpuint(got.n, ==, 0);
	/* The NDP header itself does not fit: 4 bytes before the block ends. */
	g_assert_cmpint(parse_ntb16_ndp_at(sizeof(v_ntb16) - 4, &r), ==,
			NCM_NTB_ERR_NDP_OVERRUN);
	assert_only(&r, NCM_NTB_ERR_NDP_OVERRUN, 1);
	g_free(v);
}

/* ---- chains ---- */

/* Builds NTBs with arbitrary NDPs and entries, for the cases below. */
typedef struct {
	uint8_t b[1024];
	bool wide;
} Builder;

static void
build_nth(Builder *nb, bool wide, uint32_t block, uint32_t ndp)
{
	memset(nb->b, 0, sizeof(nb->b));
	nb->wide = wide;
	if (wide) {
		memcpy(nb->b, "ncmh", 4);
		put16(nb->b, 4, NCM_NTH32_LEN);
		put32(nb->b, 8, block);
		put32(nb->b, 12, ndp);
	} else {
		memcpy(nb->b, "NCMH", 4);
		put16(nb->b, 4, NCM_NTH16_LEN);
		put16(nb->b, 8, (uint16_t)block);
		put16(nb->b, 10, (uint16_t)ndp);
	}
}

/* An NDP at @at with @n {index, length} pairs, written as given (no terminator added). */
static void
build_ndp(Builder *nb, size_t at, const char *sig, uint16_t wlen, uint32_t next,
	  const uint32_t (*entries)[2], size_t n)
{
	size_t pos = at + (nb->wide ? NCM_NDP32_HEADER_LEN : NCM_NDP16_HEADER_LEN);

	memcpy(nb->b + at, sig, 4);
	put16(nb->b, at + 4, wlen);
	if (nb->wide)
		put32(nb->b, at + 8, next);
	else
		put16(nb->b, at + 6, (uint16_t)next);
	for (size_t i = 0; i < n; i++) {
		if (nb->wide) {
			put32(nb->b, pos, entries[i][0]);
			put32(nb->b, pos + 4, entries[i][1]);
			pos += NCM_NDP32_ENTRY_LEN;
		} else {
			put16(nb->b, pos, (uint16_t)entries[i][0]);
			put16(nb->b, pos + 2, (uint16_t)entries[i][1]);
			pos += NCM_NDP16_ENTRY_LEN;
		}
	}
}

static void
build_payload(Builder *nb, size_t at, size_t len, uint8_t tag)
{
	nb->b[at] = tag;
	for (size_t i = 1; i < len; i++)
		nb->b[at + i] = (uint8_t)i;
}

static void
test_reject_chain_cycle(void)
{
	uint8_t *v = mutable_copy(v_chain16, sizeof(v_chain16));
	NcmNtbParseResult r;
	Got got = { 0 };

	/* NDP #2 points at itself: its frame must not come twice. */
	put16(v, V_CHAIN16_NDP2 + 6, V_CHAIN16_NDP2);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_chain16), &got, &r), ==,
			NCM_NTB_ERR_NDP_CHAIN);
	assert_only(&r, NCM_NTB_ERR_NDP_CHAIN, 1);
	g_assert_cmpuint(r.ndps, ==, 2);
	g_assert_cmpuint(got.n, ==, 2);
	assert_got(&got, 0, 28, 14, 0xA6);
	assert_got(&got, 1, 44, 14, 0xB6);
	/* NDP #2 points back at NDP #1. */
	put16(v, V_CHAIN16_NDP2 + 6, V_CHAIN16_NDP1);
	g_assert_cmpint(parse(&config_plain, v, sizeof(v_chain16), &got, &r), ==,
			NCM_NTB_ERR_NDP_CHAIN);
	assert_only(&r, NCM_NTB_ERR_NDP_CHAIN, 1);
	g_assert_cmpuint(got.n, ==, 2);
	g_free(v);
}

/* An NTB16 of @ndps chained 16-byte NDPs, each pointing at one frame at 12. */
static size_t
build_long_chain(Builder *nb, unsigned ndps)
{
	const uint32_t entries[][2] = { { 12, 14 }, { 0, 0 } };
	size_t block = 28 + 16 * ndps;

	g_assert_cmpuint(block, <=, sizeof(nb->b));
	build_nth(nb, false, (uint32_t)block, 28);
	build_payload(nb, 12, 14, 0xC1);
	for (unsigned i = 0; i < ndps; i++) {
		size_t at = 28 + 16 * i;
		uint32_t next = i + 1 < ndps ? (uint32_t)(at + 16) : 0;

		build_ndp(nb, at, "NCM0", 16, next, entries, 2);
	}
	return block;
}

static void
test_reject_chain_hops(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };
	Builder nb;
	size_t len;

	len = build_long_chain(&nb, NCM_NTB_MAX_NDP_HOPS);
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==, NCM_NTB_OK);
	g_assert_cmpuint(r.ndps, ==, NCM_NTB_MAX_NDP_HOPS);
	g_assert_cmpuint(got.n, ==, NCM_NTB_MAX_NDP_HOPS);
	len = build_long_chain(&nb, NCM_NTB_MAX_NDP_HOPS + 1);
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==, NCM_NTB_ERR_NDP_CHAIN);
	assert_only(&r, NCM_NTB_ERR_NDP_CHAIN, 1);
	g_assert_cmpuint(r.ndps, ==, NCM_NTB_MAX_NDP_HOPS);
	g_assert_cmpuint(got.n, ==, NCM_NTB_MAX_NDP_HOPS);
}

static void
test_bad_ndp_loses_rest_of_chain(void)
{
	NcmNtbParseResult r;
	Got got = { 0 };
	Builder nb;
	size_t len;

	/* The second of three NDPs is bad: the first's frame stays, the third's is lost. */
	len = build_long_chain(&nb, 3);
	memcpy(nb.b + 28 + 16, "NCMZ", 4);
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==,
			NCM_NTB_ERR_NDP_SIGNATURE);
	assert_only(&r, NCM_NTB_ERR_NDP_SIGNATURE, 1);
	g_assert_cmpuint(r.ndps, ==, 1);
	g_assert_cmpuint(got.n, ==, 1);
	/* A misaligned next index after a good NDP. */
	len = build_long_chain(&nb, 3);
	put16(nb.b, 28 + 6, 30);
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==, NCM_NTB_ERR_NDP_ALIGN);
	assert_only(&r, NCM_NTB_ERR_NDP_ALIGN, 1);
	g_assert_cmpuint(got.n, ==, 1);
	/* A next index past the block. */
	len = build_long_chain(&nb, 3);
	put16(nb.b, 28 + 6, (uint16_t)len);
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==, NCM_NTB_ERR_NDP_INDEX);
	assert_only(&r, NCM_NTB_ERR_NDP_INDEX, 1);
	g_assert_cmpuint(got.n, ==, 1);
}

/* ---- entry-level rejects: only the entry is lost ---- */

/* NTH, NDP at 12/16, frames A (14 bytes), B (14), C (16, ending the block). */
#define FA 128
#define FB 144
#define FC 160
#define FEND 176
static size_t
build_entries(Builder *nb, bool wide, const char *sig, const uint32_t (*entries)[2], size_t n)
{
	size_t ndp = wide ? 16 : 12;
	size_t hdr = wide ? NCM_NDP32_HEADER_LEN : NCM_NDP16_HEADER_LEN;
	size_t wlen = hdr + n * (wide ? NCM_NDP32_ENTRY_LEN : NCM_NDP16_ENTRY_LEN);

	g_assert_cmpuint(ndp + wlen, <=, FA);
	build_nth(nb, wide, FEND, (uint32_t)ndp);
	build_ndp(nb, ndp, sig, (uint16_t)wlen, 0, entries, n);
	build_payload(nb, FA, 14, 0xA1);
	build_payload(nb, FB, 14, 0xB1);
	build_payload(nb, FC, 16, 0xC1);
	return FEND;
}

static void
test_reject_datagram_bounds(void)
{
	const uint32_t entries[][2] = {
		{ FA, 14 }, { FC + 2, 15 }, { 400, 14 }, { FEND, 14 }, { FC, 16 }, { 0, 0 },
	};
	const uint32_t wide[][2] = {
		{ 0xFFFFFFF0u, 0x20 }, { 64, 0xFFFFFFF0u }, { 0x80000000u, 0x80000010u },
		{ FB, 14 }, { 0, 0 },
	};
	NcmNtbParseResult r;
	Got got = { 0 };
	Builder nb;
	size_t len;

	/* One byte past the block, far past it, starting at its end; then a frame ending on it. */
	len = build_entries(&nb, false, "NCM0", entries, G_N_ELEMENTS(entries));
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==,
			NCM_NTB_ERR_DATAGRAM_BOUNDS);
	assert_only(&r, NCM_NTB_ERR_DATAGRAM_BOUNDS, 3);
	g_assert_cmpuint(got.n, ==, 2);
	assert_got(&got, 0, FA, 14, 0xA1);
	assert_got(&got, 1, FC, 16, 0xC1);
	/* 32-bit offsets and lengths whose sum overflows. */
	len = build_entries(&nb, true, "ncm0", wide, G_N_ELEMENTS(wide));
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==,
			NCM_NTB_ERR_DATAGRAM_BOUNDS);
	assert_only(&r, NCM_NTB_ERR_DATAGRAM_BOUNDS, 3);
	g_assert_cmpuint(got.n, ==, 1);
	assert_got(&got, 0, FB, 14, 0xB1);
}

/* Issue 16: entries that point at one frame again and again amplify an NTB
 * into far more deliveries than it holds; the sum is capped at the block. */
static void
test_reject_over_block(void)
{
	const uint32_t entries[][2] = {
		{ FA, 48 }, { FA, 48 }, { FA, 48 }, { FA, 48 }, { FB, 14 }, { FA, 48 }, { 0, 0 },
	};
	NcmNtbParseResult r;
	Got got = { 0 };
	Builder nb;
	size_t len;

	/* 3 x 48 = 144 of the 176-byte block; a 4th would pass it, a 14-byte one still fits. */
	len = build_entries(&nb, false, "NCM0", entries, G_N_ELEMENTS(entries));
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==, NCM_NTB_ERR_OVER_BLOCK);
	assert_only(&r, NCM_NTB_ERR_OVER_BLOCK, 2);
	g_assert_cmpuint(got.n, ==, 4);
	for (guint i = 0; i < 3; i++)
		assert_got(&got, i, FA, 48, 0xA1);
	assert_got(&got, 3, FB, 14, 0xB1);
}

static void
test_reject_datagram_short(void)
{
	const uint32_t entries[][2] = { { FA, 13 }, { FB, 14 }, { FC, 1 }, { 0, 0 } };
	const uint32_t crc[][2] = { { FA, 17 }, { FB, 18 }, { FC, 4 }, { 0, 0 } };
	NcmNtbParseResult r;
	Got got = { 0 };
	Builder nb;
	size_t len;

	len = build_entries(&nb, false, "NCM0", entries, G_N_ELEMENTS(entries));
	g_assert_cmpint(parse(&config_plain, nb.b, len, &got, &r), ==,
			NCM_NTB_ERR_DATAGRAM_SHORT);
	assert_only(&r, NCM_NTB_ERR_DATAGRAM_SHORT, 2);
	g_assert_cmpuint(got.n, ==, 1);
	assert_got(&got, 0, FB, 14, 0xB1);
	/* With CRC, what is left after stripping it must be 14 bytes. */
	len = build_entries(&nb, true, "ncm1", crc, G_N_ELEMENTS(crc));
	g_assert_cmpint(parse(&config_crc, nb.b, len, &got, &r), ==,
			NCM_NTB_ERR_DATAGRAM_SHORT);
	assert_only(&r, NCM_NTB_ERR_DATAGRAM_SHORT, 2);
	g_assert_cmpuint(got.n, ==, 1);
	assert_got(&got, 0, FB, 14, 0xB1);
}

static void
test_reject_datagram_long(void)
{
	const uint32_t entries[][2] = { { FA, 14 }, { FB, 16 }, { FC, 15 }, { 0, 0 } };
	const uint32_t crc[][2] = { { FA, 18 }, { FB, 19 }, { 0, 0 } };
	NcmNtbParseConfig max = { 0, false, 0, 15, 0 };
	NcmNtbParseResult r;
	Got got = { 0 };
	Builder nb;
	size_t len;

	len = build_entries(&nb, false, "NCM0", entries, G_N_ELEMENTS(entries));
	g_assert_cmpint(parse(&max, nb.b, len, &got, &r), ==, NCM_NTB_ERR_DATAGRAM_LONG);
	assert_only(&r, NCM_NTB_ERR_DATAGRAM_LONG, 1);
	g_assert_cmpuint(got.n, ==, 2);
	assert_got(&got, 0, FA, 14, 0xA1);
	assert_got(&got, 1, FC, 15, 0xC1);
	/* The maximum applies to the datagram without its CRC. */
	max.crc = true;
	max.max_datagram = 14;
	len = build_entries(&nb, false, "NCM1", crc, G_N_ELEMENTS(crc));
	g_assert_cmpint(parse(&max, nb.b, len, &got, &r), ==, NCM_NTB_ERR_DATAGRAM_LONG);
	assert_only(&r, NCM_NTB_ERR_DATAGRAM_LONG, 1);
	g_assert_cmpuint(got.n, ==, 1);
	assert_got(&got, 0, FA, 14, 0xA1);
}

static void
test_reject_entry_overrun(void)
{
	const uint32_t two[][2] = { { 64, 14 }, { 80, 14 } };
	const uint32_t last[][2] = { { 96, 16 }, { 0, 0 } };
	NcmNtbParseResult r;
	Got got = { 0 };
	Builder nb;

	/* NDP #1 has no terminator inside its wLength; the chain still goes on. */
	build_nth(&nb, false, 112, 12);
	build_ndp(&nb, 12, "NCM0", 16, 32, two, 2);
	build_ndp(&nb, 32, "NCM0", 16, 0, last, 2);
	build_payload(&nb, 64, 14, 0xA1);
	build_payload(&nb, 80, 14, 0xB1);
	build_payload(&nb, 96, 16, 0xC1);
	g_assert_cmpint(parse(&config_plain, nb.b, 112, &got, &r), ==,
			NCM_NTB_ERR_ENTRY_OVERRUN);
	assert_only(&r, NCM_NTB_ERR_ENTRY_OVERRUN, 1);
	g_assert_cmpuint(r.ndps, ==, 2);
	g_assert_cmpuint(got.n, ==, 3);
	assert_got(&got, 2, 96, 16, 0xC1);
	/* A wLength that ends inside an entry. */
	put16(nb.b, 12 + 4, 18);
	g_assert_cmpint(parse(&config_plain, nb.b, 112, &got, &r), ==,
			NCM_NTB_ERR_ENTRY_OVERRUN);
	assert_only(&r, NCM_NTB_ERR_ENTRY_OVERRUN, 1);
	g_assert_cmpuint(got.n, ==, 3);
}

static void
test_reject_entry_overrun_at_end(void)
{
	const uint32_t same[][2] = { { 16, 14 }, { 16, 14 } };
	NcmNtbParseResult r;
	Got got = { 0 };
	Builder nb;

	/*
	 * The NDP ends exactly with the transfer and has no terminator: the walk
	 * must stop at wLength, not read on (parse() copies exactly 64 bytes).
	 */
	build_nth(&nb, true, 64, 32);
	build_payload(&nb, 16, 14, 0xD1);
	build_ndp(&nb, 32, "ncm0", 32, 0, same, 2);
	g_assert_cmpint(parse(&config_plain, nb.b, 64, &got, &r), ==,
			NCM_NTB_ERR_ENTRY_OVERRUN);
	assert_only(&r, NCM_NTB_ERR_ENTRY_OVERRUN, 1);
	g_assert_cmpuint(got.n, ==, 2);
	assert_got(&got, 1, 16, 14, 0xD1);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/ntb/parse/ntb16", test_ntb16);
	g_test_add_func("/ntb/parse/ntb16-ndp-first", test_ntb16_ndp_first);
	g_test_add_func("/ntb/parse/ntb32", test_ntb32);
	g_test_add_func("/ntb/parse/crc", test_crc);
	g_test_add_func("/ntb/parse/chain", test_chain);
	g_test_add_func("/ntb/parse/block-length-zero", test_block_length_zero);
	g_test_add_func("/ntb/parse/trailing-bytes", test_trailing_bytes);
	g_test_add_func("/ntb/parse/joined", test_joined_ntbs);
	g_test_add_func("/ntb/parse/joined-many", test_joined_many);
	g_test_add_func("/ntb/parse/format-filter", test_format_filter);
	g_test_add_func("/ntb/parse/zero-entry", test_zero_entry_ends_ndp);
	g_test_add_func("/ntb/parse/callback-stop", test_callback_stop);
	g_test_add_func("/ntb/parse/null-callback", test_null_callback);
	g_test_add_func("/ntb/parse/error-names", test_error_names);
	g_test_add_func("/ntb/reject/truncated", test_reject_truncated);
	g_test_add_func("/ntb/reject/nth-signature", test_reject_nth_signature);
	g_test_add_func("/ntb/reject/nth-header-length", test_reject_nth_header_length);
	g_test_add_func("/ntb/reject/block-length", test_reject_block_length);
	g_test_add_func("/ntb/reject/block-too-big", test_reject_block_too_big);
	g_test_add_func("/ntb/reject/no-ndp", test_reject_no_ndp);
	g_test_add_func("/ntb/reject/ndp-align", test_reject_ndp_align);
	g_test_add_func("/ntb/reject/ndp-index", test_reject_ndp_index);
	g_test_add_func("/ntb/reject/ndp-signature", test_reject_ndp_signature);
	g_test_add_func("/ntb/reject/ndp-crc", test_reject_ndp_crc);
	g_test_add_func("/ntb/reject/ndp-length", test_reject_ndp_length);
	g_test_add_func("/ntb/reject/ndp-overrun", test_reject_ndp_overrun);
	g_test_add_func("/ntb/reject/chain-cycle", test_reject_chain_cycle);
	g_test_add_func("/ntb/reject/chain-hops", test_reject_chain_hops);
	g_test_add_func("/ntb/reject/bad-ndp-in-chain", test_bad_ndp_loses_rest_of_chain);
	g_test_add_func("/ntb/reject/datagram-bounds", test_reject_datagram_bounds);
	g_test_add_func("/ntb/reject/over-block", test_reject_over_block);
	g_test_add_func("/ntb/reject/datagram-short", test_reject_datagram_short);
	g_test_add_func("/ntb/reject/datagram-long", test_reject_datagram_long);
	g_test_add_func("/ntb/reject/entry-overrun", test_reject_entry_overrun);
	g_test_add_func("/ntb/reject/entry-overrun-at-end", test_reject_entry_overrun_at_end);
	return g_test_run();
}
