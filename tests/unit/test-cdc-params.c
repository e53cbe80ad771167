/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cdc-params.c: unit tests for the GET_NTB_PARAMETERS reply parser. */
#include "ncm-cdc.h"

#include <glib.h>
#include <string.h>

typedef struct {
	uint16_t wlength, formats;
	uint32_t in_max;
	uint16_t in_div, in_rem, in_align;
	uint32_t out_max;
	uint16_t out_div, out_rem, out_align, out_max_dgrams;
} Reply;

/* What Linux's f_ncm gadget answers (see NCM-FACTS.md). */
static const Reply FNCM = {
	.wlength = 28, .formats = 0x03,
	.in_max = 16384, .in_div = 4, .in_rem = 0, .in_align = 4,
	.out_max = 16384, .out_div = 4, .out_rem = 0, .out_align = 4, .out_max_dgrams = 0,
};

static void
w16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
w32(uint8_t *p, uint32_t v)
{
	w16(p, (uint16_t)v);
	w16(p + 2, (uint16_t)(v >> 16));
}

static void
encode(const Reply *r, uint8_t buf[28])
{
	memset(buf, 0, 28);
	w16(buf, r->wlength);
	w16(buf + 2, r->formats);
	w32(buf + 4, r->in_max);
	w16(buf + 8, r->in_div);
	w16(buf + 10, r->in_rem);
	w16(buf + 12, r->in_align);
	w32(buf + 16, r->out_max);
	w16(buf + 20, r->out_div);
	w16(buf + 22, r->out_rem);
	w16(buf + 24, r->out_align);
	w16(buf + 26, r->out_max_dgrams);
}

static NcmParamsStatus
parse_reply(const Reply *r, NcmNtbParams *p, unsigned *fixups)
{
	uint8_t buf[28];

	encode(r, buf);
	memset(p, 0xEE, sizeof(*p));
	*fixups = 99;
	return ncm_params_parse(buf, sizeof(buf), p, fixups);
}

static void
test_fncm(void)
{
	NcmNtbParams p;
	unsigned fixups;

	g_assert_cmpint(parse_reply(&FNCM, &p, &fixups), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(fixups, ==, 0);
	g_assert_cmpuint(p.formats, ==, 3);
	g_assert_cmpuint(p.in_max_size, ==, 16384);
	g_assert_cmpuint(p.in_divisor, ==, 4);
	g_assert_cmpuint(p.in_remainder, ==, 0);
	g_assert_cmpuint(p.in_alignment, ==, 4);
	g_assert_cmpuint(p.out_max_size, ==, 16384);
	g_assert_cmpuint(p.out_divisor, ==, 4);
	g_assert_cmpuint(p.out_remainder, ==, 0);
	g_assert_cmpuint(p.out_alignment, ==, 4);
	g_assert_cmpuint(p.out_max_datagrams, ==, 0);
}

/* Every field lands where the layout says, with no fix-up on sane values. */
static void
test_field_offsets(void)
{
	Reply r = {
		.wlength = 28, .formats = 0x01,
		.in_max = 0x00012345, .in_div = 16, .in_rem = 3, .in_align = 8,
		.out_max = 0x00023456, .out_div = 32, .out_rem = 5, .out_align = 64,
		.out_max_dgrams = 40,
	};
	NcmNtbParams p;
	unsigned fixups;

	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(fixups, ==, 0);
	g_assert_cmpuint(p.formats, ==, 1);
	g_assert_cmpuint(p.in_max_size, ==, 0x12345);
	g_assert_cmpuint(p.in_divisor, ==, 16);
	g_assert_cmpuint(p.in_remainder, ==, 3);
	g_assert_cmpuint(p.in_alignment, ==, 8);
	g_assert_cmpuint(p.out_max_size, ==, 0x23456);
	g_assert_cmpuint(p.out_divisor, ==, 32);
	g_assert_cmpuint(p.out_remainder, ==, 5);
	g_assert_cmpuint(p.out_alignment, ==, 64);
	g_assert_cmpuint(p.out_max_datagrams, ==, 40);
}

static void
test_short(void)
{
	uint8_t buf[28];
	NcmNtbParams p;

	encode(&FNCM, buf);
	for (size_t len = 0; len < 28; len++)
		g_assert_cmpint(ncm_params_parse(buf, len, &p, NULL), ==, NCM_PARAMS_ERR_SHORT);
	g_assert_cmpint(ncm_params_parse(NULL, 28, &p, NULL), ==, NCM_PARAMS_ERR_SHORT);
}

static void
test_wlength(void)
{
	uint8_t buf[32] = { 0 };
	Reply r = FNCM;
	NcmNtbParams p;

	r.wlength = 27;
	encode(&r, buf);
	g_assert_cmpint(ncm_params_parse(buf, 28, &p, NULL), ==, NCM_PARAMS_ERR_LENGTH);
	r.wlength = 0;
	encode(&r, buf);
	g_assert_cmpint(ncm_params_parse(buf, 28, &p, NULL), ==, NCM_PARAMS_ERR_LENGTH);
	/* claims more than arrived */
	r.wlength = 30;
	encode(&r, buf);
	g_assert_cmpint(ncm_params_parse(buf, 28, &p, NULL), ==, NCM_PARAMS_ERR_LENGTH);
	/* a longer reply from a newer spec revision is fine */
	g_assert_cmpint(ncm_params_parse(buf, 30, &p, NULL), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(p.in_max_size, ==, 16384);
}

static void
test_no_ntb16(void)
{
	Reply r = FNCM;
	NcmNtbParams p;
	unsigned fixups;

	r.formats = 0x02;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_ERR_NO_NTB16);
	r.formats = 0;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_ERR_NO_NTB16);
	r.formats = 0x01;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
}

static void
test_sizes(void)
{
	Reply r = FNCM;
	NcmNtbParams p;
	unsigned fixups;

	/* Under the spec's 2048, as Linux takes them: the driver works round
	 * them. Its divisors and alignments stay. */
	r.in_max = 1600;
	r.out_max = 0;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(p.in_max_size, ==, 1600);
	g_assert_cmpuint(p.out_max_size, ==, 0);
	g_assert_cmpuint(fixups, ==, 0);
	r.in_max = 0;
	r.out_max = 128;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(p.in_max_size, ==, 0);
	/* OUT NTBs that carry no IP packet at all. */
	r.out_max = 127;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_ERR_OUT_SIZE);
	r.out_max = 1;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_ERR_OUT_SIZE);
	r.in_max = 2048;
	r.out_max = 2048;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
	/* above 64 KiB is accepted as sent: the driver caps what it uses */
	r.in_max = 0x100000;
	r.out_max = 0xFFFFFFFF;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(p.in_max_size, ==, 0x100000);
	g_assert_cmpuint(p.out_max_size, ==, 0xFFFFFFFF);
}

/* On error the caller's struct and counter are left alone. */
static void
test_error_leaves_output(void)
{
	Reply r = FNCM;
	NcmNtbParams p;
	unsigned fixups;

	r.formats = 0x02;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_ERR_NO_NTB16);
	g_assert_cmpuint(fixups, ==, 99);
	g_assert_cmpuint(p.in_max_size, ==, 0xEEEEEEEE);
}

static void
test_fixups(void)
{
	Reply r = FNCM;
	NcmNtbParams p;
	unsigned fixups;

	r.in_div = 0;       /* zero */
	r.in_align = 2;     /* power of two, too small */
	r.out_div = 6;      /* not a power of two */
	r.out_align = 8;    /* fine */
	r.in_rem = 7;       /* kept: the packer reduces it */
	r.out_rem = 0xFFFF;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(fixups, ==, 3);
	g_assert_cmpuint(p.in_divisor, ==, 4);
	g_assert_cmpuint(p.in_alignment, ==, 4);
	g_assert_cmpuint(p.out_divisor, ==, 4);
	g_assert_cmpuint(p.out_alignment, ==, 8);
	g_assert_cmpuint(p.in_remainder, ==, 7);
	g_assert_cmpuint(p.out_remainder, ==, 0xFFFF);

	r = FNCM;
	r.in_div = 3;
	r.in_align = 1;
	r.out_div = 0xFFFF;
	r.out_align = 0x8001;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(fixups, ==, 4);
	g_assert_cmpuint(p.in_divisor, ==, 4);
	g_assert_cmpuint(p.in_alignment, ==, 4);
	g_assert_cmpuint(p.out_divisor, ==, 4);
	g_assert_cmpuint(p.out_alignment, ==, 4);
}

/* A modulus as large as the block leaves no room for a datagram. */
static void
test_fixup_modulus_vs_size(void)
{
	Reply r = FNCM;
	NcmNtbParams p;
	unsigned fixups;

	r.in_max = 4096;
	r.in_div = 4096;
	r.in_align = 2048;
	r.out_max = 0x20000;
	r.out_div = 0x8000;
	r.out_align = 0x8000;
	g_assert_cmpint(parse_reply(&r, &p, &fixups), ==, NCM_PARAMS_OK);
	g_assert_cmpuint(fixups, ==, 1);
	g_assert_cmpuint(p.in_divisor, ==, 4);
	g_assert_cmpuint(p.in_alignment, ==, 2048);
	g_assert_cmpuint(p.out_divisor, ==, 0x8000);
	g_assert_cmpuint(p.out_alignment, ==, 0x8000);
}

static void
test_optional_outputs(void)
{
	uint8_t buf[28];
	Reply r = FNCM;

	r.in_div = 5;
	encode(&r, buf);
	g_assert_cmpint(ncm_params_parse(buf, 28, NULL, NULL), ==, NCM_PARAMS_OK);
}

static void
test_status_names(void)
{
	const char *seen[5];

	for (int s = NCM_PARAMS_OK; s <= NCM_PARAMS_ERR_OUT_SIZE; s++) {
		seen[s] = ncm_params_status_name((NcmParamsStatus)s);
		g_assert_nonnull(seen[s]);
		g_assert_cmpstr(seen[s], !=, "unknown");
		for (int t = 0; t < s; t++)
			g_assert_cmpstr(seen[s], !=, seen[t]);
	}
	g_assert_cmpstr(ncm_params_status_name(NCM_PARAMS_OK), ==, "ok");
	g_assert_cmpstr(ncm_params_status_name((NcmParamsStatus)-1), ==, "unknown");
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/cdc-params/fncm", test_fncm);
	g_test_add_func("/cdc-params/field-offsets", test_field_offsets);
	g_test_add_func("/cdc-params/short", test_short);
	g_test_add_func("/cdc-params/wlength", test_wlength);
	g_test_add_func("/cdc-params/no-ntb16", test_no_ntb16);
	g_test_add_func("/cdc-params/sizes", test_sizes);
	g_test_add_func("/cdc-params/error-leaves-output", test_error_leaves_output);
	g_test_add_func("/cdc-params/fixups", test_fixups);
	g_test_add_func("/cdc-params/fixup-modulus-vs-size", test_fixup_modulus_vs_size);
	g_test_add_func("/cdc-params/optional-outputs", test_optional_outputs);
	g_test_add_func("/cdc-params/status-names", test_status_names);
	return g_test_run();
}
