/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cdc-params.c: parses and sanitises the GET_NTB_PARAMETERS reply. */
#include "ncm-cdc.h"

#include "ncm-le.h"

enum {
	PARAMS_LEN = 28,
	FORMAT_NTB16 = 0x01,
	/* Under it no OUT NTB holds a frame of IPv4's smallest MTU (68) and
	 * its NDP; the driver checks the room its layout really leaves */
	MIN_OUT_SIZE = 128,
	/* a size of 0 (not said) is taken as this much, as the driver does */
	UNSAID_SIZE = 2048,
	/* the smallest alignment the spec allows; also what Linux falls back to */
	DEFAULT_ALIGN = 4,
};

const char *
ncm_params_status_name(NcmParamsStatus status)
{
	switch (status) {
	case NCM_PARAMS_OK:
		return "ok";
	case NCM_PARAMS_ERR_SHORT:
		return "short";
	case NCM_PARAMS_ERR_LENGTH:
		return "bad-wlength";
	case NCM_PARAMS_ERR_NO_NTB16:
		return "no-ntb16";
	case NCM_PARAMS_ERR_OUT_SIZE:
		return "out-size";
	}
	return "unknown";
}

/*
 * Divisors and alignments are used as masks by the packer, so anything but a
 * power of two >= 4 is replaced. One that is not below the block size could
 * leave no room for a single datagram, so it is replaced too.
 */
static void
fix_modulus(uint16_t *val, uint32_t max_size, unsigned *fixups)
{
	uint16_t v = *val;

	if (max_size == 0)
		max_size = UNSAID_SIZE;
	if (v >= DEFAULT_ALIGN && (v & (v - 1)) == 0 && v < max_size)
		return;
	*val = DEFAULT_ALIGN;
	(*fixups)++;
}

/* Within wLength: a field past what the device said it sent reads as 0. */
static void
decode(const uint8_t *buf, size_t len, NcmNtbParams *p)
{
	p->formats = ncm_le16_at(buf, len, 2);
	p->in_max_size = ncm_le32_at(buf, len, 4);
	p->in_divisor = ncm_le16_at(buf, len, 8);
	p->in_remainder = ncm_le16_at(buf, len, 10);
	p->in_alignment = ncm_le16_at(buf, len, 12);
	p->out_max_size = ncm_le32_at(buf, len, 16);
	p->out_divisor = ncm_le16_at(buf, len, 20);
	p->out_remainder = ncm_le16_at(buf, len, 22);
	p->out_alignment = ncm_le16_at(buf, len, 24);
	p->out_max_datagrams = ncm_le16_at(buf, len, 26);
}

NcmParamsStatus
ncm_params_parse(const uint8_t *buf, size_t len, NcmNtbParams *params, unsigned *ret_fixups)
{
	NcmNtbParams p;
	unsigned fixups = 0;
	uint16_t wlength;

	if (!buf || len < PARAMS_LEN)
		return NCM_PARAMS_ERR_SHORT;
	wlength = ncm_le16_at(buf, len, 0);
	if (wlength < PARAMS_LEN || wlength > len)
		return NCM_PARAMS_ERR_LENGTH;

	decode(buf, wlength, &p);
	if (!(p.formats & FORMAT_NTB16))
		return NCM_PARAMS_ERR_NO_NTB16;
	/*
	 * Sizes above 64 KiB are legal for NTB32; the driver caps what it
	 * uses. The spec's floor of 2048 is not enforced, as Linux' cdc_ncm
	 * does not: a smaller size, or 0 (not said), is the driver's to work
	 * around (ncm-usb-open.c). Only OUT NTBs that cannot carry an IP
	 * packet at all are refused.
	 */
	if (p.out_max_size != 0 && p.out_max_size < MIN_OUT_SIZE)
		return NCM_PARAMS_ERR_OUT_SIZE;

	fix_modulus(&p.in_divisor, p.in_max_size, &fixups);
	fix_modulus(&p.in_alignment, p.in_max_size, &fixups);
	fix_modulus(&p.out_divisor, p.out_max_size, &fixups);
	fix_modulus(&p.out_alignment, p.out_max_size, &fixups);
	/* remainders stay as sent: the packer takes them modulo the divisor */

	if (params)
		*params = p;
	if (ret_fixups)
		*ret_fixups = fixups;
	return NCM_PARAMS_OK;
}
