/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vmtest-lwip.c: the lwIP netstack over libncm against f_ncm's Linux stack: TCP/UDP, both families, checksummed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gio/gio.h>
#include <ncm.h>

#include "ncm-link.h"
#include "ncm-lwip.h"

/*
 * Two modes. "peer" runs in the gadget's namespace on kernel sockets:
 * TCP port 5000 reads a command byte per connection ('E' echo to EOF,
 * 'S' sink to EOF then answer count + hash, 'G' + size + seed: generate
 * that many bytes and close), UDP port 5001 echoes. "host" opens the NCM
 * function through libncm, attaches lwIP, and runs every check against
 * the peer, printing "ok:"/"FAIL:" lines and throughput.
 */

#define TCP_PORT 5000
#define UDP_PORT 5001
#define FNV_INIT 2166136261u
#define CHUNK (256 * 1024)

static gint opt_size_mib = 64;
static gint opt_udp_count = 10000;
static gint opt_conns = 32;
static gint opt_timeout = 60;
static gchar *opt_peer4 = (gchar *)"192.168.77.1";
static gchar *opt_peer6 = (gchar *)"fd77::1";
static gchar *opt_host4 = (gchar *)"192.168.77.2";
static gchar *opt_host6 = (gchar *)"fd77::2";

static const GOptionEntry entries[] = {
	{"size", 's', 0, G_OPTION_ARG_INT, &opt_size_mib, "MiB per bulk transfer (64)", "N"},
	{"udp", 'u', 0, G_OPTION_ARG_INT, &opt_udp_count, "UDP datagrams per family (10000)", "N"},
	{"conns", 'c', 0, G_OPTION_ARG_INT, &opt_conns, "concurrent connections (32)", "N"},
	{"timeout", 't', 0, G_OPTION_ARG_INT, &opt_timeout, "seconds to wait for the device", "S"},
	{NULL},
};

static guint failures;

static void
report(gboolean ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	fflush(stdout);
	if (!ok)
		failures++;
}

/* ---- Test data: an xorshift32 stream and FNV-1a ---------------------------------- */

static void
gen_fill(guint32 *x, guint8 *buf, gsize len)
{
	for (gsize i = 0; i < len; i++) {
		*x ^= *x << 13;
		*x ^= *x >> 17;
		*x ^= *x << 5;
		buf[i] = (guint8)*x;
	}
}

static guint32
fnv1a(guint32 h, const guint8 *b, gsize len)
{
	for (gsize i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* ---- Peer mode (kernel sockets) ---------------------------------------------------- */

static gboolean
fd_write_all(int fd, const guint8 *p, gsize len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return FALSE;
		p += n;
		len -= (gsize)n;
	}
	return TRUE;
}

static gboolean
fd_read_all(int fd, guint8 *p, gsize len)
{
	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return FALSE;
		p += n;
		len -= (gsize)n;
	}
	return TRUE;
}

static void
peer_generate(int fd)
{
	g_autofree guint8 *buf = g_malloc(CHUNK);
	guint8 hdr[12];
	guint64 size;
	guint32 x;

	if (!fd_read_all(fd, hdr, sizeof(hdr)))
		return;
	memcpy(&size, hdr, 8);
	memcpy(&x, hdr + 8, 4);
	size = GUINT64_FROM_LE(size);
	x = GUINT32_FROM_LE(x);
	while (size > 0) {
		gsize n = MIN(size, CHUNK);

		gen_fill(&x, buf, n);
		if (!fd_write_all(fd, buf, n))
			return;
		size -= n;
	}
}

static gpointer
peer_connection(gpointer data)
{
	int fd = GPOINTER_TO_INT(data);
	g_autofree guint8 *buf = g_malloc(CHUNK);
	guint32 hash = FNV_INIT;
	guint64 count = 0;
	guint8 cmd, reply[12];
	ssize_t n;

	if (fd_read_all(fd, &cmd, 1) && cmd == 'G')
		peer_generate(fd);
	while ((cmd == 'E' || cmd == 'S') && (n = read(fd, buf, CHUNK)) > 0) {
		if (cmd == 'E' && !fd_write_all(fd, buf, (gsize)n))
			break;
		hash = fnv1a(hash, buf, (gsize)n);
		count += (guint64)n;
	}
	if (cmd == 'S') {
		count = GUINT64_TO_LE(count);
		hash = GUINT32_TO_LE(hash);
		memcpy(reply, &count, 8);
		memcpy(reply + 8, &hash, 4);
		fd_write_all(fd, reply, sizeof(reply));
	}
	close(fd);
	return NULL;
}

static int
peer_socket(int type, guint16 port)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	int fd = socket(AF_INET6, type | SOCK_CLOEXEC, 0);
	int one = 1, zero = 0;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 128) < 0)) {
		perror("peer bind/listen");
		return -1;
	}
	return fd;
}

static gpointer
peer_udp(gpointer data)
{
	int fd = GPOINTER_TO_INT(data);
	guint8 buf[65536];

	for (;;) {
		struct sockaddr_storage from;
		socklen_t len = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len);

		if (n >= 0)
			sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, len);
	}
	return NULL;
}

static int
run_peer(void)
{
	int tcp = peer_socket(SOCK_STREAM, TCP_PORT);
	int udp = peer_socket(SOCK_DGRAM, UDP_PORT);

	if (tcp < 0 || udp < 0)
		return 2;
	g_thread_unref(g_thread_new("udp", peer_udp, GINT_TO_POINTER(udp)));
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int c = accept4(tcp, NULL, NULL, SOCK_CLOEXEC);

		if (c >= 0)
			g_thread_unref(g_thread_new("conn", peer_connection, GINT_TO_POINTER(c)));
	}
	return 0;
}
