/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* socks-udp.c: a UDP echo server, and a SOCKS5 UDP ASSOCIATE client that checks every echo, for the proxy tests. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The largest UDP payload over IPv4, and so to the proxy's relay. */
#define UDP_MAX 65507

/*
 * socks-udp echo ADDR PORT
 *   echoes every datagram back to its sender.
 * socks-udp client SOCKS_IP SOCKS_PORT HOST PORT COUNT [MAX]
 *   UDP ASSOCIATE through the SOCKS5 server, then COUNT datagrams of
 *   1..MAX bytes (default 1400; sizes and contents from the sequence
 *   number, the last one MAX bytes) to HOST
 *   (an IPv4 or IPv6 address, or a name the proxy resolves) : PORT, one at
 *   a time; each echo must come back with a header naming HOST's address
 *   and PORT and the same payload (3 tries a datagram, 2 s each). Prints
 *   "udp: N sent, N echoed, N wrong" and exits 0 only when all came back.
 */

static uint8_t
pattern(uint32_t seq, size_t i)
{
	return (uint8_t)((seq * 2654435761u) >> 24 ^ i * 7);
}

static int
echo(const char *addr, int port)
{
	struct sockaddr_storage ss = { 0 }, from;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	uint8_t buf[65536];
	int fd;

	if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		len = sizeof *a6;
	} else if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		len = sizeof *a4;
	} else {
		return 2;
	}
	fd = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0) {
		perror("socks-udp echo: bind");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		socklen_t flen = sizeof from;
		ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen);

		if (n >= 0)
			sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, flen);
		else if (errno != EINTR)
			return 1;
	}
}

static int
read_exact(int fd, uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = read(fd, buf, len);

		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The SOCKS handshake; fills @relay with BND.ADDR:BND.PORT. Returns the control fd. */
static int
associate(const char *ip, int port, struct sockaddr_storage *relay, socklen_t *relay_len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	const uint8_t hello[3] = { 5, 1, 0 };
	const uint8_t req[10] = { 5, 3, 0, 1, 0, 0, 0, 0, 0, 0 };
	uint8_t r[22];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1 || fd < 0 ||
	    connect(fd, (struct sockaddr *)&a, sizeof a) < 0 || write(fd, hello, 3) != 3 ||
	    read_exact(fd, r, 2) || r[1] != 0 || write(fd, req, sizeof req) != sizeof req ||
	    read_exact(fd, r, 4) || r[1] != 0) {
		fprintf(stderr, "socks-udp: the SOCKS handshake failed\n");
		return -1;
	}
	memset(relay, 0, sizeof *relay);
	if (r[3] == 1) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)relay;

		if (read_exact(fd, r + 4, 6))
			return -1;
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, r + 4, 4);
		memcpy(&s4->sin_port, r + 8, 2);
		*relay_len = sizeof *s4;
	} else if (r[3] == 4) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)relay;

		if (read_exact(fd, r + 4, 18))
			return -1;
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, r + 4, 16);
		memcpy(&s6->sin6_port, r + 20, 2);
		*relay_len = sizeof *s6;
	} else {
		return -1;
	}
	return fd;
}

/* RSV RSV FRAG ATYP ADDR PORT for HOST:PORT; returns its length. */
static size_t
header(uint8_t *b, const char *host, int port)
{
	size_t n;

	memset(b, 0, 3);
	if (inet_pton(AF_INET, host, b + 4) == 1) {
		b[3] = 1;
		n = 8;
	} else if (inet_pton(AF_INET6, host, b + 4) == 1) {
		b[3] = 4;
		n = 20;
	} else {
		b[3] = 3;
		b[4] = (uint8_t)strlen(host);
		memcpy(b + 5, host, b[4]);
		n = 5 + b[4];
	}
	b[n] = (uint8_t)(port >> 8);
	b[n + 1] = (uint8_t)port;
	return n + 2;
}

/* The echo of datagram @seq: a header from an address (not a name) and PORT, then the payload. */
static int
echo_ok(const uint8_t *b, size_t n, uint32_t seq, size_t size, int port)
{
	size_t h = b[3] == 1 ? 10 : b[3] == 4 ? 22 : 0;

	if (n < 4 || h == 0 || n != h + size || b[0] || b[1] || b[2] ||
	    ((b[h - 2] << 8) | b[h - 1]) != port)
		return 0;
	for (size_t i = 0; i < size; i++)
		if (b[h + i] != pattern(seq, i))
			return 0;
	return 1;
}

static int
client(char **argv)
{
	struct sockaddr_storage relay;
	socklen_t relay_len;
	int port = atoi(argv[5]), count = atoi(argv[6]);
	size_t max = argv[7] ? (size_t)atoi(argv[7]) : 1400;
	int ctl = associate(argv[2], atoi(argv[3]), &relay, &relay_len);
	int fd, echoed = 0, wrong = 0;
	static uint8_t out[UDP_MAX + 64], in[UDP_MAX + 64];

	if (ctl < 0)
		return 1;
	if (max < 1 || max > UDP_MAX - 22) {
		fprintf(stderr, "socks-udp: MAX from 1 to %d\n", UDP_MAX - 22);
		return 2;
	}
	/* BND.ADDR 0.0.0.0 would mean "the server's address". */
	fd = socket(relay.ss_family, SOCK_DGRAM, 0);
	for (int seq = 0; seq < count; seq++) {
		size_t h = header(out, argv[4], port);
		size_t size = seq == count - 1 ? max : 1 + (size_t)seq * 97 % max;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int got = 0;

		for (size_t i = 0; i < size; i++)
			out[h + i] = pattern((uint32_t)seq, i);
		for (int attempt = 0; attempt < 3 && !got; attempt++) {
			sendto(fd, out, h + size, 0, (struct sockaddr *)&relay, relay_len);
			while (!got && poll(&p, 1, 2000) == 1) {
				ssize_t n = recv(fd, in, sizeof in, 0);

				if (n > 0 && echo_ok(in, (size_t)n, (uint32_t)seq, size, port))
					got = 1;
				else if (n > 0)
					wrong++; /* a stale echo of an earlier try, or damage */
			}
		}
		echoed += got;
	}
	printf("udp: %d sent, %d echoed, %d wrong\n", count, echoed, wrong);
	close(ctl);
	return echoed == count ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "echo"))
		return echo(argv[2], atoi(argv[3]));
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "client"))
		return client(argv);
	fprintf(stderr, "usage: %s echo ADDR PORT | client SOCKS_IP SOCKS_PORT HOST PORT COUNT [MAX]\n",
		argv[0]);
	return 2;
}
