/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-transport-lwip.c: ncm-bench's path through libncm and the in-process lwIP stack. */
#include "ncm-bench-transport.h"

#ifndef NCM_BENCH_HAVE_LWIP

BenchTransport *
bench_transport_lwip_new(const char *name, const char *spec, guint16 port, double pace_mbit,
			 gboolean raw, GError **error)
{
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
		    "path %s: this ncm-bench was built without lwIP, which %s (configure with -Dlwip=enabled)",
		    name, raw ? "carries the raw path's control connections" : "the path runs on");
	return NULL;
}

#else

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <ncm.h>

#include "ncm-bench-cpu.h"
#include "ncm-cli.h"
#include "ncm-bench-raw-link.h"
#include "ncm-link-private.h"
#include "ncm-lwip.h"

/* The path's objects; the BenchTransport comes first so the ops can cast. */
typedef struct {
	BenchTransport base;
	NcmContext *ctx;        /* NULL on a TAP link */
	NcmDevice *dev;         /* borrowed: the link holds it */
	NcmLwipStack *stack;
	NcmLwipNetif *netif;
	guint max_frame;
	char *env;              /* JSON members for the env, each after a comma */
	GArray *usb_marks;      /* NcmStats at each usb_mark(), or NULL on a TAP link */
} LwtTransport;

typedef struct {
	BenchUdp base;
	NcmLwipUdpSocket *sock;
	GInetSocketAddress *to;
} LwtUdp;

static GIOStream *
lwt_tcp_connect(BenchTransport *t, GError **error)
{
	LwtTransport *l = (LwtTransport *)t;
	g_autoptr(GSocketAddress) addr = g_inet_socket_address_new(t->server, t->port);

	NcmLwipConnection *conn = ncm_lwip_stack_connect(l->stack, G_INET_SOCKET_ADDRESS(addr), 10000,
							 NULL, error);

	/* As the kernel paths (TCP_NODELAY): the control exchange and the
	 * paced tests must not wait for Nagle. */
	if (conn != NULL)
		ncm_lwip_connection_set_no_delay(conn, TRUE);
	return G_IO_STREAM(conn);
}

static gssize
lwt_udp_send(BenchUdp *u, const void *buf, gsize len, GError **error)
{
	LwtUdp *lu = (LwtUdp *)u;

	/* A refused datagram (no buffer, link queue full) is the path's limit, not an error. */
	return ncm_lwip_udp_socket_send_to(lu->sock, lu->to, buf, len, NULL) ? (gssize)len : 0;
}

static gssize
lwt_udp_recv(BenchUdp *u, void *buf, gsize len, gint64 timeout_us, GError **error)
{
	LwtUdp *lu = (LwtUdp *)u;
	g_autoptr(GError) local = NULL;
	/* 0 means forever to lwIP: never pass it. */
	guint ms = (guint)MAX((timeout_us + 999) / 1000, 1);
	gssize n = ncm_lwip_udp_socket_receive_from(lu->sock, NULL, buf, len, ms, NULL, &local);

	if (n >= 0)
		return MIN(n, (gssize)len);
	if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
		return 0;
	g_propagate_error(error, g_steal_pointer(&local));
	return -1;
}

static void
lwt_udp_close(BenchUdp *u)
{
	LwtUdp *lu = (LwtUdp *)u;

	ncm_lwip_udp_socket_close(lu->sock);
	g_object_unref(lu->sock);
	g_object_unref(lu->to);
	g_free(lu);
}

static BenchUdp *
lwt_udp_open(BenchTransport *t, guint16 port, GError **error)
{
	LwtTransport *l = (LwtTransport *)t;
	g_autoptr(GInetAddress) any = g_inet_address_new_any(g_inet_address_get_family(t->server));
	g_autoptr(GSocketAddress) local = g_inet_socket_address_new(any, 0);
	NcmLwipUdpSocket *sock = ncm_lwip_stack_udp_bind(l->stack, G_INET_SOCKET_ADDRESS(local), error);
	LwtUdp *lu;

	if (!sock)
		return NULL;
	lu = g_new0(LwtUdp, 1);
	lu->base.send = lwt_udp_send;
	lu->base.recv = lwt_udp_recv;
	lu->base.close = lwt_udp_close;
	lu->base.mtu = l->max_frame > 14 ? l->max_frame - 14 : 0;
	lu->sock = sock;
	lu->to = G_INET_SOCKET_ADDRESS(g_inet_socket_address_new(t->server, port));
	return &lu->base;
}

static guint64
lwt_main_dispatches(BenchTransport *t)
{
	LwtTransport *l = (LwtTransport *)t;
	NcmLwipStats st;

	ncm_lwip_stack_get_stats(l->stack, &st);
	return st.main_dispatches + (l->ctx ? ncm_context_get_main_dispatches(l->ctx) : 0);
}

static guint64
lwt_core_lock_wait_us(BenchTransport *t)
{
	NcmLwipStats st;

	ncm_lwip_stack_get_stats(((LwtTransport *)t)->stack, &st);
	return st.core_lock_wait_us;
}

static guint64
lwt_event_thread_ticks(BenchTransport *t)
{
	return ((LwtTransport *)t)->ctx ? bench_thread_ticks(0, NCM_BENCH_EVENT_THREAD) : 0;
}

static guint
lwt_usb_mark(BenchTransport *t)
{
	LwtTransport *l = (LwtTransport *)t;
	NcmStats st;

	if (!l->usb_marks)
		return 0;
	ncm_device_get_stats(l->dev, &st);
	g_array_append_val(l->usb_marks, st);
	return l->usb_marks->len - 1;
}

static gboolean
lwt_usb_count(BenchTransport *t, guint mark, guint64 *ret_rx_ntbs, guint64 *ret_tx_ntbs)
{
	LwtTransport *l = (LwtTransport *)t;
	const NcmStats *st;

	if (!l->usb_marks || mark >= l->usb_marks->len)
		return FALSE;
	st = &g_array_index(l->usb_marks, NcmStats, mark);
	*ret_rx_ntbs = st->rx_ntbs;
	*ret_tx_ntbs = st->tx_ntbs;
	return TRUE;
}

static void
lwt_describe(BenchTransport *t, FILE *out)
{
	LwtTransport *l = (LwtTransport *)t;
	NcmStats st;

	if (!l->dev)
		return;
	ncm_device_get_stats(l->dev, &st);
	fprintf(out, "%s:\n", t->name);
	cli_print_usb_stats(out, &st);
}

static void
lwt_free(BenchTransport *t)
{
	LwtTransport *l = (LwtTransport *)t;

	g_clear_object(&l->netif);
	g_clear_object(&l->stack);
	g_clear_object(&l->ctx);
	g_clear_object(&t->server);
	g_free(t->name);
	g_free(l->env);
	if (l->usb_marks)
		g_array_unref(l->usb_marks);
	g_free(l);
}

static const char *
lwt_env(BenchTransport *t)
{
	return ((LwtTransport *)t)->env;
}

static const BenchTransportOps lwt_ops = {
	.tcp_connect = lwt_tcp_connect,
	.udp_open = lwt_udp_open,
	.main_dispatches = lwt_main_dispatches,
	.event_thread_ticks = lwt_event_thread_ticks,
	.core_lock_wait_us = lwt_core_lock_wait_us,
	.usb_mark = lwt_usb_mark,
	.usb_count = lwt_usb_count,
	.describe = lwt_describe,
	.env = lwt_env,
	.free = lwt_free,
};

static NcmLink *
open_tap(const char *ifname, GError **error)
{
	static const guint8 mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x42};
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	g_strlcpy(ifr.ifr_name, ifname, IFNAMSIZ);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
			    "cannot attach TAP %s: %s (run as root)", ifname, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return ncm_link_new_for_tap_fd(fd, mac, 1514);
}

/* NTB parameters and speed of the device, for the JSON env. */
static char *
device_env(NcmDevice *dev, const char *name)
{
	const NcmFunctionInfo *info = ncm_device_get_info(dev);
	NcmNtbInfo n;

	ncm_device_get_ntb_info(dev, &n);
	return g_strdup_printf(",\"%s\":{\"usb_speed_mbps\":%u,\"ntb32\":%s,\"rx_ntb_size\":%u,"
			       "\"tx_ntb_size\":%u,\"rx_transfers\":%u,\"tx_transfers\":%u,"
			       "\"in_max_size\":%u,\"out_max_size\":%u,\"out_max_datagrams\":%u,"
			       "\"max_frame\":%u,\"mapped_buffers\":%u,\"tx_ntbs_per_transfer\":%u}",
			       name, info ? info->speed_mbps : 0, n.ntb32 ? "true" : "false",
			       n.rx_ntb_size, n.tx_ntb_size, n.rx_transfers, n.tx_transfers,
			       n.in_max_size, n.out_max_size, n.out_max_datagrams, n.max_frame,
			       n.mapped_buffers, n.tx_ntbs_per_transfer);
}

/*
 * The lwip paths open at the same time (a multi path's devices) share one
 * context, so one libusb event thread serves them all, as in a program
 * that drives many devices. NCM_BENCH_LWIP_PER_CONTEXT=K shards them: a
 * new context (and event thread) for every K devices, to measure whether
 * one event thread is what limits many devices (issue 20). The weak
 * pointer clears with the last path of the newest context.
 */
static NcmContext *lwt_shared_ctx;
static guint lwt_shared_users;

static NcmContext *
shared_context(GError **error)
{
	const char *env = g_getenv("NCM_BENCH_LWIP_PER_CONTEXT");
	guint per = env ? (guint)g_ascii_strtoull(env, NULL, 10) : 0;

	if (lwt_shared_ctx && (per == 0 || lwt_shared_users < per)) {
		lwt_shared_users++;
		return g_object_ref(lwt_shared_ctx);
	}
	if (lwt_shared_ctx)
		g_object_remove_weak_pointer(G_OBJECT(lwt_shared_ctx), (gpointer *)&lwt_shared_ctx);
	lwt_shared_ctx = ncm_context_new(error);
	lwt_shared_users = 1;
	if (lwt_shared_ctx)
		g_object_add_weak_pointer(G_OBJECT(lwt_shared_ctx), (gpointer *)&lwt_shared_ctx);
	return lwt_shared_ctx;
}

static NcmLink *
open_device(LwtTransport *l, char **sel, double pace_mbit, gboolean all_acks, GError **error)
{
	g_autoptr(GPtrArray) all = NULL;
	g_autoptr(NcmDevice) dev = NULL;
	NcmDeviceOptions options;
	NcmMatch match = {0};

	for (guint i = 0; sel && sel[i]; i++) {
		if (!ncm_match_parse(&match, sel[i], error))
			return NULL;
	}
	l->ctx = shared_context(error);
	if (!l->ctx || !(all = ncm_context_enumerate(l->ctx, &match, error)))
		return NULL;
	if (all->len == 0) {
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
				    "no USB CDC-NCM function found (see ncm-probe)");
		return NULL;
	}
	ncm_device_options_init(&options);
	options.pace_bytes_per_sec = (guint64)(pace_mbit * 1e6 / 8);
	options.no_ack_merge = all_acks;
	dev = ncm_device_open(l->ctx, g_ptr_array_index(all, 0), &options, error);
	if (!dev)
		return NULL;
	l->dev = dev;
	l->env = device_env(dev, "device");
	l->usb_marks = g_array_new(FALSE, FALSE, sizeof(NcmStats));
	return ncm_link_new_for_device(dev);
}

/* SERVER,ipv4=ADDR/PREFIX[,ipv6=ADDR][,dev=SEL...][,tap=IFNAME][,acks=all] */
typedef struct {
	gboolean all_acks; /* acks=all: NcmDeviceOptions.no_ack_merge */
	GInetAddress *server;
	GInetAddress *ipv4;
	guint prefix;
	GInetAddress *ipv6;
	GPtrArray *dev;
	char *tap;
} LwtSpec;

static void
spec_clear(LwtSpec *s)
{
	g_clear_object(&s->server);
	g_clear_object(&s->ipv4);
	g_clear_object(&s->ipv6);
	g_clear_pointer(&s->dev, g_ptr_array_unref);
	g_clear_pointer(&s->tap, g_free);
}

static gboolean
spec_parse(const char *text, LwtSpec *s, GError **error)
{
	g_auto(GStrv) parts = g_strsplit(text, ",", -1);

	memset(s, 0, sizeof(*s));
	s->dev = g_ptr_array_new_with_free_func(g_free);
	s->server = parts[0] ? g_inet_address_new_from_string(parts[0]) : NULL;
	for (guint i = 1; parts[0] && parts[i]; i++) {
		char *v = strchr(parts[i], '=');
		g_auto(GStrv) ap = NULL;

		if (!v)
			break;
		*v++ = '\0';
		if (g_str_equal(parts[i], "dev")) {
			g_ptr_array_add(s->dev, g_strdup(v));
		} else if (g_str_equal(parts[i], "acks")) {
			s->all_acks = g_str_equal(v, "all");
		} else if (g_str_equal(parts[i], "tap")) {
			g_free(s->tap);
			s->tap = g_strdup(v);
		} else if (g_str_equal(parts[i], "ipv4") || g_str_equal(parts[i], "ipv6")) {
			ap = g_strsplit(v, "/", 2);
			if (parts[i][3] == '4') {
				g_clear_object(&s->ipv4);
				s->ipv4 = g_inet_address_new_from_string(ap[0]);
				s->prefix = ap[1] ? (guint)g_ascii_strtoull(ap[1], NULL, 10) : 24;
			} else {
				g_clear_object(&s->ipv6);
				s->ipv6 = g_inet_address_new_from_string(ap[0]);
			}
		}
	}
	g_ptr_array_add(s->dev, NULL);
	if (!s->server || (!s->ipv4 && !s->ipv6)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "lwip path %s: expected SERVER,ipv4=ADDR/PREFIX[,ipv6=ADDR][,dev=SEL][,tap=IF][,acks=all]",
			    text);
		return FALSE;
	}
	return TRUE;
}

static gboolean
lwt_setup(LwtTransport *l, LwtSpec *s, double pace_mbit, gboolean raw, GError **error)
{
	NcmLwipNetifConfig config;
	NcmLink *link;

	link = s->tap ? open_tap(s->tap, error)
		      : open_device(l, (char **)s->dev->pdata, pace_mbit, s->all_acks, error);
	if (!link)
		return FALSE;
	if (raw)
		link = bench_raw_link_new(link, &l->base.raw);
	l->max_frame = link->max_frame;
	l->stack = ncm_lwip_stack_get_default();
	ncm_lwip_netif_config_init(&config);
	config.ipv4 = s->ipv4;
	config.ipv4_prefix = s->prefix;
	config.ipv6 = s->ipv6;
	config.ipv6_dad = FALSE; /* a benchmark need not wait for duplicate detection */
	config.make_default = TRUE;
	l->netif = ncm_lwip_netif_add(l->stack, link, &config, error);
	return l->netif != NULL;
}

BenchTransport *
bench_transport_lwip_new(const char *name, const char *spec, guint16 port, double pace_mbit,
			 gboolean raw, GError **error)
{
	LwtTransport *l = g_new0(LwtTransport, 1);
	LwtSpec s;

	l->base.ops = &lwt_ops;
	l->base.name = g_strdup(name);
	l->base.port = port;
	if (!spec_parse(spec, &s, error) || !lwt_setup(l, &s, pace_mbit, raw, error)) {
		spec_clear(&s);
		lwt_free(&l->base);
		return NULL;
	}
	l->base.server = g_steal_pointer(&s.server);
	l->base.mtu = l->max_frame > 14 ? l->max_frame - 14 : 0;
	spec_clear(&s);
	return &l->base;
}

#endif
