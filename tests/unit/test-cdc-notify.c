/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cdc-notify.c: unit tests for the interrupt notification parser. */
#include "ncm-cdc.h"

#include <glib.h>
#include <string.h>

/* Builds a notification header (+ optional data) as a device sends it. */
static size_t
notif(uint8_t *buf, uint8_t type, uint8_t code, uint16_t value, uint16_t wlength)
{
	buf[0] = type;
	buf[1] = code;
	buf[2] = (uint8_t)value;
	buf[3] = (uint8_t)(value >> 8);
	buf[4] = 2; /* wIndex: the comm interface */
	buf[5] = 0;
	buf[6] = (uint8_t)wlength;
	buf[7] = (uint8_t)(wlength >> 8);
	return 8;
}

static void
le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static size_t
speed(uint8_t *buf, uint32_t down, uint32_t up)
{
	notif(buf, 0xA1, NCM_NOTIFY_CONNECTION_SPEED_CHANGE, 0, 8);
	le32(buf + 8, down);
	le32(buf + 12, up);
	return 16;
}

static bool
parser_idle(const NcmNotifyParser *p)
{
	return !p->want_speed_data && p->pending_len == 0;
}

static void
test_link(void)
{
	NcmNotifyParser p = { 0 };
	NcmNotifyEvent ev;
	uint8_t buf[16];

	notif(buf, 0xA1, NCM_NOTIFY_NETWORK_CONNECTION, 1, 0);
	ev = ncm_notify_parser_feed(&p, buf, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_LINK);
	g_assert_true(ev.link_up);
	notif(buf, 0xA1, NCM_NOTIFY_NETWORK_CONNECTION, 0, 0);
	ev = ncm_notify_parser_feed(&p, buf, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_LINK);
	g_assert_false(ev.link_up);
	notif(buf, 0xA1, NCM_NOTIFY_NETWORK_CONNECTION, 2, 0);
	ev = ncm_notify_parser_feed(&p, buf, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_MALFORMED);
	notif(buf, 0xA1, NCM_NOTIFY_NETWORK_CONNECTION, 0x0100, 0);
	ev = ncm_notify_parser_feed(&p, buf, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_MALFORMED);
	g_assert_true(parser_idle(&p));
}

static void
test_speed_whole(void)
{
	NcmNotifyParser p = { 0 };
	NcmNotifyEvent ev;
	uint8_t buf[32] = { 0 };

	speed(buf, 480000000, 0x89ABCDEF);
	ev = ncm_notify_parser_feed(&p, buf, 16);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_SPEED);
	g_assert_cmpuint(ev.down_bps, ==, 480000000);
	g_assert_cmpuint(ev.up_bps, ==, 0x89ABCDEF);
	g_assert_true(parser_idle(&p));
	/* trailing bytes after a complete notification are ignored */
	ev = ncm_notify_parser_feed(&p, buf, 20);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_SPEED);
	g_assert_cmpuint(ev.down_bps, ==, 480000000);
}

static void
test_speed_split(void)
{
	NcmNotifyParser p = { 0 };
	NcmNotifyEvent ev;
	uint8_t buf[16];

	speed(buf, 100000000, 50000000);
	ev = ncm_notify_parser_feed(&p, buf, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_NONE);
	g_assert_true(p.want_speed_data);
	g_assert_cmpuint(p.pending_len, ==, 8);
	g_assert_cmpmem(p.pending, 8, buf, 8);
	ev = ncm_notify_parser_feed(&p, buf + 8, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_SPEED);
	g_assert_cmpuint(ev.down_bps, ==, 100000000);
	g_assert_cmpuint(ev.up_bps, ==, 50000000);
	g_assert_true(parser_idle(&p));
	/* the same 8 data bytes again, with nothing pending */
	ev = ncm_notify_parser_feed(&p, buf + 8, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_MALFORMED);
}

/* Speed data whose first byte is 0xA1 is still data. */
static void
test_speed_split_data_like_type(void)
{
	NcmNotifyParser p = { 0 };
	NcmNotifyEvent ev;
	uint8_t buf[16];

	speed(buf, 0x05F5E1A1, 0x05F5E100);
	g_assert_cmpuint(buf[8], ==, 0xA1);
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 8).type, ==, NCM_NOTIFY_EVENT_NONE);
	ev = ncm_notify_parser_feed(&p, buf + 8, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_SPEED);
	g_assert_cmpuint(ev.down_bps, ==, 0x05F5E1A1);
	g_assert_cmpuint(ev.up_bps, ==, 0x05F5E100);
}

/* A new header instead of the data drops the pending one. */
static void
test_speed_split_then_header(void)
{
	NcmNotifyParser p = { 0 };
	NcmNotifyEvent ev;
	uint8_t hdr[16], next[16];

	speed(hdr, 1, 2);
	g_assert_cmpint(ncm_notify_parser_feed(&p, hdr, 8).type, ==, NCM_NOTIFY_EVENT_NONE);
	notif(next, 0xA1, NCM_NOTIFY_NETWORK_CONNECTION, 1, 0);
	ev = ncm_notify_parser_feed(&p, next, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_LINK);
	g_assert_true(ev.link_up);
	g_assert_true(parser_idle(&p));

	/* a new split speed header restarts the wait */
	g_assert_cmpint(ncm_notify_parser_feed(&p, hdr, 8).type, ==, NCM_NOTIFY_EVENT_NONE);
	speed(next, 7, 8);
	g_assert_cmpint(ncm_notify_parser_feed(&p, next, 8).type, ==, NCM_NOTIFY_EVENT_NONE);
	g_assert_true(p.want_speed_data);
	ev = ncm_notify_parser_feed(&p, next + 8, 8);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_SPEED);
	g_assert_cmpuint(ev.down_bps, ==, 7);

	/* a whole speed change replaces the pending header */
	g_assert_cmpint(ncm_notify_parser_feed(&p, hdr, 8).type, ==, NCM_NOTIFY_EVENT_NONE);
	speed(next, 9, 10);
	ev = ncm_notify_parser_feed(&p, next, 16);
	g_assert_cmpint(ev.type, ==, NCM_NOTIFY_EVENT_SPEED);
	g_assert_cmpuint(ev.down_bps, ==, 9);
	g_assert_cmpuint(ev.up_bps, ==, 10);
	g_assert_true(parser_idle(&p));
}

static void
test_speed_bad_wlength(void)
{
	NcmNotifyParser p = { 0 };
	uint8_t buf[16];

	speed(buf, 1, 2);
	buf[6] = 4;
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 16).type, ==, NCM_NOTIFY_EVENT_MALFORMED);
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 8).type, ==, NCM_NOTIFY_EVENT_MALFORMED);
	g_assert_true(parser_idle(&p));
	/* wLength 8 but only part of the data */
	buf[6] = 8;
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 12).type, ==, NCM_NOTIFY_EVENT_MALFORMED);
	g_assert_true(parser_idle(&p));
}

/* Malformed input clears a pending header. */
static void
test_malformed_clears(void)
{
	NcmNotifyParser p = { 0 };
	uint8_t hdr[16], bad[16];

	speed(hdr, 1, 2);
	for (size_t len = 0; len < 8; len++) {
		g_assert_cmpint(ncm_notify_parser_feed(&p, hdr, 8).type, ==, NCM_NOTIFY_EVENT_NONE);
		g_assert_cmpint(ncm_notify_parser_feed(&p, hdr + 8, len).type, ==,
				NCM_NOTIFY_EVENT_MALFORMED);
		g_assert_true(parser_idle(&p));
	}
	/* wrong bmRequestType in a transfer that is not 8 bytes */
	g_assert_cmpint(ncm_notify_parser_feed(&p, hdr, 8).type, ==, NCM_NOTIFY_EVENT_NONE);
	speed(bad, 1, 2);
	bad[0] = 0x21;
	g_assert_cmpint(ncm_notify_parser_feed(&p, bad, 16).type, ==, NCM_NOTIFY_EVENT_MALFORMED);
	g_assert_true(parser_idle(&p));
	g_assert_cmpint(ncm_notify_parser_feed(&p, NULL, 0).type, ==, NCM_NOTIFY_EVENT_MALFORMED);
}

static void
test_wrong_request_type(void)
{
	NcmNotifyParser p = { 0 };
	uint8_t buf[8];

	notif(buf, 0x21, NCM_NOTIFY_NETWORK_CONNECTION, 1, 0);
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 8).type, ==, NCM_NOTIFY_EVENT_MALFORMED);
	notif(buf, 0x00, NCM_NOTIFY_NETWORK_CONNECTION, 1, 0);
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 8).type, ==, NCM_NOTIFY_EVENT_MALFORMED);
}

static void
test_response_and_unknown(void)
{
	NcmNotifyParser p = { 0 };
	uint8_t buf[8];

	notif(buf, 0xA1, NCM_NOTIFY_RESPONSE_AVAILABLE, 0, 0);
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 8).type, ==, NCM_NOTIFY_EVENT_RESPONSE);
	notif(buf, 0xA1, 0x20, 0, 0); /* SERIAL_STATE: not NCM's */
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 8).type, ==, NCM_NOTIFY_EVENT_UNKNOWN);
	notif(buf, 0xA1, 0xFF, 0, 0);
	g_assert_cmpint(ncm_notify_parser_feed(&p, buf, 8).type, ==, NCM_NOTIFY_EVENT_UNKNOWN);
	g_assert_true(parser_idle(&p));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/cdc-notify/link", test_link);
	g_test_add_func("/cdc-notify/speed-whole", test_speed_whole);
	g_test_add_func("/cdc-notify/speed-split", test_speed_split);
	g_test_add_func("/cdc-notify/speed-split-data-like-type", test_speed_split_data_like_type);
	g_test_add_func("/cdc-notify/speed-split-then-header", test_speed_split_then_header);
	g_test_add_func("/cdc-notify/speed-bad-wlength", test_speed_bad_wlength);
	g_test_add_func("/cdc-notify/malformed-clears", test_malformed_clears);
	g_test_add_func("/cdc-notify/wrong-request-type", test_wrong_request_type);
	g_test_add_func("/cdc-notify/response-and-unknown", test_response_and_unknown);
	return g_test_run();
}
