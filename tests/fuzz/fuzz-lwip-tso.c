/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-lwip-tso.c: fuzz target for lwIP's MSS raise on device SYNs and its cutting of frames to the link's size. */
#include <string.h>

#include <glib.h>

#include "fuzz.h"
#include "ncm-lwip-tso.h"

/*
 * Input: two bytes of link MTU (little-endian, taken modulo 1600 plus 68),
 * one control byte, then one Ethernet frame. Control bit 0: fix the IPv4
 * header length and checksums and the TCP checksum first, so that the
 * fuzzer gets past them; bit 1: the frame goes through nlw_tso_rx_syn()
 * (a device's frame) rather than nlw_tso_cut() (lwIP's); bit 2: the emit
 * refuses its third piece once, and the cut resumes.
 *
 * Checked: a rewritten SYN is still a valid TCP segment; every piece fits
 * the link; the TCP pieces are valid segments whose payloads, in order,
 * are the frame's; a TCP frame that fits is left valid in place; IPv4 and
 * IPv6 fragments cover the packet's payload in order.
 */

static guint8 frame[70000];
static guint8 scratch[NLW_TSO_HDR_MAX];
static guint8 joined[70000];

typedef struct {
	guint mtu;
	gsize joined;
	guint pieces;
	gboolean refuse_third;
} Cut;

/* The TCP checksum of the segment in @hdr (@hdr_len bytes) + @payload. */
static gboolean
tcp_ok(const guint8 *hdr, gsize hdr_len, const guint8 *payload, gsize payload_len)
{
	gboolean v6 = (hdr[14] >> 4) == 6;
	guint l4 = 14 + (v6 ? 40 : (hdr[14] & 0xf) * 4u);
	guint32 pseudo = ncm_gso_csum_add(6 + (guint32)(hdr_len + payload_len - l4),
					  hdr + 14 + (v6 ? 8 : 12), v6 ? 32 : 8);

	return ncm_gso_csum_fold(ncm_gso_csum_add(ncm_gso_csum_add(pseudo, hdr + l4, hdr_len - l4),
						  payload, payload_len)) == 0xffff;
}

static gboolean
on_piece(gpointer user_data, const guint8 *hdr, gsize hdr_len, const guint8 *payload,
	 gsize payload_len)
{
	Cut *c = user_data;

	if (c->refuse_third && c->pieces == 2) {
		c->refuse_third = FALSE;
		return FALSE;
	}
	FUZZ_CHECK(hdr_len >= 34 && hdr_len + payload_len <= 14u + c->mtu);
	if ((hdr[12] == 0x08 && hdr[23] == 6) || (hdr[12] == 0x86 && hdr[20] == 6))
		FUZZ_CHECK(tcp_ok(hdr, hdr_len, payload, payload_len));
	FUZZ_CHECK(c->joined + payload_len <= sizeof(joined));
	memcpy(joined + c->joined, payload, payload_len);
	c->joined += payload_len;
	c->pieces++;
	return TRUE;
}

/* Makes an IPv4 frame's lengths and sums right (bit 0). */
static void
fix(guint8 *f, gsize len)
{
	guint ihl = (f[14] & 0xf) * 4u, l4 = 14 + ihl;
	guint32 sum;

	if (len < 14 + 20 || f[12] != 0x08 || f[13] != 0x00 || ihl < 20 || l4 + 20 > len)
		return;
	ncm_gso_put_be16(f + 16, (guint)(len - 14));
	ncm_gso_put_be16(f + 24, 0);
	sum = ncm_gso_csum_add(0, f + 14, ihl);
	ncm_gso_put_be16(f + 24, (guint16)~ncm_gso_csum_fold(sum));
	if (f[23] != 6)
		return;
	ncm_gso_put_be16(f + l4 + 16, 0);
	sum = ncm_gso_csum_add(6 + (guint32)(len - l4), f + 26, 8);
	sum = ncm_gso_csum_add(sum, f + l4, len - l4);
	ncm_gso_put_be16(f + l4 + 16, (guint16)~ncm_gso_csum_fold(sum));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Cut c = {0};
	gsize len, next = 0;
	NlwTsoResult r;
	guint ctl;

	if (size < 3 || size - 3 > sizeof(frame))
		return 0;
	c.mtu = 68 + (guint)(data[0] | data[1] << 8) % 1600;
	ctl = data[2];
	len = size - 3;
	memcpy(frame, data + 3, len);
	if (ctl & 1)
		fix(frame, len);
	if (ctl & 2) {
		NcmGsoTcp t;

		if (nlw_tso_rx_syn(frame, len, c.mtu, 8, 11680)) {
			gsize plen = frame[12] == 0x08 ? 14 + (gsize)(frame[16] << 8 | frame[17])
							: 54 + (gsize)(frame[18] << 8 | frame[19]);

			FUZZ_CHECK(ncm_gso_parse_tcp(14, frame, plen, &t));
			FUZZ_CHECK(ncm_gso_tcp_csum_ok(&t, frame, plen));
		}
		return 0;
	}
	c.refuse_third = (ctl & 4) != 0;
	r = nlw_tso_cut(frame, len, c.mtu, 7, scratch, &next, on_piece, &c);
	if (r == NLW_TSO_STOPPED) {
		FUZZ_CHECK(next == 2);
		r = nlw_tso_cut(frame, len, c.mtu, 7, scratch, &next, on_piece, &c);
	}
	FUZZ_CHECK(r != NLW_TSO_STOPPED);
	if (r == NLW_TSO_ASIS) {
		NcmGsoTcp t;
		gsize plen = frame[12] == 0x08 ? 14 + (gsize)(frame[16] << 8 | frame[17])
					       : 54 + (gsize)(frame[18] << 8 | frame[19]);

		/* A TCP frame that fits leaves as it is: summed in place. */
		FUZZ_CHECK(c.pieces == 0);
		if (len >= 34 && plen <= len && ncm_gso_parse_tcp(14, frame, plen, &t))
			FUZZ_CHECK(ncm_gso_tcp_csum_ok(&t, frame, plen));
	}
	if (r == NLW_TSO_SENT) {
		NcmGsoTcp t;
		gsize plen = len;

		FUZZ_CHECK(c.pieces == next && c.pieces >= 1);
		if (frame[12] == 0x08 && frame[13] == 0x00)
			plen = 14 + (gsize)(frame[16] << 8 | frame[17]);
		else if (frame[12] == 0x86 && frame[13] == 0xdd)
			plen = 14 + 40 + (gsize)(frame[18] << 8 | frame[19]);
		/* TCP: the payloads in order are the segment's; fragments: the
		 * packet's, after its Fragment header if it was one already. */
		if (ncm_gso_parse_tcp(14, frame, plen, &t)) {
			FUZZ_CHECK(c.joined == t.payload);
			FUZZ_CHECK(memcmp(joined, frame + t.hdr, t.payload) == 0);
		} else {
			gsize hdr = frame[12] == 0x08 ? 14 + (frame[14] & 0xf) * 4u :
				    frame[20] == 44   ? 62 : 54;

			FUZZ_CHECK(c.joined == plen - hdr);
			FUZZ_CHECK(memcmp(joined, frame + hdr, c.joined) == 0);
		}
	}
	return 0;
}
