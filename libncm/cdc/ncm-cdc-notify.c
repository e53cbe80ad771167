/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cdc-notify.c: decodes CDC notifications from the interrupt IN endpoint. */
#include "ncm-cdc.h"

#include <string.h>

#include "ncm-le.h"

enum {
	NOTIFY_HEADER_LEN = 8,
	SPEED_DATA_LEN = 8,
	/* class, interface recipient, device-to-host */
	NOTIFY_REQUEST_TYPE = 0xA1,
};

static void
parser_reset(NcmNotifyParser *parser)
{
	memset(parser, 0, sizeof(*parser));
}

static NcmNotifyEvent
event_of(NcmNotifyEventType type)
{
	NcmNotifyEvent ev = { .type = type };

	return ev;
}

static NcmNotifyEvent
speed_event(const uint8_t *data, size_t len)
{
	NcmNotifyEvent ev = event_of(NCM_NOTIFY_EVENT_SPEED);

	ev.down_bps = ncm_le32_at(data, len, 0);
	ev.up_bps = ncm_le32_at(data, len, 4);
	return ev;
}

/*
 * While a speed header waits for its data, an 8-byte transfer is either that
 * data or a new notification. Only a header that is complete on its own (a
 * known code with the wLength that code implies) counts as new. Bit rates
 * that look like one need a downlink whose low byte is 0xA1 and an uplink
 * below 600 kbit/s.
 */
static bool
looks_like_header(const uint8_t *buf, size_t len)
{
	uint16_t wlength = ncm_le16_at(buf, len, 6);

	if (ncm_le8_at(buf, len, 0) != NOTIFY_REQUEST_TYPE)
		return false;
	switch (ncm_le8_at(buf, len, 1)) {
	case NCM_NOTIFY_NETWORK_CONNECTION:
	case NCM_NOTIFY_RESPONSE_AVAILABLE:
		return wlength == 0;
	case NCM_NOTIFY_CONNECTION_SPEED_CHANGE:
		return wlength == SPEED_DATA_LEN;
	default:
		return false;
	}
}

static NcmNotifyEvent
parse_link(const uint8_t *buf, size_t len)
{
	NcmNotifyEvent ev = event_of(NCM_NOTIFY_EVENT_LINK);
	uint16_t value = ncm_le16_at(buf, len, 2);

	if (value > 1)
		return event_of(NCM_NOTIFY_EVENT_MALFORMED);
	ev.link_up = value == 1;
	return ev;
}

static NcmNotifyEvent
parse_speed(NcmNotifyParser *parser, const uint8_t *buf, size_t len)
{
	if (ncm_le16_at(buf, len, 6) != SPEED_DATA_LEN)
		return event_of(NCM_NOTIFY_EVENT_MALFORMED);
	if (len >= NOTIFY_HEADER_LEN + SPEED_DATA_LEN)
		return speed_event(buf + NOTIFY_HEADER_LEN, len - NOTIFY_HEADER_LEN);
	if (len != NOTIFY_HEADER_LEN)
		return event_of(NCM_NOTIFY_EVENT_MALFORMED);
	/* the data follows in the next transfer */
	parser->want_speed_data = true;
	memcpy(parser->pending, buf, NOTIFY_HEADER_LEN);
	parser->pending_len = NOTIFY_HEADER_LEN;
	return event_of(NCM_NOTIFY_EVENT_NONE);
}

static NcmNotifyEvent
parse_header(NcmNotifyParser *parser, const uint8_t *buf, size_t len)
{
	if (len < NOTIFY_HEADER_LEN || ncm_le8_at(buf, len, 0) != NOTIFY_REQUEST_TYPE)
		return event_of(NCM_NOTIFY_EVENT_MALFORMED);

	switch (ncm_le8_at(buf, len, 1)) {
	case NCM_NOTIFY_NETWORK_CONNECTION:
		return parse_link(buf, len);
	case NCM_NOTIFY_RESPONSE_AVAILABLE:
		return event_of(NCM_NOTIFY_EVENT_RESPONSE);
	case NCM_NOTIFY_CONNECTION_SPEED_CHANGE:
		return parse_speed(parser, buf, len);
	default:
		return event_of(NCM_NOTIFY_EVENT_UNKNOWN);
	}
}

NcmNotifyEvent
ncm_notify_parser_feed(NcmNotifyParser *parser, const uint8_t *buf, size_t len)
{
	bool pending = parser->want_speed_data;

	parser_reset(parser);
	if (!buf)
		return event_of(NCM_NOTIFY_EVENT_MALFORMED);
	if (pending && len == SPEED_DATA_LEN && !looks_like_header(buf, len))
		return speed_event(buf, len);
	/* anything else replaces a pending header: that one's data was lost */
	return parse_header(parser, buf, len);
}
