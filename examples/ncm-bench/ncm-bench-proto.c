/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-proto.c: encoding of ncm-bench's datagram and frame headers and command parameters. */
#include <stdlib.h>
#include <string.h>

#include "ncm-bench-proto.h"

static void
put32(guint8 *p, guint32 v)
{
	v = GUINT32_TO_BE(v);
	memcpy(p, &v, 4);
}

static void
put64(guint8 *p, guint64 v)
{
	v = GUINT64_TO_BE(v);
	memcpy(p, &v, 8);
}

static guint32
get32(const guint8 *p)
{
	guint32 v;

	memcpy(&v, p, 4);
	return GUINT32_FROM_BE(v);
}

static guint64
get64(const guint8 *p)
{
	guint64 v;

	memcpy(&v, p, 8);
	return GUINT64_FROM_BE(v);
}

void
bench_dgram_write(guint8 *buf, const BenchDgram *d)
{
	put32(buf, BENCH_DGRAM_MAGIC);
	put32(buf + 4, d->stream);
	put64(buf + 8, d->seq);
	put64(buf + 16, (guint64)d->send_us);
	put64(buf + 24, (guint64)d->server_us);
}

gboolean
bench_dgram_read(const guint8 *buf, gsize len, BenchDgram *ret)
{
	if (len < BENCH_DGRAM_HDR || get32(buf) != BENCH_DGRAM_MAGIC)
		return FALSE;
	ret->stream = (guint16)get32(buf + 4);
	ret->seq = get64(buf + 8);
	ret->send_us = (gint64)get64(buf + 16);
	ret->server_us = (gint64)get64(buf + 24);
	return TRUE;
}

void
bench_frame_write(guint8 *buf, guint32 frame_len, gint64 send_us)
{
	put32(buf, BENCH_FRAME_MAGIC);
	put32(buf + 4, frame_len);
	put64(buf + 8, (guint64)send_us);
}

gboolean
bench_frame_read(const guint8 *buf, guint32 *ret_len, gint64 *ret_send_us)
{
	if (get32(buf) != BENCH_FRAME_MAGIC || get32(buf + 4) < BENCH_FRAME_HDR)
		return FALSE;
	*ret_len = get32(buf + 4);
	*ret_send_us = (gint64)get64(buf + 8);
	return TRUE;
}

/* Where the value of "key=" starts in @line, or NULL. */
static const char *
cmd_value(const char *line, const char *key)
{
	gsize klen = strlen(key);

	for (const char *p = strstr(line, key); p; p = strstr(p + 1, key)) {
		if ((p == line || p[-1] == ' ') && p[klen] == '=')
			return p + klen + 1;
	}
	return NULL;
}

gint64
bench_cmd_param(const char *line, const char *key, gint64 fallback)
{
	const char *v = cmd_value(line, key);

	return v ? g_ascii_strtoll(v, NULL, 10) : fallback;
}

/* Reads one MAC from @text, and where it ended; both written only on success. */
static gboolean
mac_scan(const char *text, guint8 ret_mac[6], const char **ret_end)
{
	const char *p = text;
	guint8 mac[6];

	for (int i = 0; i < 6; i++) {
		if (!g_ascii_isxdigit(p[0]) || !g_ascii_isxdigit(p[1]) || (i < 5 && p[2] != ':'))
			return FALSE;
		mac[i] = (guint8)(g_ascii_xdigit_value(p[0]) << 4 | g_ascii_xdigit_value(p[1]));
		p += i < 5 ? 3 : 2;
	}
	memcpy(ret_mac, mac, sizeof(mac));
	*ret_end = p;
	return TRUE;
}

gboolean
bench_mac_parse(const char *text, guint8 ret_mac[6])
{
	const char *end;
	guint8 mac[6];

	if (!mac_scan(text, mac, &end) || *end != '\0')
		return FALSE;
	memcpy(ret_mac, mac, sizeof(mac));
	return TRUE;
}

char *
bench_mac_text(const guint8 mac[6])
{
	return g_strdup_printf("%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
			       mac[4], mac[5]);
}

gboolean
bench_cmd_mac(const char *line, const char *key, guint8 ret_mac[6])
{
	const char *v = cmd_value(line, key), *end;
	guint8 mac[6];

	if (!v || !mac_scan(v, mac, &end) || (*end != '\0' && *end != ' '))
		return FALSE;
	memcpy(ret_mac, mac, sizeof(mac));
	return TRUE;
}
