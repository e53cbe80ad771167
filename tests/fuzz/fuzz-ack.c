/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-ack.c: fuzz target for TX ACK merging (libncm/cdc/ncm-ack.c). */
#include <string.h>

#include "fuzz.h"
#include "ncm-ack.h"

/*
 * Input: frames a producer sends, each as a 2-byte big-endian length and
 * its bytes, packed into one open NTB the way ncm-usb-tx.c does it. Beyond
 * memory safety: only a pure ACK ever merges; it lands whole on an earlier
 * frame of the same length whose ack number it strictly passes; every
 * frame that did not merge is still in the NTB, byte for byte, unless a
 * later ACK replaced it; nothing outside the frames is written. On
 * receive (ncm_ack_thin over the same frames): only a pure ACK is left out,
 * and only when a later pure ACK of its flow, of its length, passes it.
 */

#define NTB_SIZE 16384
#define MAX_FRAMES 256

static uint32_t
ack_of(const uint8_t *f, const NcmAckInfo *info)
{
	const uint8_t *p = f + info->l4 + 8;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Addresses and ports, read here from the raw bytes. */
static int
same_flow(const uint8_t *a, const NcmAckInfo *ai, const uint8_t *b, const NcmAckInfo *bi)
{
	size_t off = ai->v6 ? 8 : 12, n = ai->v6 ? 32 : 8;

	return ai->v6 == bi->v6 && memcmp(a + ai->l3 + off, b + bi->l3 + off, n) == 0 &&
	       memcmp(a + ai->l4, b + bi->l4, 4) == 0;
}

static void
check_thin(const uint8_t *const *frames, const size_t *lens, unsigned n)
{
	static bool skip[MAX_FRAMES];
	unsigned count = 0, thinned = ncm_ack_thin(frames, lens, n, skip);

	for (unsigned i = 0; i < n; i++) {
		NcmAckInfo a, b;
		bool found = false;

		if (!skip[i])
			continue;
		count++;
		FUZZ_CHECK(ncm_ack_classify(frames[i], lens[i], &a) && a.pure);
		for (unsigned j = i + 1; j < n && !found; j++)
			found = !skip[j] && lens[j] == lens[i] && ncm_ack_classify(frames[j], lens[j], &b) &&
				b.pure && same_flow(frames[i], &a, frames[j], &b) &&
				(int32_t)(ack_of(frames[j], &b) - ack_of(frames[i], &a)) > 0;
		FUZZ_CHECK(found);
	}
	FUZZ_CHECK(count == thinned);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t *in[MAX_FRAMES];
	static size_t in_len[MAX_FRAMES];
	unsigned n_in = 0;
	static uint8_t ntb[NTB_SIZE], shadow[NTB_SIZE];
	size_t off[MAX_FRAMES], len[MAX_FRAMES], n = 0, tail = 0, pos = 0;
	NcmAckTable table = { 0 };

	memset(ntb, 0xa5, sizeof(ntb));
	while (pos + 2 <= size && n_in < MAX_FRAMES) {
		size_t l = (size_t)data[pos] << 8 | data[pos + 1];
		const uint8_t *f = data + pos + 2;
		NcmAckInfo info;

		pos += 2;
		if (l > size - pos)
			l = size - pos;
		pos += l;
		in[n_in] = f;
		in_len[n_in++] = l;
		bool tcp = ncm_ack_classify(f, l, &info);
		FUZZ_CHECK(tcp == info.tcp);
		FUZZ_CHECK(!info.pure || info.tcp);
		if (info.tcp)
			FUZZ_CHECK(info.l3 == 14 && info.l4 >= 34 && (size_t)info.l4 + 20 <= l);
		memcpy(shadow, ntb, sizeof(ntb));
		if (ncm_ack_merge(&table, ntb, tail, f, l, &info)) {
			size_t hit = n;

			FUZZ_CHECK(info.pure);
			for (size_t i = 0; i < n; i++)
				if (len[i] == l && memcmp(ntb + off[i], f, l) == 0 &&
				    memcmp(shadow + off[i], f, l) != 0)
					hit = i;
			FUZZ_CHECK(hit < n);
			NcmAckInfo old;
			FUZZ_CHECK(ncm_ack_classify(shadow + off[hit], l, &old) && old.pure);
			FUZZ_CHECK((int32_t)(ack_of(f, &info) - ack_of(shadow + off[hit], &old)) > 0);
			/* Only that frame changed. */
			FUZZ_CHECK(memcmp(ntb, shadow, off[hit]) == 0);
			FUZZ_CHECK(memcmp(ntb + off[hit] + l, shadow + off[hit] + l,
					  NTB_SIZE - off[hit] - l) == 0);
			continue;
		}
		size_t at = (tail + 3) & ~(size_t)3;

		if (at + l > NTB_SIZE)
			break;
		memcpy(ntb + at, f, l);
		off[n] = at;
		len[n++] = l;
		tail = at + l;
		ncm_ack_track(&table, ntb, tail, (uint32_t)at, l, &info);
		FUZZ_CHECK(table.n <= NCM_ACK_TRACK);
		for (unsigned i = 0; i < table.n; i++)
			FUZZ_CHECK(table.e[i].offset + table.e[i].len <= tail);
	}
	check_thin(in, in_len, n_in);
	return 0;
}
