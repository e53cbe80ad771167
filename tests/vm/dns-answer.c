/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dns-answer.c: a tiny authoritative DNS responder for tests: A and AAAA records given on the command line, over UDP. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * usage: dns-answer ADDR NAME=IP [NAME=IP...]
 * Listens on ADDR port 53 (IPv4 or IPv6) and answers each query for NAME
 * with its IPs of the asked type (A or AAAA); other names get NXDOMAIN, a
 * known name without that type an empty answer. One question per query,
 * class IN. Prints one line per query ("query NAME TYPE -> N answers") so
 * a test can see what was asked. Not a server for anything but tests.
 */

#define MAX_RECORDS 16
#define MSG_MAX 512

typedef struct {
	char name[256];
	int family;
	uint8_t addr[16];
} Record;

static Record records[MAX_RECORDS];
static int n_records;

static int
add_record(const char *spec)
{
	const char *eq = strchr(spec, '=');
	Record *r = &records[n_records];

	if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof r->name || n_records == MAX_RECORDS)
		return -1;
	memcpy(r->name, spec, (size_t)(eq - spec));
	r->name[eq - spec] = '\0';
	if (inet_pton(AF_INET, eq + 1, r->addr) == 1)
		r->family = AF_INET;
	else if (inet_pton(AF_INET6, eq + 1, r->addr) == 1)
		r->family = AF_INET6;
	else
		return -1;
	n_records++;
	return 0;
}

/* The question's name as dotted text; returns the offset after QNAME, or 0. */
static size_t
read_qname(const uint8_t *msg, size_t len, char *out, size_t out_size)
{
	size_t off = 12, used = 0;

	while (off < len) {
		size_t label = msg[off++];

		if (label == 0)
			return used ? off : 0;
		/* No compression in a question we accept, and a bounded name. */
		if (label > 63 || off + label > len || used + label + 2 > out_size)
			return 0;
		if (used)
			out[used++] = '.';
		memcpy(out + used, msg + off, label);
		used += label;
		out[used] = '\0';
		off += label;
	}
	return 0;
}

static size_t
put_answer(uint8_t *out, size_t off, const Record *r)
{
	size_t alen = r->family == AF_INET ? 4 : 16;
	uint16_t type = r->family == AF_INET ? 1 : 28;
	const uint8_t head[12] = { 0xc0, 12, (uint8_t)(type >> 8), (uint8_t)type, 0, 1,
				   0, 0, 0, 60, 0, (uint8_t)alen };

	if (off + sizeof head + alen > MSG_MAX)
		return off;
	memcpy(out + off, head, sizeof head);
	memcpy(out + off + sizeof head, r->addr, alen);
	return off + sizeof head + alen;
}

/* Builds the response to @q; returns its length, 0 to stay silent. */
static size_t
answer(const uint8_t *q, size_t len, uint8_t *out)
{
	char name[256];
	size_t qend = len >= 12 ? read_qname(q, len, name, sizeof name) : 0;
	uint16_t qtype;
	int known = 0, count = 0;
	size_t off;

	if (!qend || qend + 4 > len || (q[2] & 0x80) || q[4] != 0 || q[5] != 1)
		return 0;
	qtype = (uint16_t)(q[qend] << 8 | q[qend + 1]);
	memcpy(out, q, qend + 4);
	off = qend + 4;
	for (int i = 0; i < n_records; i++) {
		if (strcasecmp(records[i].name, name))
			continue;
		known = 1;
		if ((qtype == 1 && records[i].family == AF_INET) ||
		    (qtype == 28 && records[i].family == AF_INET6)) {
			off = put_answer(out, off, &records[i]);
			count++;
		}
	}
	out[2] = 0x84 | (q[2] & 0x01);    /* QR, AA, the query's RD */
	out[3] = known ? 0 : 3;           /* NOERROR or NXDOMAIN */
	out[6] = 0;
	out[7] = (uint8_t)count;
	memset(out + 8, 0, 4);
	printf("query %s %s -> %d answer(s)%s\n", name, qtype == 1 ? "A" : qtype == 28 ? "AAAA" : "?",
	       count, known ? "" : ", NXDOMAIN");
	fflush(stdout);
	return off;
}

static int
open_socket(const char *listen_addr)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(53) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(53) };
	int v6 = inet_pton(AF_INET6, listen_addr, &a6.sin6_addr) == 1;
	int fd;

	if (!v6 && inet_pton(AF_INET, listen_addr, &a4.sin_addr) != 1)
		return -1;
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
			   v6 ? sizeof a6 : sizeof a4) < 0) {
		perror("dns-answer: bind");
		return -1;
	}
	return fd;
}

int
main(int argc, char **argv)
{
	uint8_t q[MSG_MAX], out[MSG_MAX];
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: %s ADDR NAME=IP [NAME=IP...]\n", argv[0]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (add_record(argv[i]) < 0) {
			fprintf(stderr, "dns-answer: bad record %s (NAME=IPv4 or NAME=IPv6)\n", argv[i]);
			return 2;
		}
	}
	fd = open_socket(argv[1]);
	if (fd < 0)
		return 1;
	printf("dns-answer: serving %d record(s) on %s\n", n_records, argv[1]);
	fflush(stdout);
	for (;;) {
		struct sockaddr_storage from;
		socklen_t from_len = sizeof from;
		ssize_t n = recvfrom(fd, q, sizeof q, 0, (struct sockaddr *)&from, &from_len);
		size_t len;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 1;
		len = answer(q, (size_t)n, out);
		if (len)
			sendto(fd, out, len, 0, (struct sockaddr *)&from, from_len);
	}
}
