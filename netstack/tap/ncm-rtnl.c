/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-rtnl.c: one-request rtnetlink helpers to configure the TAP interface. */
#include "ncm-rtnl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gio/gio.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
	struct nlmsghdr *hdr;
	union {
		struct nlmsghdr align;
		guint8 bytes[512];
	} buf;
} RtnlRequest;

static void *
request_init(RtnlRequest *req, guint16 type, guint16 flags, gsize body)
{
	memset(&req->buf, 0, sizeof(req->buf));
	req->hdr = &req->buf.align;
	req->hdr->nlmsg_len = NLMSG_LENGTH(body);
	req->hdr->nlmsg_type = type;
	req->hdr->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	req->hdr->nlmsg_seq = 1;
	return NLMSG_DATA(req->hdr);
}

static void
request_add_attr(RtnlRequest *req, guint16 type, const void *data, gsize len)
{
	struct rtattr *rta;
	gsize off = NLMSG_ALIGN(req->hdr->nlmsg_len);

	/* Requests here are a few fixed attributes: overflow is a programming error. */
	g_assert(off + RTA_SPACE(len) <= sizeof(req->buf.bytes));
	rta = (struct rtattr *)(req->buf.bytes + off);
	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	req->hdr->nlmsg_len = off + RTA_SPACE(len);
}

static gboolean
set_errno_error(GError **error, int err, const gchar *what)
{
	const gchar *hint = "";

	if (err == EPERM || err == EACCES)
		hint = " (needs CAP_NET_ADMIN: run as root, or let root configure the interface)";
	g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err), "%s: %s%s", what,
		    g_strerror(err), hint);
	return FALSE;
}

/* Waits for the NLMSG_ERROR that acknowledges sequence 1; 0 there means success. */
static int
read_ack(int fd)
{
	union {
		struct nlmsghdr align;
		guint8 bytes[4096];
	} buf;

	for (;;) {
		ssize_t n = recv(fd, buf.bytes, sizeof(buf.bytes), 0);
		struct nlmsghdr *h = &buf.align;
		gsize left;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		left = (gsize)n;
		for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq != 1)
				continue;
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
				return EPROTO;
			return -((struct nlmsgerr *)NLMSG_DATA(h))->error;
		}
	}
}

static gboolean
request_run(RtnlRequest *req, const gchar *what, GError **error)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	int fd, err;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return set_errno_error(error, errno, what);
	if (sendto(fd, req->buf.bytes, req->hdr->nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0)
		err = errno;
	else
		err = read_ack(fd);
	close(fd);
	if (err)
		return set_errno_error(error, err, what);
	return TRUE;
}

static struct ifinfomsg *
link_request(RtnlRequest *req, int ifindex)
{
	struct ifinfomsg *ifi = request_init(req, RTM_NEWLINK, 0, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	return ifi;
}

gboolean
ncm_rtnl_set_mtu(int ifindex, guint mtu, GError **error)
{
	RtnlRequest req;
	guint32 v = mtu;
	g_autofree gchar *what = g_strdup_printf("setting MTU %u", mtu);

	link_request(&req, ifindex);
	request_add_attr(&req, IFLA_MTU, &v, sizeof(v));
	return request_run(&req, what, error);
}

gboolean
ncm_rtnl_set_mac(int ifindex, const guint8 mac[6], GError **error)
{
	RtnlRequest req;

	link_request(&req, ifindex);
	request_add_attr(&req, IFLA_ADDRESS, mac, 6);
	return request_run(&req, "setting the MAC address", error);
}

gboolean
ncm_rtnl_set_up(int ifindex, gboolean up, GError **error)
{
	RtnlRequest req;
	struct ifinfomsg *ifi = link_request(&req, ifindex);

	ifi->ifi_flags = up ? IFF_UP : 0;
	ifi->ifi_change = IFF_UP;
	return request_run(&req, up ? "setting the link up" : "setting the link down", error);
}

gboolean
ncm_rtnl_add_address(int ifindex, const NcmRtnlPrefix *prefix, gboolean nodad, GError **error)
{
	RtnlRequest req;
	struct ifaddrmsg *ifa;
	gsize len = prefix->family == AF_INET ? 4 : 16;
	char text[INET6_ADDRSTRLEN] = "?";
	g_autofree gchar *what = NULL;

	ifa = request_init(&req, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, sizeof(*ifa));
	ifa->ifa_family = (guint8)prefix->family;
	ifa->ifa_prefixlen = (guint8)prefix->prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (guint32)ifindex;
	if (nodad && prefix->family == AF_INET6)
		ifa->ifa_flags = IFA_F_NODAD;
	request_add_attr(&req, IFA_LOCAL, prefix->addr, len);
	request_add_attr(&req, IFA_ADDRESS, prefix->addr, len);
	if (prefix->family == AF_INET && prefix->prefix < 31) {
		guint32 a, bcast;

		memcpy(&a, prefix->addr, 4);
		bcast = a | htonl(prefix->prefix ? 0xffffffffu >> prefix->prefix : 0xffffffffu);
		request_add_attr(&req, IFA_BROADCAST, &bcast, 4);
	}
	inet_ntop(prefix->family, prefix->addr, text, sizeof(text));
	what = g_strdup_printf("adding address %s/%u", text, prefix->prefix);
	return request_run(&req, what, error);
}

gboolean
ncm_rtnl_prefix_parse(NcmRtnlPrefix *ret_prefix, const gchar *text, GError **error)
{
	g_auto(GStrv) parts = g_strsplit(text, "/", 2);
	NcmRtnlPrefix p = { 0 };
	guint64 len;

	if (inet_pton(AF_INET, parts[0], p.addr) == 1)
		p.family = AF_INET;
	else if (inet_pton(AF_INET6, parts[0], p.addr) == 1)
		p.family = AF_INET6;
	else
		goto bad;
	p.prefix = p.family == AF_INET ? 32 : 128;
	if (parts[1]) {
		if (!g_ascii_string_to_unsigned(parts[1], 10, 0, p.prefix, &len, NULL))
			goto bad;
		p.prefix = (guint)len;
	}
	*ret_prefix = p;
	return TRUE;
bad:
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
		    "“%s” is not ADDRESS/PREFIX (e.g. 192.168.79.1/24 or fd79::1/64)", text);
	return FALSE;
}
