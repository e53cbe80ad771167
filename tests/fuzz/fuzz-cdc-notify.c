/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-cdc-notify.c: fuzz target for the interrupt notification parser across transfers. */
#include <string.h>

#include "fuzz.h"
#include "ncm-cdc.h"

/*
 * Input: a sequence of transfers, each one length byte (taken modulo 33, so
 * 0..32) followed by that many bytes. Each transfer is copied to its own
 * allocation so that reading past it is caught.
 */

static uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static bool
parser_idle(const NcmNotifyParser *p)
{
	return !p->want_speed_data && p->pending_len == 0;
}

/* A complete speed change fed to an idle parser must come out as sent. */
static void
check_whole_speed(bool was_idle, const uint8_t *buf, size_t len, const NcmNotifyEvent *ev)
{
	if (!was_idle || len < 16 || buf[0] != 0xA1 || buf[1] != 0x2A || buf[6] != 8 || buf[7] != 0)
		return;
	FUZZ_CHECK(ev->type == NCM_NOTIFY_EVENT_SPEED);
	FUZZ_CHECK(ev->down_bps == rd32(buf + 8) && ev->up_bps == rd32(buf + 12));
}

static void
feed_one(NcmNotifyParser *parser, const uint8_t *buf, size_t len)
{
	bool was_idle = parser_idle(parser);
	NcmNotifyEvent ev = ncm_notify_parser_feed(parser, buf, len);

	FUZZ_CHECK(ev.type <= NCM_NOTIFY_EVENT_MALFORMED);
	/* only the first half of a speed change leaves state behind */
	if (ev.type == NCM_NOTIFY_EVENT_NONE) {
		FUZZ_CHECK(parser->want_speed_data && parser->pending_len == 8);
		FUZZ_CHECK(len == 8 && memcmp(parser->pending, buf, 8) == 0);
	} else {
		FUZZ_CHECK(parser_idle(parser));
	}
	if (len < 8)
		FUZZ_CHECK(ev.type == NCM_NOTIFY_EVENT_MALFORMED);
	if (ev.type != NCM_NOTIFY_EVENT_SPEED)
		FUZZ_CHECK(ev.down_bps == 0 && ev.up_bps == 0);
	if (ev.type != NCM_NOTIFY_EVENT_LINK)
		FUZZ_CHECK(!ev.link_up);
	check_whole_speed(was_idle, buf, len, &ev);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	NcmNotifyParser parser;
	size_t off = 0;

	memset(&parser, 0, sizeof(parser));
	while (off < size) {
		size_t len = data[off++] % 33;
		uint8_t *buf;

		if (len > size - off)
			len = size - off;
		buf = malloc(len ? len : 1);
		FUZZ_CHECK(buf != NULL);
		memcpy(buf, data + off, len);
		feed_one(&parser, buf, len);
		free(buf);
		off += len;
	}
	return 0;
}
