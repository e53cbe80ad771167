/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-gro.c: in-order TCP segments of one receive batch merged before they enter lwIP. */

/*
 * Why: lwIP's cost per received segment (tcp_input's pcb lookup and
 * checks, tcp_receive, the recv callback with its lock and reader wake)
 * does not depend on the segment's size. An NTB carries up to dozens of
 * in-order segments of one bulk flow; merged, lwIP does that work once per
 * run (as Linux does with GRO). The rules are Linux's: same flow, next in
 * sequence, same ACK, window, header sizes and options, flags ACK, no IP
 * options, nothing Ethernet-padded; but a PSH does not end a run. Linux's
 * GRO holds segments across polls and flushes at a PSH so that it is not
 * delayed; a batch here is handed to lwIP whole, at once, so a PSH inside
 * it waits for nothing, and the merged frame carries it. Ending runs there
 * cost lwIP a segment and an ACK per PSH: a Linux sender short of send
 * buffer pushes at each wake-up, which at 8 slow streams is every few
 * segments (ncm-tun's GSO found the same: tests/vm/README.md, issue 20),
 * and runs were a third as long as at 1 device.
 * lwIP 2.1's pbuf lengths are 16-bit, so a run stops short of 64 KiB.
 */

#include <string.h>

#include "lwip/inet_chksum.h"

#include "ncm-le.h"
#include "ncm-lwip-gro.h"

#define ETH_HLEN 14
#define TCP_FLAG_PSH 0x08
#define TCP_FLAG_ACK 0x10

/* One frame's view; only filled for frames that qualify at all. */
typedef struct {
	guint8 *f;
	gsize len;      /* frame bytes */
	gsize l4;       /* TCP header offset */
	gsize hlen;     /* all headers: Ethernet, IP, TCP */
	gsize data;     /* TCP data bytes */
	gboolean v6;
} Seg;

static inline void
put16(guint8 *p, guint16 v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

/* A checked frame (lengths already validated by the receive check) that
 * may start or join a run: TCP data, flags ACK or ACK|PSH, no IPv4
 * options, no Ethernet pad, in one pbuf. */
static gboolean
parse(struct pbuf *p, Seg *s)
{
	guint8 *f = p->payload;
	gsize len = p->len, ip_len, doff;

	if (p->next != NULL || len < ETH_HLEN + 40)
		return FALSE;
	s->f = f;
	s->len = len;
	s->v6 = ncm_be16_at(f, len, 12) == 0x86DD;
	if (s->v6) {
		s->l4 = ETH_HLEN + 40;
		ip_len = 40 + (gsize)ncm_be16_at(f, len, ETH_HLEN + 4);
	} else {
		if (f[ETH_HLEN] != 0x45)
			return FALSE;
		s->l4 = ETH_HLEN + 20;
		ip_len = ncm_be16_at(f, len, ETH_HLEN + 2);
	}
	if (ETH_HLEN + ip_len != len || len < s->l4 + 20)
		return FALSE;
	doff = (gsize)(f[s->l4 + 12] >> 4) * 4;
	if (doff < 20 || s->l4 + doff >= len)
		return FALSE;
	if ((f[s->l4 + 13] & ~TCP_FLAG_PSH) != TCP_FLAG_ACK || (f[s->l4 + 12] & 0x0F) != 0)
		return FALSE;
	s->hlen = s->l4 + doff;
	s->data = len - s->hlen;
	return TRUE;
}

/* @b continues the run that @a heads, which holds @run_data bytes of data
 * so far: everything but the sequence number, the IP ID and checksum and
 * PSH matches. */
static gboolean
continues(const Seg *a, gsize run_data, const Seg *b)
{
	const guint8 *x = a->f, *y = b->f;

	if (a->v6 != b->v6 || a->hlen != b->hlen)
		return FALSE;
	/* Ethernet header, then IP header fields */
	if (memcmp(x, y, ETH_HLEN) != 0)
		return FALSE;
	if (a->v6) {
		/* version, class, flow label; next header, hop limit, addresses */
		if (memcmp(x + ETH_HLEN, y + ETH_HLEN, 4) != 0 ||
		    memcmp(x + ETH_HLEN + 6, y + ETH_HLEN + 6, 34) != 0)
			return FALSE;
	} else {
		/* version/IHL, TOS; flags/fragment, TTL, protocol; addresses */
		if (memcmp(x + ETH_HLEN, y + ETH_HLEN, 2) != 0 ||
		    memcmp(x + ETH_HLEN + 6, y + ETH_HLEN + 6, 4) != 0 ||
		    memcmp(x + ETH_HLEN + 12, y + ETH_HLEN + 12, 8) != 0)
			return FALSE;
	}
	/* ports; then sequence; ACK, offset; window; options */
	if (memcmp(x + a->l4, y + b->l4, 4) != 0 ||
	    ncm_be32_at(y, b->len, b->l4 + 4) != (guint32)(ncm_be32_at(x, a->len, a->l4 + 4) + run_data) ||
	    memcmp(x + a->l4 + 8, y + b->l4 + 8, 5) != 0 ||
	    memcmp(x + a->l4 + 14, y + b->l4 + 14, 2) != 0 ||
	    memcmp(x + a->l4 + 20, y + b->l4 + 20, a->hlen - a->l4 - 20) != 0)
		return FALSE;
	return TRUE;
}

/* Chains batch[from + 1 .. to) behind batch[from], their headers cut. */
static void
fold(struct pbuf **batch, guint from, guint to, const Seg *head, gsize run_data, gboolean psh)
{
	struct pbuf *h = batch[from];
	guint8 *f = h->payload;
	gsize total = h->len + run_data - head->data;

	for (guint i = from + 1; i < to; i++) {
		pbuf_remove_header(batch[i], head->hlen);
		batch[i - 1]->next = batch[i];
	}
	/* tot_len: what this pbuf and all after it hold */
	for (struct pbuf *q = h; q != NULL; q = q->next) {
		q->tot_len = (u16_t)total;
		total -= q->len;
	}
	if (head->v6) {
		put16(f + ETH_HLEN + 4, (guint16)(h->tot_len - ETH_HLEN - 40));
	} else {
		guint16 sum;

		put16(f + ETH_HLEN + 2, (guint16)(h->tot_len - ETH_HLEN));
		put16(f + ETH_HLEN + 10, 0);
		sum = inet_chksum(f + ETH_HLEN, 20);
		memcpy(f + ETH_HLEN + 10, &sum, 2);
	}
	if (psh)
		f[head->l4 + 13] |= TCP_FLAG_PSH;
}

guint
nlw_gro_merge(struct pbuf **batch, gboolean *summed, guint n, guint64 *merged_out)
{
	guint out = 0, i = 0;

	while (i < n) {
		Seg head, next;
		gsize run_data;
		gboolean psh;
		guint j = i + 1;

		if (summed[i] && parse(batch[i], &head) && head.data > 0) {
			run_data = head.data;
			psh = FALSE;
			while (j < n && summed[j] && parse(batch[j], &next) && next.data > 0 &&
			       ETH_HLEN + (head.hlen - ETH_HLEN) + run_data + next.data <= 0xFFFF &&
			       continues(&head, run_data, &next)) {
				psh |= (next.f[next.l4 + 13] & TCP_FLAG_PSH) != 0;
				run_data += next.data;
				j++;
			}
			if (j > i + 1) {
				fold(batch, i, j, &head, run_data, psh);
				*merged_out += j - i - 1;
			}
		}
		batch[out] = batch[i];
		summed[out] = summed[i];
		out++;
		i = j;
	}
	return out;
}
