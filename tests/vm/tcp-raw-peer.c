/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tcp-raw-peer.c: a hostile TCP peer on a packet socket: 1-byte segments in and out of order, a spoofed SYN flood (issue 16, item 2). */

/*
 * Runs in netns "peer" on the gadget's netdev and speaks Ethernet itself,
 * from an address the peer's kernel does not own (--src), so that the
 * kernel neither answers nor resets what the target sends there; it
 * answers ARP for that address itself. Against one TCP listener of the
 * target (vmtest-lwip serve), one after the other:
 *
 *  1. --inorder N: N one-byte segments in order;
 *  2. --ooseq N:   N more, in blocks of --block bytes whose first byte is
 *     sent last, so each block waits out of order until its hole fills;
 *  3. --syn S:     S SYNs from forged sources (--syn-rate per second),
 *     nobody answering their SYN-ACKs, and halfway through a real
 *     connection, retried as a client would for --settle seconds.
 *
 * Lost segments are resent from the target's ACKs, so the byte stream
 * (tcp-raw-peer.h) arrives whole. With --rss-pid it samples the target's
 * VmRSS every 100 ms and prints each phase's peak. Output: one line per
 * phase, then "stream: N bytes" (what the target must have received).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ncm-le.h"
#include "tcp-raw-peer.h"

#define ETH_HLEN_ 14
#define IP_HLEN 20
#define TCP_HLEN 20
#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_ACK 0x10
#define OUR_WINDOW 65535
/* No ACK progress for this long: resend from the ACK. Long enough for a
 * sanitized target under TCG, whose ACKs queue behind its other traffic:
 * resending early only adds to the queue. */
#define STALL_MS 1500
#define MAX_STALLS 40

typedef struct {
	uint16_t sport;
	uint32_t iss, irs;
	uint64_t acked;           /* stream bytes the target acknowledged */
	uint64_t sent;            /* highest stream offset sent + 1 */
	int64_t established_at;
	bool synack, established, rst;
} Conn;

static struct {
	int fd, ifindex;
	uint8_t mac[6], tmac[6];
	bool have_tmac;
	uint32_t tip, sip;        /* host byte order */
	uint16_t tport;
	Conn *conns[4];
	unsigned n_conns;
	uint32_t rnd;
	int rss_pid;
	long rss_peak, rss_last;
	int64_t rss_at;
	unsigned long resends;
	bool syn_onlink;
} P = { .fd = -1, .rnd = 0x2545f491u };

static void
die(const char *what)
{
	fprintf(stderr, "tcp-raw-peer: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int64_t
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static uint32_t
rnd(void)
{
	P.rnd ^= P.rnd << 13;
	P.rnd ^= P.rnd >> 17;
	P.rnd ^= P.rnd << 5;
	return P.rnd;
}

/* ---- the target's memory ----------------------------------------------- */

static long
rss_kb(void)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", P.rss_pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void
rss_sample(bool force)
{
	int64_t t = now_ms();

	if (!P.rss_pid || (!force && t - P.rss_at < 100))
		return;
	P.rss_at = t;
	P.rss_last = rss_kb();
	if (P.rss_last > P.rss_peak)
		P.rss_peak = P.rss_last;
}

/* ---- frames ------------------------------------------------------------- */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint32_t
sum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t
sum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void
send_frame(const uint8_t *f, size_t len)
{
	uint8_t pad[60] = { 0 };

	if (len < sizeof(pad)) {
		memcpy(pad, f, len);
		f = pad;
		len = sizeof(pad);
	}
	/* A full socket buffer drops the frame: TCP resends, a flood does not care. */
	if (send(P.fd, f, len, 0) < 0 && errno != ENOBUFS && errno != EAGAIN)
		die("send");
}

static void
send_tcp(uint32_t src, uint16_t sport, uint32_t seq, uint32_t ack, uint8_t flags,
	 const uint8_t *data, size_t len)
{
	uint8_t f[ETH_HLEN_ + IP_HLEN + TCP_HLEN + 8 + 64];
	uint8_t *ip = f + ETH_HLEN_, *tcp = ip + IP_HLEN;
	size_t opt = (flags & F_SYN) ? 8 : 0, tcp_len = TCP_HLEN + opt + len;
	uint8_t pseudo[12];

	if (len > 64)
		len = 64, tcp_len = TCP_HLEN + opt + len;
	memcpy(f, P.tmac, 6);
	memcpy(f + 6, P.mac, 6);
	put16(f + 12, ETHERTYPE_IP);
	memset(ip, 0, IP_HLEN);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(IP_HLEN + tcp_len));
	put16(ip + 4, (uint16_t)rnd());
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	put32(ip + 12, src);
	put32(ip + 16, P.tip);
	put16(ip + 10, sum_fold(sum_add(0, ip, IP_HLEN)));
	memset(tcp, 0, TCP_HLEN);
	put16(tcp, sport);
	put16(tcp + 2, P.tport);
	put32(tcp + 4, seq);
	put32(tcp + 8, ack);
	tcp[12] = (uint8_t)(((TCP_HLEN + opt) / 4) << 4);
	tcp[13] = flags;
	put16(tcp + 14, OUR_WINDOW);
	if (opt) {
		/* MSS 1460, NOP, window scale 0: the scale option lets the
		 * target open its whole window (lwIP keeps 64 KiB without it). */
		const uint8_t syn_opts[8] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 0 };

		memcpy(tcp + TCP_HLEN, syn_opts, sizeof(syn_opts));
	}
	if (len)
		memcpy(tcp + TCP_HLEN + opt, data, len);
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_TCP;
	put16(pseudo + 10, (uint16_t)tcp_len);
	put16(tcp + 16, sum_fold(sum_add(sum_add(0, pseudo, 12), tcp, tcp_len)));
	send_frame(f, ETH_HLEN_ + IP_HLEN + tcp_len);
}

static void
send_arp(uint16_t op, const uint8_t *dmac, uint32_t tip)
{
	uint8_t f[42];

	memcpy(f, op == 1 ? (const uint8_t *)"\xff\xff\xff\xff\xff\xff" : dmac, 6);
	memcpy(f + 6, P.mac, 6);
	put16(f + 12, ETHERTYPE_ARP);
	put16(f + 14, 1);
	put16(f + 16, ETHERTYPE_IP);
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, op);
	memcpy(f + 22, P.mac, 6);
	put32(f + 28, P.sip);
	memcpy(f + 32, op == 1 ? (const uint8_t *)"\0\0\0\0\0\0" : dmac, 6);
	put32(f + 38, tip);
	send_frame(f, sizeof(f));
}

/* ---- what the target sends ---------------------------------------------- */

static void
on_arp(const uint8_t *f, size_t len)
{
	uint16_t op = ncm_be16_at(f, len, 20);
	uint32_t sender = ncm_be32_at(f, len, 28), target = ncm_be32_at(f, len, 38);
	const uint8_t *smac = ncm_bytes_at(f, len, 22, 6);

	if (!smac)
		return;
	if (op == 2 && sender == P.tip) {
		memcpy(P.tmac, smac, 6);
		P.have_tmac = true;
	} else if (op == 1 && target == P.sip) {
		send_arp(2, smac, sender);
	}
}

static void
on_tcp(const uint8_t *f, size_t len)
{
	size_t ip_len = (size_t)(ncm_le8_at(f, len, ETH_HLEN_) & 0x0f) * 4, t = ETH_HLEN_ + ip_len;
	uint16_t dport = ncm_be16_at(f, len, t + 2);
	uint32_t seq = ncm_be32_at(f, len, t + 4), ack = ncm_be32_at(f, len, t + 8);
	uint8_t flags = ncm_le8_at(f, len, t + 13);

	if (ncm_be32_at(f, len, ETH_HLEN_ + 12) != P.tip || ncm_be32_at(f, len, ETH_HLEN_ + 16) != P.sip ||
	    ncm_le8_at(f, len, ETH_HLEN_ + 9) != IPPROTO_TCP || !ncm_le_fits(len, t, TCP_HLEN))
		return;
	for (unsigned i = 0; i < P.n_conns; i++) {
		Conn *c = P.conns[i];
		uint32_t off = ack - (c->iss + 1);

		if (c->sport != dport)
			continue;
		if (flags & F_RST)
			c->rst = true;
		if ((flags & (F_SYN | F_ACK)) == (F_SYN | F_ACK) && ack == c->iss + 1 && !c->synack) {
			c->synack = true;
			c->irs = seq;
		}
		if (c->established && (flags & F_ACK) && off > c->acked && off <= c->sent)
			c->acked = off;
	}
}

/* Reads what arrived, waiting up to @ms for the first frame. */
static void
pump(int ms)
{
	struct pollfd pfd = { .fd = P.fd, .events = POLLIN };
	uint8_t f[2048];

	rss_sample(false);
	if (poll(&pfd, 1, ms) <= 0)
		return;
	for (;;) {
		ssize_t n = recv(P.fd, f, sizeof(f), MSG_DONTWAIT);

		if (n < 0)
			break;
		if ((size_t)n < ETH_HLEN_ || !memcmp(f + 6, P.mac, 6))
			continue;  /* ours, looped back by the packet socket */
		if (ncm_be16_at(f, (size_t)n, 12) == ETHERTYPE_ARP)
			on_arp(f, (size_t)n);
		else if (ncm_be16_at(f, (size_t)n, 12) == ETHERTYPE_IP)
			on_tcp(f, (size_t)n);
	}
}

/* ---- connections ---------------------------------------------------------- */

static Conn *
conn_new(uint16_t sport)
{
	Conn *c = calloc(1, sizeof(*c));

	if (!c || P.n_conns == sizeof(P.conns) / sizeof(P.conns[0]))
		die("conn_new");
	c->sport = sport;
	c->iss = rnd();
	P.conns[P.n_conns++] = c;
	return c;
}

static void
conn_syn(Conn *c)
{
	send_tcp(P.sip, c->sport, c->iss, 0, F_SYN, NULL, 0);
}

/* After the SYN-ACK: the handshake's last ACK. */
static void
conn_establish(Conn *c)
{
	send_tcp(P.sip, c->sport, c->iss + 1, c->irs + 1, F_ACK, NULL, 0);
	c->established = true;
	c->established_at = now_ms();
}

static bool
conn_connect(Conn *c, int secs)
{
	int64_t end = now_ms() + secs * 1000;

	/* One SYN a second, as a client retries: a reset (a late one, for an
	 * earlier attempt) must not make it send them back to back. */
	while (!c->synack && now_ms() < end) {
		c->rst = false;
		conn_syn(c);
		for (int64_t t = now_ms() + 1000; !c->synack && now_ms() < t;)
			pump(50);
	}
	if (c->synack)
		conn_establish(c);
	return c->established;
}

static void
send_byte(Conn *c, uint64_t off)
{
	uint8_t b = tcp_raw_pattern(off);

	send_tcp(P.sip, c->sport, c->iss + 1 + (uint32_t)off, c->irs + 1, F_ACK, &b, 1);
	if (off + 1 > c->sent)
		c->sent = off + 1;
}

/* Waits for the ACK to reach @want; FALSE after STALL_MS without progress. */
static bool
wait_acked(Conn *c, uint64_t want)
{
	uint64_t last = c->acked;
	int64_t t = now_ms();

	while (c->acked < want && !c->rst) {
		pump(10);
		if (c->acked != last) {
			last = c->acked;
			t = now_ms();
		} else if (now_ms() - t > STALL_MS) {
			if (P.resends < 10)
				printf("stall: acked %llu of %llu, sent up to %llu\n",
				       (unsigned long long)c->acked, (unsigned long long)want,
				       (unsigned long long)c->sent);
			return false;
		}
	}
	return !c->rst;
}

/* Stream bytes [from, to) as 1-byte segments, at most @window unacked. */
static bool
send_inorder(Conn *c, uint64_t from, uint64_t to, unsigned window)
{
	uint64_t next = from;
	unsigned stalls = 0;

	while (c->acked < to && !c->rst) {
		while (next < to && next < c->acked + window)
			send_byte(c, next++);
		if (!wait_acked(c, next < to ? c->acked + 1 : to)) {
			if (++stalls > MAX_STALLS)
				return false;
			P.resends++;
			next = c->acked;  /* go back: something was lost */
		}
	}
	return !c->rst;
}

/* One block, its first byte last: every other byte waits out of order. */
static void
send_block_ooseq(Conn *c, uint64_t start, uint64_t end)
{
	for (uint64_t o = end; o-- > start + 1;)
		send_byte(c, o);
	send_byte(c, start);
}

static bool
send_ooseq(Conn *c, uint64_t from, uint64_t to, unsigned block, unsigned window)
{
	uint64_t next = from;
	unsigned stalls = 0;

	while (c->acked < to && !c->rst) {
		while (next < to && next < c->acked + window) {
			uint64_t end = next + block < to ? next + block : to;

			send_block_ooseq(c, next, end);
			next = end;
			pump(0);
		}
		if (!wait_acked(c, next < to ? c->acked + 1 : to)) {
			if (++stalls > MAX_STALLS)
				return false;
			P.resends++;
			next = c->acked;
		}
	}
	return !c->rst;
}

/* ---- the SYN flood ---------------------------------------------------------- */

/*
 * A forged source. Off-link (10.0.0.0/8, the default): the target has no
 * route back, or sends its SYN-ACKs to its gateway. On-link (--syn-onlink):
 * .100 to .249 of the target's /24, which nobody answers ARP for, so each
 * SYN-ACK also costs the target a pending ARP entry.
 */
static uint32_t
spoofed_source(void)
{
	if (P.syn_onlink)
		return (P.tip & 0xffffff00u) | (100 + rnd() % 150);
	return 0x0a000000u | (rnd() & 0x00ffffffu);
}

/*
 * @count SYNs at up to @rate per second (0: as fast as the socket takes
 * them). Halfway through, @legit sends its SYN and is answered as SYN-ACKs
 * come, while the flood goes on. Returns when the flood ended.
 */
static void
syn_flood(unsigned count, unsigned rate, Conn *legit, int64_t *legit_at)
{
	int64_t t0 = now_ms();

	for (unsigned i = 0; i < count; i++) {
		send_tcp(spoofed_source(), (uint16_t)(1024 + rnd() % 60000), rnd(), 0, F_SYN, NULL, 0);
		if (i == count / 2) {
			conn_syn(legit);
			*legit_at = now_ms();
		}
		if (i % 16 == 0)
			pump(0);
		if (legit->synack && !legit->established)
			conn_establish(legit);
		if (rate) {
			int64_t due = t0 + (int64_t)i * 1000 / rate;

			while (now_ms() < due)
				pump((int)(due - now_ms()));
		}
	}
}

/*
 * After the flood: @c sends 4 bytes and a FIN on the connection the
 * flood's SYN-ACK opened, and must see them acknowledged. A handshake the
 * target dropped meanwhile (its half-open connection evicted by newer
 * SYNs before our ACK came) ends in a reset: then it connects again, as a
 * client would, until @deadline. 1: the connection made during the flood
 * carried the bytes; 0: a later one did; -1: none.
 */
static int
legit_exchange(Conn *c, int64_t deadline)
{
	bool first = c->established;
	uint8_t b[4];

	for (unsigned i = 0; i < sizeof(b); i++)
		b[i] = tcp_raw_pattern(i);
	for (;;) {
		if (c->established && !c->rst) {
			c->sent = sizeof(b) + 1;  /* the FIN takes a sequence number too */
			send_tcp(P.sip, c->sport, c->iss + 1, c->irs + 1, F_ACK | F_FIN, b,
				 sizeof(b));
			if (wait_acked(c, sizeof(b)) && !c->rst)
				return first ? 1 : 0;
		}
		first = false;
		if (now_ms() >= deadline)
			return -1;
		/* A fresh connection from the next port: the target may still
		 * hold the last one, and nothing of it may count. */
		*c = (Conn){ .sport = (uint16_t)(c->sport + 1), .iss = rnd() };
		conn_connect(c, (int)((deadline - now_ms() + 999) / 1000));
	}
}

/* ---- main ------------------------------------------------------------------ */

static uint32_t
parse_ip(const char *opt, const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "tcp-raw-peer: --%s: not an IPv4 address: %s\n", opt, s);
		exit(2);
	}
	return ntohl(a.s_addr);
}

static void
open_packet(const char *ifname)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int size = 4 << 20;

	P.fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (P.fd < 0)
		die("packet socket (needs CAP_NET_RAW)");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(P.fd, SIOCGIFINDEX, &ifr) < 0)
		die(ifname);
	P.ifindex = ifr.ifr_ifindex;
	if (ioctl(P.fd, SIOCGIFHWADDR, &ifr) < 0)
		die("SIOCGIFHWADDR");
	memcpy(P.mac, ifr.ifr_hwaddr.sa_data, 6);
	sll.sll_ifindex = P.ifindex;
	if (bind(P.fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("bind");
	/* Past rmem_max/wmem_max (212992 by default): a window's ACKs arrive
	 * while we send, and must not be dropped meanwhile. */
	if (setsockopt(P.fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(P.fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(P.fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(P.fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

static void
resolve_target(void)
{
	for (int i = 0; i < 50 && !P.have_tmac; i++) {
		send_arp(1, NULL, P.tip);
		pump(200);
	}
	if (!P.have_tmac) {
		fprintf(stderr, "tcp-raw-peer: the target does not answer ARP\n");
		exit(1);
	}
}

static void
phase_begin(int64_t *t0)
{
	rss_sample(true);
	P.rss_peak = P.rss_last;
	P.resends = 0;
	*t0 = now_ms();
}

static void
phase_end(const char *name, int64_t t0, const char *extra)
{
	long before = P.rss_peak;

	rss_sample(true);
	printf("phase %s: %.1f s, %lu resends%s%s", name, (double)(now_ms() - t0) / 1000, P.resends,
	       extra[0] ? ", " : "", extra);
	if (P.rss_pid)
		printf(", target rss peak %ld kB, after %ld kB", P.rss_peak > before ? P.rss_peak : before,
		       P.rss_last);
	printf("\n");
	fflush(stdout);
}

static const char usage[] =
	"usage: tcp-raw-peer --ifname IF --target IP --port P --src IP [--inorder N] [--ooseq N]\n"
	"                    [--block B] [--window W] [--syn S] [--syn-rate R] [--settle S]\n"
	"                    [--syn-onlink] [--rss-pid PID]\n";

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ifname", required_argument, NULL, 'i' }, { "target", required_argument, NULL, 't' },
		{ "port", required_argument, NULL, 'p' },   { "src", required_argument, NULL, 's' },
		{ "inorder", required_argument, NULL, 'n' }, { "ooseq", required_argument, NULL, 'o' },
		{ "block", required_argument, NULL, 'b' },  { "window", required_argument, NULL, 'w' },
		{ "syn", required_argument, NULL, 'S' },    { "syn-rate", required_argument, NULL, 'R' },
		{ "settle", required_argument, NULL, 'T' }, { "rss-pid", required_argument, NULL, 'r' },
		{ "syn-onlink", no_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ifname = NULL;
	unsigned long inorder = 0, ooseq = 0, block = 1024, window = 2048, syn = 0, syn_rate = 0;
	int settle = 30, opt;
	char extra[160];
	int64_t t0;
	Conn *c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': ifname = optarg; break;
		case 't': P.tip = parse_ip("target", optarg); break;
		case 'p': P.tport = (uint16_t)strtoul(optarg, NULL, 10); break;
		case 's': P.sip = parse_ip("src", optarg); break;
		case 'n': inorder = strtoul(optarg, NULL, 10); break;
		case 'o': ooseq = strtoul(optarg, NULL, 10); break;
		case 'b': block = strtoul(optarg, NULL, 10); break;
		case 'w': window = strtoul(optarg, NULL, 10); break;
		case 'S': syn = strtoul(optarg, NULL, 10); break;
		case 'R': syn_rate = strtoul(optarg, NULL, 10); break;
		case 'T': settle = atoi(optarg); break;
		case 'r': P.rss_pid = atoi(optarg); break;
		case 'L': P.syn_onlink = true; break;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (!ifname || !P.tip || !P.sip || !P.tport || block < 2 || window < block) {
		fputs(usage, stderr);
		return 2;
	}
	P.rnd ^= (uint32_t)now_ms();
	open_packet(ifname);
	resolve_target();

	c = conn_new(40001);
	if (!conn_connect(c, 20)) {
		fprintf(stderr, "tcp-raw-peer: no handshake with the target's port %u\n", P.tport);
		return 1;
	}
	phase_begin(&t0);
	if (inorder && !send_inorder(c, 0, inorder, (unsigned)window)) {
		fprintf(stderr, "tcp-raw-peer: in-order segments not acknowledged (at %llu)\n",
			(unsigned long long)c->acked);
		return 1;
	}
	snprintf(extra, sizeof(extra), "%lu one-byte segments in order", inorder);
	phase_end("inorder", t0, extra);

	phase_begin(&t0);
	if (ooseq && !send_ooseq(c, inorder, inorder + ooseq, (unsigned)block, (unsigned)window)) {
		fprintf(stderr, "tcp-raw-peer: out-of-order segments not acknowledged (at %llu)\n",
			(unsigned long long)c->acked);
		return 1;
	}
	snprintf(extra, sizeof(extra), "%lu one-byte segments in blocks of %lu, each block's first last",
		 ooseq, block);
	phase_end("ooseq", t0, extra);
	/* The stream ends; the target drains it when told to read. */
	send_tcp(P.sip, c->sport, c->iss + 1 + (uint32_t)(inorder + ooseq), c->irs + 1, F_ACK | F_FIN,
		 NULL, 0);
	printf("stream: %lu bytes\n", inorder + ooseq);

	if (syn) {
		Conn *legit = conn_new(40002);
		int64_t legit_at = 0, flood_end;
		int during;

		phase_begin(&t0);
		syn_flood((unsigned)syn, (unsigned)syn_rate, legit, &legit_at);
		flood_end = now_ms();
		during = legit_exchange(legit, flood_end + (int64_t)settle * 1000);
		if (during < 0)
			snprintf(extra, sizeof(extra), "%lu forged SYNs (%.0f/s); a real connection never "
				 "got through", syn, (double)syn * 1000 / (double)(flood_end - t0 + 1));
		else if (during)
			snprintf(extra, sizeof(extra), "%lu forged SYNs (%.0f/s); a real connection "
				 "completed during the flood", syn,
				 (double)syn * 1000 / (double)(flood_end - t0 + 1));
		else
			snprintf(extra, sizeof(extra), "%lu forged SYNs (%.0f/s); a real connection "
				 "completed %lld ms after the flood", syn,
				 (double)syn * 1000 / (double)(flood_end - t0 + 1),
				 (long long)(legit->established_at - flood_end));
		phase_end("syn", t0, extra);
		if (during >= 0)
			printf("legit: established %lld ms after its first SYN, 4 bytes acked\n",
			       (long long)(legit->established_at - legit_at));
	}
	return 0;
}
