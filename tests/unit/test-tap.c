/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-tap.c: the TAP backend and rtnetlink helper against the real kernel, in a private netns. */
#include "ncm-pcap.h"
#include "ncm-rtnl.h"
#include "ncm-tap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/capability.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <pthread.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const guint8 tap_mac[6] = { 0x02, 0x00, 0x00, 0x79, 0x00, 0x01 };
static const guint8 peer_mac[6] = { 0x02, 0x00, 0x00, 0x79, 0x00, 0x02 };
static const guint8 tap_ip4[4] = { 192, 168, 79, 1 };
static const guint8 peer_ip4[4] = { 192, 168, 79, 2 };
static const guint8 tap_ip6[16] = { 0xfd, 0x79, [15] = 1 };
static const guint8 peer_ip6[16] = { 0xfd, 0x79, [15] = 2 };
#define MARKER_ETHERTYPE 0x88b5   /* IEEE local experimental: nothing in the kernel answers it */
#define WAIT_US (20 * G_USEC_PER_SEC)

static gboolean have_netns;
static gchar *no_netns_reason;

/* Tests needing a netns skip without one, unless CI=true says the runner must have it. */
static gboolean
require_netns(void)
{
	if (have_netns)
		return TRUE;
	if (g_strcmp0(g_getenv("CI"), "true") == 0) {
		g_test_message("CI=true but no network namespace: %s", no_netns_reason);
		g_test_fail();
	} else {
		g_test_skip(no_netns_reason);
	}
	return FALSE;
}

/* ---- a fake link standing in for the NCM device -------------------------- */

typedef struct {
	GBytes *frame;   /* NULL: a flush */
} LinkEvent;

typedef struct {
	NcmLink link;
	/* Guards everything below. pthread, not GMutex: TSan cannot see GLib's futexes. */
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* on CLOCK_MONOTONIC */
	GArray *events;
	guint attempts;
	gboolean blocked;
	gboolean started;
	gboolean sender_flushes;     /* what the stack promised (set_sender_flushes) ... */
	gboolean flushes_at_start;   /* ... by the time it started the link */
	const NcmLinkSink *sink;
	gpointer sink_data;
} FakeLink;

static NcmSendResult
fake_sendv(NcmLink *link, const GOutputVector *v, guint n)
{
	FakeLink *f = (FakeLink *)link;
	NcmSendResult r = NCM_SEND_OK;

	g_assert_cmpuint(n, ==, 1);
	pthread_mutex_lock(&f->lock);
	f->attempts++;
	if (v[0].size < 14 || v[0].size > link->max_frame) {
		r = NCM_SEND_INVALID;
	} else if (f->blocked) {
		r = NCM_SEND_WOULD_BLOCK;
	} else {
		LinkEvent e = { g_bytes_new(v[0].buffer, v[0].size) };

		g_array_append_val(f->events, e);
	}
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return r;
}

static void
fake_flush(NcmLink *link)
{
	FakeLink *f = (FakeLink *)link;
	LinkEvent e = { NULL };

	pthread_mutex_lock(&f->lock);
	g_array_append_val(f->events, e);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static void
fake_set_sink(NcmLink *link, const NcmLinkSink *sink, gpointer data)
{
	FakeLink *f = (FakeLink *)link;

	f->sink = sink;
	f->sink_data = data;
}

static void
fake_set_sender_flushes(NcmLink *link, gboolean flushes)
{
	((FakeLink *)link)->sender_flushes = flushes;
}

static gboolean
fake_start(NcmLink *link, GError **error)
{
	FakeLink *f = (FakeLink *)link;

	f->started = TRUE;
	f->flushes_at_start = f->sender_flushes;
	return TRUE;
}

static void
fake_stop(NcmLink *link)
{
	((FakeLink *)link)->started = FALSE;
}

static void
fake_free(NcmLink *link)
{
	FakeLink *f = (FakeLink *)link;

	for (guint i = 0; i < f->events->len; i++)
		g_clear_pointer(&g_array_index(f->events, LinkEvent, i).frame, g_bytes_unref);
	g_array_unref(f->events);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	g_free(f);
}

static const NcmLinkOps fake_ops = {
	.sendv = fake_sendv,
	.flush = fake_flush,
	.set_sink = fake_set_sink,
	.set_sender_flushes = fake_set_sender_flushes,
	.start = fake_start,
	.stop = fake_stop,
	.free = fake_free,
};

static FakeLink *
fake_link_new(void)
{
	FakeLink *f = g_new0(FakeLink, 1);
	pthread_condattr_t attr;

	f->link.ops = &fake_ops;
	memcpy(f->link.mac, tap_mac, 6);
	f->link.max_frame = 1514;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, &attr);
	pthread_condattr_destroy(&attr);
	f->events = g_array_new(FALSE, TRUE, sizeof(LinkEvent));
	return f;
}

/* Frames arrive as the libusb thread would deliver them: one NTB = frames + done. */
static void
fake_receive(FakeLink *f, const guint8 *frame, gsize len)
{
	f->sink->receive(f->sink_data, frame, len);
	f->sink->receive_done(f->sink_data);
}

/* g_cond_wait_until() for the pthread cond: FALSE once @deadline (monotonic µs) passed. */
static gboolean
fake_wait_until(FakeLink *f, gint64 deadline)
{
	struct timespec ts = { deadline / G_USEC_PER_SEC, (deadline % G_USEC_PER_SEC) * 1000 };

	return pthread_cond_timedwait(&f->cond, &f->lock, &ts) == 0;
}

typedef gboolean (*FrameMatch)(const guint8 *frame, gsize len, gconstpointer data);

/* Index of the first event from @from on whose frame matches, waiting up to @timeout_us. */
static gint
fake_wait_frame_for(FakeLink *f, guint from, FrameMatch match, gconstpointer data,
		    gint64 timeout_us)
{
	gint64 deadline = g_get_monotonic_time() + timeout_us;
	gint found = -1;

	pthread_mutex_lock(&f->lock);
	while (found < 0) {
		for (guint i = from; i < f->events->len && found < 0; i++) {
			GBytes *b = g_array_index(f->events, LinkEvent, i).frame;
			gsize len;
			const guint8 *p = b ? g_bytes_get_data(b, &len) : NULL;

			if (p && match(p, len, data))
				found = (gint)i;
		}
		if (found < 0 && !fake_wait_until(f, deadline))
			break;
	}
	pthread_mutex_unlock(&f->lock);
	return found;
}

static gint
fake_wait_frame(FakeLink *f, guint from, FrameMatch match, gconstpointer data)
{
	return fake_wait_frame_for(f, from, match, data, WAIT_US);
}

/* The first flush at or after @from, waiting up to WAIT_US; -1 if none came. */
static gint
fake_wait_flush(FakeLink *f, guint from)
{
	gint64 deadline = g_get_monotonic_time() + WAIT_US;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		for (guint i = from; i < f->events->len; i++) {
			if (!g_array_index(f->events, LinkEvent, i).frame) {
				pthread_mutex_unlock(&f->lock);
				return (gint)i;
			}
		}
		if (!fake_wait_until(f, deadline))
			break;
	}
	pthread_mutex_unlock(&f->lock);
	return -1;
}

/* ---- frames ---------------------------------------------------------------- */

static gsize
eth_header(guint8 *p, const guint8 *dst, const guint8 *src, guint16 type)
{
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	p[12] = (guint8)(type >> 8);
	p[13] = (guint8)type;
	return 14;
}

static guint16
get_be16(const guint8 *p)
{
	return (guint16)(p[0] << 8 | p[1]);
}

static void
put_be16(guint8 *p, guint16 v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

/* The Internet checksum over @len bytes, continuing from @sum. */
static guint16
inet_csum(const guint8 *p, gsize len, guint32 sum)
{
	for (gsize i = 0; i + 1 < len; i += 2)
		sum += get_be16(p + i);
	if (len & 1)
		sum += (guint32)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (guint16)~sum;
}

static gsize
arp_request(guint8 *f)
{
	static const guint8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const guint8 hdr[8] = { 0, 1, 0x08, 0, 6, 4, 0, 1 };
	guint8 *a = f + eth_header(f, bcast, peer_mac, 0x0806);

	memcpy(a, hdr, 8);
	memcpy(a + 8, peer_mac, 6);
	memcpy(a + 14, peer_ip4, 4);
	memset(a + 18, 0, 6);
	memcpy(a + 24, tap_ip4, 4);
	return 14 + 28;
}

static gboolean
is_arp_reply(const guint8 *f, gsize len, gconstpointer data)
{
	const guint8 *a = f + 14;

	return len >= 42 && get_be16(f + 12) == 0x0806 && get_be16(a + 6) == 2 &&
	       !memcmp(f, peer_mac, 6) && !memcmp(f + 6, tap_mac, 6) &&
	       !memcmp(a + 8, tap_mac, 6) && !memcmp(a + 14, tap_ip4, 4) &&
	       !memcmp(a + 18, peer_mac, 6) && !memcmp(a + 24, peer_ip4, 4);
}

static gsize
icmp_echo(guint8 *f, guint16 id)
{
	guint8 *ip = f + eth_header(f, tap_mac, peer_mac, 0x0800);
	guint8 *icmp = ip + 20;

	memset(ip, 0, 20 + 16);
	ip[0] = 0x45;
	put_be16(ip + 2, 20 + 16);
	ip[8] = 64;
	ip[9] = 1;
	memcpy(ip + 12, peer_ip4, 4);
	memcpy(ip + 16, tap_ip4, 4);
	put_be16(ip + 10, inet_csum(ip, 20, 0));
	icmp[0] = 8;
	put_be16(icmp + 4, id);
	put_be16(icmp + 6, 1);
	memcpy(icmp + 8, "libncm!!", 8);
	put_be16(icmp + 2, inet_csum(icmp, 16, 0));
	return 14 + 20 + 16;
}

static gboolean
is_echo_reply(const guint8 *f, gsize len, gconstpointer data)
{
	const guint8 *ip = f + 14;

	return len >= 14 + 36 && get_be16(f + 12) == 0x0800 && !memcmp(f, peer_mac, 6) &&
	       ip[9] == 1 && !memcmp(ip + 12, tap_ip4, 4) && !memcmp(ip + 16, peer_ip4, 4) &&
	       ip[20] == 0 && get_be16(ip + 24) == GPOINTER_TO_UINT(data) &&
	       !memcmp(ip + 28, "libncm!!", 8);
}

/* A neighbour solicitation for tap_ip6 from peer_ip6, to the solicited-node group. */
static gsize
ndp_solicit(guint8 *f)
{
	static const guint8 mcast_mac[6] = { 0x33, 0x33, 0xff, 0x00, 0x00, 0x01 };
	static const guint8 snm[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff, [15] = 1 };
	guint8 *ip = f + eth_header(f, mcast_mac, peer_mac, 0x86dd);
	guint8 *icmp = ip + 40;
	guint32 sum = 32 + 58;

	memset(ip, 0, 40 + 32);
	ip[0] = 0x60;
	put_be16(ip + 4, 32);
	ip[6] = 58;
	ip[7] = 255;
	memcpy(ip + 8, peer_ip6, 16);
	memcpy(ip + 24, snm, 16);
	icmp[0] = 135;
	memcpy(icmp + 8, tap_ip6, 16);
	icmp[24] = 1;  /* source link-layer address option */
	icmp[25] = 1;
	memcpy(icmp + 26, peer_mac, 6);
	/* The pseudo-header: both addresses, upper-layer length, next header. */
	for (guint i = 0; i < 32; i += 2)
		sum += get_be16(ip + 8 + i);
	put_be16(icmp + 2, inet_csum(icmp, 32, sum));
	return 14 + 40 + 32;
}

static gboolean
is_ndp_advert(const guint8 *f, gsize len, gconstpointer data)
{
	const guint8 *ip = f + 14;

	return len >= 14 + 40 + 24 && get_be16(f + 12) == 0x86dd && ip[6] == 58 &&
	       !memcmp(f, peer_mac, 6) && ip[40] == 136 && !memcmp(ip + 48, tap_ip6, 16);
}

static gboolean
is_marker(const guint8 *f, gsize len, gconstpointer data)
{
	return len >= 15 && get_be16(f + 12) == MARKER_ETHERTYPE &&
	       f[14] == GPOINTER_TO_UINT(data);
}

/* ---- a tiny pcap reader ------------------------------------------------------ */

/* Reads a classic pcap file back, asserting its header; returns the frames as GBytes. */
static GPtrArray *
pcap_read(const gchar *path)
{
	g_autofree guint8 *data = NULL;
	GPtrArray *frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	gsize len, off = 24;
	guint32 h[6];

	g_assert_true(g_file_get_contents(path, (gchar **)&data, &len, NULL));
	g_assert_cmpuint(len, >=, 24);
	memcpy(h, data, 24);
	g_assert_cmphex(h[0], ==, 0xa1b2c3d4);       /* microsecond, host order */
	g_assert_cmphex(h[1], ==, 2u | (4u << 16));  /* version 2.4 (little-endian host) */
	g_assert_cmpuint(h[5], ==, 1);               /* LINKTYPE_ETHERNET */
	while (off < len) {
		guint32 r[4];

		g_assert_cmpuint(len - off, >=, 16);
		memcpy(r, data + off, 16);
		g_assert_cmpuint(r[1], <, 1000000);
		g_assert_cmpuint(r[2], ==, r[3]);
		g_assert_cmpuint(len - off - 16, >=, r[2]);
		g_ptr_array_add(frames, g_bytes_new(data + off + 16, r[2]));
		off += 16 + r[2];
	}
	return frames;
}

static gboolean
frames_contain(GPtrArray *frames, FrameMatch match, gconstpointer data)
{
	for (guint i = 0; i < frames->len; i++) {
		gsize len;
		const guint8 *p = g_bytes_get_data(frames->pdata[i], &len);

		if (match(p, len, data))
			return TRUE;
	}
	return FALSE;
}

static gboolean
is_bytes(const guint8 *f, gsize len, gconstpointer data)
{
	gsize n;
	const guint8 *p = g_bytes_get_data((GBytes *)data, &n);

	return len == n && !memcmp(f, p, n);
}

/* ---- tests ----------------------------------------------------------------- */

static void
assert_ok(gboolean ok, GError *error)
{
	g_assert_no_error(error);
	g_assert_true(ok);
}

static NcmTap *
configured_tap(guint mtu)
{
	GError *error = NULL;
	NcmRtnlPrefix p4, p6;
	NcmTap *tap = ncm_tap_open("ncmtest%d", NCM_TAP_MODE_TAP, &error);
	int idx;

	g_assert_no_error(error);
	idx = ncm_tap_get_ifindex(tap);
	g_assert_cmpint(idx, >, 0);
	assert_ok(ncm_rtnl_prefix_parse(&p4, "192.168.79.1/24", &error), error);
	assert_ok(ncm_rtnl_prefix_parse(&p6, "fd79::1/64", &error), error);
	assert_ok(ncm_rtnl_set_mtu(idx, mtu, &error), error);
	assert_ok(ncm_rtnl_set_mac(idx, tap_mac, &error), error);
	assert_ok(ncm_rtnl_set_up(idx, TRUE, &error), error);
	assert_ok(ncm_rtnl_add_address(idx, &p4, FALSE, &error), error);
	assert_ok(ncm_rtnl_add_address(idx, &p6, TRUE, &error), error);
	return tap;
}

static void
assert_ifreq(const gchar *name, unsigned long req, struct ifreq *ifr)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(ifr, 0, sizeof(*ifr));
	g_strlcpy(ifr->ifr_name, name, IFNAMSIZ);
	g_assert_cmpint(ioctl(s, req, ifr), ==, 0);
	close(s);
}

/* The prefix length of @family's address @addr on @name, or -1 if absent. */
static int
kernel_prefix(const gchar *name, int family, const guint8 *addr)
{
	struct ifaddrs *all, *i;
	int found = -1;

	g_assert_cmpint(getifaddrs(&all), ==, 0);
	for (i = all; i; i = i->ifa_next) {
		const guint8 *a, *m;
		gsize n = family == AF_INET ? 4 : 16;
		int bits = 0;

		if (!i->ifa_addr || i->ifa_addr->sa_family != family || strcmp(i->ifa_name, name))
			continue;
		a = family == AF_INET ? (const guint8 *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
				      : ((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr.s6_addr;
		m = family == AF_INET ? (const guint8 *)&((struct sockaddr_in *)i->ifa_netmask)->sin_addr
				      : ((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr.s6_addr;
		if (memcmp(a, addr, n))
			continue;
		for (gsize b = 0; b < n; b++)
			bits += __builtin_popcount(m[b]);
		found = bits;
	}
	freeifaddrs(all);
	return found;
}

static void
test_rtnl_setup(void)
{
	NcmTap *tap;
	struct ifreq ifr;
	const gchar *name;

	if (!require_netns())
		return;
	tap = configured_tap(1400);
	name = ncm_tap_get_name(tap);
	g_assert_true(g_str_has_prefix(name, "ncmtest"));
	g_assert_false(ncm_tap_is_persistent(tap));
	assert_ifreq(name, SIOCGIFMTU, &ifr);
	g_assert_cmpint(ifr.ifr_mtu, ==, 1400);
	assert_ifreq(name, SIOCGIFHWADDR, &ifr);
	g_assert_cmpmem(ifr.ifr_hwaddr.sa_data, 6, tap_mac, 6);
	assert_ifreq(name, SIOCGIFFLAGS, &ifr);
	g_assert_true(ifr.ifr_flags & IFF_UP);
	g_assert_cmpint(kernel_prefix(name, AF_INET, tap_ip4), ==, 24);
	g_assert_cmpint(kernel_prefix(name, AF_INET6, tap_ip6), ==, 64);
	ncm_tap_free(tap);
	/* Not persistent: closing the fd removed the interface. */
	g_assert_cmpuint(if_nametoindex("ncmtest0"), ==, 0);
}

static void
test_rtnl_errors(void)
{
	GError *error = NULL;
	NcmRtnlPrefix p;

	assert_ok(ncm_rtnl_prefix_parse(&p, "10.1.2.3", &error), error);
	g_assert_cmpint(p.family, ==, AF_INET);
	g_assert_cmpuint(p.prefix, ==, 32);
	assert_ok(ncm_rtnl_prefix_parse(&p, "fd79::5/64", &error), error);
	g_assert_cmpint(p.family, ==, AF_INET6);
	g_assert_cmpuint(p.prefix, ==, 64);
	g_assert_cmpuint(p.addr[15], ==, 5);
	g_assert_false(ncm_rtnl_prefix_parse(&p, "10.1.2.3/33", &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
	g_clear_error(&error);
	g_assert_false(ncm_rtnl_prefix_parse(&p, "host.example/24", &error));
	g_clear_error(&error);
	g_assert_false(ncm_rtnl_prefix_parse(&p, "fd79::1/", &error));
	g_clear_error(&error);
	if (!require_netns())
		return;
	/* The kernel's refusal comes back as an error, not silence. */
	g_assert_false(ncm_rtnl_set_mtu(1000000, 1500, &error));
	g_assert_nonnull(error);
	g_test_message("expected: %s", error->message);
	g_clear_error(&error);
}

typedef struct {
	FakeLink *fake;
	NcmTap *tap;
	NcmPcap *pcap;
	gchar *pcap_path;
	guint sent;      /* requests exchange() put into the RX path, resends included */
} Rig;

static void
rig_attach(Rig *rig, NcmTap *tap, gboolean with_pcap)
{
	GError *error = NULL;

	rig->fake = fake_link_new();
	rig->tap = tap;
	if (with_pcap) {
		int fd = g_file_open_tmp("test-tap-XXXXXX.pcap", &rig->pcap_path, &error);

		g_assert_no_error(error);
		close(fd);
		/* ncm_pcap_open() creates the file itself, and refuses one that exists. */
		unlink(rig->pcap_path);
		rig->pcap = ncm_pcap_open(rig->pcap_path, 0, &error);
		g_assert_no_error(error);
		ncm_tap_set_pcap(tap, rig->pcap);
	}
	assert_ok(ncm_tap_attach(tap, &rig->fake->link, &error), error);
	g_assert_true(rig->fake->started);
}

static void
rig_free(Rig *rig)
{
	ncm_tap_free(rig->tap);
	g_assert_false(rig->fake->started);
	ncm_link_free(&rig->fake->link);
	ncm_pcap_close(rig->pcap);
	if (rig->pcap_path)
		unlink(rig->pcap_path);
	g_free(rig->pcap_path);
}

/* One request into the kernel through the RX path, its answer out through the reader. */
static gint
exchange(Rig *rig, const guint8 *req, gsize len, FrameMatch match, gconstpointer data)
{
	gint64 end = g_get_monotonic_time() + WAIT_US;
	gint at;

	/* Resent each second, as a real peer would: the kernel ignores a request
	 * that comes before the interface can answer it (a neighbour
	 * solicitation for a still-tentative address is dropped), which made
	 * one try fail now and then under load. */
	do {
		fake_receive(rig->fake, req, len);
		rig->sent++;
		at = fake_wait_frame_for(rig->fake, 0, match, data, G_USEC_PER_SEC);
	} while (at < 0 && g_get_monotonic_time() < end);
	g_assert_cmpint(at, >=, 0);
	/* The burst that carried the answer was flushed. */
	g_assert_cmpint(fake_wait_flush(rig->fake, (guint)at + 1), >, at);
	return at;
}

static void
test_kernel_answers(void)
{
	Rig rig = { 0 };
	guint8 f[128];
	gsize len;
	NcmTapStats st;
	g_autoptr(GPtrArray) recorded = NULL;
	g_autoptr(GBytes) arp = NULL;

	if (!require_netns())
		return;
	rig_attach(&rig, configured_tap(1500), TRUE);
	len = arp_request(f);
	arp = g_bytes_new(f, len);
	exchange(&rig, f, len, is_arp_reply, NULL);
	len = icmp_echo(f, 0x4e43);
	exchange(&rig, f, len, is_echo_reply, GUINT_TO_POINTER(0x4e43));
	len = ndp_solicit(f);
	exchange(&rig, f, len, is_ndp_advert, NULL);
	/* Joins the reader: its counters are final. */
	ncm_tap_detach(rig.tap);
	ncm_tap_get_stats(rig.tap, &st);
	/* Every request reached the kernel, a resent one too (exchange()). */
	g_assert_cmpuint(rig.sent, >=, 3);
	g_assert_cmpuint(st.rx_frames, ==, rig.sent);
	g_assert_cmpuint(st.rx_drops_full + st.rx_errors, ==, 0);
	g_assert_cmpuint(st.tx_frames, >=, 3);
	g_assert_cmpuint(st.tx_bursts, >=, 1);
	g_assert_cmpuint(st.tx_bursts, <=, st.tx_frames);
	/* Both directions were recorded at the link boundary. */
	ncm_pcap_flush(rig.pcap);
	recorded = pcap_read(rig.pcap_path);
	g_assert_cmpuint(recorded->len, ==, ncm_pcap_get_records(rig.pcap));
	g_assert_cmpuint(recorded->len, ==, st.rx_frames + st.tx_frames);
	g_assert_true(frames_contain(recorded, is_bytes, arp));
	g_assert_true(frames_contain(recorded, is_arp_reply, NULL));
	g_assert_true(frames_contain(recorded, is_ndp_advert, NULL));
	rig_free(&rig);
}

/* Frames written to a link that is down are dropped and counted, not fatal. */
static void
test_rx_interface_down(void)
{
	Rig rig = { 0 };
	GError *error = NULL;
	guint8 f[64];
	NcmTapStats st;

	if (!require_netns())
		return;
	rig_attach(&rig, configured_tap(1500), FALSE);
	assert_ok(ncm_rtnl_set_up(ncm_tap_get_ifindex(rig.tap), FALSE, &error), error);
	fake_receive(rig.fake, f, arp_request(f));
	ncm_tap_get_stats(rig.tap, &st);
	/* The kernel refuses writes to a down TAP with EIO. */
	g_assert_cmpuint(st.rx_errors, ==, 1);
	g_assert_cmpuint(st.rx_frames + st.rx_drops_full, ==, 0);
	rig_free(&rig);
}

static gboolean
set_flag(gpointer data)
{
	*(gboolean *)data = TRUE;
	return G_SOURCE_REMOVE;
}

/*
 * Issue 16: someone deletes the interface under us. Reads then fail with
 * EBADFD for ever; the reader used to retry every 10 ms. It must stop, say
 * so on the owner's context, and let detach and free finish.
 */
static void
test_interface_deleted(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *cmd = NULL;
	gboolean gone = FALSE;
	gint64 deadline;
	Rig rig = { 0 };
	NcmTapStats st;
	NcmTap *tap;
	int status;

	if (!require_netns())
		return;
	tap = configured_tap(1500);
	ncm_tap_set_gone_func(tap, set_flag, &gone);
	rig_attach(&rig, tap, FALSE);
	cmd = g_strdup_printf("ip link del %s", ncm_tap_get_name(tap));
	g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, &status, &error));
	g_assert_no_error(error);
	g_assert_cmpint(status, ==, 0);
	deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	while (!gone && g_get_monotonic_time() < deadline) {
		if (!g_main_context_iteration(NULL, FALSE))
			g_usleep(10000);
	}
	g_assert_true(gone);
	g_assert_true(ncm_tap_is_gone(tap));
	/* Stopped at once, not retrying: one failed read, give or take a race. */
	g_usleep(200000);
	ncm_tap_get_stats(tap, &st);
	g_assert_cmpuint(st.tx_read_errors, <=, 2);
	rig_free(&rig);
}

/* Puts a marker frame on the kernel side of the fd: the reader will read it. */
typedef void (*InjectFunc)(int fd, guint marker);

static void
inject_write(int fd, guint marker)
{
	guint8 f[60] = { 0 };

	eth_header(f, peer_mac, tap_mac, MARKER_ETHERTYPE);
	f[14] = (guint8)marker;
	g_assert_cmpint(write(fd, f, sizeof(f)), ==, sizeof(f));
}

static guint
fake_attempts(FakeLink *f)
{
	guint n;

	pthread_mutex_lock(&f->lock);
	n = f->attempts;
	pthread_mutex_unlock(&f->lock);
	return n;
}

static void
fake_set_blocked(FakeLink *f, gboolean blocked)
{
	pthread_mutex_lock(&f->lock);
	f->blocked = blocked;
	pthread_mutex_unlock(&f->lock);
}

/*
 * Marker 1 meets NCM_SEND_WOULD_BLOCK; markers 2-4 queue behind it; writable
 * releases them: all four arrive in order, marker 1 included (kept, not
 * dropped), and exactly one flush follows the burst.
 */
static void
run_burst(Rig *rig, InjectFunc inject, int fd)
{
	gint at[5];
	gint64 deadline = g_get_monotonic_time() + WAIT_US;
	NcmTapStats st;

	fake_set_blocked(rig->fake, TRUE);
	inject(fd, 1);
	while (fake_attempts(rig->fake) < 1 && g_get_monotonic_time() < deadline)
		g_usleep(1000);
	g_assert_cmpuint(fake_attempts(rig->fake), ==, 1);
	for (guint m = 2; m <= 4; m++)
		inject(fd, m);
	fake_set_blocked(rig->fake, FALSE);
	rig->fake->sink->writable(rig->fake->sink_data);
	for (guint m = 1; m <= 4; m++) {
		at[m] = fake_wait_frame(rig->fake, 0, is_marker, GUINT_TO_POINTER(m));
		g_assert_cmpint(at[m], >=, 0);
		if (m > 1)
			g_assert_cmpint(at[m], ==, at[m - 1] + 1);
	}
	g_assert_cmpint(fake_wait_flush(rig->fake, 0), ==, at[4] + 1);
	ncm_tap_detach(rig->tap);
	ncm_tap_get_stats(rig->tap, &st);
	g_assert_cmpuint(st.tx_waits, ==, 1);
	g_assert_cmpuint(st.tx_frames, ==, 4);
	g_assert_cmpuint(st.tx_bursts, ==, 1);
	g_assert_cmpuint(fake_attempts(rig->fake), ==, 5);
}

static void
test_burst_socketpair(void)
{
	Rig rig = { 0 };
	int sp[2];

	g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), ==, 0);
	rig_attach(&rig, ncm_tap_new_for_fd(sp[0], NCM_TAP_MODE_TAP, NULL), FALSE);
	g_assert_cmpint(ncm_tap_get_ifindex(rig.tap), ==, 0);
	/* The reader flushes every burst (run_burst() checks it), and says so
	 * before the link starts: then libncm does not wake its event thread
	 * for the flush timer of a lone frame's NTB (session 20: 0.7 ms of
	 * ncm-tun's 500/s round trip in the VM). */
	g_assert_true(rig.fake->flushes_at_start);
	run_burst(&rig, inject_write, sp[1]);
	rig_free(&rig);
	close(sp[1]);
}

/* An IPv4 packet of @ip_len bytes and @proto in a 60-byte frame; the L4 header at 34. */
static void
ipv4_frame(guint8 f[60], guint8 proto, guint ip_len)
{
	memset(f, 0, 60);
	eth_header(f, peer_mac, tap_mac, 0x0800);
	f[14] = 0x45;
	put_be16(f + 16, ip_len);
	f[23] = proto;
}

/* A pure TCP ACK (IPv4, no payload): the reader may send it before older data. */
static void
inject_ack(int fd)
{
	guint8 f[60];

	ipv4_frame(f, 6, 40);
	f[34 + 12] = 5 << 4;
	f[34 + 13] = 0x10;
	g_assert_cmpint(write(fd, f, sizeof(f)), ==, sizeof(f));
}

static gboolean
is_tcp(const guint8 *f, gsize len, gconstpointer data)
{
	return len >= 54 && get_be16(f + 12) == 0x0800 && f[23] == 6;
}

/* A rig whose link refuses: marker 1 is read and meets NCM_SEND_WOULD_BLOCK;
 * what is written to @sp[1] next is read ahead at the next room. */
static void
rig_blocked(Rig *rig, int sp[2], gsize queue_limit)
{
	gint64 deadline = g_get_monotonic_time() + WAIT_US;

	g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), ==, 0);
	rig->tap = ncm_tap_new_for_fd(sp[0], NCM_TAP_MODE_TAP, NULL);
	if (queue_limit)
		ncm_tap_set_tx_queue_limit(rig->tap, queue_limit);
	rig_attach(rig, rig->tap, FALSE);
	fake_set_blocked(rig->fake, TRUE);
	inject_write(sp[1], 1);
	while (fake_attempts(rig->fake) < 1 && g_get_monotonic_time() < deadline)
		g_usleep(1000);
}

/* The link has room again, and says so. */
static void
rig_unblock(Rig *rig)
{
	fake_set_blocked(rig->fake, FALSE);
	rig->fake->sink->writable(rig->fake->sink_data);
}

/*
 * Issue 15, the tcp_bidir collapse: at each room the reader empties the
 * TAP's ring, so that an ACK the host sends behind a bulk upload does not
 * wait behind it. Marker 1 meets NCM_SEND_WOULD_BLOCK; markers 2-5 and then
 * an ACK arrive meanwhile. With a limit of two markers, 2 and 3 wait and 4
 * and 5 are dropped; at the next room the ACK goes first, then 1, 2, 3.
 */
static void
test_acks_ahead(void)
{
	Rig rig = { 0 };
	NcmTapStats st;
	gint ack, at;
	int sp[2];

	rig_blocked(&rig, sp, 2 * 60);
	for (guint m = 2; m <= 5; m++)
		inject_write(sp[1], m);
	inject_ack(sp[1]);
	rig_unblock(&rig);
	ack = fake_wait_frame(rig.fake, 0, is_tcp, NULL);
	g_assert_cmpint(ack, ==, 0);
	for (guint m = 1; m <= 3; m++) {
		at = fake_wait_frame(rig.fake, 0, is_marker, GUINT_TO_POINTER(m));
		g_assert_cmpint(at, ==, ack + (gint)m);
	}
	g_assert_cmpint(fake_wait_flush(rig.fake, 0), ==, ack + 4);
	ncm_tap_detach(rig.tap);
	for (guint m = 4; m <= 5; m++)
		g_assert_cmpint(fake_wait_frame_for(rig.fake, 0, is_marker, GUINT_TO_POINTER(m), 0), <, 0);
	ncm_tap_get_stats(rig.tap, &st);
	g_assert_cmpuint(st.tx_queued, ==, 5);
	g_assert_cmpuint(st.tx_drops_queue, ==, 2);
	g_assert_cmpuint(st.tx_acks_ahead, ==, 1);
	g_assert_cmpuint(st.tx_frames, ==, 4);
	g_assert_cmpuint(st.tx_waits, ==, 1);
	rig_free(&rig);
	close(sp[1]);
}

/* A small IPv4 UDP datagram: a DNS query, a game's update, a probe. */
static void
inject_udp(int fd)
{
	guint8 f[60];

	ipv4_frame(f, 17, 46);
	put_be16(f + 34, 5353);
	put_be16(f + 36, 53);
	g_assert_cmpint(write(fd, f, sizeof(f)), ==, sizeof(f));
}

static gboolean
is_udp(const guint8 *f, gsize len, gconstpointer data)
{
	return len >= 42 && get_be16(f + 12) == 0x0800 && f[23] == 17;
}

/*
 * Issue 20: a sparse flow's packet waits for the link, not behind a bulk
 * upload. Marker 1 meets NCM_SEND_WOULD_BLOCK; markers 2 and 3 of its flow
 * and then a lone UDP datagram arrive. At the next room the datagram goes
 * first; the markers keep their order behind 1, which was in the reader's
 * hands (none of its flow may pass it).
 */
static void
test_sparse_ahead(void)
{
	Rig rig = { 0 };
	NcmTapStats st;
	gint udp, at;
	int sp[2];

	rig_blocked(&rig, sp, 0);
	inject_write(sp[1], 2);
	inject_write(sp[1], 3);
	inject_udp(sp[1]);
	rig_unblock(&rig);
	udp = fake_wait_frame(rig.fake, 0, is_udp, NULL);
	g_assert_cmpint(udp, ==, 0);
	for (guint m = 1; m <= 3; m++) {
		at = fake_wait_frame(rig.fake, 0, is_marker, GUINT_TO_POINTER(m));
		g_assert_cmpint(at, ==, udp + (gint)m);
	}
	ncm_tap_detach(rig.tap);
	ncm_tap_get_stats(rig.tap, &st);
	g_assert_cmpuint(st.tx_queued, ==, 3);
	g_assert_cmpuint(st.tx_sparse_ahead, ==, 1);
	g_assert_cmpuint(st.tx_acks_ahead, ==, 0);
	rig_free(&rig);
	close(sp[1]);
}

static int packet_ifindex;

static void
inject_packet(int fd, guint marker)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = packet_ifindex,
				  .sll_halen = 6 };
	guint8 f[60] = { 0 };

	eth_header(f, peer_mac, tap_mac, MARKER_ETHERTYPE);
	f[14] = (guint8)marker;
	memcpy(to.sll_addr, peer_mac, 6);
	g_assert_cmpint(sendto(fd, f, sizeof(f), 0, (struct sockaddr *)&to, sizeof(to)), ==,
			sizeof(f));
}

static void
write_sysctl(const gchar *path, const gchar *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(write(fd, value, strlen(value)), ==, (ssize_t)strlen(value));
	close(fd);
}

/* The kernel transmits on the TAP (a packet socket), with IPv6 off so nothing else talks. */
static void
test_burst_kernel(void)
{
	Rig rig = { 0 };
	GError *error = NULL;
	NcmTap *tap;
	g_autofree gchar *knob = NULL;
	int s;

	if (!require_netns())
		return;
	tap = ncm_tap_open("ncmtest%d", NCM_TAP_MODE_TAP, &error);
	g_assert_no_error(error);
	knob = g_strdup_printf("/proc/sys/net/ipv6/conf/%s/disable_ipv6", ncm_tap_get_name(tap));
	write_sysctl(knob, "1");
	packet_ifindex = ncm_tap_get_ifindex(tap);
	assert_ok(ncm_rtnl_set_up(packet_ifindex, TRUE, &error), error);
	rig_attach(&rig, tap, FALSE);
	s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	g_assert_cmpint(s, >=, 0);
	run_burst(&rig, inject_packet, s);
	close(s);
	rig_free(&rig);
}

/*
 * The kernel side stops taking frames (a datagram socket nobody reads): the
 * RX path drops and counts instead of blocking, and what got through is
 * intact and in order.
 */
static void
test_rx_full_drops(void)
{
	Rig rig = { 0 };
	guint8 f[1000] = { 0 }, in[2000];
	const guint n = 300;
	guint got = 0, last = 0;
	NcmTapStats st;
	int sp[2];
	ssize_t r;

	g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), ==, 0);
	rig_attach(&rig, ncm_tap_new_for_fd(sp[0], NCM_TAP_MODE_TAP, NULL), FALSE);
	for (guint i = 1; i <= n; i++) {
		memcpy(f + 16, &i, sizeof(i));
		rig.fake->sink->receive(rig.fake->sink_data, f, sizeof(f));
	}
	rig.fake->sink->receive_done(rig.fake->sink_data);
	ncm_tap_get_stats(rig.tap, &st);
	g_assert_cmpuint(st.rx_drops_full, >, 0);
	g_assert_cmpuint(st.rx_frames + st.rx_drops_full, ==, n);
	g_assert_cmpuint(st.rx_errors, ==, 0);
	while ((r = recv(sp[1], in, sizeof(in), MSG_DONTWAIT)) > 0) {
		guint seq;

		g_assert_cmpint(r, ==, sizeof(f));
		memcpy(&seq, in + 16, sizeof(seq));
		g_assert_cmpuint(seq, >, last);
		last = seq;
		got++;
	}
	g_assert_cmpuint(got, ==, st.rx_frames);
	g_test_message("%u frames: %" G_GUINT64_FORMAT " delivered, %" G_GUINT64_FORMAT
		       " dropped", n, st.rx_frames, st.rx_drops_full);
	rig_free(&rig);
	close(sp[1]);
}

/* A pure TCP ACK over IPv4 (54 bytes), duplicates of one another; @tag in the IP ID. */
static gsize
tcp_ack(guint8 *f, guint8 tag)
{
	memset(f, 0, 54);
	f[12] = 0x08;
	f[14] = 0x45;
	f[17] = 40;                  /* IP total length */
	f[19] = tag;
	f[22] = 64;
	f[23] = 6;                   /* TCP */
	f[46] = 0x50;                /* 20-byte header */
	f[47] = 0x10;                /* ACK */
	return 54;
}

/*
 * TCP segments without payload (ACKs) reach the fd at receive_done, not at
 * receive: the event thread ends the devices' batches in turn
 * (ncm-tap-hold.h). Anything else goes at once, small or large, and writes
 * the held ones first, so the order stays.
 */
static void
test_rx_hold(void)
{
	Rig rig = { 0 };
	guint8 ack[54], big[1000] = { 0 }, small[60] = { 0 }, in[2000];
	const gssize lens[] = { 54, 54, 1000, 54, 60, 54 };
	int sp[2];
	guint at = 0;

	g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), ==, 0);
	rig_attach(&rig, ncm_tap_new_for_fd(sp[0], NCM_TAP_MODE_TAP, NULL), FALSE);
	for (guint8 i = 1; i <= 2; i++)
		rig.fake->sink->receive(rig.fake->sink_data, ack, tcp_ack(ack, i));
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), <, 0);
	big[19] = 3;
	rig.fake->sink->receive(rig.fake->sink_data, big, sizeof(big));
	rig.fake->sink->receive(rig.fake->sink_data, ack, tcp_ack(ack, 4));
	/* Not TCP, and as small as an ACK: at once, behind the held one. */
	small[19] = 5;
	rig.fake->sink->receive(rig.fake->sink_data, small, sizeof(small));
	rig.fake->sink->receive(rig.fake->sink_data, ack, tcp_ack(ack, 6));
	for (; at < 5; at++) {
		g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), ==, lens[at]);
		g_assert_cmpuint(in[19], ==, at + 1);
	}
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), <, 0);
	rig.fake->sink->receive_done(rig.fake->sink_data);
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), ==, lens[at]);
	g_assert_cmpuint(in[19], ==, at + 1);
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), <, 0);
	rig_free(&rig);
	close(sp[1]);
}

/* ---- TUN (L3) mode ----------------------------------------------------------- */

/* The Internet checksum of an ICMPv6 message in @frame, pseudo-header included: 0 if valid. */
static guint16
icmp6_verify(const guint8 *frame)
{
	const guint8 *ip = frame + 14;
	guint16 plen = get_be16(ip + 4);
	guint32 sum = plen + 58u;

	for (guint i = 0; i < 32; i += 2)
		sum += get_be16(ip + 8 + i);
	return inet_csum(ip + 40, plen, sum);
}

static void
assert_from_tap(FakeLink *f, gint at, guint16 type)
{
	GBytes *b = g_array_index(f->events, LinkEvent, at).frame;
	const guint8 *p = g_bytes_get_data(b, NULL);

	g_assert_cmpmem(p + 6, 6, tap_mac, 6);
	g_assert_cmpuint(get_be16(p + 12), ==, type);
}

/* Without waiting: is there a flush after event @at already? */
static gboolean
fake_flushed_after(FakeLink *f, guint at)
{
	gboolean found = FALSE;

	pthread_mutex_lock(&f->lock);
	for (guint i = at + 1; i < f->events->len && !found; i++)
		found = g_array_index(f->events, LinkEvent, i).frame == NULL;
	pthread_mutex_unlock(&f->lock);
	return found;
}

static guint64
l3_answers(NcmTap *tap)
{
	NcmTapStats st;

	ncm_tap_get_stats(tap, &st);
	return st.l3_answers;
}

/* The backend answers ARP and NS itself; IP goes to the kernel and back, framed. */
static void
test_tun_kernel(void)
{
	Rig rig = { 0 };
	GError *error = NULL;
	NcmRtnlPrefix p4, p6;
	guint8 f[128];
	gint at;
	NcmTap *tap;
	g_autoptr(GPtrArray) recorded = NULL;

	if (!require_netns())
		return;
	tap = ncm_tap_open("ncmtun%d", NCM_TAP_MODE_TUN, &error);
	g_assert_no_error(error);
	assert_ok(ncm_rtnl_prefix_parse(&p4, "192.168.79.1/24", &error), error);
	assert_ok(ncm_rtnl_prefix_parse(&p6, "fd79::1/64", &error), error);
	assert_ok(ncm_rtnl_set_up(ncm_tap_get_ifindex(tap), TRUE, &error), error);
	assert_ok(ncm_rtnl_add_address(ncm_tap_get_ifindex(tap), &p4, FALSE, &error), error);
	assert_ok(ncm_rtnl_add_address(ncm_tap_get_ifindex(tap), &p6, TRUE, &error), error);
	rig_attach(&rig, tap, TRUE);
	/* Answered and flushed on the receiving thread, before fake_receive() returns. */
	fake_receive(rig.fake, f, arp_request(f));
	g_assert_cmpuint(l3_answers(tap), ==, 1);
	at = fake_wait_frame(rig.fake, 0, is_arp_reply, NULL);
	g_assert_cmpint(at, >=, 0);
	g_assert_true(fake_flushed_after(rig.fake, (guint)at));
	at = exchange(&rig, f, icmp_echo(f, 7), is_echo_reply, GUINT_TO_POINTER(7));
	assert_from_tap(rig.fake, at, 0x0800);
	fake_receive(rig.fake, f, ndp_solicit(f));
	at = fake_wait_frame(rig.fake, 0, is_ndp_advert, NULL);
	g_assert_cmpint(at, >=, 0);
	assert_from_tap(rig.fake, at, 0x86dd);
	g_assert_true(fake_flushed_after(rig.fake, (guint)at));
	g_assert_cmpuint(icmp6_verify(g_bytes_get_data(
		g_array_index(rig.fake->events, LinkEvent, at).frame, NULL)), ==, 0);
	g_assert_cmpuint(l3_answers(tap), ==, 2);
	/* Duplicate address detection (source ::) must stay unanswered. */
	ndp_solicit(f);
	memset(f + 14 + 8, 0, 16);
	fake_receive(rig.fake, f, 14 + 72);
	g_assert_cmpuint(l3_answers(tap), ==, 2);
	/* The answers crossed the NTB boundary too: the capture has them. */
	ncm_tap_detach(tap);
	ncm_pcap_flush(rig.pcap);
	recorded = pcap_read(rig.pcap_path);
	g_assert_true(frames_contain(recorded, is_arp_reply, NULL));
	g_assert_true(frames_contain(recorded, is_ndp_advert, NULL));
	g_assert_true(frames_contain(recorded, is_echo_reply, GUINT_TO_POINTER(7)));
	rig_free(&rig);
}

static gsize
ip_packet(guint8 *p, int version, const guint8 *dst)
{
	memset(p, 0, 40);
	p[0] = (guint8)(version << 4 | (version == 4 ? 5 : 0));
	if (version == 4) {
		put_be16(p + 2, 20);
		memcpy(p + 16, dst, 4);
		return 20;
	}
	memcpy(p + 24, dst, 16);
	return 40;
}

/* What the reader makes of one IP packet written on the kernel side. */
static void
assert_framed(Rig *rig, int fd, int version, const guint8 *dst_ip, const guint8 *want_mac)
{
	guint8 pkt[40];
	gsize len = ip_packet(pkt, version, dst_ip);
	guint before;
	const guint8 *p;

	pthread_mutex_lock(&rig->fake->lock);
	before = rig->fake->events->len;
	pthread_mutex_unlock(&rig->fake->lock);
	g_assert_cmpint(write(fd, pkt, len), ==, (ssize_t)len);
	g_assert_cmpint(fake_wait_flush(rig->fake, before), ==, (gint)before + 1);
	p = g_bytes_get_data(g_array_index(rig->fake->events, LinkEvent, before).frame, NULL);
	g_assert_cmpmem(p, 6, want_mac, 6);
	g_assert_cmpmem(p + 6, 6, tap_mac, 6);
	g_assert_cmpuint(get_be16(p + 12), ==, version == 4 ? 0x0800 : 0x86dd);
	g_assert_cmpmem(p + 14, len, pkt, len);
}

static void
test_tun_framing(void)
{
	static const guint8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const guint8 mdns4[4] = { 224, 0, 0, 251 }, mdns4_mac[6] = { 1, 0, 0x5e, 0, 0, 251 };
	static const guint8 all6[16] = { 0xff, 0x02, [15] = 1 }, all6_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	static const guint8 other_mac[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	Rig rig = { 0 };
	guint8 f[64], in[64];
	int sp[2];

	g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), ==, 0);
	rig_attach(&rig, ncm_tap_new_for_fd(sp[0], NCM_TAP_MODE_TUN, NULL), FALSE);
	/* Nothing heard from the device yet: unicast goes to broadcast. */
	assert_framed(&rig, sp[1], 4, peer_ip4, bcast);
	assert_framed(&rig, sp[1], 4, mdns4, mdns4_mac);
	assert_framed(&rig, sp[1], 6, all6, all6_mac);
	/* A frame for another MAC is not ours: nothing reaches the kernel side. */
	eth_header(f, other_mac, peer_mac, 0x0800);
	ip_packet(f + 14, 4, tap_ip4);
	fake_receive(rig.fake, f, 34);
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), ==, -1);
	/* One for us: the kernel gets the bare IP packet, and the peer's MAC is learned. */
	memcpy(f, tap_mac, 6);
	fake_receive(rig.fake, f, 34);
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), ==, 20);
	g_assert_cmpmem(in, 20, f + 14, 20);
	assert_framed(&rig, sp[1], 4, peer_ip4, peer_mac);
	assert_framed(&rig, sp[1], 6, peer_ip6, peer_mac);
	rig_free(&rig);
	close(sp[1]);
}

/*
 * TUN mode asks the Ethernet frame whether to hold it, before its header
 * goes: an ACK waits for receive_done, a packet that is not TCP goes at once.
 */
static void
test_tun_hold(void)
{
	Rig rig = { 0 };
	guint8 f[64], in[64];
	int sp[2];

	g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), ==, 0);
	rig_attach(&rig, ncm_tap_new_for_fd(sp[0], NCM_TAP_MODE_TUN, NULL), FALSE);
	tcp_ack(f, 7);
	eth_header(f, tap_mac, peer_mac, 0x0800);
	rig.fake->sink->receive(rig.fake->sink_data, f, 54);
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), <, 0);
	eth_header(f, tap_mac, peer_mac, 0x0800);
	ip_packet(f + 14, 4, tap_ip4);
	rig.fake->sink->receive(rig.fake->sink_data, f, 34);
	/* The held ACK first, as a bare IP packet, then the other one. */
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), ==, 40);
	g_assert_cmpuint(in[5], ==, 7);
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), ==, 20);
	g_assert_cmpmem(in, 20, f + 14, 20);
	tcp_ack(f, 8);
	eth_header(f, tap_mac, peer_mac, 0x0800);
	rig.fake->sink->receive(rig.fake->sink_data, f, 54);
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), <, 0);
	rig.fake->sink->receive_done(rig.fake->sink_data);
	g_assert_cmpint(recv(sp[1], in, sizeof(in), MSG_DONTWAIT), ==, 40);
	g_assert_cmpuint(in[5], ==, 8);
	rig_free(&rig);
	close(sp[1]);
}

/* ---- pcap under concurrency ------------------------------------------------ */

#define PCAP_THREADS 4
#define PCAP_PER_THREAD 500

typedef struct {
	NcmPcap *pcap;
	guint id;
} PcapWriter;

/* Frame @seq of writer @id: its length and every byte derive from both. */
static gsize
pcap_test_frame(guint8 *f, guint id, guint seq)
{
	gsize len = 60 + (id * 131 + seq * 17) % 1455;

	eth_header(f, peer_mac, tap_mac, MARKER_ETHERTYPE);
	f[14] = (guint8)id;
	memcpy(f + 15, &seq, sizeof(seq));
	for (gsize i = 19; i < len; i++)
		f[i] = (guint8)(i + id + seq);
	return len;
}

static gpointer
pcap_writer_main(gpointer data)
{
	PcapWriter *w = data;
	guint8 f[1514];

	for (guint seq = 0; seq < PCAP_PER_THREAD; seq++)
		ncm_pcap_write(w->pcap, f, pcap_test_frame(f, w->id, seq));
	return NULL;
}

static void
pcap_check_records(GPtrArray *frames)
{
	guint next[PCAP_THREADS] = { 0 };
	guint8 want[1514];

	g_assert_cmpuint(frames->len, ==, PCAP_THREADS * PCAP_PER_THREAD);
	for (guint i = 0; i < frames->len; i++) {
		gsize len;
		const guint8 *p = g_bytes_get_data(frames->pdata[i], &len);
		guint id = p[14], seq;

		g_assert_cmpuint(id, <, PCAP_THREADS);
		memcpy(&seq, p + 15, sizeof(seq));
		/* Each writer's records are whole and in its own order. */
		g_assert_cmpuint(seq, ==, next[id]);
		next[id]++;
		g_assert_cmpmem(p, len, want, pcap_test_frame(want, id, seq));
	}
}

static void
pcap_check_tcpdump(const gchar *path)
{
	g_autofree gchar *tcpdump = g_find_program_in_path("tcpdump");
	g_autofree gchar *out = NULL, *err = NULL;
	g_autoptr(GError) error = NULL;
	const gchar *argv[] = { NULL, "-nn", "-r", path, NULL };
	guint records = 0;
	int status;

	if (!tcpdump) {
		g_test_message("tcpdump not installed: only the built-in reader checked the file");
		return;
	}
	argv[0] = tcpdump;
	g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
				   &out, &err, &status, &error));
	g_assert_no_error(error);
	g_assert_true(g_spawn_check_wait_status(status, NULL));
	/* One summary line per record; hex dumps of the payload are indented. */
	for (const gchar *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
		if (*l != '\t' && *l != ' ' && *l != '\n')
			records++;
	g_assert_cmpuint(records, ==, PCAP_THREADS * PCAP_PER_THREAD);
}

static void
test_pcap_concurrent(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *path = NULL;
	g_autoptr(GPtrArray) frames = NULL;
	PcapWriter w[PCAP_THREADS];
	GThread *t[PCAP_THREADS];
	NcmPcap *pcap;
	int fd = g_file_open_tmp("test-tap-XXXXXX.pcap", &path, &error);

	g_assert_no_error(error);
	close(fd);
	unlink(path);
	pcap = ncm_pcap_open(path, 0, &error);
	g_assert_no_error(error);
	for (guint i = 0; i < PCAP_THREADS; i++) {
		w[i] = (PcapWriter){ pcap, i };
		t[i] = g_thread_new("pcap-writer", pcap_writer_main, &w[i]);
	}
	for (guint i = 0; i < PCAP_THREADS; i++)
		g_thread_join(t[i]);
	g_assert_cmpuint(ncm_pcap_get_records(pcap), ==, PCAP_THREADS * PCAP_PER_THREAD);
	g_assert_cmpuint(ncm_pcap_get_lost(pcap), ==, 0);
	ncm_pcap_close(pcap);
	frames = pcap_read(path);
	pcap_check_records(frames);
	pcap_check_tcpdump(path);
	unlink(path);
}

static void
test_pcap_open_error(void)
{
	g_autoptr(GError) error = NULL;

	g_assert_null(ncm_pcap_open("/nonexistent-dir/x.pcap", 0, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
	g_assert_nonnull(strstr(error->message, "/nonexistent-dir/x.pcap"));
}

/*
 * Issue 16: ncm-tun opens --pcap as root before dropping privileges, so a
 * file or symlink someone prepared must be refused, never written through,
 * and the capture is its owner's alone.
 */
static void
test_pcap_refuses_existing(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *dir = g_dir_make_tmp("test-pcap-XXXXXX", &error);
	g_autofree gchar *file = g_build_filename(dir, "exists.pcap", NULL);
	g_autofree gchar *target = g_build_filename(dir, "target", NULL);
	g_autofree gchar *link = g_build_filename(dir, "link.pcap", NULL);
	g_autofree gchar *fresh = g_build_filename(dir, "fresh.pcap", NULL);
	g_autofree gchar *content = NULL;
	struct stat st;
	NcmPcap *pcap;

	g_assert_no_error(error);
	g_assert_true(g_file_set_contents(file, "keep", 4, NULL));
	g_assert_null(ncm_pcap_open(file, 0, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS);
	g_assert_nonnull(strstr(error->message, "remove it"));
	g_clear_error(&error);
	g_assert_true(g_file_get_contents(file, &content, NULL, NULL));
	g_assert_cmpstr(content, ==, "keep");

	/* A dangling symlink: following it would create the target. */
	g_assert_cmpint(symlink(target, link), ==, 0);
	g_assert_null(ncm_pcap_open(link, 0, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS);
	g_clear_error(&error);
	g_assert_false(g_file_test(target, G_FILE_TEST_EXISTS));

	umask(022);
	pcap = ncm_pcap_open(fresh, 0, &error);
	g_assert_no_error(error);
	g_assert_cmpint(stat(fresh, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 0777, ==, 0600);
	ncm_pcap_close(pcap);
	unlink(fresh);
	unlink(link);
	unlink(file);
	rmdir(dir);
}

/* Past --pcap-max, records are counted and left out; the file stays whole. */
static void
test_pcap_max(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *dir = g_dir_make_tmp("test-pcap-XXXXXX", &error);
	g_autofree gchar *path = g_build_filename(dir, "capped.pcap", NULL);
	g_autoptr(GPtrArray) frames = NULL;
	guint8 frame[60] = { 0 };
	struct stat st;
	NcmPcap *pcap;

	g_assert_no_error(error);
	/* The header (24) and two records (16 + 60 each), one byte short of a third. */
	pcap = ncm_pcap_open(path, 24 + 3 * (16 + sizeof(frame)) - 1, &error);
	g_assert_no_error(error);
	for (guint i = 0; i < 5; i++)
		ncm_pcap_write(pcap, frame, sizeof(frame));
	g_assert_cmpuint(ncm_pcap_get_records(pcap), ==, 2);
	g_assert_cmpuint(ncm_pcap_get_over_max(pcap), ==, 3);
	g_assert_cmpuint(ncm_pcap_get_lost(pcap), ==, 0);
	ncm_pcap_close(pcap);
	g_assert_cmpint(stat(path, &st), ==, 0);
	g_assert_cmpint(st.st_size, ==, 24 + 2 * (16 + sizeof(frame)));
	frames = pcap_read(path);
	g_assert_cmpuint(frames->len, ==, 2);
	unlink(path);
	rmdir(dir);
}

/* A frame in pieces (a TSO segment's headers and payload) is one record, the pieces in order. */
static void
test_pcap_writev(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *dir = g_dir_make_tmp("test-pcap-XXXXXX", &error);
	g_autofree gchar *path = g_build_filename(dir, "pieces.pcap", NULL);
	g_autoptr(GPtrArray) frames = NULL;
	guint8 hdr[54], payload[1448], whole[sizeof(hdr) + sizeof(payload)];
	GOutputVector v[2] = { { hdr, sizeof(hdr) }, { payload, sizeof(payload) } };
	NcmPcap *pcap;

	g_assert_no_error(error);
	for (gsize i = 0; i < sizeof(whole); i++)
		whole[i] = (guint8)(i * 7 + 1);
	memcpy(hdr, whole, sizeof(hdr));
	memcpy(payload, whole + sizeof(hdr), sizeof(payload));
	pcap = ncm_pcap_open(path, 0, &error);
	g_assert_no_error(error);
	ncm_pcap_writev(pcap, v, 2);
	ncm_pcap_writev(pcap, v, 1);
	g_assert_cmpuint(ncm_pcap_get_records(pcap), ==, 2);
	ncm_pcap_close(pcap);
	frames = pcap_read(path);
	g_assert_cmpuint(frames->len, ==, 2);
	g_assert_cmpmem(g_bytes_get_data(frames->pdata[0], NULL), g_bytes_get_size(frames->pdata[0]),
			whole, sizeof(whole));
	g_assert_cmpmem(g_bytes_get_data(frames->pdata[1], NULL), g_bytes_get_size(frames->pdata[1]),
			hdr, sizeof(hdr));
	unlink(path);
	rmdir(dir);
}

/* A private network namespace keeps 192.168.79.0/24 and fd79::/64 off the host. */
static void
enter_netns(void)
{
	int fd;

	if (geteuid() != 0) {
		no_netns_reason = g_strdup("needs root for a network namespace and TAP devices");
		return;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		no_netns_reason = g_strdup_printf("unshare(CLONE_NEWNET): %s", g_strerror(errno));
		return;
	}
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		no_netns_reason = g_strdup_printf("/dev/net/tun: %s (modprobe tun)",
						  g_strerror(errno));
		return;
	}
	close(fd);
	have_netns = TRUE;
}

/* Child: exits 0 when @error is @code and its message says @hint. */
static int
check_user_error(const char *what, GError *error, gint code, const char *hint)
{
	if (error == NULL) {
		fprintf(stderr, "%s: no error\n", what);
		return 1;
	}
	fprintf(stderr, "%s: %s\n", what, error->message);
	if (!g_error_matches(error, G_IO_ERROR, code) || strstr(error->message, hint) == NULL)
		return 1;
	return 0;
}

/* Child: a private mount namespace where /dev/net is empty. */
static int
user_error_no_tun(void)
{
	GError *error = NULL;
	NcmTap *tap;
	int rc;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/dev/net", "tmpfs", 0, NULL) < 0) {
		fprintf(stderr, "no mount namespace: %s\n", g_strerror(errno));
		return 77;
	}
	tap = ncm_tap_open("ncmerr%d", NCM_TAP_MODE_TAP, &error);
	rc = tap == NULL ? check_user_error("no /dev/net/tun", error, G_IO_ERROR_NOT_FOUND,
					    "modprobe tun") : 1;
	g_clear_error(&error);
	return rc;
}

/* A persistent single-queue interface of @flags' kind, as `ip tuntap add` leaves one; @persist 0 removes it. */
static gboolean
persist_iface(const gchar *name, short flags, int persist)
{
	struct ifreq ifr = { .ifr_flags = (short)(flags | IFF_NO_PI) };
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	gboolean ok;

	if (fd < 0)
		return FALSE;
	g_strlcpy(ifr.ifr_name, name, IFNAMSIZ);
	ok = ioctl(fd, TUNSETIFF, &ifr) == 0 && ioctl(fd, TUNSETPERSIST, persist) == 0;
	close(fd);
	return ok;
}

/* Child: root made a TAP beforehand, and the user asks for a TUN on it. */
static int
user_error_wrong_kind(void)
{
	GError *error = NULL;
	NcmTap *tap;
	int rc;

	if (!persist_iface("ncmkind0", IFF_TAP, 1))
		return 77;
	tap = ncm_tap_open("ncmkind0", NCM_TAP_MODE_TUN, &error);
	rc = tap == NULL ? check_user_error("TUN on a TAP", error, G_IO_ERROR_INVALID_ARGUMENT,
					    "ip tuntap add mode tun user USER name ncmkind0") : 1;
	g_clear_error(&error);
	if (!persist_iface("ncmkind0", IFF_TAP, 0))
		rc = 1;
	return rc;
}

/* Child: root without CAP_NET_ADMIN, as a service with a trimmed capability set. */
static int
user_error_no_cap(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	GError *error = NULL;
	NcmTap *tap;
	int rc;

	if (syscall(SYS_capget, &hdr, data) < 0)
		return 77;
	data[0].effective &= ~(1u << CAP_NET_ADMIN);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return 77;
	tap = ncm_tap_open("ncmerr%d", NCM_TAP_MODE_TAP, &error);
	rc = tap == NULL ? check_user_error("TAP without CAP_NET_ADMIN", error,
					    G_IO_ERROR_PERMISSION_DENIED,
					    "(ip tuntap add mode tap user USER name ncm0)") : 1;
	g_clear_error(&error);
	if (rc == 0 && !ncm_rtnl_set_mtu((int)if_nametoindex("lo"), 1500, &error))
		rc = check_user_error("rtnetlink without CAP_NET_ADMIN", error,
				      G_IO_ERROR_PERMISSION_DENIED, "CAP_NET_ADMIN");
	else if (rc == 0)
		rc = 1;
	g_clear_error(&error);
	return rc;
}

static void
run_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	g_assert_cmpint(pid, >=, 0);
	if (pid == 0)
		_exit(fn());
	g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
	g_assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		g_test_skip("cannot set up the failure here (no mount namespace or capset)");
		return;
	}
	g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* The failures a user meets, each with a message that says what to do. */
static void
test_user_errors(void)
{
	if (!require_netns())
		return;
	run_child(user_error_no_tun);
	run_child(user_error_no_cap);
	run_child(user_error_wrong_kind);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	enter_netns();
	g_test_add_func("/tap/rtnl/setup", test_rtnl_setup);
	g_test_add_func("/tap/rtnl/errors", test_rtnl_errors);
	g_test_add_func("/tap/kernel-answers", test_kernel_answers);
	g_test_add_func("/tap/rx/interface-down", test_rx_interface_down);
	g_test_add_func("/tap/rx/full-drops", test_rx_full_drops);
	g_test_add_func("/tap/rx/hold", test_rx_hold);
	g_test_add_func("/tap/tx/burst-socketpair", test_burst_socketpair);
	g_test_add_func("/tap/tx/burst-kernel", test_burst_kernel);
	g_test_add_func("/tap/tx/acks-ahead", test_acks_ahead);
	g_test_add_func("/tap/tx/sparse-ahead", test_sparse_ahead);
	g_test_add_func("/tap/tun/kernel", test_tun_kernel);
	g_test_add_func("/tap/tun/framing", test_tun_framing);
	g_test_add_func("/tap/tun/hold", test_tun_hold);
	g_test_add_func("/tap/pcap/concurrent", test_pcap_concurrent);
	g_test_add_func("/tap/interface-deleted", test_interface_deleted);
	g_test_add_func("/tap/pcap/open-error", test_pcap_open_error);
	g_test_add_func("/tap/pcap/refuses-existing", test_pcap_refuses_existing);
	g_test_add_func("/tap/pcap/max", test_pcap_max);
	g_test_add_func("/tap/pcap/writev", test_pcap_writev);
	g_test_add_func("/tap/user-errors", test_user_errors);
	return g_test_run();
}
