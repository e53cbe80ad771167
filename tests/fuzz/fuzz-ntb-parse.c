/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-ntb-parse.c: fuzz target for the NTB parser (device input). */

/*
 * Input: a 5-byte parser config, then the transfer.
 *   [0]    bits 0-1: formats accepted (0 and 3: both), bit 2: CRC mode,
 *          bit 3: max_block set, bit 4: max_datagram set,
 *          bit 5: max_packet 64 (else 0),
 *          bits 6-7: stop after that many datagrams in the second pass
 *   [1..2] max_block, little-endian
 *   [3..4] max_datagram, little-endian
 * Besides memory safety, this checks what the header promises: datagrams lie
 * inside the transfer and inside the wBlockLength of their NTB (NTBs of the
 * same format may follow one another in the transfer), their bytes add up
 * to at most that block, they are at least 14 bytes and at most
 * max_datagram, the counts add up, and a callback that stops ends the parse
 * at once.
 */

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ncm-le.h"
#include "ncm-ntb.h"

#define CONFIG_LEN 5

/* One NTB as its NTH says, read here independently. */
typedef struct {
	size_t start;
	size_t block;
	size_t delivered;       /* bytes handed over: never more than the block */
} Span;

typedef struct {
	const uint8_t *buf;
	size_t len;
	Span *span;             /* each NTB takes 12 bytes at least: len / 12 + 1 */
	unsigned spans;
	unsigned at;            /* the span of the last datagram: they come in order */
	uint32_t max_datagram;
	uint32_t seen;
	uint32_t stop_after;
} Check;

static bool
on_datagram(void *user_data, const uint8_t *datagram, size_t len)
{
	Check *c = user_data;
	volatile uint8_t sink = 0;
	size_t off;

	FUZZ_CHECK(datagram >= c->buf && datagram < c->buf + c->len);
	off = (size_t)(datagram - c->buf);
	while (c->at + 1 < c->spans && off >= c->span[c->at + 1].start)
		c->at++;
	FUZZ_CHECK(off >= c->span[c->at].start);
	off -= c->span[c->at].start;
	FUZZ_CHECK(len <= c->span[c->at].block && off <= c->span[c->at].block - len);
	FUZZ_CHECK(len >= NCM_ETH_MIN_FRAME);
	FUZZ_CHECK(c->max_datagram == 0 || len <= c->max_datagram);
	c->span[c->at].delivered += len;
	FUZZ_CHECK(c->span[c->at].delivered <= c->span[c->at].block);
	/* Touch every byte, so ASan sees any datagram that is not really there. */
	for (size_t i = 0; i < len; i++)
		sink ^= datagram[i];
	(void)sink;
	c->seen++;
	return c->stop_after == 0 || c->seen < c->stop_after;
}

/*
 * The NTBs as their NTHs declare them: a block of 0, or one past the
 * transfer, runs to its end. The next starts where a block ends, if the
 * same signature is there. The parser stops earlier at a bad NTH; it
 * delivers nothing from there on, so the spans it never reached do not
 * matter.
 */
static void
declare_spans(Check *c)
{
	const uint8_t *b = c->buf;
	uint32_t signature = c->len >= 4 ? ncm_le32_at(b, c->len, 0) : 0;
	size_t at = 0, block, left;

	c->spans = 0;
	if (signature != NCM_NTH16_SIGNATURE && signature != NCM_NTH32_SIGNATURE) {
		c->span[c->spans++] = (Span){ 0, c->len, 0 };
		return;
	}
	for (;;) {
		left = c->len - at;
		block = 0;
		if (signature == NCM_NTH16_SIGNATURE && left >= NCM_NTH16_LEN)
			block = ncm_le16_at(b, c->len, at + 8);
		else if (signature == NCM_NTH32_SIGNATURE && left >= NCM_NTH32_LEN)
			block = ncm_le32_at(b, c->len, at + 8);
		c->span[c->spans++] = (Span){ at, block && block < left ? block : left, 0 };
		if (block < NCM_NTH16_LEN || block >= left || left - block < 4 ||
		    ncm_le32_at(b, c->len, at + block) != signature)
			return;
		at += block;
	}
}

static void
check_result(NcmNtbError err, const NcmNtbParseResult *r, const Check *c)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i < NCM_NTB_N_ERRORS; i++)
		sum += r->reasons[i];
	FUZZ_CHECK(r->reasons[NCM_NTB_OK] == 0);
	FUZZ_CHECK(r->rejects == sum);
	FUZZ_CHECK(r->datagrams == c->seen);
	FUZZ_CHECK((unsigned)err < NCM_NTB_N_ERRORS);
	FUZZ_CHECK(err == NCM_NTB_OK ? sum == 0 : r->reasons[err] > 0);
	FUZZ_CHECK(r->ntbs <= c->spans);
	FUZZ_CHECK(r->ntbs >= 1);
	FUZZ_CHECK(r->bad_ntbs <= r->ntbs);
	FUZZ_CHECK((r->bad_ntbs == 0) == (r->rejects == 0));
	FUZZ_CHECK(r->ndps <= NCM_NTB_MAX_NDP_HOPS * r->ntbs);
	FUZZ_CHECK(strcmp(ncm_ntb_error_name(err), "unknown") != 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	NcmNtbParseConfig config = { 0 };
	NcmNtbParseResult first, second;
	Check c = { 0 };
	NcmNtbError err;

	if (size < CONFIG_LEN)
		return 0;
	config.formats = data[0] & 3;
	config.crc = data[0] & 4;
	config.max_block = data[0] & 8 ? ncm_le16_at(data, size, 1) : 0;
	config.max_datagram = data[0] & 16 ? ncm_le16_at(data, size, 3) : 0;
	config.max_packet = data[0] & 32 ? 64 : 0;
	c.buf = data + CONFIG_LEN;
	c.len = size - CONFIG_LEN;
	c.span = malloc((c.len / NCM_NTH16_LEN + 1) * sizeof(*c.span));
	FUZZ_CHECK(c.span != NULL);
	declare_spans(&c);
	c.max_datagram = config.max_datagram;
	err = ncm_ntb_parse(&config, c.buf, c.len, on_datagram, &c, &first);
	check_result(err, &first, &c);

	/* Again, stopping early: the same datagrams, cut off at the stop. */
	c.seen = 0;
	c.at = 0;
	for (unsigned i = 0; i < c.spans; i++)
		c.span[i].delivered = 0;
	c.stop_after = data[0] >> 6;
	err = ncm_ntb_parse(&config, c.buf, c.len, on_datagram, &c, &second);
	check_result(err, &second, &c);
	if (c.stop_after == 0)
		FUZZ_CHECK(memcmp(&first, &second, sizeof(first)) == 0);
	else
		FUZZ_CHECK(second.datagrams == (first.datagrams < c.stop_after ?
						first.datagrams : c.stop_after));
	free(c.span);
	return 0;
}
