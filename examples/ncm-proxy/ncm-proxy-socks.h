/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-socks.h: SOCKS5 (RFC 1928) and its username/password auth (RFC 1929), parsed and built in pure C. */
#pragma once

/*
 * Every byte here comes from a client of the proxy: possibly another user
 * on the machine, or a remote host when ncm-proxy listens beyond loopback.
 * The parsers take what has arrived so far and say one of three things:
 * complete (and how many bytes the message took, so bytes pipelined after
 * it are kept), incomplete (and the least total length that could
 * complete it), or wrong (and which SOCKS reply code fits). They never read
 * past @len and hold no state between calls: the caller parses again from
 * the start once more bytes came. No GLib, so the fuzzer links this alone.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROXY_SOCKS_VERSION 5
#define PROXY_SOCKS_AUTH_VERSION 1

/* Methods (RFC 1928 section 3). */
#define PROXY_SOCKS_METHOD_NONE 0x00
#define PROXY_SOCKS_METHOD_USERPASS 0x02
#define PROXY_SOCKS_METHOD_REFUSED 0xFF

/* Commands. */
#define PROXY_SOCKS_CMD_CONNECT 1
#define PROXY_SOCKS_CMD_BIND 2
#define PROXY_SOCKS_CMD_UDP 3

/* Address types. */
#define PROXY_SOCKS_ATYP_IPV4 1
#define PROXY_SOCKS_ATYP_NAME 3
#define PROXY_SOCKS_ATYP_IPV6 4

/* Reply codes (section 6). */
#define PROXY_SOCKS_REP_OK 0x00
#define PROXY_SOCKS_REP_FAILURE 0x01
#define PROXY_SOCKS_REP_NOT_ALLOWED 0x02
#define PROXY_SOCKS_REP_NET_UNREACHABLE 0x03
#define PROXY_SOCKS_REP_HOST_UNREACHABLE 0x04
#define PROXY_SOCKS_REP_REFUSED 0x05
#define PROXY_SOCKS_REP_TTL_EXPIRED 0x06
#define PROXY_SOCKS_REP_BAD_COMMAND 0x07
#define PROXY_SOCKS_REP_BAD_ADDRESS 0x08

/* The longest greeting (2 + 255 methods), request (4 + 1 + 255 + 2) and
 * auth message (3 + 255 + 255): a client that sent this much without
 * completing one is wrong, never merely slow. */
#define PROXY_SOCKS_GREETING_MAX 257
#define PROXY_SOCKS_REQUEST_MAX 262
#define PROXY_SOCKS_AUTH_MAX 513
/* The longest reply this file builds (IPv6). */
#define PROXY_SOCKS_REPLY_MAX 22

typedef enum {
	PROXY_SOCKS_OK,
	PROXY_SOCKS_INCOMPLETE,
	PROXY_SOCKS_BAD_VERSION,     /* not SOCKS5 (or auth version 1): no reply, close */
	PROXY_SOCKS_MALFORMED,       /* answer PROXY_SOCKS_REP_FAILURE, close */
	PROXY_SOCKS_BAD_COMMAND,     /* answer PROXY_SOCKS_REP_BAD_COMMAND */
	PROXY_SOCKS_BAD_ADDRESS,     /* answer PROXY_SOCKS_REP_BAD_ADDRESS */
	PROXY_SOCKS_N_STATUS,
} ProxySocksStatus;

const char *proxy_socks_status_name(ProxySocksStatus status);

/* What a failed parse should answer: a reply code, or -1 for no reply. */
int proxy_socks_status_reply(ProxySocksStatus status);

/* VER NMETHODS METHODS... */
typedef struct {
	size_t len;          /* bytes the greeting took */
	bool offers_none;    /* method 0x00 offered */
	bool offers_userpass;
} ProxySocksGreeting;

/*
 * On OK fills @ret; on INCOMPLETE sets *@ret_need to the least total length
 * that could complete the message (always > @len). Other statuses leave
 * both alone.
 */
ProxySocksStatus proxy_socks_parse_greeting(const uint8_t *buf, size_t len,
					    ProxySocksGreeting *ret, size_t *ret_need);

/* VER CMD RSV ATYP DST.ADDR DST.PORT, and the same address form in UDP headers. */
typedef struct {
	size_t len;        /* bytes the request (or UDP header) took */
	uint8_t command;   /* CONNECT, BIND or UDP (UDP headers: 0) */
	uint8_t atyp;      /* IPV4, NAME or IPV6 */
	uint8_t addr[16];  /* IPV4: the first 4 bytes; IPV6: all 16 */
	char name[256];    /* NAME: 1-255 printable ASCII characters, NUL-terminated */
	uint16_t port;
	uint8_t frag;      /* UDP headers only */
} ProxySocksRequest;

/*
 * A request. BIND and unknown commands are BAD_COMMAND, unknown address
 * types BAD_ADDRESS; a name that is empty or holds a byte outside 0x21-0x7E
 * (spaces, control bytes, NUL) is MALFORMED, as is a non-zero RSV.
 */
ProxySocksStatus proxy_socks_parse_request(const uint8_t *buf, size_t len,
					   ProxySocksRequest *ret, size_t *ret_need);

/*
 * A UDP ASSOCIATE datagram's header: RSV(2) FRAG ATYP DST.ADDR DST.PORT;
 * the payload starts at ret->len. A datagram is whole or nothing: a short
 * one is MALFORMED, never INCOMPLETE.
 */
ProxySocksStatus proxy_socks_parse_udp(const uint8_t *buf, size_t len, ProxySocksRequest *ret);

/* RFC 1929: VER ULEN UNAME PLEN PASSWD; the strings point into @buf. */
typedef struct {
	size_t len;
	const uint8_t *user;
	size_t user_len;       /* 1-255 */
	const uint8_t *password;
	size_t password_len;   /* 1-255 */
} ProxySocksAuth;

ProxySocksStatus proxy_socks_parse_auth(const uint8_t *buf, size_t len, ProxySocksAuth *ret,
					size_t *ret_need);

/*
 * Writes VER REP RSV ATYP BND.ADDR BND.PORT for an IPv4 (@addr_len 4) or
 * IPv6 (16) address; @addr NULL writes 0.0.0.0:0. Returns the length, or 0
 * when @size is too small (nothing written).
 */
size_t proxy_socks_build_reply(uint8_t *buf, size_t size, uint8_t rep, const uint8_t *addr,
			       size_t addr_len, uint16_t port);

/*
 * A UDP header in front of a datagram (FRAG 0) for an IPv4 or IPv6 source:
 * the same layout as a reply with RSV RSV FRAG instead of VER REP RSV.
 * Returns the length or 0 when @size is too small.
 */
size_t proxy_socks_build_udp_header(uint8_t *buf, size_t size, const uint8_t *addr,
				    size_t addr_len, uint16_t port);
