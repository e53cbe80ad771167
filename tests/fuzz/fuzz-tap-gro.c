/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-tap-gro.c: fuzz target for TAP coalescing of device frames, checked by cutting its output again. */
#include <string.h>

#include "fuzz.h"
#include "ncm-tap-gso.h"

/*
 * Input: records of one control byte, a 16-bit little-endian length and
 * that many bytes, each a frame from the device. Control bit 0: the frame
 * starts with an Ethernet header (TAP) rather than IP (TUN); bit 1: fix the
 * IPv4 header and TCP checksums first, so that the fuzzer reaches the
 * merging code rather than stopping at a random checksum; bit 2: flush
 * after it (the end of an NTB).
 */

static guint pushed, written;
static guint8 scratch[70000];

static void
wr16(guint8 *p, guint v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

static gboolean
count_segment(gpointer user_data, const guint8 *hdr, gsize hdr_len, const guint8 *payload,
	      gsize payload_len)
{
	guint l3off = GPOINTER_TO_UINT(user_data);
	gboolean v6 = (hdr[l3off] >> 4) == 6;
	guint l4 = l3off + (v6 ? 40 : 20);
	guint32 pseudo = ncm_gso_csum_add(6 + (guint32)(hdr_len + payload_len - l4),
				      hdr + l3off + (v6 ? 8 : 12), v6 ? 32 : 8);

	/* Every frame cut from a coalesced packet is a valid segment again
	 * (the TCP header's length is a multiple of 4: the payload's sum continues it). */
	FUZZ_CHECK(hdr_len >= l4 + 20 && (hdr_len - l4) % 4 == 0);
	pseudo = ncm_gso_csum_add(pseudo, hdr + l4, hdr_len - l4);
	FUZZ_CHECK(ncm_gso_csum_fold(ncm_gso_csum_add(pseudo, payload, payload_len)) == 0xffff);
	written++;
	return TRUE;
}

static void
on_write(gpointer user_data, const TapVnetHdr *h, const guint8 *pkt, gsize len, guint segs)
{
	guint8 *c;

	(void)user_data;
	FUZZ_CHECK(segs >= 1);
	if (segs == 1) {
		FUZZ_CHECK(h->flags == 0 && h->gso_type == TAP_VNET_GSO_NONE);
		written++;
		return;
	}
	FUZZ_CHECK(h->flags == TAP_VNET_F_NEEDS_CSUM && h->csum_offset == 16);
	FUZZ_CHECK(h->gso_type == TAP_VNET_GSO_TCPV4 || h->gso_type == TAP_VNET_GSO_TCPV6);
	FUZZ_CHECK(h->hdr_len < len && len <= 14u + TAP_GRO_MAX_IP);
	FUZZ_CHECK(len - h->hdr_len > (gsize)(segs - 1) * h->gso_size);
	FUZZ_CHECK(len - h->hdr_len <= (gsize)segs * h->gso_size);
	c = malloc(len);
	FUZZ_CHECK(c != NULL);
	memcpy(c, pkt, len);
	FUZZ_CHECK(tap_gso_fill_csum(h, c, len));
	FUZZ_CHECK(tap_gso_segment(h, h->csum_start - (h->gso_type == TAP_VNET_GSO_TCPV6 ? 40 : 20),
				   c, len, scratch, sizeof(scratch), count_segment,
				   GUINT_TO_POINTER(h->csum_start -
						    (h->gso_type == TAP_VNET_GSO_TCPV6 ? 40 : 20))) ==
		   TAP_GSO_OK);
	free(c);
}

/* Makes the IPv4 header checksum and the TCP checksum right, if the frame parses that far. */
static void
fix_checksums(guint8 *f, gsize len, guint l3off)
{
	guint8 *ip = f + l3off;
	gboolean v6;
	guint l4;

	if (len < l3off + 40u)
		return;
	v6 = (ip[0] >> 4) == 6;
	l4 = l3off + (v6 ? 40 : (ip[0] & 0xf) * 4u);
	if (len < l4 + 20u || l4 < l3off + 20u)
		return;
	if (!v6) {
		wr16(ip + 10, 0);
		wr16(ip + 10, (guint16)~ncm_gso_csum_fold(ncm_gso_csum_add(0, ip, l4 - l3off)));
	}
	wr16(f + l4 + 16, 0);
	wr16(f + l4 + 16,
	     (guint16)~ncm_gso_csum_fold(ncm_gso_csum_add(
		     ncm_gso_csum_add(6 + (guint32)(len - l4), ip + (v6 ? 8 : 12), v6 ? 32 : 8), f + l4,
		     len - l4)));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TapGro g;
	size_t off = 0;

	pushed = written = 0;
	tap_gro_init(&g);
	while (off + 3 <= size) {
		guint ctl = data[off];
		size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
		guint l3off = (ctl & 1) ? 14 : 0;
		guint8 *f;

		off += 3;
		if (len > size - off)
			len = size - off;
		/* Its own allocation, so that reading past the frame is caught. */
		f = malloc(len ? len : 1);
		FUZZ_CHECK(f != NULL);
		memcpy(f, data + off, len);
		if (ctl & 2)
			fix_checksums(f, len, l3off);
		tap_gro_push(&g, l3off, f, len, on_write, NULL);
		free(f);
		pushed++;
		if (ctl & 4)
			tap_gro_flush(&g, on_write, NULL);
		off += len;
	}
	tap_gro_flush(&g, on_write, NULL);
	/* Every frame comes out once: alone or inside one coalesced packet. */
	FUZZ_CHECK(written == pushed);
	tap_gro_clear(&g);
	return 0;
}
