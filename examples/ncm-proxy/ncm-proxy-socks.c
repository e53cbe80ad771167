/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-socks.c: SOCKS5 greeting, request, UDP header and RFC 1929 auth parsers, and reply builders. */
#include <string.h>

#include "ncm-le.h"
#include "ncm-proxy-socks.h"

static const char *const status_names[PROXY_SOCKS_N_STATUS] = {
	[PROXY_SOCKS_OK] = "ok",
	[PROXY_SOCKS_INCOMPLETE] = "incomplete",
	[PROXY_SOCKS_BAD_VERSION] = "bad-version",
	[PROXY_SOCKS_MALFORMED] = "malformed",
	[PROXY_SOCKS_BAD_COMMAND] = "bad-command",
	[PROXY_SOCKS_BAD_ADDRESS] = "bad-address-type",
};

const char *
proxy_socks_status_name(ProxySocksStatus status)
{
	return (unsigned)status < PROXY_SOCKS_N_STATUS ? status_names[status] : "?";
}

int
proxy_socks_status_reply(ProxySocksStatus status)
{
	switch (status) {
	case PROXY_SOCKS_OK:
		return PROXY_SOCKS_REP_OK;
	case PROXY_SOCKS_MALFORMED:
		return PROXY_SOCKS_REP_FAILURE;
	case PROXY_SOCKS_BAD_COMMAND:
		return PROXY_SOCKS_REP_BAD_COMMAND;
	case PROXY_SOCKS_BAD_ADDRESS:
		return PROXY_SOCKS_REP_BAD_ADDRESS;
	default:
		return -1;
	}
}

/* INCOMPLETE when @want bytes have not all arrived. */
static ProxySocksStatus
need(size_t len, size_t want, size_t *ret_need)
{
	if (len >= want)
		return PROXY_SOCKS_OK;
	if (ret_need)
		*ret_need = want;
	return PROXY_SOCKS_INCOMPLETE;
}

ProxySocksStatus
proxy_socks_parse_greeting(const uint8_t *buf, size_t len, ProxySocksGreeting *ret,
			   size_t *ret_need)
{
	ProxySocksGreeting g = { 0 };
	size_t n;

	if (need(len, 1, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	if (ncm_le8_at(buf, len, 0) != PROXY_SOCKS_VERSION)
		return PROXY_SOCKS_BAD_VERSION;
	if (need(len, 2, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	n = ncm_le8_at(buf, len, 1);
	if (n == 0)
		return PROXY_SOCKS_MALFORMED;
	if (need(len, 2 + n, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	for (size_t i = 0; i < n; i++) {
		uint8_t m = ncm_le8_at(buf, len, 2 + i);

		g.offers_none |= m == PROXY_SOCKS_METHOD_NONE;
		g.offers_userpass |= m == PROXY_SOCKS_METHOD_USERPASS;
	}
	g.len = 2 + n;
	*ret = g;
	return PROXY_SOCKS_OK;
}

/* A name a resolver may see: no NUL, space or control byte to confuse logs or lookups. */
static bool
name_ok(const uint8_t *p, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x21 || p[i] > 0x7E)
			return false;
	return true;
}

/* ATYP DST.ADDR DST.PORT starting at @off; fills @r's address, port and len. */
static ProxySocksStatus
parse_address(const uint8_t *buf, size_t len, size_t off, ProxySocksRequest *r, size_t *ret_need)
{
	size_t addr_len, addr_off = off + 1;
	const uint8_t *p;

	if (need(len, off + 1, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	r->atyp = ncm_le8_at(buf, len, off);
	switch (r->atyp) {
	case PROXY_SOCKS_ATYP_IPV4:
		addr_len = 4;
		break;
	case PROXY_SOCKS_ATYP_IPV6:
		addr_len = 16;
		break;
	case PROXY_SOCKS_ATYP_NAME:
		if (need(len, off + 2, ret_need) != PROXY_SOCKS_OK)
			return PROXY_SOCKS_INCOMPLETE;
		addr_len = ncm_le8_at(buf, len, off + 1);
		addr_off = off + 2;
		if (addr_len == 0)
			return PROXY_SOCKS_MALFORMED;
		break;
	default:
		return PROXY_SOCKS_BAD_ADDRESS;
	}
	if (need(len, addr_off + addr_len + 2, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	p = ncm_bytes_at(buf, len, addr_off, addr_len);
	if (!p)
		return PROXY_SOCKS_MALFORMED;
	if (r->atyp == PROXY_SOCKS_ATYP_NAME) {
		if (!name_ok(p, addr_len))
			return PROXY_SOCKS_MALFORMED;
		memcpy(r->name, p, addr_len);
		r->name[addr_len] = '\0';
	} else {
		memcpy(r->addr, p, addr_len);
	}
	r->port = ncm_be16_at(buf, len, addr_off + addr_len);
	r->len = addr_off + addr_len + 2;
	return PROXY_SOCKS_OK;
}

ProxySocksStatus
proxy_socks_parse_request(const uint8_t *buf, size_t len, ProxySocksRequest *ret,
			  size_t *ret_need)
{
	ProxySocksRequest r;
	ProxySocksStatus st;

	memset(&r, 0, sizeof(r));
	if (need(len, 1, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	if (ncm_le8_at(buf, len, 0) != PROXY_SOCKS_VERSION)
		return PROXY_SOCKS_BAD_VERSION;
	if (need(len, 3, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	r.command = ncm_le8_at(buf, len, 1);
	if (ncm_le8_at(buf, len, 2) != 0)
		return PROXY_SOCKS_MALFORMED;
	st = parse_address(buf, len, 3, &r, ret_need);
	if (st != PROXY_SOCKS_OK)
		return st;
	/* The address is read first, so a well-formed request for an
	 * unsupported command is told so rather than called malformed. */
	if (r.command != PROXY_SOCKS_CMD_CONNECT && r.command != PROXY_SOCKS_CMD_UDP)
		return PROXY_SOCKS_BAD_COMMAND;
	*ret = r;
	return PROXY_SOCKS_OK;
}

ProxySocksStatus
proxy_socks_parse_udp(const uint8_t *buf, size_t len, ProxySocksRequest *ret)
{
	ProxySocksRequest r;
	ProxySocksStatus st;

	memset(&r, 0, sizeof(r));
	if (len < 4 || ncm_be16_at(buf, len, 0) != 0)
		return PROXY_SOCKS_MALFORMED;
	r.frag = ncm_le8_at(buf, len, 2);
	st = parse_address(buf, len, 3, &r, NULL);
	if (st == PROXY_SOCKS_INCOMPLETE)
		return PROXY_SOCKS_MALFORMED;
	if (st != PROXY_SOCKS_OK)
		return st;
	*ret = r;
	return PROXY_SOCKS_OK;
}

/* One length-prefixed string of 1-255 bytes at @off. */
static ProxySocksStatus
parse_pstring(const uint8_t *buf, size_t len, size_t off, const uint8_t **ret_str,
	      size_t *ret_len, size_t *ret_need)
{
	size_t n;

	if (need(len, off + 1, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	n = ncm_le8_at(buf, len, off);
	if (n == 0)
		return PROXY_SOCKS_MALFORMED;
	if (need(len, off + 1 + n, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	*ret_str = ncm_bytes_at(buf, len, off + 1, n);
	*ret_len = n;
	return *ret_str ? PROXY_SOCKS_OK : PROXY_SOCKS_MALFORMED;
}

ProxySocksStatus
proxy_socks_parse_auth(const uint8_t *buf, size_t len, ProxySocksAuth *ret, size_t *ret_need)
{
	ProxySocksAuth a = { 0 };
	ProxySocksStatus st;

	if (need(len, 1, ret_need) != PROXY_SOCKS_OK)
		return PROXY_SOCKS_INCOMPLETE;
	if (ncm_le8_at(buf, len, 0) != PROXY_SOCKS_AUTH_VERSION)
		return PROXY_SOCKS_BAD_VERSION;
	st = parse_pstring(buf, len, 1, &a.user, &a.user_len, ret_need);
	if (st != PROXY_SOCKS_OK)
		return st;
	st = parse_pstring(buf, len, 2 + a.user_len, &a.password, &a.password_len, ret_need);
	if (st != PROXY_SOCKS_OK)
		return st;
	a.len = 3 + a.user_len + a.password_len;
	*ret = a;
	return PROXY_SOCKS_OK;
}

/* B0 B1 B2 ATYP ADDR PORT: replies and UDP headers share the shape. */
static size_t
build_address_message(uint8_t *buf, size_t size, const uint8_t head[3], const uint8_t *addr,
		      size_t addr_len, uint16_t port)
{
	static const uint8_t zero[4];
	size_t total;

	if (!addr) {
		addr = zero;
		addr_len = 4;
	}
	if (addr_len != 4 && addr_len != 16)
		return 0;
	total = 4 + addr_len + 2;
	if (size < total)
		return 0;
	memcpy(buf, head, 3);
	buf[3] = addr_len == 4 ? PROXY_SOCKS_ATYP_IPV4 : PROXY_SOCKS_ATYP_IPV6;
	memcpy(buf + 4, addr, addr_len);
	buf[4 + addr_len] = (uint8_t)(port >> 8);
	buf[5 + addr_len] = (uint8_t)port;
	return total;
}

size_t
proxy_socks_build_reply(uint8_t *buf, size_t size, uint8_t rep, const uint8_t *addr,
			size_t addr_len, uint16_t port)
{
	const uint8_t head[3] = { PROXY_SOCKS_VERSION, rep, 0 };

	return build_address_message(buf, size, head, addr, addr_len, port);
}

size_t
proxy_socks_build_udp_header(uint8_t *buf, size_t size, const uint8_t *addr, size_t addr_len,
			     uint16_t port)
{
	const uint8_t head[3] = { 0, 0, 0 };

	return build_address_message(buf, size, head, addr, addr_len, port);
}
