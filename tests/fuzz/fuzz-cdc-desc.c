/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-cdc-desc.c: fuzz target for the configuration descriptor walker and MAC string. */
#include <string.h>

#include "fuzz.h"
#include "ncm-cdc.h"

enum { MAX_FUNCTIONS = 4 };

static void
check_function(const NcmCdcFunction *fn, const uint8_t *blob)
{
	FUZZ_CHECK((fn->bulk_in_ep & 0x80) != 0);
	FUZZ_CHECK((fn->bulk_out_ep & 0x80) == 0);
	FUZZ_CHECK(fn->data_iface != fn->comm_iface);
	FUZZ_CHECK(fn->intr_ep == 0 || (fn->intr_ep & 0x80) != 0);
	FUZZ_CHECK(fn->intr_ep != 0 || fn->intr_max_packet == 0);
	FUZZ_CHECK(fn->intr_max_packet <= 0x7ff);
	FUZZ_CHECK(fn->bulk_in_max_packet <= 0x7ff && fn->bulk_out_max_packet <= 0x7ff);
	/* the data interface came from exactly one place */
	FUZZ_CHECK(fn->has_union != fn->has_iad);
	FUZZ_CHECK(fn->has_ncm_desc || (fn->bcd_ncm == 0 && fn->net_caps == 0));
	FUZZ_CHECK(fn->config_value == blob[5]);
}

/* No interface may serve two functions. */
static void
check_disjoint(const NcmCdcFunction *fns, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < i; j++) {
			FUZZ_CHECK(fns[i].comm_iface != fns[j].comm_iface);
			FUZZ_CHECK(fns[i].comm_iface != fns[j].data_iface);
			FUZZ_CHECK(fns[i].data_iface != fns[j].comm_iface);
			FUZZ_CHECK(fns[i].data_iface != fns[j].data_iface);
		}
	}
}

/* A smaller array sees the same first function; the walk is deterministic. */
static void
check_prefix(const uint8_t *data, size_t size, NcmCdcStatus st, const NcmCdcFunction *fns,
	     size_t n)
{
	NcmCdcFunction one[1];
	size_t n_one = 77;
	NcmCdcStatus st_one = ncm_cdc_parse_config(data, size, one, 1, &n_one);

	FUZZ_CHECK(n_one == (n > 0 ? 1 : 0));
	if (n > 0)
		FUZZ_CHECK(memcmp(&one[0], &fns[0], sizeof(one[0])) == 0);
	if (st == NCM_CDC_OK)
		FUZZ_CHECK(st_one == (n > 1 ? NCM_CDC_ERR_TOO_MANY : NCM_CDC_OK));
	else if (st != NCM_CDC_ERR_TOO_MANY)
		FUZZ_CHECK(st_one == st);
}

static void
fuzz_config(const uint8_t *data, size_t size)
{
	NcmCdcFunction fns[MAX_FUNCTIONS];
	size_t n = 77;
	NcmCdcStatus st;

	memset(fns, 0, sizeof(fns));
	st = ncm_cdc_parse_config(data, size, fns, MAX_FUNCTIONS, &n);
	FUZZ_CHECK(st <= NCM_CDC_ERR_TOO_MANY);
	FUZZ_CHECK(ncm_cdc_status_name(st) != NULL);
	FUZZ_CHECK(n <= MAX_FUNCTIONS);
	FUZZ_CHECK(st != NCM_CDC_ERR_TOO_MANY || n == MAX_FUNCTIONS);
	if (st == NCM_CDC_ERR_TRUNCATED || st == NCM_CDC_ERR_NOT_CONFIG)
		FUZZ_CHECK(n == 0);
	FUZZ_CHECK(st != NCM_CDC_ERR_TRUNCATED || size < 9);
	for (size_t i = 0; i < n; i++)
		check_function(&fns[i], data);
	check_disjoint(fns, n);
	check_prefix(data, size, st, fns, n);
}

static int
hex_digit(uint8_t c)
{
	static const char digits[] = "0123456789abcdef";
	const char *p = c ? strchr(digits, c | 0x20) : NULL;

	return p ? (int)(p - digits) : -1;
}

static void
fuzz_mac(const uint8_t *data, size_t size)
{
	uint8_t mac[6];

	if (!ncm_cdc_parse_mac_string(data, size, mac))
		return;
	FUZZ_CHECK(size == 26 && data[0] == 26 && data[1] == 0x03);
	for (size_t i = 0; i < 12; i++) {
		int v = hex_digit(data[2 + 2 * i]);
		unsigned nibble = (i % 2) ? (mac[i / 2] & 0x0fu) : (unsigned)(mac[i / 2] >> 4);

		FUZZ_CHECK(data[3 + 2 * i] == 0 && v >= 0 && (unsigned)v == nibble);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_config(data, size);
	fuzz_mac(data, size);
	return 0;
}
