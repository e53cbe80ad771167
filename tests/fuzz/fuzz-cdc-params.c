/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-cdc-params.c: fuzz target for the GET_NTB_PARAMETERS reply parser. */
#include <string.h>

#include "fuzz.h"
#include "ncm-cdc.h"

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* A size of 0 (not said) counts as 2048, as the parser and driver take it. */
static bool
good_modulus(uint16_t v, uint32_t max_size)
{
	return v >= 4 && (v & (v - 1)) == 0 && v < (max_size ? max_size : 2048);
}

/* A sane field passes through untouched, anything else becomes 4. */
static unsigned
check_modulus(uint16_t got, const uint8_t *raw, uint32_t max_size)
{
	uint16_t sent = rd16(raw);

	FUZZ_CHECK(got >= 4 && (got & (got - 1)) == 0);
	if (good_modulus(sent, max_size)) {
		FUZZ_CHECK(got == sent);
		return 0;
	}
	FUZZ_CHECK(got == 4);
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	NcmNtbParams p;
	unsigned fixups = 99, expect_fixups = 0;
	NcmParamsStatus st;

	memset(&p, 0, sizeof(p));
	st = ncm_params_parse(data, size, &p, &fixups);
	FUZZ_CHECK(ncm_params_status_name(st) != NULL);
	FUZZ_CHECK((st == NCM_PARAMS_ERR_SHORT) == (size < 28));
	if (st != NCM_PARAMS_OK) {
		FUZZ_CHECK(st <= NCM_PARAMS_ERR_OUT_SIZE);
		FUZZ_CHECK(fixups == 99);
		return 0;
	}
	FUZZ_CHECK(rd16(data) >= 28 && rd16(data) <= size);
	FUZZ_CHECK(p.formats & 0x01);
	/* Any In size and an Out size of 0 or 128 up pass, as Linux takes them. */
	FUZZ_CHECK(p.out_max_size == 0 || p.out_max_size >= 128);
	expect_fixups += check_modulus(p.in_divisor, data + 8, p.in_max_size);
	expect_fixups += check_modulus(p.in_alignment, data + 12, p.in_max_size);
	expect_fixups += check_modulus(p.out_divisor, data + 20, p.out_max_size);
	expect_fixups += check_modulus(p.out_alignment, data + 24, p.out_max_size);
	FUZZ_CHECK(fixups == expect_fixups);
	FUZZ_CHECK(p.in_remainder == rd16(data + 10) && p.out_remainder == rd16(data + 22));
	FUZZ_CHECK(p.out_max_datagrams == rd16(data + 26));
	return 0;
}
