/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ffs-ncm-hostile.c: ffs-ncm's bulk IN beyond valid NTBs: crafted malformed NTBs between valid ones, zero-length packets, runts, and an IN pipe that stops. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ffs-ncm.h"

/*
 * Each crafted class breaks one rule the way a buggy or hostile device
 * would (the CVE-2026-23447/23448 class among them: an NDP whose length
 * fits the block only when measured from offset 0). Each carries decoy
 * frames (broadcast, ethertype 0x88b5, which no stack takes), and says
 * what a host following libncm's parser must count: the reject reason,
 * how many, and how many decoys it may still deliver. --self-test holds
 * every class to that against the parser; the VM test holds libncm's
 * counters to the totals this file prints.
 */

#define CRAFT_BUF 4096u
#define DECOY_LEN 60u
#define LONG_DECOY_LEN 1600u
#define OVERLAP_DECOY_LEN 600u
#define OVERLAP_ENTRIES 8u
#define SEQUENCE_JUMP 1000u
#define NTH_RUNT_MAX 11u

typedef struct {
	bool n32;
	uint8_t *b;
	size_t cap;
	size_t len;             /* the block so far */
	size_t ndp;             /* the last NDP written */
} Craft;

typedef struct {
	uint32_t off, len;
} Entry;

typedef struct {
	const char *name;
	NcmNtbError reason;     /* NCM_NTB_OK: the host must accept it */
	unsigned rejects;       /* ... that many times */
	unsigned delivers;      /* decoys a conforming host still delivers */
	size_t (*build)(Craft *c, uint16_t seq);
} HostileClass;

static size_t
align4(size_t v)
{
	return (v + 3) & ~(size_t)3;
}

static void
craft_nth(Craft *c, uint16_t seq)
{
	memset(c->b, 0, c->cap);
	put32(c->b, c->cap, 0, c->n32 ? NCM_NTH32_SIGNATURE : NCM_NTH16_SIGNATURE);
	put16(c->b, c->cap, 4, (uint16_t)(c->n32 ? NCM_NTH32_LEN : NCM_NTH16_LEN));
	put16(c->b, c->cap, 6, seq);
	c->len = c->n32 ? NCM_NTH32_LEN : NCM_NTH16_LEN;
}

static void
craft_set_block(Craft *c, uint32_t v)
{
	if (c->n32)
		put32(c->b, c->cap, 8, v);
	else
		put16(c->b, c->cap, 8, (uint16_t)v);
}

static void
craft_set_ndp(Craft *c, uint32_t v)
{
	if (c->n32)
		put32(c->b, c->cap, 12, v);
	else
		put16(c->b, c->cap, 10, (uint16_t)v);
}

/* A decoy frame at the next aligned offset: no stack takes ethertype 0x88b5. */
static uint32_t
craft_frame(Craft *c, size_t n)
{
	static const uint8_t head[14] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					  0x02, 0x4e, 0x43, 0x4d, 0xee, 0xee, 0x88, 0xb5 };
	size_t off = align4(c->len);

	if (off + n > c->cap)
		die("crafted NTB buffer too small");
	memset(c->b + off, 0xee, n);
	memcpy(c->b + off, head, sizeof(head));
	c->len = off + n;
	return (uint32_t)off;
}

static void
craft_entry(Craft *c, size_t pos, Entry e)
{
	if (c->n32) {
		put32(c->b, c->cap, pos, e.off);
		put32(c->b, c->cap, pos + 4, e.len);
	} else {
		put16(c->b, c->cap, pos, (uint16_t)e.off);
		put16(c->b, c->cap, pos + 2, (uint16_t)e.len);
	}
}

/* An NDP at the next aligned offset with @n entries, then a zero one when
 * @terminate; its wLength covers exactly that (at least the minimum). */
static size_t
craft_ndp(Craft *c, const Entry *e, unsigned n, bool terminate)
{
	const size_t head = c->n32 ? NCM_NDP32_HEADER_LEN : NCM_NDP16_HEADER_LEN;
	const size_t step = c->n32 ? NCM_NDP32_ENTRY_LEN : NCM_NDP16_ENTRY_LEN;
	const size_t min = c->n32 ? NCM_NDP32_MIN_LEN : NCM_NDP16_MIN_LEN;
	size_t ndp = align4(c->len), wlen = head + (n + (terminate ? 1 : 0)) * step;

	if (wlen < min)
		wlen = min;
	if (ndp + wlen > c->cap)
		die("crafted NTB buffer too small");
	put32(c->b, c->cap, ndp, c->n32 ? NCM_NDP32_SIGNATURE : NCM_NDP16_SIGNATURE);
	put16(c->b, c->cap, ndp + 4, (uint16_t)wlen);
	for (unsigned i = 0; i < n; i++)
		craft_entry(c, ndp + head + i * step, e[i]);
	c->len = ndp + wlen;
	c->ndp = ndp;
	return ndp;
}

static void
craft_set_next(Craft *c, size_t ndp, uint32_t next)
{
	if (c->n32)
		put32(c->b, c->cap, ndp + 8, next);
	else
		put16(c->b, c->cap, ndp + 6, (uint16_t)next);
}

/* wBlockLength = the block; a pad byte keeps the transfer off a multiple of
 * the packet size, so it ends with a short packet. Returns the transfer length. */
static size_t
craft_finish(Craft *c)
{
	craft_set_block(c, (uint32_t)c->len);
	return c->len % HS_BULK_MPS ? c->len : c->len + 1;
}

/* A valid NTB: one decoy, one NDP after it. */
static size_t
craft_base(Craft *c, uint16_t seq)
{
	Entry e;

	craft_nth(c, seq);
	e.off = craft_frame(c, DECOY_LEN);
	e.len = DECOY_LEN;
	craft_set_ndp(c, (uint32_t)craft_ndp(c, &e, 1, true));
	return craft_finish(c);
}

static size_t
bad_nth_signature(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	put32(c->b, c->cap, 0, 0x584D434Eu);  /* "NCMX" */
	return n;
}

/* NTB32 in an NTB16 stream, or the other way round. */
static size_t
other_format(Craft *c, uint16_t seq)
{
	size_t n;

	c->n32 = !c->n32;
	n = craft_base(c, seq);
	c->n32 = !c->n32;
	return n;
}

static size_t
bad_header_length(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	put16(c->b, c->cap, 4, (uint16_t)((c->n32 ? NCM_NTH32_LEN : NCM_NTH16_LEN) + 4));
	return n;
}

static size_t
block_past_transfer(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	craft_set_block(c, (uint32_t)(n + 64));
	return n;
}

static size_t
block_past_max(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	craft_set_block(c, c->n32 ? 0x7ffffff0u : 0xfff0u);
	return n;
}

static size_t
ndp_past_block(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	craft_set_ndp(c, (uint32_t)align4(n + 64));
	return n;
}

static size_t
ndp_in_nth(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	craft_set_ndp(c, 4);
	return n;
}

static size_t
ndp_unaligned(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	craft_set_ndp(c, (uint32_t)(c->ndp + 2));
	return n;
}

static size_t
ndp_zero(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	craft_set_ndp(c, 0);
	return n;
}

static size_t
ndp_self_loop(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	craft_set_next(c, c->ndp, (uint32_t)c->ndp);
	return n;
}

/* Two NDPs, each naming the other next. */
static size_t
ndp_loop(Craft *c, uint16_t seq)
{
	Entry e[2];
	size_t a, b;

	craft_nth(c, seq);
	e[0].off = craft_frame(c, DECOY_LEN), e[0].len = DECOY_LEN;
	e[1].off = craft_frame(c, DECOY_LEN), e[1].len = DECOY_LEN;
	a = craft_ndp(c, &e[0], 1, true);
	b = craft_ndp(c, &e[1], 1, true);
	craft_set_next(c, a, (uint32_t)b);
	craft_set_next(c, b, (uint32_t)a);
	craft_set_ndp(c, (uint32_t)a);
	return craft_finish(c);
}

static size_t
bad_ndp_signature(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	put32(c->b, c->cap, c->ndp, 0x584D434Eu);
	return n;
}

static size_t
short_ndp_length(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	put16(c->b, c->cap, c->ndp + 4, 8);
	return n;
}

/* CVE-2026-23447/23448: the NDP ends the block, and its wLength would fit
 * only if it were counted from the block's start. */
static size_t
ndp_overrun(Craft *c, uint16_t seq)
{
	size_t n = craft_base(c, seq);

	put16(c->b, c->cap, c->ndp + 4, (uint16_t)(c->len - c->ndp + 16));
	return n;
}

/* Entries fill the NDP's wLength with no zero entry inside it. */
static size_t
entry_overrun(Craft *c, uint16_t seq)
{
	Entry e[2];

	craft_nth(c, seq);
	e[0].off = craft_frame(c, DECOY_LEN), e[0].len = DECOY_LEN;
	e[1].off = craft_frame(c, DECOY_LEN), e[1].len = DECOY_LEN;
	craft_set_ndp(c, (uint32_t)craft_ndp(c, e, 2, false));
	return craft_finish(c);
}

static size_t
one_entry(Craft *c, uint16_t seq, size_t frame_len, uint32_t len_fix, bool index_past)
{
	Entry e;

	craft_nth(c, seq);
	e.off = craft_frame(c, frame_len);
	e.len = (uint32_t)frame_len;
	craft_set_ndp(c, (uint32_t)craft_ndp(c, &e, 1, true));
	/* The entry's fields, now that the block's length is known. */
	if (index_past)
		e.off = (uint32_t)(c->len + 100);
	if (len_fix)
		e.len = len_fix == UINT32_MAX ? (uint32_t)c->len : len_fix;
	craft_entry(c, c->ndp + (c->n32 ? NCM_NDP32_HEADER_LEN : NCM_NDP16_HEADER_LEN), e);
	return craft_finish(c);
}

static size_t
datagram_past_block(Craft *c, uint16_t seq)
{
	return one_entry(c, seq, DECOY_LEN, UINT32_MAX, false);
}

static size_t
datagram_index_past(Craft *c, uint16_t seq)
{
	return one_entry(c, seq, DECOY_LEN, 0, true);
}

static size_t
datagram_short(Craft *c, uint16_t seq)
{
	return one_entry(c, seq, DECOY_LEN, 10, false);
}

static size_t
datagram_long(Craft *c, uint16_t seq)
{
	return one_entry(c, seq, LONG_DECOY_LEN, 0, false);
}

/* Entries pointing at one frame again and again. */
static size_t
overlapping(Craft *c, uint16_t seq)
{
	Entry e[OVERLAP_ENTRIES];

	craft_nth(c, seq);
	e[0].off = craft_frame(c, OVERLAP_DECOY_LEN), e[0].len = OVERLAP_DECOY_LEN;
	for (unsigned i = 1; i < OVERLAP_ENTRIES; i++)
		e[i] = e[0];
	craft_set_ndp(c, (uint32_t)craft_ndp(c, e, OVERLAP_ENTRIES, true));
	return craft_finish(c);
}

/* A zero wDatagramLength ends the NDP (cdc_ncm reads it so too): the
 * entry after it is not a datagram. */
static size_t
zero_length_entry(Craft *c, uint16_t seq)
{
	Entry e[3];

	craft_nth(c, seq);
	e[0].off = craft_frame(c, DECOY_LEN), e[0].len = DECOY_LEN;
	e[2].off = craft_frame(c, DECOY_LEN), e[2].len = DECOY_LEN;
	e[1].off = e[2].off, e[1].len = 0;
	craft_set_ndp(c, (uint32_t)craft_ndp(c, e, 3, true));
	return craft_finish(c);
}

static size_t
sequence_jump(Craft *c, uint16_t seq)
{
	return craft_base(c, (uint16_t)(seq + SEQUENCE_JUMP));
}

static size_t
truncated_nth(Craft *c, uint16_t seq)
{
	craft_base(c, seq);
	return 6;
}

static const HostileClass classes[] = {
	{ "nth-signature", NCM_NTB_ERR_NTH_SIGNATURE, 1, 0, bad_nth_signature },
	{ "other-format", NCM_NTB_ERR_NTH_SIGNATURE, 1, 0, other_format },
	{ "nth-header-length", NCM_NTB_ERR_NTH_HEADER_LENGTH, 1, 0, bad_header_length },
	{ "block-past-transfer", NCM_NTB_ERR_BLOCK_LENGTH, 1, 0, block_past_transfer },
	{ "block-past-max", NCM_NTB_ERR_BLOCK_TOO_BIG, 1, 0, block_past_max },
	{ "ndp-past-block", NCM_NTB_ERR_NDP_INDEX, 1, 0, ndp_past_block },
	{ "ndp-in-nth", NCM_NTB_ERR_NDP_INDEX, 1, 0, ndp_in_nth },
	{ "ndp-unaligned", NCM_NTB_ERR_NDP_ALIGN, 1, 0, ndp_unaligned },
	{ "ndp-zero", NCM_NTB_ERR_NO_NDP, 1, 0, ndp_zero },
	{ "ndp-self-loop", NCM_NTB_ERR_NDP_CHAIN, 1, 1, ndp_self_loop },
	{ "ndp-loop", NCM_NTB_ERR_NDP_CHAIN, 1, 2, ndp_loop },
	{ "ndp-signature", NCM_NTB_ERR_NDP_SIGNATURE, 1, 0, bad_ndp_signature },
	{ "ndp-length", NCM_NTB_ERR_NDP_LENGTH, 1, 0, short_ndp_length },
	{ "ndp-overrun", NCM_NTB_ERR_NDP_OVERRUN, 1, 0, ndp_overrun },
	{ "entry-overrun", NCM_NTB_ERR_ENTRY_OVERRUN, 1, 2, entry_overrun },
	{ "datagram-past-block", NCM_NTB_ERR_DATAGRAM_BOUNDS, 1, 0, datagram_past_block },
	{ "datagram-index-past", NCM_NTB_ERR_DATAGRAM_BOUNDS, 1, 0, datagram_index_past },
	{ "datagram-short", NCM_NTB_ERR_DATAGRAM_SHORT, 1, 0, datagram_short },
	{ "datagram-long", NCM_NTB_ERR_DATAGRAM_LONG, 1, 0, datagram_long },
	{ "overlapping", NCM_NTB_ERR_OVER_BLOCK, OVERLAP_ENTRIES - 1, 1, overlapping },
	{ "zero-length-entry", NCM_NTB_OK, 0, 1, zero_length_entry },
	{ "sequence-jump", NCM_NTB_OK, 0, 1, sequence_jump },
	{ "truncated", NCM_NTB_ERR_TRUNCATED, 1, 0, truncated_nth },
};
#define N_CLASSES (sizeof(classes) / sizeof(classes[0]))

/* A claimed block past the host's input size is "too big" before it is
 * "past the transfer": which one depends on the size the host asked for. */
static NcmNtbError
class_reason(const HostileClass *k, bool n32, uint32_t host_size)
{
	if (k->build == block_past_max && (n32 ? 0x7ffffff0u : 0xfff0u) <= host_size)
		return NCM_NTB_ERR_BLOCK_LENGTH;
	return k->reason;
}

/* ---- at run time (TX thread) ---------------------------------------------- */

static pthread_mutex_t hostile_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the block below */
static bool quiesced;                           /* SIGUSR2: no more crafted NTBs */
static unsigned long sent[N_CLASSES];
static unsigned long expect[NCM_NTB_N_ERRORS];  /* rejects a conforming host counts */
static unsigned long expect_bad, expect_delivered;

/*
 * One transfer and what a conforming host counts for it, counted only once
 * the host has taken it. Under hostile_lock. A length that is a multiple of
 * the packet size ends with a ZLP, or the host's transfer would take the
 * next NTB too (the generated classes never are: --self-test).
 */
static bool
send_counted(const uint8_t *b, size_t n, const NcmNtbParseResult *want)
{
	uint8_t none[1];

	if (quiesced || write(ep_in, b, n) != (ssize_t)n)
		return false;
	if (n % HS_BULK_MPS == 0 && write(ep_in, none, 0) != 0)
		say("the ZLP after a %zu-byte transfer failed: %s", n, strerror(errno));
	COUNT(st_hostile, 1);
	for (unsigned e = 1; e < NCM_NTB_N_ERRORS; e++)
		expect[e] += want->reasons[e];
	expect_bad += want->bad_ntbs;
	expect_delivered += want->datagrams;
	return true;
}

static void
send_crafted(unsigned k, bool n32, uint32_t isize, uint16_t seq)
{
	static uint8_t buf[CRAFT_BUF];
	Craft c = { .n32 = n32, .b = buf, .cap = sizeof(buf) };
	size_t n = classes[k].build(&c, seq);
	NcmNtbParseResult want = { .rejects = classes[k].rejects, .datagrams = classes[k].delivers,
				   .bad_ntbs = classes[k].rejects ? 1 : 0 };

	want.reasons[class_reason(&classes[k], n32, isize)] = classes[k].rejects;
	pthread_mutex_lock(&hostile_lock);
	if (send_counted(buf, n, &want))
		sent[k]++;
	pthread_mutex_unlock(&hostile_lock);
}

/* --replay: the files in turn, in place of the generated classes. */
static void
send_replayed(unsigned i, bool n32, uint32_t isize)
{
	const uint8_t *b;
	size_t n;
	NcmNtbParseResult want;

	pthread_mutex_lock(&hostile_lock);
	if (replay_next(i, n32, isize, &b, &n, &want) && send_counted(b, n, &want))
		replay_sent(i);
	pthread_mutex_unlock(&hostile_lock);
}

/* A transfer of 1..11 bytes: the start of an NTH, cut short. */
static void
send_runt(unsigned long n, bool n32)
{
	uint8_t b[NTH_RUNT_MAX + 1];
	size_t len = 1 + n % NTH_RUNT_MAX;

	put32(b, sizeof(b), 0, n32 ? NCM_NTH32_SIGNATURE : NCM_NTH16_SIGNATURE);
	put32(b, sizeof(b), 4, 0x000c000cu);
	put32(b, sizeof(b), 8, 0);
	pthread_mutex_lock(&hostile_lock);
	if (!quiesced && write(ep_in, b, len) == (ssize_t)len) {
		COUNT(st_runts, 1);
		expect[NCM_NTB_ERR_TRUNCATED]++;
		expect_bad++;
	}
	pthread_mutex_unlock(&hostile_lock);
}

void
hostile_after_ntb(uint16_t *seq)
{
	static unsigned long ntbs, next_class;
	uint8_t none[1];
	bool n32;
	uint32_t isize;

	ntbs++;
	pthread_mutex_lock(&lock);
	n32 = format == NCM_NTB_FORMAT_32;
	isize = input_size;
	pthread_mutex_unlock(&lock);
	/* Its own transfer: the NTB before it ended with a short packet. */
	if (prof.zlp_after_ntb && write(ep_in, none, 0) == 0)
		COUNT(st_zlps, 1);
	if (prof.runt_one_in && ntbs % prof.runt_one_in == 0)
		send_runt(ntbs / prof.runt_one_in, n32);
	/* One transfer in N: N - 1 valid NTBs, then a crafted one. */
	if (!prof.hostile_one_in || ntbs % (prof.hostile_one_in - 1) != 0)
		return;
	if (replay_count())
		send_replayed((unsigned)(next_class++ % replay_count()), n32, isize);
	else
		send_crafted((unsigned)(next_class++ % N_CLASSES), n32, isize, (*seq)++);
}

void
hostile_in_gate(unsigned ntb_in_session)
{
	if (!prof.in_stop_after || ntb_in_session <= prof.in_stop_after)
		return;
	say("bulk IN stopped after %u NTBs of the host's session: no IN transfer completes "
	    "any more", prof.in_stop_after);
	for (;;)
		pause();
}

void
hostile_summary(void)
{
	char line[1024];
	size_t at = 0;

	pthread_mutex_lock(&hostile_lock);
	for (unsigned e = 1; e < NCM_NTB_N_ERRORS; e++)
		if (expect[e] && at < sizeof(line))
			at += (size_t)snprintf(line + at, sizeof(line) - at, " %s=%lu",
					       ncm_ntb_error_name((NcmNtbError)e), expect[e]);
	line[at < sizeof(line) ? at : sizeof(line) - 1] = '\0';
	say("hostile: crafted=%lu runts=%lu zlps=%lu bad=%lu decoys=%lu expect%s",
	    READ(st_hostile), READ(st_runts), READ(st_zlps), expect_bad, expect_delivered,
	    at ? line : " none");
	for (unsigned k = 0; k < N_CLASSES; k++)
		if (sent[k])
			say("hostile class %s: %lu sent", classes[k].name, sent[k]);
	if (replay_count())
		replay_summary();
	pthread_mutex_unlock(&hostile_lock);
}

void
hostile_quiesce(void)
{
	pthread_mutex_lock(&hostile_lock);
	quiesced = true;
	pthread_mutex_unlock(&hostile_lock);
	say("crafted IN transfers stopped");
}

/* ---- --self-test ------------------------------------------------------------ */

static bool
self_class(const HostileClass *k, bool n32)
{
	static uint8_t buf[CRAFT_BUF];
	const uint32_t isize = 16384;
	Craft c = { .n32 = n32, .b = buf, .cap = sizeof(buf) };
	NcmNtbParseConfig pc = {
		.formats = n32 ? NCM_NTB_FORMAT_BIT_32 : NCM_NTB_FORMAT_BIT_16,
		.max_block = isize,
		.max_datagram = HOST_RX_MAX,
		.max_packet = HS_BULK_MPS,
	};
	NcmNtbError reason = class_reason(k, n32, isize);
	NcmNtbParseResult res;
	size_t n = k->build(&c, 7);
	bool ok = n <= CRAFT_BUF && n % HS_BULK_MPS != 0 && n <= isize;

	ncm_ntb_parse(&pc, buf, n, NULL, NULL, &res);
	for (unsigned e = 1; e < NCM_NTB_N_ERRORS; e++)
		ok &= res.reasons[e] == (e == (unsigned)reason ? k->rejects : 0);
	ok &= res.datagrams == k->delivers;
	printf("%s: crafted NTB%s %s: %zu bytes, %u rejects (%s), %u delivered\n", ok ? "ok" : "FAIL",
	       n32 ? "32" : "16", k->name, n, res.rejects,
	       ncm_ntb_error_name(res.rejects ? (NcmNtbError)reason : NCM_NTB_OK), res.datagrams);
	return ok;
}

bool
hostile_self_test(void)
{
	bool all = true;

	for (unsigned k = 0; k < N_CLASSES; k++) {
		all &= self_class(&classes[k], false);
		all &= self_class(&classes[k], true);
	}
	return all;
}
