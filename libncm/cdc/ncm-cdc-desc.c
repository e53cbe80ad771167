/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cdc-desc.c: finds NCM functions in a raw configuration descriptor blob. */
#include "ncm-cdc.h"

#include <string.h>

#include "ncm-le.h"

enum {
	DT_CONFIG = 0x02,
	DT_STRING = 0x03,
	DT_INTERFACE = 0x04,
	DT_ENDPOINT = 0x05,
	DT_IAD = 0x0B,
	DT_CS_INTERFACE = 0x24,
};

enum {
	CDC_SUBTYPE_HEADER = 0x00,
	CDC_SUBTYPE_UNION = 0x06,
	CDC_SUBTYPE_ETHERNET = 0x0F,
	CDC_SUBTYPE_NCM = 0x1A,
};

/* Minimum bLength before a descriptor's fields may be read. */
enum {
	LEN_CONFIG = 9,
	LEN_INTERFACE = 9,
	LEN_ENDPOINT = 7,
	LEN_IAD = 8,
	LEN_CS_ANY = 3,
	LEN_CS_HEADER = 5,
	LEN_CS_UNION = 5,
	LEN_CS_ETHERNET = 13,
	LEN_CS_NCM = 6,
};

enum {
	CLASS_COMM = 0x02,
	SUBCLASS_NCM = 0x0D,
	CLASS_DATA = 0x0A,
};

enum {
	EP_DIR_IN = 0x80,
	EP_TYPE_MASK = 0x03,
	EP_TYPE_BULK = 0x02,
	EP_TYPE_INTERRUPT = 0x03,
	/* bits 11-12 are high-bandwidth multipliers, not size */
	EP_SIZE_MASK = 0x7ff,
};

/*
 * Every comm interface costs a rescan of the blob; a hostile device could
 * list thousands. No real device has more than a handful.
 */
#define MAX_COMM_CANDIDATES 64

/* One interface descriptor and the descriptors that belong to it. */
typedef struct {
	uint8_t number;
	uint8_t alt;
	uint8_t class;
	uint8_t subclass;
	size_t body; /* first descriptor after the interface descriptor */
	size_t end;  /* next interface, IAD or configuration descriptor */
} Segment;

/* What the class-specific descriptors of one comm interface said. */
typedef struct {
	bool header;
	bool ethernet;
	int union_data; /* -1 without a Union naming this interface as control */
} CommInfo;

/*
 * One descriptor of the valid prefix (see valid_prefix()): its bytes and its
 * bLength, the bound its fields are read within.
 */
typedef struct {
	const uint8_t *d;
	size_t len;
	uint8_t type;
} Desc;

/* The fields of an endpoint descriptor the driver uses. */
typedef struct {
	uint8_t address;
	uint8_t type;        /* bmAttributes & EP_TYPE_MASK */
	uint16_t max_packet; /* wMaxPacketSize without the multiplier bits */
} Endpoint;

/* @off < @len. A bLength past @len (only the configuration descriptor's can
 * be: valid_prefix() stops the rest) is cut to what is there. */
static Desc
desc_at(const uint8_t *b, size_t len, size_t off)
{
	Desc desc = { .len = ncm_le8_at(b, len, off) };

	if (!ncm_le_fits(len, off, desc.len))
		desc.len = len - off;
	desc.d = b + off;
	/* read whatever bLength says: a configuration's may be too small */
	desc.type = ncm_le8_at(b, len, off + 1);
	return desc;
}

const char *
ncm_cdc_status_name(NcmCdcStatus status)
{
	switch (status) {
	case NCM_CDC_OK:
		return "ok";
	case NCM_CDC_ERR_TRUNCATED:
		return "truncated";
	case NCM_CDC_ERR_NOT_CONFIG:
		return "not-config";
	case NCM_CDC_ERR_BAD_LENGTH:
		return "bad-length";
	case NCM_CDC_ERR_TOO_MANY:
		return "too-many";
	}
	return "unknown";
}

/*
 * Length of the prefix in which every descriptor fits. After this check the
 * other walkers may step by bLength without re-checking bounds.
 */
static size_t
valid_prefix(const uint8_t *b, size_t len, bool *ret_bad)
{
	size_t off = 0;

	while (off < len) {
		size_t dlen = ncm_le8_at(b, len, off);

		if (dlen < 2 || dlen > len - off) {
			*ret_bad = true;
			return off;
		}
		off += dlen;
	}
	*ret_bad = false;
	return off;
}

static bool
ends_segment(uint8_t type)
{
	return type == DT_INTERFACE || type == DT_IAD || type == DT_CONFIG;
}

/*
 * Finds the next well-formed interface descriptor at or after @off and the
 * extent of what follows it. Returns its offset, or @len when there is none.
 * A short interface descriptor is skipped and claims nothing after it.
 */
static size_t
next_segment(const uint8_t *b, size_t len, size_t off, Segment *seg)
{
	for (; off < len; off += ncm_le8_at(b, len, off)) {
		Desc in = desc_at(b, len, off);

		if (in.type != DT_INTERFACE || in.len < LEN_INTERFACE)
			continue;
		seg->number = ncm_le8_at(in.d, in.len, 2);
		seg->alt = ncm_le8_at(in.d, in.len, 3);
		seg->class = ncm_le8_at(in.d, in.len, 5);
		seg->subclass = ncm_le8_at(in.d, in.len, 6);
		seg->body = off + in.len;
		seg->end = seg->body;
		while (seg->end < len && !ends_segment(desc_at(b, len, seg->end).type))
			seg->end += ncm_le8_at(b, len, seg->end);
		return off;
	}
	return len;
}

static void
parse_cs(Desc cs, const Segment *seg, NcmCdcFunction *fn, CommInfo *info)
{
	const uint8_t *d = cs.d;
	size_t dlen = cs.len;

	switch (ncm_le8_at(d, dlen, 2)) {
	case CDC_SUBTYPE_HEADER:
		if (dlen >= LEN_CS_HEADER && !info->header) {
			info->header = true;
			fn->bcd_cdc = ncm_le16_at(d, dlen, 3);
		}
		break;
	case CDC_SUBTYPE_UNION:
		/* a Union naming another control interface says nothing about this one */
		if (dlen >= LEN_CS_UNION && info->union_data < 0 &&
		    ncm_le8_at(d, dlen, 3) == seg->number)
			info->union_data = ncm_le8_at(d, dlen, 4);
		break;
	case CDC_SUBTYPE_ETHERNET:
		if (dlen >= LEN_CS_ETHERNET && !info->ethernet) {
			info->ethernet = true;
			fn->mac_string_index = ncm_le8_at(d, dlen, 3);
			fn->max_segment_size = ncm_le16_at(d, dlen, 8);
		}
		break;
	case CDC_SUBTYPE_NCM:
		if (dlen >= LEN_CS_NCM && !fn->has_ncm_desc) {
			fn->has_ncm_desc = true;
			fn->bcd_ncm = ncm_le16_at(d, dlen, 3);
			fn->net_caps = ncm_le8_at(d, dlen, 5);
		}
		break;
	default:
		break;
	}
}

/* False unless @desc is a whole endpoint descriptor. */
static bool
endpoint_of(Desc desc, Endpoint *ret)
{
	if (desc.type != DT_ENDPOINT || desc.len < LEN_ENDPOINT)
		return false;
	ret->address = ncm_le8_at(desc.d, desc.len, 2);
	ret->type = ncm_le8_at(desc.d, desc.len, 3) & EP_TYPE_MASK;
	ret->max_packet = ncm_le16_at(desc.d, desc.len, 4) & EP_SIZE_MASK;
	return true;
}

static void
parse_comm_segment(const uint8_t *b, const Segment *seg, NcmCdcFunction *fn, CommInfo *info)
{
	for (size_t off = seg->body; off < seg->end; off += ncm_le8_at(b, seg->end, off)) {
		Desc desc = desc_at(b, seg->end, off);
		Endpoint ep;

		if (desc.type == DT_CS_INTERFACE && desc.len >= LEN_CS_ANY) {
			parse_cs(desc, seg, fn, info);
		} else if (endpoint_of(desc, &ep) && fn->intr_ep == 0 &&
			   ep.type == EP_TYPE_INTERRUPT && (ep.address & EP_DIR_IN)) {
			fn->intr_ep = ep.address;
			fn->intr_max_packet = ep.max_packet;
		}
	}
}

/* The data interface an IAD implies for @comm, or -1. */
static int
iad_data_iface(const uint8_t *b, size_t len, uint8_t comm)
{
	for (size_t off = 0; off < len; off += ncm_le8_at(b, len, off)) {
		Desc iad = desc_at(b, len, off);

		if (iad.type != DT_IAD || iad.len < LEN_IAD)
			continue;
		if (ncm_le8_at(iad.d, iad.len, 2) != comm || ncm_le8_at(iad.d, iad.len, 3) < 2 ||
		    ncm_le8_at(iad.d, iad.len, 4) != CLASS_COMM ||
		    ncm_le8_at(iad.d, iad.len, 5) != SUBCLASS_NCM)
			continue;
		return comm < 0xff ? comm + 1 : -1;
	}
	return -1;
}

/* True when the segment has exactly one bulk IN and one bulk OUT endpoint. */
static bool
bulk_pair(const uint8_t *b, const Segment *seg, NcmCdcFunction *fn)
{
	unsigned n_in = 0, n_out = 0;

	for (size_t off = seg->body; off < seg->end; off += ncm_le8_at(b, seg->end, off)) {
		Endpoint ep;

		if (!endpoint_of(desc_at(b, seg->end, off), &ep) || ep.type != EP_TYPE_BULK)
			continue;
		if (ep.address & EP_DIR_IN) {
			n_in++;
			fn->bulk_in_ep = ep.address;
			fn->bulk_in_max_packet = ep.max_packet;
		} else {
			n_out++;
			fn->bulk_out_ep = ep.address;
			fn->bulk_out_max_packet = ep.max_packet;
		}
	}
	return n_in == 1 && n_out == 1;
}

static bool
find_data_alt(const uint8_t *b, size_t len, NcmCdcFunction *fn)
{
	Segment seg;

	for (size_t off = next_segment(b, len, 0, &seg); off < len;
	     off = next_segment(b, len, seg.end, &seg)) {
		if (seg.number != fn->data_iface || seg.class != CLASS_DATA)
			continue;
		if (bulk_pair(b, &seg, fn)) {
			fn->data_alt = seg.alt;
			return true;
		}
	}
	fn->bulk_in_ep = fn->bulk_out_ep = 0;
	fn->bulk_in_max_packet = fn->bulk_out_max_packet = 0;
	return false;
}

/* Fills @fn for the comm interface @seg; false if the function is incomplete. */
static bool
build_function(const uint8_t *b, size_t len, const Segment *seg, NcmCdcFunction *fn)
{
	CommInfo info = { .union_data = -1 };
	int data;

	memset(fn, 0, sizeof(*fn));
	fn->comm_iface = seg->number;
	fn->comm_alt = seg->alt;
	parse_comm_segment(b, seg, fn, &info);

	data = info.union_data;
	if (data >= 0) {
		fn->has_union = true;
	} else {
		data = iad_data_iface(b, len, seg->number);
		if (data < 0)
			return false;
		fn->has_iad = true;
	}
	if (data == seg->number)
		return false;
	fn->data_iface = (uint8_t)data;
	return find_data_alt(b, len, fn);
}

static bool
bit_test(const uint8_t *map, uint8_t bit)
{
	return map[bit / 8] & (1u << (bit % 8));
}

static void
bit_set(uint8_t *map, uint8_t bit)
{
	map[bit / 8] |= (uint8_t)(1u << (bit % 8));
}

static NcmCdcStatus
collect(const uint8_t *b, size_t len, uint8_t config_value, NcmCdcFunction *out, size_t max,
	size_t *n)
{
	/* interfaces already given to a function: duplicates must not be reported twice */
	uint8_t used[256 / 8] = { 0 };
	unsigned candidates = 0;
	Segment seg;

	for (size_t off = next_segment(b, len, 0, &seg); off < len;
	     off = next_segment(b, len, seg.end, &seg)) {
		NcmCdcFunction fn;

		if (seg.class != CLASS_COMM || seg.subclass != SUBCLASS_NCM)
			continue;
		if (++candidates > MAX_COMM_CANDIDATES)
			break;
		if (!build_function(b, len, &seg, &fn))
			continue;
		if (bit_test(used, fn.comm_iface) || bit_test(used, fn.data_iface))
			continue;
		if (*n == max)
			return NCM_CDC_ERR_TOO_MANY;
		fn.config_value = config_value;
		out[(*n)++] = fn;
		bit_set(used, fn.comm_iface);
		bit_set(used, fn.data_iface);
	}
	return NCM_CDC_OK;
}

NcmCdcStatus
ncm_cdc_parse_config(const uint8_t *blob, size_t len, NcmCdcFunction *functions,
		     size_t max_functions, size_t *ret_n_found)
{
	NcmCdcStatus status;
	size_t n = 0, walk, prefix;
	Desc config;
	bool bad;

	if (ret_n_found)
		*ret_n_found = 0;
	if (!blob || len < LEN_CONFIG)
		return NCM_CDC_ERR_TRUNCATED;
	config = desc_at(blob, len, 0);
	if (config.type != DT_CONFIG)
		return NCM_CDC_ERR_NOT_CONFIG;
	if (config.len < LEN_CONFIG)
		return NCM_CDC_ERR_BAD_LENGTH;
	if (!functions)
		max_functions = 0;

	/* Bytes past wTotalLength belong to no configuration; the kernel reads at least 9. */
	walk = ncm_le16_at(config.d, config.len, 2);
	if (walk < config.len)
		walk = config.len;
	if (walk > len)
		walk = len;

	prefix = valid_prefix(blob, walk, &bad);
	status = collect(blob, prefix, ncm_le8_at(config.d, config.len, 5), functions, max_functions, &n);
	if (ret_n_found)
		*ret_n_found = n;
	/* a broken blob is the bigger news: a larger array would not fix it */
	return bad ? NCM_CDC_ERR_BAD_LENGTH : status;
}

static int
hex_value(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
ncm_cdc_parse_mac_string(const uint8_t *desc, size_t len, uint8_t mac[6])
{
	enum { N_DIGITS = 12, DESC_LEN = 2 + 2 * N_DIGITS };
	uint8_t tmp[6] = { 0 };

	/* Trailing U+0000 are tolerated (some devices pad the string; Linux'
	 * usb_string() stops at the first). */
	if (!desc || !mac || len < DESC_LEN || len % 2 != 0 || ncm_le8_at(desc, len, 0) != len ||
	    ncm_le8_at(desc, len, 1) != DT_STRING)
		return false;
	for (size_t off = DESC_LEN; off < len; off += 2)
		if (ncm_le16_at(desc, len, off) != 0)
			return false;
	for (size_t i = 0; i < N_DIGITS; i++) {
		/* UTF-16LE: a hex digit has a zero high byte */
		uint16_t ch = ncm_le16_at(desc, len, 2 + 2 * i);
		int v = ch <= 0xff ? hex_value((uint8_t)ch) : -1;

		if (v < 0)
			return false;
		tmp[i / 2] = (uint8_t)((tmp[i / 2] << 4) | v);
	}
	memcpy(mac, tmp, sizeof(tmp));
	return true;
}

bool
ncm_cdc_mac_usable(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	return !(mac[0] & 1) && memcmp(mac, zero, sizeof(zero)) != 0;
}

void
ncm_cdc_mac_make_local(uint8_t mac[6])
{
	mac[0] = (uint8_t)((mac[0] & 0xfc) | 0x02);
}
