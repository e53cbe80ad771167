/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ack.c: pure TCP ACKs of one flow merged in the open NTB (see ncm-ack.h). */
#include <string.h>

#include "ncm-ack.h"
#include "ncm-eth.h"
#include "ncm-le.h"

#define IP_PROTO_TCP 6
#define TCP_FLAG_ACK 0x10
#define TCP_OPT_EOL 0
#define TCP_OPT_NOP 1
#define TCP_OPT_TS 8
#define TCP_OPT_TS_LEN 10

/* Only NOP, EOL and timestamps: SACK and anything unknown must reach the sender as sent. */
static bool
options_mergeable(const uint8_t *f, size_t len, size_t o, size_t end)
{
	while (o < end) {
		uint8_t kind = ncm_le8_at(f, len, o);

		if (kind == TCP_OPT_EOL)
			return true;
		if (kind == TCP_OPT_NOP) {
			o++;
			continue;
		}
		if (kind != TCP_OPT_TS || o + TCP_OPT_TS_LEN > end ||
		    ncm_le8_at(f, len, o + 1) != TCP_OPT_TS_LEN)
			return false;
		o += TCP_OPT_TS_LEN;
	}
	return true;
}

bool
ncm_ack_classify(const uint8_t *f, size_t len, NcmAckInfo *ret)
{
	size_t l3 = NCM_ETH_HLEN, l4, end, doff;

	memset(ret, 0, sizeof(*ret));
	if (!ncm_le_fits(len, 0, NCM_ETH_HLEN))
		return false;
	switch (ncm_be16_at(f, len, 12)) {
	case NCM_ETH_P_IPV4: {
		uint8_t vihl = ncm_le8_at(f, len, l3);
		size_t ihl = (size_t)(vihl & 0x0f) * 4;
		size_t total = ncm_be16_at(f, len, l3 + 2);

		/* Fragments (MF or an offset) carry no TCP header of their own. */
		if ((vihl >> 4) != 4 || ihl < 20 || total < ihl || !ncm_le_fits(len, l3, total) ||
		    (ncm_be16_at(f, len, l3 + 6) & 0x3fff) != 0 || ncm_le8_at(f, len, l3 + 9) != IP_PROTO_TCP)
			return false;
		l4 = l3 + ihl;
		end = l3 + total;
		break;
	}
	case NCM_ETH_P_IPV6:
		/* Extension headers are not walked: such a segment is never merged. */
		if (!ncm_le_fits(len, l3, 40) || (ncm_le8_at(f, len, l3) >> 4) != 6 ||
		    ncm_le8_at(f, len, l3 + 6) != IP_PROTO_TCP ||
		    !ncm_le_fits(len, l3 + 40, ncm_be16_at(f, len, l3 + 4)))
			return false;
		ret->v6 = true;
		l4 = l3 + 40;
		end = l4 + ncm_be16_at(f, len, l3 + 4);
		break;
	default:
		return false;
	}
	if (end < l4 + 20)
		return false;
	doff = (size_t)(ncm_le8_at(f, len, l4 + 12) >> 4) * 4;
	if (doff < 20 || l4 + doff > end)
		return false;
	ret->tcp = true;
	ret->payload = end > l4 + doff;
	ret->l3 = (uint16_t)l3;
	ret->l4 = (uint16_t)l4;
	ret->ack = ncm_be32_at(f, len, l4 + 8);
	/* The low nibble of byte 12 holds the reserved bits and AccECN's AE. */
	ret->pure = ncm_le8_at(f, len, l4 + 13) == TCP_FLAG_ACK && (ncm_le8_at(f, len, l4 + 12) & 0x0f) == 0 &&
		    end == l4 + doff && options_mergeable(f, len, l4 + 20, l4 + doff);
	return true;
}

/* Same addresses and ports, whatever the lengths. */
static bool
same_flow(const uint8_t *a, size_t alen, const NcmAckInfo *ai, const uint8_t *b, size_t blen,
	  const NcmAckInfo *bi)
{
	size_t off = ai->v6 ? 8 : 12, n = ai->v6 ? 32 : 8;
	const uint8_t *xa, *xb, *pa, *pb;

	if (ai->v6 != bi->v6)
		return false;
	xa = ncm_bytes_at(a, alen, ai->l3 + off, n);
	xb = ncm_bytes_at(b, blen, bi->l3 + off, n);
	pa = ncm_bytes_at(a, alen, ai->l4, 4);
	pb = ncm_bytes_at(b, blen, bi->l4, 4);
	return xa && xb && pa && pb && memcmp(xa, xb, n) == 0 && memcmp(pa, pb, 4) == 0;
}

static const uint8_t *
entry_frame(const NcmAckEntry *e, const uint8_t *buf, size_t buf_len)
{
	return ncm_bytes_at(buf, buf_len, e->offset, e->len);
}

static void
forget(NcmAckTable *table, unsigned i)
{
	memmove(&table->e[i], &table->e[i + 1], (table->n - i - 1) * sizeof(table->e[0]));
	table->n--;
}

/* A pure ACK becomes its flow's entry; the oldest entry makes room. */
static void
remember(NcmAckTable *table, uint32_t offset, size_t len, const NcmAckInfo *info)
{
	if (!info->pure || len > UINT16_MAX)
		return;
	if (table->n == NCM_ACK_TRACK)
		forget(table, 0);
	table->e[table->n++] = (NcmAckEntry){ .offset = offset, .len = (uint16_t)len, .info = *info };
}

/*
 * Whether a pure ACK (@newer, @len bytes) says all that an earlier one of
 * its flow (@old, @old_len bytes) does, so the earlier can go: the same
 * layout, and an ack number strictly after. Equal numbers stay apart: a
 * duplicate ACK or a window update must reach the sender as sent.
 */
static bool
supersedes(const NcmAckInfo *newer, size_t len, const NcmAckInfo *old, size_t old_len)
{
	return newer->pure && old->pure && len == old_len && newer->l4 == old->l4 &&
	       (int32_t)(newer->ack - old->ack) > 0;
}

bool
ncm_ack_merge(NcmAckTable *table, uint8_t *buf, size_t buf_len, const uint8_t *frame, size_t len,
	      const NcmAckInfo *info)
{
	if (!info->pure)
		return false;
	for (unsigned i = 0; i < table->n; i++) {
		NcmAckEntry *e = &table->e[i];
		const uint8_t *old = entry_frame(e, buf, buf_len);

		if (!old || !same_flow(old, e->len, &e->info, frame, len, info))
			continue;
		if (!supersedes(info, len, &e->info, e->len))
			return false;
		memcpy(buf + e->offset, frame, len);
		e->info = *info;
		return true;
	}
	return false;
}

void
ncm_ack_track(NcmAckTable *table, const uint8_t *buf, size_t buf_len, uint32_t offset, size_t len,
	      const NcmAckInfo *info)
{
	const uint8_t *frame = ncm_bytes_at(buf, buf_len, offset, len);

	if (!info->tcp || !frame)
		return;
	for (unsigned i = 0; i < table->n; i++) {
		const NcmAckEntry *e = &table->e[i];
		const uint8_t *old = entry_frame(e, buf, buf_len);

		if (old && same_flow(old, e->len, &e->info, frame, len, info)) {
			forget(table, i);
			break;
		}
	}
	remember(table, offset, len, info);
}

void
ncm_ack_track_copied(NcmAckTable *table, const uint8_t *buf, size_t buf_len, uint32_t offset, size_t len)
{
	const uint8_t *frame = ncm_bytes_at(buf, buf_len, offset, len);
	NcmAckInfo info;

	if (frame && ncm_ack_classify(frame, len, &info))
		ncm_ack_track(table, buf, buf_len, offset, len, &info);
}

unsigned
ncm_ack_thin(const uint8_t *const *frames, const size_t *lens, unsigned n, bool *skip)
{
	/* Per flow, the nearest later pure ACK (offset: its index), walking
	 * back from the end. */
	NcmAckTable later = { .n = 0 };
	unsigned thinned = 0;

	for (unsigned i = n; i-- > 0;) {
		NcmAckInfo info;
		unsigned k = 0;

		skip[i] = false;
		if (!ncm_ack_classify(frames[i], lens[i], &info))
			continue;
		while (k < later.n && !same_flow(frames[later.e[k].offset], later.e[k].len, &later.e[k].info,
						  frames[i], lens[i], &info))
			k++;
		if (k < later.n && supersedes(&later.e[k].info, later.e[k].len, &info, lens[i])) {
			skip[i] = true;
			thinned++;
			continue;
		}
		/* Another segment of the flow, a duplicate ACK or a window
		 * update: nothing before it is dropped in its favour. */
		if (k < later.n)
			forget(&later, k);
		remember(&later, i, lens[i], &info);
	}
	return thinned;
}
