/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gen-ntb-seeds.c: writes the seed corpus of the NTB fuzz targets, using our packer. */

/*
 * usage: gen-ntb-seeds DIR   (writes DIR/ntb-parse/ and DIR/ntb-roundtrip/)
 * The committed seeds in tests/fuzz/corpus/ came from this program; rerun it
 * when the input layout of a target changes. Seeds are valid NTBs in each
 * layout the packer makes, plus the variants it never makes itself (CRC
 * NDPs, chained NDPs, wBlockLength 0, a trailing byte), so the fuzzer starts
 * deep inside the parser instead of at the signature check.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ncm-le.h"
#include "ncm-ntb.h"

#define PARSE_CONFIG_LEN 5
#define MAX_NTB 4096

static const char *out_dir;

static void
write_seed(const char *target, const char *name, const uint8_t *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, target);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s.bin", out_dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

typedef struct {
	uint8_t bytes[PARSE_CONFIG_LEN + MAX_NTB + 64];
	uint8_t *ntb;           /* bytes + PARSE_CONFIG_LEN */
	size_t len;             /* of the NTB */
	bool wide;
} Seed;

/* Packs @n datagrams of the given lengths with @config into @s. */
static void
pack(Seed *s, const NcmNtbPackConfig *config, const size_t *lens, size_t n)
{
	static NcmNtbPacker p;
	uint8_t frame[1600];

	memset(s->bytes, 0, sizeof(s->bytes));
	s->ntb = s->bytes + PARSE_CONFIG_LEN;
	s->wide = config->format == NCM_NTB_FORMAT_32;
	ncm_ntb_packer_init(&p, config, s->ntb, MAX_NTB, (uint16_t)(n * 31));
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < lens[i]; j++)
			frame[j] = (uint8_t)(i * 16 + j);
		if (ncm_ntb_packer_add(&p, frame, lens[i]) != NCM_NTB_PACK_OK) {
			fprintf(stderr, "seed datagram %zu did not fit\n", i);
			exit(1);
		}
	}
	s->len = ncm_ntb_packer_finish(&p, NULL);
}

static void
emit_parse(Seed *s, const char *name, uint8_t flags, uint16_t max_block, uint16_t max_dg)
{
	s->bytes[0] = flags;
	ncm_le16_put(s->bytes, PARSE_CONFIG_LEN, 1, max_block);
	ncm_le16_put(s->bytes, PARSE_CONFIG_LEN, 3, max_dg);
	write_seed("ntb-parse", name, s->bytes, PARSE_CONFIG_LEN + s->len);
}

static size_t
ndp_index(const Seed *s)
{
	return s->wide ? ncm_le32_at(s->ntb, s->len, 12) : ncm_le16_at(s->ntb, s->len, 10);
}

/* Turns the NDP into a CRC one: the last 4 bytes of each datagram become its "CRC". */
static void
make_crc(Seed *s)
{
	s->ntb[ndp_index(s) + 3] = '1';
}

static size_t
next_ndp(const Seed *s, size_t ndp)
{
	return s->wide ? ncm_le32_at(s->ntb, s->len, ndp + 8) : ncm_le16_at(s->ntb, s->len, ndp + 6);
}

/* Appends an NDP, chained from the last one, that points at datagram 0 again. */
static void
add_chained_ndp(Seed *s)
{
	const size_t first = ndp_index(s);
	size_t last = first;
	const size_t at = (s->len + 3) & ~(size_t)3;
	const size_t hdr = s->wide ? NCM_NDP32_HEADER_LEN : NCM_NDP16_HEADER_LEN;
	const size_t entry = s->wide ? NCM_NDP32_ENTRY_LEN : NCM_NDP16_ENTRY_LEN;
	const size_t len = hdr + 2 * entry;
	const size_t end = at + len;

	while (next_ndp(s, last) != 0)
		last = next_ndp(s, last);
	memset(s->ntb + s->len, 0, end - s->len);
	memcpy(s->ntb + at, s->ntb + first, hdr + entry);
	ncm_le16_put(s->ntb, end, at + 4, (uint16_t)len);
	if (s->wide) {
		ncm_le32_put(s->ntb, end, at + 8, 0);
		ncm_le32_put(s->ntb, end, last + 8, (uint32_t)at);
		ncm_le32_put(s->ntb, end, 8, (uint32_t)end);
	} else {
		ncm_le16_put(s->ntb, end, at + 6, 0);
		ncm_le16_put(s->ntb, end, last + 6, (uint16_t)at);
		ncm_le16_put(s->ntb, end, 8, (uint16_t)end);
	}
	s->len = end;
}

static void
set_block_length(Seed *s, uint32_t value)
{
	if (s->wide)
		ncm_le32_put(s->ntb, s->len, 8, value);
	else
		ncm_le16_put(s->ntb, s->len, 8, (uint16_t)value);
}

static void
gen_parse_layouts(void)
{
	static const size_t lens[] = { 60, 1514, 14, 98, 42, 15, 590, 64, 14, 77 };
	NcmNtbPackConfig c = { .divisor = 4, .alignment = 4 };
	char name[64];
	Seed s;

	for (int f = 0; f < 2; f++) {
		const char *fmt = f ? "ntb32" : "ntb16";

		c.format = f ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16;
		c.ndp_first = false;
		pack(&s, &c, lens, 1);
		snprintf(name, sizeof(name), "%s-ndp-end-1", fmt);
		emit_parse(&s, name, 0, 0, 0);
		pack(&s, &c, lens, 10);
		snprintf(name, sizeof(name), "%s-ndp-end-10", fmt);
		emit_parse(&s, name, 0, 0, 0);
		snprintf(name, sizeof(name), "%s-ndp-end-10-limits", fmt);
		emit_parse(&s, name, 8 | 16, (uint16_t)s.len, 1514);
		c.ndp_first = true;
		pack(&s, &c, lens, 3);
		snprintf(name, sizeof(name), "%s-ndp-first-3", fmt);
		emit_parse(&s, name, (uint8_t)(1 + f), 0, 0);
		c.ndp_first = false;
		c.divisor = 32;
		c.remainder = 14;
		c.alignment = 64;
		pack(&s, &c, lens + 2, 4);
		snprintf(name, sizeof(name), "%s-divisor32-rem14-align64", fmt);
		emit_parse(&s, name, 0x20, 0, 0);
		c.divisor = 4;
		c.remainder = 0;
		c.alignment = 4;
	}
}

static void
gen_parse_variants(void)
{
	static const size_t lens[] = { 64, 18, 100, 1518 };
	NcmNtbPackConfig c = { .divisor = 4, .alignment = 4 };
	Seed s;

	for (int f = 0; f < 2; f++) {
		c.format = f ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16;
		pack(&s, &c, lens, 4);
		make_crc(&s);
		emit_parse(&s, f ? "ntb32-crc" : "ntb16-crc", 4, 0, 0);
		pack(&s, &c, lens, 2);
		add_chained_ndp(&s);
		emit_parse(&s, f ? "ntb32-chained" : "ntb16-chained", 0, 0, 0);
		pack(&s, &c, lens, 2);
		set_block_length(&s, 0);
		emit_parse(&s, f ? "ntb32-block-length-0" : "ntb16-block-length-0", 0, 0, 0);
		pack(&s, &c, lens, 3);
		s.ntb[s.len++] = 0;
		emit_parse(&s, f ? "ntb32-trailing-zero" : "ntb16-trailing-zero", 0, 0, 0);
		/* Two NTBs in one transfer, as from a device that left out a ZLP. */
		pack(&s, &c, lens, 3);
		memcpy(s.ntb + s.len, s.ntb, s.len);
		s.len *= 2;
		emit_parse(&s, f ? "ntb32-joined" : "ntb16-joined", 0, 0, 0);
	}
	/* The short-packet pad: an NTB16 of 128 bytes plus its zero byte. */
	c.format = NCM_NTB_FORMAT_16;
	c.max_packet = 64;
	c.short_mode = NCM_NTB_SHORT_PAD;
	c.max_size = 2048;
	pack(&s, &c, (const size_t[]){ 100 }, 1);
	emit_parse(&s, "ntb16-short-pad", 0, 0, 0);
}

/* A few broken NTBs, so the corpus replay also walks the reject paths. */
static void
gen_parse_rejects(void)
{
	static const size_t lens[] = { 64, 18, 100 };
	NcmNtbPackConfig c = { .format = NCM_NTB_FORMAT_32, .divisor = 4, .alignment = 4 };
	size_t ndp;
	Seed s;

	/* The second NDP chains back to itself. */
	pack(&s, &c, lens, 2);
	add_chained_ndp(&s);
	ncm_le32_put(s.ntb, s.len, s.len - 32 + 8, (uint32_t)(s.len - 32));
	emit_parse(&s, "reject-ntb32-ndp-cycle", 0, 0, 0);
	/* The terminator overwritten: the walk must stop at wLength, at the block end. */
	pack(&s, &c, lens, 3);
	ndp = ndp_index(&s);
	ncm_le32_put(s.ntb, s.len, s.len - 8, 16);
	ncm_le32_put(s.ntb, s.len, s.len - 4, 20);
	emit_parse(&s, "reject-ntb32-no-terminator", 0, 0, 0);
	/* An entry whose offset + length wraps around 32 bits. */
	pack(&s, &c, lens, 3);
	ncm_le32_put(s.ntb, s.len, ndp + 16 + 8, 0xFFFFFFF0u);
	ncm_le32_put(s.ntb, s.len, ndp + 16 + 12, 0x20);
	emit_parse(&s, "reject-ntb32-entry-wraps", 0, 0, 0);
	/* NTB16: misaligned NDP index, then a CRC NDP without CRC mode. */
	c.format = NCM_NTB_FORMAT_16;
	pack(&s, &c, lens, 3);
	ncm_le16_put(s.ntb, s.len, 10, (uint16_t)(ndp_index(&s) + 2));
	emit_parse(&s, "reject-ntb16-ndp-align", 0, 0, 0);
	pack(&s, &c, lens, 3);
	make_crc(&s);
	emit_parse(&s, "reject-ntb16-crc-mode-off", 0, 0, 0);
	/* One NDP more than the hop limit, each pointing at datagram 0. */
	pack(&s, &c, lens, 1);
	for (unsigned i = 0; i < NCM_NTB_MAX_NDP_HOPS; i++)
		add_chained_ndp(&s);
	emit_parse(&s, "reject-ntb16-too-many-ndps", 0, 0, 0);
	/* wBlockLength past the negotiated maximum. */
	pack(&s, &c, lens, 3);
	emit_parse(&s, "reject-ntb16-block-too-big", 8, (uint16_t)(s.len - 4), 0);
}

/* A round-trip input: the 17-byte config, then {length, seed, mode} records. */
static void
emit_roundtrip(const char *name, uint8_t flags, uint16_t buf_size, uint16_t max_size,
	       const uint16_t params[5], const uint16_t *lens, size_t n)
{
	uint8_t in[17 + 4 * 64] = { flags };
	size_t len = 17;

	ncm_le16_put(in, sizeof(in), 1, buf_size);
	ncm_le16_put(in, sizeof(in), 3, max_size);
	for (int i = 0; i < 5; i++)
		ncm_le16_put(in, sizeof(in), 5 + 2 * (size_t)i, params[i]);
	ncm_le16_put(in, sizeof(in), 15, 0xFFFE);
	for (size_t i = 0; i < n && len + 4 <= sizeof(in); i++, len += 4) {
		ncm_le16_put(in, sizeof(in), len, lens[i]);
		in[len + 2] = (uint8_t)(i * 37);
		in[len + 3] = (uint8_t)(i & 1);
	}
	write_seed("ntb-roundtrip", name, in, len);
}

static void
gen_roundtrip(void)
{
	static const uint16_t mixed[] = { 1514, 60, 13, 0, 1514, 1514, 1514, 1514, 1514, 1514,
					  1514, 1514, 1514, 9000, 64, 42, 1500, 70, 1514, 20 };
	static const uint16_t small[] = { 14, 15, 16, 17, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60,
					  60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60 };
	/* divisor, remainder, alignment, max datagrams, max packet */
	static const uint16_t kernel[] = { 4, 0, 4, 0, 512 };
	static const uint16_t odd[] = { 32, 14, 64, 8, 1024 };
	static const uint16_t invalid[] = { 6, 0xFFFF, 3, 0, 64 };
	static const uint16_t limited[] = { 8, 2, 16, 3, 512 };

	emit_roundtrip("ntb16-kernel-params", 0, 16384, 16384, kernel, mixed, 20);
	emit_roundtrip("ntb32-kernel-params", 1, 16384, 16384, kernel, mixed, 20);
	emit_roundtrip("ntb16-ndp-first-pad", 2 | 4, 16384, 0, kernel, mixed, 20);
	emit_roundtrip("ntb32-ndp-first-odd", 1 | 2, 8192, 8192, odd, mixed, 20);
	emit_roundtrip("ntb16-odd-pad", 4, 4096, 8192, odd, small, 28);
	emit_roundtrip("ntb32-invalid-params", 1 | 4, 3000, 2048, invalid, small, 28);
	emit_roundtrip("ntb16-limited", 0, 2048, 2048, limited, small, 28);
	emit_roundtrip("ntb16-big-buffer", 8 | 16, 0, 0, kernel, mixed, 20);
	emit_roundtrip("ntb32-big-buffer", 1 | 8 | 4, 0x2000, 0, kernel, mixed, 20);
	emit_roundtrip("tiny-buffer", 0, 40, 0, kernel, small, 4);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	gen_parse_layouts();
	gen_parse_variants();
	gen_parse_rejects();
	gen_roundtrip();
	return 0;
}
