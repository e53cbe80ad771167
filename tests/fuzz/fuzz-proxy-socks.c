/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-proxy-socks.c: fuzz target for ncm-proxy's SOCKS5 and RFC 1929 parsers (examples/ncm-proxy/ncm-proxy-socks.c). */
#include <string.h>

#include "fuzz.h"
#include "ncm-proxy-socks.h"

/*
 * Input: the bytes a SOCKS client sent so far. Every parser sees them.
 * Beyond memory safety the target checks the parsers' contract: a complete
 * message never claims more bytes than arrived; an incomplete one asks for
 * more than arrived and no more than the longest message; every shorter
 * prefix of a complete message is incomplete (so a client sending byte by
 * byte gets the same answer as one sending all at once); fields match the
 * raw bytes they came from.
 */

static void
check_request_fields(const uint8_t *data, const ProxySocksRequest *r, size_t addr_off)
{
	size_t n;

	FUZZ_CHECK(r->atyp == data[addr_off - 1]);
	switch (r->atyp) {
	case 1:
		FUZZ_CHECK(r->len == addr_off + 4 + 2);
		FUZZ_CHECK(memcmp(r->addr, data + addr_off, 4) == 0);
		break;
	case 4:
		FUZZ_CHECK(r->len == addr_off + 16 + 2);
		FUZZ_CHECK(memcmp(r->addr, data + addr_off, 16) == 0);
		break;
	case 3:
		n = data[addr_off];
		FUZZ_CHECK(n >= 1 && r->len == addr_off + 1 + n + 2);
		FUZZ_CHECK(strlen(r->name) == n && memcmp(r->name, data + addr_off + 1, n) == 0);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(r->name[i] > 0x20 && r->name[i] < 0x7f);
		break;
	default:
		FUZZ_CHECK(0);
	}
	FUZZ_CHECK(r->port == (data[r->len - 2] << 8 | data[r->len - 1]));
}

static void
check_greeting(const uint8_t *data, size_t size)
{
	ProxySocksGreeting g;
	size_t want = 0;
	ProxySocksStatus st = proxy_socks_parse_greeting(data, size, &g, &want);

	if (st == PROXY_SOCKS_INCOMPLETE) {
		FUZZ_CHECK(want > size && want <= PROXY_SOCKS_GREETING_MAX);
		return;
	}
	if (st != PROXY_SOCKS_OK) {
		FUZZ_CHECK(st == PROXY_SOCKS_BAD_VERSION || st == PROXY_SOCKS_MALFORMED);
		return;
	}
	FUZZ_CHECK(g.len == 2u + data[1] && g.len <= size && data[0] == 5 && data[1] > 0);
	FUZZ_CHECK(g.offers_none == (memchr(data + 2, 0x00, data[1]) != NULL));
	FUZZ_CHECK(g.offers_userpass == (memchr(data + 2, 0x02, data[1]) != NULL));
	for (size_t k = 0; k < g.len; k++) {
		ProxySocksGreeting g2;

		FUZZ_CHECK(proxy_socks_parse_greeting(data, k, &g2, &want) == PROXY_SOCKS_INCOMPLETE);
		FUZZ_CHECK(want > k && want <= g.len);
	}
}

static void
check_request(const uint8_t *data, size_t size)
{
	ProxySocksRequest r;
	size_t want = 0;
	ProxySocksStatus st = proxy_socks_parse_request(data, size, &r, &want);

	if (st == PROXY_SOCKS_INCOMPLETE) {
		FUZZ_CHECK(want > size && want <= PROXY_SOCKS_REQUEST_MAX);
		return;
	}
	if (st != PROXY_SOCKS_OK) {
		FUZZ_CHECK(st < PROXY_SOCKS_N_STATUS);
		FUZZ_CHECK(st == PROXY_SOCKS_BAD_VERSION || proxy_socks_status_reply(st) > 0);
		return;
	}
	FUZZ_CHECK(r.len <= size && r.len <= PROXY_SOCKS_REQUEST_MAX);
	FUZZ_CHECK(data[0] == 5 && data[2] == 0 && r.command == data[1]);
	FUZZ_CHECK(r.command == 1 || r.command == 3);
	check_request_fields(data, &r, 4);
	for (size_t k = 0; k < r.len; k++) {
		ProxySocksRequest r2;

		FUZZ_CHECK(proxy_socks_parse_request(data, k, &r2, &want) == PROXY_SOCKS_INCOMPLETE);
		FUZZ_CHECK(want > k && want <= r.len);
	}
}

static void
check_udp(const uint8_t *data, size_t size)
{
	ProxySocksRequest r;
	ProxySocksStatus st = proxy_socks_parse_udp(data, size, &r);

	FUZZ_CHECK(st != PROXY_SOCKS_INCOMPLETE && st != PROXY_SOCKS_BAD_COMMAND);
	if (st != PROXY_SOCKS_OK)
		return;
	FUZZ_CHECK(r.len <= size && data[0] == 0 && data[1] == 0 && r.frag == data[2]);
	check_request_fields(data, &r, 4);
}

static void
check_auth(const uint8_t *data, size_t size)
{
	ProxySocksAuth a;
	size_t want = 0;
	ProxySocksStatus st = proxy_socks_parse_auth(data, size, &a, &want);

	if (st == PROXY_SOCKS_INCOMPLETE) {
		FUZZ_CHECK(want > size && want <= PROXY_SOCKS_AUTH_MAX);
		return;
	}
	if (st != PROXY_SOCKS_OK)
		return;
	FUZZ_CHECK(a.len <= size && a.len == 3 + a.user_len + a.password_len);
	FUZZ_CHECK(a.user == data + 2 && a.user_len == data[1] && a.user_len >= 1);
	FUZZ_CHECK(a.password == data + 3 + a.user_len && a.password_len == data[2 + a.user_len]);
	FUZZ_CHECK(a.password_len >= 1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_greeting(data, size);
	check_request(data, size);
	check_udp(data, size);
	check_auth(data, size);
	return 0;
}
