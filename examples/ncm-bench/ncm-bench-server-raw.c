/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-server-raw.c: the device side of the usbfs ceiling: a packet-socket flood at the client's MAC, and the frames its interface received. */
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ncm-bench.h"
#include "ncm-bench-ceiling.h"
#include "ncm-bench-proto.h"

#define ETH_HEADER 14
#define FLOOD_BATCH 32
#define RAW_MAX_SECS 600

/* @sa's address: its family, and its bytes in @ret (IPv4-mapped IPv6 as IPv4). */
static int
addr_bytes(const struct sockaddr *sa, guint8 ret[16])
{
	const struct in6_addr *a6;

	if (sa->sa_family == AF_INET) {
		memcpy(ret, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return AF_INET;
	}
	if (sa->sa_family != AF_INET6)
		return AF_UNSPEC;
	/* A dual-stack listener sees IPv4 clients at ::ffff:a.b.c.d. */
	a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (IN6_IS_ADDR_V4MAPPED(a6)) {
		memcpy(ret, a6->s6_addr + 12, 4);
		return AF_INET;
	}
	memcpy(ret, a6->s6_addr, 16);
	return AF_INET6;
}

/* The interface the client reached us through: the one that holds @ctl's local address. */
static gboolean
local_ifname(GSocket *ctl, char ret_name[IF_NAMESIZE], GError **error)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct ifaddrs *all;
	guint8 want[16], have[16];
	int family;
	gboolean found = FALSE;

	if (getsockname(g_socket_get_fd(ctl), (struct sockaddr *)&ss, &len) < 0 || getifaddrs(&all) < 0) {
		int e = errno;

		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
			    "cannot read the connection's local address or the interfaces: %s", g_strerror(e));
		return FALSE;
	}
	family = addr_bytes((struct sockaddr *)&ss, want);
	for (struct ifaddrs *i = all; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || addr_bytes(i->ifa_addr, have) != family || family == AF_UNSPEC)
			continue;
		found = memcmp(want, have, family == AF_INET ? 4 : 16) == 0;
		if (found)
			g_strlcpy(ret_name, i->ifa_name, IF_NAMESIZE);
	}
	freeifaddrs(all);
	if (!found)
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
				    "no interface holds the address the client reached");
	return found;
}

/* SIOCGIFHWADDR or SIOCGIFMTU of @ifname into @ifr. */
static gboolean
if_query(GSocket *ctl, const char *ifname, unsigned long request, struct ifreq *ifr, GError **error)
{
	memset(ifr, 0, sizeof(*ifr));
	g_strlcpy(ifr->ifr_name, ifname, IFNAMSIZ);
	if (ioctl(g_socket_get_fd(ctl), request, ifr) == 0)
		return TRUE;
	g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "cannot query interface %s: %s",
		    ifname, g_strerror(errno));
	return FALSE;
}

static gboolean
rx_packets(const char *ifname, guint64 *ret, GError **error)
{
	g_autofree char *text = NULL;
	guint64 bytes;

	if (!g_file_get_contents("/proc/net/dev", &text, NULL, error))
		return FALSE;
	if (bench_netdev_rx_parse(text, ifname, &bytes, ret))
		return TRUE;
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "/proc/net/dev has no counters for %s",
		    ifname);
	return FALSE;
}

/* The client stopped the flood: it closed, or sent anything. */
static gboolean
client_done(GSocket *ctl)
{
	return g_socket_condition_check(ctl, G_IO_IN | G_IO_HUP | G_IO_ERR) != 0;
}

/*
 * Sends until @end_us or the client is done. The queue in front of the
 * gadget paces it: a full socket buffer blocks (for at most SO_SNDTIMEO),
 * a full qdisc refuses with ENOBUFS.
 */
static void
flood(int fd, GSocket *ctl, struct sockaddr_ll *to, gsize payload, gint64 end_us)
{
	g_autofree guint8 *buf = g_malloc0(payload);
	struct iovec iov = {buf, payload};
	struct mmsghdr msgs[FLOOD_BATCH];

	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < FLOOD_BATCH; i++) {
		msgs[i].msg_hdr.msg_name = to;
		msgs[i].msg_hdr.msg_namelen = sizeof(*to);
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (g_get_monotonic_time() < end_us && !client_done(ctl)) {
		if (sendmmsg(fd, msgs, FLOOD_BATCH, 0) >= 0 || errno == EINTR || errno == EAGAIN)
			continue;
		if (errno != ENOBUFS)
			return;
		g_usleep(100);
	}
}

/*
 * Protocol 0: a socket bound to our EtherType would also be handed a copy
 * of every frame we send (packet taps see outgoing frames).
 */
static int
flood_socket(const char *ifname, const guint8 mac[6], struct sockaddr_ll *ret_to, GError **error)
{
	struct timeval tv = {0, 100000};
	int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		int e = errno;

		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
			    "cannot open a packet socket: %s (RAW_FLOOD needs CAP_NET_RAW: run the server as root)",
			    g_strerror(e));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(ret_to, 0, sizeof(*ret_to));
	ret_to->sll_family = AF_PACKET;
	ret_to->sll_protocol = htons(BENCH_RAW_ETHERTYPE);
	ret_to->sll_ifindex = (int)if_nametoindex(ifname);
	ret_to->sll_halen = 6;
	memcpy(ret_to->sll_addr, mac, 6);
	return fd;
}

static void
refuse(GSocket *ctl, const char *what, const GError *error)
{
	bench_socket_send_line(ctl, "X %s: %s\n", what, error->message);
}

void
bench_serve_raw_flood(GSocket *ctl, const char *cmd)
{
	gint64 secs = CLAMP(bench_cmd_param(cmd, "secs", 10), 1, RAW_MAX_SECS);
	gint64 len = bench_cmd_param(cmd, "len", 1514);
	g_autoptr(GError) error = NULL;
	char ifname[IF_NAMESIZE];
	struct sockaddr_ll to;
	struct ifreq ifr;
	guint8 mac[6];
	gsize payload;
	int fd;

	if (!bench_cmd_mac(cmd, "mac", mac)) {
		bench_socket_send_line(ctl, "X RAW_FLOOD: needs mac=XX:XX:XX:XX:XX:XX\n");
		return;
	}
	if (!local_ifname(ctl, ifname, &error) || !if_query(ctl, ifname, SIOCGIFMTU, &ifr, &error) ||
	    (fd = flood_socket(ifname, mac, &to, &error)) < 0) {
		refuse(ctl, "RAW_FLOOD", error);
		return;
	}
	/* The interface takes no more than its MTU; Ethernet no less than 46. */
	payload = (gsize)CLAMP(len - ETH_HEADER, 46, MAX(ifr.ifr_mtu, 46));
	if (bench_socket_send_line(ctl, "F %s %" G_GSIZE_FORMAT "\n", ifname, payload + ETH_HEADER))
		flood(fd, ctl, &to, payload, g_get_monotonic_time() + secs * G_USEC_PER_SEC);
	close(fd);
}

static gboolean
count_report(GSocket *ctl, const char *tag, const char *ifname, guint64 p0, guint64 len)
{
	guint64 p = p0;

	rx_packets(ifname, &p, NULL);
	return bench_socket_send_line(ctl, "%s %" G_GINT64_FORMAT " %" G_GUINT64_FORMAT "%s\n", tag,
				      g_get_monotonic_time(), (p - p0) * len,
				      tag[0] == 'S' ? " 0 0 0 0" : "");
}

void
bench_serve_raw_count(GSocket *ctl, const char *cmd)
{
	gint64 secs = CLAMP(bench_cmd_param(cmd, "secs", 10), 1, RAW_MAX_SECS);
	guint64 len = (guint64)CLAMP(bench_cmd_param(cmd, "len", 1514), 1, 65536);
	gint64 end, next;
	g_autoptr(GError) error = NULL;
	g_autofree char *mac = NULL;
	char ifname[IF_NAMESIZE];
	struct ifreq ifr;
	guint64 p0;
	char buf[256];

	if (!local_ifname(ctl, ifname, &error) || !if_query(ctl, ifname, SIOCGIFHWADDR, &ifr, &error) ||
	    !rx_packets(ifname, &p0, &error)) {
		refuse(ctl, "RAW_COUNT", error);
		return;
	}
	mac = bench_mac_text((const guint8 *)ifr.ifr_hwaddr.sa_data);
	if (!bench_socket_send_line(ctl, "M %s %s\n", mac, ifname))
		return;
	next = g_get_monotonic_time() + BENCH_REPORT_US;
	end = g_get_monotonic_time() + secs * G_USEC_PER_SEC;
	for (; next <= end; next += BENCH_REPORT_US) {
		g_usleep((gulong)MAX(next - g_get_monotonic_time(), 0));
		if (!count_report(ctl, "S", ifname, p0, len))
			return;
	}
	if (!count_report(ctl, "E", ifname, p0, len))
		return;
	/* As SINK: closing first could send a reset that overtakes "E". */
	while (g_socket_receive(ctl, buf, sizeof(buf), NULL, NULL) > 0)
		;
}
