/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ra-send.c: sends IPv6 router advertisements with one prefix (SLAAC) and one RDNSS server, for tests; no radvd in the image. */
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * usage: ra-send IFNAME PREFIX DNS|- [COUNT]
 * Sends COUNT (default 10) router advertisements, one a second, to ff02::1
 * out of IFNAME: router lifetime 0 (not a default router), a /64 PREFIX
 * with the on-link and autonomous flags (RFC 4862 SLAAC), and unless "-"
 * DNS as an RDNSS option (RFC 8106). The kernel fills in the ICMPv6
 * checksum and the link-local source address.
 */

static size_t
build_ra(uint8_t *b, const struct in6_addr *prefix, const struct in6_addr *dns /* or NULL */)
{
	size_t off = 16;

	memset(b, 0, 16 + 32 + 24);
	b[0] = ND_ROUTER_ADVERT;
	b[4] = 64;                      /* cur hop limit */
	/* router lifetime 0, reachable and retrans timers unspecified */
	/* Prefix information: type 3, length 4 (32 bytes). */
	b[off] = 3;
	b[off + 1] = 4;
	b[off + 2] = 64;                /* prefix length */
	b[off + 3] = 0xc0;              /* L and A */
	memset(b + off + 4, 0xff, 4);   /* valid lifetime: infinite */
	memset(b + off + 8, 0xff, 4);   /* preferred lifetime: infinite */
	memcpy(b + off + 16, prefix, 16);
	off += 32;
	if (!dns)
		return off;
	/* RDNSS: type 25, length 3 (24 bytes), lifetime 600 s, one server. */
	b[off] = 25;
	b[off + 1] = 3;
	b[off + 6] = 600 >> 8;
	b[off + 7] = 600 & 0xff;
	memcpy(b + off + 8, dns, 16);
	return off + 24;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };
	struct in6_addr prefix, dns;
	uint8_t ra[128];
	int hops = 255, count = argc > 4 ? atoi(argv[4]) : 10;
	unsigned ifindex;
	size_t len;
	int fd;

	if (argc < 4 || !(ifindex = if_nametoindex(argv[1])) ||
	    inet_pton(AF_INET6, argv[2], &prefix) != 1 ||
	    (strcmp(argv[3], "-") && inet_pton(AF_INET6, argv[3], &dns) != 1)) {
		fprintf(stderr, "usage: %s IFNAME PREFIX DNS|- [COUNT]\n", argv[0]);
		return 2;
	}
	inet_pton(AF_INET6, "ff02::1", &to.sin6_addr);
	to.sin6_scope_id = ifindex;
	fd = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	/* RFC 4861: a router advertisement must arrive with hop limit 255. */
	if (fd < 0 || setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof hops) < 0 ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof ifindex) < 0) {
		perror("ra-send: socket");
		return 1;
	}
	len = build_ra(ra, &prefix, strcmp(argv[3], "-") ? &dns : NULL);
	for (int i = 0; i < count; i++) {
		if (sendto(fd, ra, len, 0, (struct sockaddr *)&to, sizeof to) < 0)
			perror("ra-send: sendto");
		sleep(1);
	}
	return 0;
}
