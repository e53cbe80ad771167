/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-proxy-socks.c: ncm-proxy's SOCKS5 and RFC 1929 parsers against hand-laid, malformed and truncated messages. */
#include <glib.h>
#include <string.h>

#include "ncm-proxy-socks.h"

/*
 * Messages are written byte by byte from RFC 1928 and RFC 1929, not with
 * the header's names. Each parse runs over a heap copy of exactly the bytes
 * given, so ASan sees any read past them; every proper prefix of a good
 * message must be INCOMPLETE with a need beyond it and within the maximum.
 */

typedef ProxySocksStatus (*ParseFn)(const guint8 *buf, gsize len, gpointer ret, gsize *need);

static ProxySocksStatus
parse_greeting(const guint8 *buf, gsize len, gpointer ret, gsize *need)
{
	return proxy_socks_parse_greeting(buf, len, ret, need);
}

static ProxySocksStatus
parse_request(const guint8 *buf, gsize len, gpointer ret, gsize *need)
{
	return proxy_socks_parse_request(buf, len, ret, need);
}

static ProxySocksStatus
parse_auth(const guint8 *buf, gsize len, gpointer ret, gsize *need)
{
	return proxy_socks_parse_auth(buf, len, ret, need);
}

static ProxySocksStatus
parse_copy(ParseFn fn, const guint8 *buf, gsize len, gpointer ret, gsize *need)
{
	guint8 *copy = g_malloc(len ? len : 1);
	ProxySocksStatus st;

	memcpy(copy, buf, len);
	st = fn(copy, len, ret, need);
	g_free(copy);
	return st;
}

/* Every proper prefix of a complete @len-byte message is INCOMPLETE and
 * asks for more than it has, never more than the message needs. */
static void
check_prefixes(ParseFn fn, const guint8 *msg, gsize len, gsize max)
{
	guint8 scratch[1024];

	for (gsize k = 0; k < len; k++) {
		gsize want = 0;

		g_assert_cmpint(parse_copy(fn, msg, k, scratch, &want), ==, PROXY_SOCKS_INCOMPLETE);
		g_assert_cmpuint(want, >, k);
		g_assert_cmpuint(want, <=, len);
		g_assert_cmpuint(want, <=, max);
	}
}

static void
test_greeting(void)
{
	const guint8 both[] = { 5, 2, 0x00, 0x02 };
	const guint8 gssapi_only[] = { 5, 1, 0x01 };
	const guint8 pipelined[] = { 5, 1, 0x00, 5, 1, 0, 1 };
	ProxySocksGreeting g;
	gsize want = 0;

	g_assert_cmpint(parse_copy(parse_greeting, both, sizeof both, &g, &want), ==, PROXY_SOCKS_OK);
	g_assert_cmpuint(g.len, ==, 4);
	g_assert_true(g.offers_none && g.offers_userpass);
	check_prefixes(parse_greeting, both, sizeof both, PROXY_SOCKS_GREETING_MAX);

	g_assert_cmpint(parse_copy(parse_greeting, gssapi_only, sizeof gssapi_only, &g, &want), ==,
			PROXY_SOCKS_OK);
	g_assert_false(g.offers_none || g.offers_userpass);

	/* The request that follows at once stays for the next parse. */
	g_assert_cmpint(parse_copy(parse_greeting, pipelined, sizeof pipelined, &g, &want), ==,
			PROXY_SOCKS_OK);
	g_assert_cmpuint(g.len, ==, 3);
}

static void
test_greeting_bad(void)
{
	const guint8 socks4[] = { 4, 1, 0x00, 0x50, 127, 0, 0, 1, 0 };
	const guint8 http[] = "GET / HTTP/1.1\r\n";
	const guint8 no_methods[] = { 5, 0 };
	guint8 all[2 + 255];
	ProxySocksGreeting g;
	gsize want = 0;

	g_assert_cmpint(parse_copy(parse_greeting, socks4, sizeof socks4, &g, &want), ==,
			PROXY_SOCKS_BAD_VERSION);
	g_assert_cmpint(parse_copy(parse_greeting, http, sizeof http - 1, &g, &want), ==,
			PROXY_SOCKS_BAD_VERSION);
	g_assert_cmpint(parse_copy(parse_greeting, no_methods, sizeof no_methods, &g, &want), ==,
			PROXY_SOCKS_MALFORMED);
	g_assert_cmpint(proxy_socks_status_reply(PROXY_SOCKS_BAD_VERSION), ==, -1);

	/* 255 methods: the longest greeting, and exactly the maximum. */
	all[0] = 5;
	all[1] = 255;
	for (guint i = 0; i < 255; i++)
		all[2 + i] = (guint8)(i + 1);
	g_assert_cmpuint(sizeof all, ==, PROXY_SOCKS_GREETING_MAX);
	g_assert_cmpint(parse_copy(parse_greeting, all, sizeof all, &g, &want), ==, PROXY_SOCKS_OK);
	g_assert_true(g.offers_userpass && !g.offers_none);
	check_prefixes(parse_greeting, all, sizeof all, PROXY_SOCKS_GREETING_MAX);
}

static void
test_request_ipv4(void)
{
	const guint8 req[] = { 5, 1, 0, 1, 192, 168, 77, 1, 0x1f, 0x90 };
	ProxySocksRequest r;
	gsize want = 0;

	g_assert_cmpint(parse_copy(parse_request, req, sizeof req, &r, &want), ==, PROXY_SOCKS_OK);
	g_assert_cmpuint(r.len, ==, sizeof req);
	g_assert_cmpuint(r.command, ==, 1);
	g_assert_cmpuint(r.atyp, ==, 1);
	g_assert_cmpmem(r.addr, 4, req + 4, 4);
	g_assert_cmpuint(r.port, ==, 8080);
	check_prefixes(parse_request, req, sizeof req, PROXY_SOCKS_REQUEST_MAX);
}

static void
test_request_ipv6(void)
{
	const guint8 req[] = { 5, 1, 0, 4, 0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
			       0, 22, 'x', 'y' };
	ProxySocksRequest r;
	gsize want = 0;

	g_assert_cmpint(parse_copy(parse_request, req, sizeof req, &r, &want), ==, PROXY_SOCKS_OK);
	/* Optimistic data after the request is not part of it. */
	g_assert_cmpuint(r.len, ==, sizeof req - 2);
	g_assert_cmpuint(r.atyp, ==, 4);
	g_assert_cmpmem(r.addr, 16, req + 4, 16);
	g_assert_cmpuint(r.port, ==, 22);
	check_prefixes(parse_request, req, sizeof req - 2, PROXY_SOCKS_REQUEST_MAX);
}

static void
test_request_name(void)
{
	const guint8 req[] = { 5, 1, 0, 3, 9, 'p', 'e', 'e', 'r', '.', 't', 'e', 's', 't', 0, 80 };
	guint8 longest[PROXY_SOCKS_REQUEST_MAX];
	ProxySocksRequest r;
	gsize want = 0;

	g_assert_cmpint(parse_copy(parse_request, req, sizeof req, &r, &want), ==, PROXY_SOCKS_OK);
	g_assert_cmpuint(r.atyp, ==, 3);
	g_assert_cmpstr(r.name, ==, "peer.test");
	g_assert_cmpuint(r.port, ==, 80);
	g_assert_cmpuint(r.len, ==, sizeof req);
	check_prefixes(parse_request, req, sizeof req, PROXY_SOCKS_REQUEST_MAX);

	/* A 255-byte name: the longest request there is. */
	memcpy(longest, (const guint8[]){ 5, 1, 0, 3, 255 }, 5);
	memset(longest + 5, 'a', 255);
	longest[260] = 1;
	longest[261] = 187;
	g_assert_cmpint(parse_copy(parse_request, longest, sizeof longest, &r, &want), ==,
			PROXY_SOCKS_OK);
	g_assert_cmpuint(strlen(r.name), ==, 255);
	g_assert_cmpuint(r.port, ==, 443);
	check_prefixes(parse_request, longest, sizeof longest, PROXY_SOCKS_REQUEST_MAX);
}

static void
test_request_udp(void)
{
	const guint8 req[] = { 5, 3, 0, 1, 0, 0, 0, 0, 0, 0 };
	ProxySocksRequest r;
	gsize want = 0;

	g_assert_cmpint(parse_copy(parse_request, req, sizeof req, &r, &want), ==, PROXY_SOCKS_OK);
	g_assert_cmpuint(r.command, ==, 3);
}

typedef struct {
	const char *what;
	guint8 bytes[24];
	gsize len;
	ProxySocksStatus status;
} BadRequest;

static void
test_request_bad(void)
{
	static const BadRequest cases[] = {
		{ "SOCKS4", { 4, 1, 0, 1, 1, 2, 3, 4, 0, 80 }, 10, PROXY_SOCKS_BAD_VERSION },
		{ "BIND", { 5, 2, 0, 1, 1, 2, 3, 4, 0, 80 }, 10, PROXY_SOCKS_BAD_COMMAND },
		{ "command 0", { 5, 0, 0, 1, 1, 2, 3, 4, 0, 80 }, 10, PROXY_SOCKS_BAD_COMMAND },
		{ "command 9", { 5, 9, 0, 1, 1, 2, 3, 4, 0, 80 }, 10, PROXY_SOCKS_BAD_COMMAND },
		{ "RSV set", { 5, 1, 1, 1, 1, 2, 3, 4, 0, 80 }, 10, PROXY_SOCKS_MALFORMED },
		{ "ATYP 0", { 5, 1, 0, 0, 1, 2, 3, 4, 0, 80 }, 10, PROXY_SOCKS_BAD_ADDRESS },
		{ "ATYP 2", { 5, 1, 0, 2, 1, 2, 3, 4, 0, 80 }, 10, PROXY_SOCKS_BAD_ADDRESS },
		{ "ATYP 5", { 5, 1, 0, 5 }, 4, PROXY_SOCKS_BAD_ADDRESS },
		{ "empty name", { 5, 1, 0, 3, 0, 0, 80 }, 7, PROXY_SOCKS_MALFORMED },
		{ "NUL in name", { 5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80 }, 10, PROXY_SOCKS_MALFORMED },
		{ "space in name", { 5, 1, 0, 3, 3, 'a', ' ', 'b', 0, 80 }, 10, PROXY_SOCKS_MALFORMED },
		{ "newline in name", { 5, 1, 0, 3, 2, 'a', '\n', 0, 80 }, 9, PROXY_SOCKS_MALFORMED },
		{ "high byte in name", { 5, 1, 0, 3, 2, 'a', 0xc3, 0, 80 }, 9, PROXY_SOCKS_MALFORMED },
		/* BIND with a bad address type: the address is judged first. */
		{ "BIND, ATYP 7", { 5, 2, 0, 7 }, 4, PROXY_SOCKS_BAD_ADDRESS },
	};
	ProxySocksRequest r;

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		gsize want = 0;
		ProxySocksStatus st = parse_copy(parse_request, cases[i].bytes, cases[i].len, &r, &want);

		if (st != cases[i].status)
			g_error("%s: got %s, expected %s", cases[i].what, proxy_socks_status_name(st),
				proxy_socks_status_name(cases[i].status));
	}
	g_assert_cmpint(proxy_socks_status_reply(PROXY_SOCKS_BAD_COMMAND), ==, 0x07);
	g_assert_cmpint(proxy_socks_status_reply(PROXY_SOCKS_BAD_ADDRESS), ==, 0x08);
	g_assert_cmpint(proxy_socks_status_reply(PROXY_SOCKS_MALFORMED), ==, 0x01);
}

/* A name length that points past what was sent is only ever INCOMPLETE,
 * and asks for exactly the bytes it announced. */
static void
test_request_truncated_name(void)
{
	const guint8 req[] = { 5, 1, 0, 3, 200, 'a', 'b' };
	ProxySocksRequest r;
	gsize want = 0;

	g_assert_cmpint(parse_copy(parse_request, req, sizeof req, &r, &want), ==,
			PROXY_SOCKS_INCOMPLETE);
	g_assert_cmpuint(want, ==, 5 + 200 + 2);
}

static void
test_udp_header(void)
{
	const guint8 dgram[] = { 0, 0, 0, 1, 192, 168, 77, 1, 0x1f, 0x91, 'h', 'i' };
	const guint8 frag[] = { 0, 0, 3, 1, 192, 168, 77, 1, 0x1f, 0x91 };
	const guint8 rsv[] = { 0, 1, 0, 1, 192, 168, 77, 1, 0x1f, 0x91 };
	const guint8 shorty[] = { 0, 0, 0, 4, 0xfd, 0x77, 0 };
	const guint8 name[] = { 0, 0, 0, 3, 4, 'p', 'e', 'e', 'r', 0, 53 };
	ProxySocksRequest r;

	g_assert_cmpint(proxy_socks_parse_udp(dgram, sizeof dgram, &r), ==, PROXY_SOCKS_OK);
	g_assert_cmpuint(r.len, ==, 10);
	g_assert_cmpuint(r.port, ==, 8081);
	g_assert_cmpuint(r.frag, ==, 0);
	g_assert_cmpint(proxy_socks_parse_udp(frag, sizeof frag, &r), ==, PROXY_SOCKS_OK);
	g_assert_cmpuint(r.frag, ==, 3);
	g_assert_cmpint(proxy_socks_parse_udp(rsv, sizeof rsv, &r), ==, PROXY_SOCKS_MALFORMED);
	g_assert_cmpint(proxy_socks_parse_udp(shorty, sizeof shorty, &r), ==, PROXY_SOCKS_MALFORMED);
	g_assert_cmpint(proxy_socks_parse_udp(dgram, 3, &r), ==, PROXY_SOCKS_MALFORMED);
	g_assert_cmpint(proxy_socks_parse_udp(name, sizeof name, &r), ==, PROXY_SOCKS_OK);
	g_assert_cmpstr(r.name, ==, "peer");
	g_assert_cmpuint(r.port, ==, 53);
}

static void
test_auth(void)
{
	const guint8 msg[] = { 1, 4, 'u', 's', 'e', 'r', 6, 's', 'e', 'c', 'r', 'e', 't' };
	const guint8 v5[] = { 5, 4, 'u', 's', 'e', 'r', 1, 'p' };
	const guint8 no_user[] = { 1, 0, 1, 'p' };
	const guint8 no_pass[] = { 1, 1, 'u', 0 };
	ProxySocksAuth a;
	gsize want = 0;

	g_assert_cmpint(parse_copy(parse_auth, msg, sizeof msg, &a, &want), ==, PROXY_SOCKS_OK);
	g_assert_cmpuint(a.len, ==, sizeof msg);
	g_assert_cmpuint(a.user_len, ==, 4);
	g_assert_cmpuint(a.password_len, ==, 6);
	check_prefixes(parse_auth, msg, sizeof msg, PROXY_SOCKS_AUTH_MAX);
	/* Over the caller's own buffer: the strings point into it. */
	g_assert_cmpint(proxy_socks_parse_auth(msg, sizeof msg, &a, &want), ==, PROXY_SOCKS_OK);
	g_assert_true(a.user == msg + 2 && a.password == msg + 7);
	g_assert_cmpint(parse_copy(parse_auth, v5, sizeof v5, &a, &want), ==,
			PROXY_SOCKS_BAD_VERSION);
	g_assert_cmpint(parse_copy(parse_auth, no_user, sizeof no_user, &a, &want), ==,
			PROXY_SOCKS_MALFORMED);
	g_assert_cmpint(parse_copy(parse_auth, no_pass, sizeof no_pass, &a, &want), ==,
			PROXY_SOCKS_MALFORMED);
}

static void
test_reply(void)
{
	const guint8 v4[4] = { 192, 168, 77, 2 };
	const guint8 v6[16] = { 0xfd, 0x77, [15] = 2 };
	const guint8 want4[] = { 5, 0, 0, 1, 192, 168, 77, 2, 0xc0, 0x01 };
	const guint8 want_fail[] = { 5, 5, 0, 1, 0, 0, 0, 0, 0, 0 };
	const guint8 want_udp6[] = { 0, 0, 0, 4, 0xfd, 0x77, 0, 0, 0, 0, 0, 0,
				     0, 0, 0, 0, 0, 0, 0, 2, 0, 53 };
	guint8 buf[PROXY_SOCKS_REPLY_MAX];

	g_assert_cmpuint(proxy_socks_build_reply(buf, sizeof buf, 0, v4, 4, 49153), ==, 10);
	g_assert_cmpmem(buf, 10, want4, sizeof want4);
	g_assert_cmpuint(proxy_socks_build_reply(buf, sizeof buf, 5, NULL, 0, 0), ==, 10);
	g_assert_cmpmem(buf, 10, want_fail, sizeof want_fail);
	g_assert_cmpuint(proxy_socks_build_udp_header(buf, sizeof buf, v6, 16, 53), ==, 22);
	g_assert_cmpmem(buf, 22, want_udp6, sizeof want_udp6);
	/* Too small, or an address that is neither family: nothing written. */
	memset(buf, 0xaa, sizeof buf);
	g_assert_cmpuint(proxy_socks_build_reply(buf, 21, 0, v6, 16, 1), ==, 0);
	g_assert_cmpuint(proxy_socks_build_reply(buf, sizeof buf, 0, v6, 5, 1), ==, 0);
	g_assert_cmpuint(buf[0], ==, 0xaa);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/proxy-socks/greeting", test_greeting);
	g_test_add_func("/proxy-socks/greeting/bad", test_greeting_bad);
	g_test_add_func("/proxy-socks/request/ipv4", test_request_ipv4);
	g_test_add_func("/proxy-socks/request/ipv6", test_request_ipv6);
	g_test_add_func("/proxy-socks/request/name", test_request_name);
	g_test_add_func("/proxy-socks/request/udp", test_request_udp);
	g_test_add_func("/proxy-socks/request/bad", test_request_bad);
	g_test_add_func("/proxy-socks/request/truncated-name", test_request_truncated_name);
	g_test_add_func("/proxy-socks/udp-header", test_udp_header);
	g_test_add_func("/proxy-socks/auth", test_auth);
	g_test_add_func("/proxy-socks/reply", test_reply);
	return g_test_run();
}
