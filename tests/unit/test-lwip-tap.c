/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-tap.c: the lwIP netstack against the Linux kernel's TCP/UDP through a TAP device in a private netns. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <gio/gio.h>
#ifdef TCP_RAW_PEER
#include "tcp-raw-peer.h"
#include "vmtest-heap.h"
#endif

#include "ncm-link-private.h"
#include "ncm-lwip.h"

/* Generous for ASan/TSan on a loaded two-core machine. */
#define IO_TIMEOUT_S 60
#define TAP_NAME "ncmtap0"
#define KERNEL_V4 "192.168.78.1"
#define LWIP_V4 "192.168.78.2"
#define KERNEL_V6 "fd78::1"
#define LWIP_V6 "fd78::2"
#define FNV_INIT 2166136261u
/* netstack/lwip: TCP_WND / 4, past which read credit wakes the tcpip thread */
#define CREDIT_POST (256 * 1024)

static const char *skip_reason;
static struct _ChokeLink *choke;
static NcmLwipStack *stack;
static NcmLwipNetif *netif;
static guint8 kernel_mac[6];
static const guint8 lwip_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x78, 0x02};

/* struct in6_ifreq from <linux/ipv6.h>, which clashes with <netinet/in.h>. */
struct tap_in6_ifreq {
	struct in6_addr addr;
	guint32 prefixlen;
	int ifindex;
};

/* ---- Helpers -------------------------------------------------------------------- */

/* Skips without a netns/TAP, but fails in CI, where the setup must work. */
static gboolean
have_tap(void)
{
	if (skip_reason == NULL)
		return TRUE;
	if (g_strcmp0(g_getenv("CI"), "true") == 0)
		g_test_fail_printf("CI=true but no TAP test network: %s", skip_reason);
	else
		g_test_skip(skip_reason);
	return FALSE;
}

static guint32
fnv1a(guint32 h, const void *buf, gsize len)
{
	const guint8 *b = buf;

	for (gsize i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* xorshift32 from @seed: different streams per direction and connection. */
static guint8 *
make_data(gsize size, guint32 seed)
{
	guint8 *data = g_malloc(size);
	guint32 x = seed | 1;

	for (gsize i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = (guint8)x;
	}
	return data;
}

static GInetSocketAddress *
sockaddr(const char *ip, guint16 port)
{
	return G_INET_SOCKET_ADDRESS(g_inet_socket_address_new_from_string(ip, port));
}

static double
mbit_per_s(gsize bytes, gint64 us)
{
	return us > 0 ? (double)bytes * 8.0 / (double)us : 0.0;
}

/* ---- Kernel side ------------------------------------------------------------------ */

static void
set_timeouts(int fd)
{
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};

	g_assert_no_errno(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	g_assert_no_errno(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
}

/* Fills @ss from a numeric IPv4 or IPv6 address. */
static socklen_t
make_sockaddr(const char *ip, guint16 port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':') != NULL) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		g_assert_cmpint(inet_pton(AF_INET6, ip, &s6->sin6_addr), ==, 1);
		return sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		g_assert_cmpint(inet_pton(AF_INET, ip, &s4->sin_addr), ==, 1);
		return sizeof(*s4);
	}
}

static guint16
bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	g_assert_no_errno(getsockname(fd, (struct sockaddr *)&ss, &len));
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* A kernel socket of @type bound to @ip (port 0: ephemeral). */
static int
kernel_socket(const char *ip, int type, guint16 *ret_port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_sockaddr(ip, 0, &ss);
	int fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
	int one = 1;

	g_assert_cmpint(fd, >=, 0);
	g_assert_no_errno(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	g_assert_no_errno(bind(fd, (struct sockaddr *)&ss, len));
	if (type == SOCK_STREAM)
		g_assert_no_errno(listen(fd, 64));
	set_timeouts(fd);
	*ret_port = bound_port(fd);
	return fd;
}

static gboolean
write_all_fd(int fd, const guint8 *data, gsize len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return FALSE;
		data += n;
		len -= (gsize)n;
	}
	return TRUE;
}

/* Reads to EOF; returns the byte count, or -1 on error. */
static gssize
read_all_fd(int fd, guint32 *hash, gint64 *ret_eof_time)
{
	g_autofree guint8 *buf = g_malloc(256 * 1024);
	gsize total = 0;

	for (;;) {
		ssize_t n = read(fd, buf, 256 * 1024);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		*hash = fnv1a(*hash, buf, (gsize)n);
		total += (gsize)n;
	}
	if (ret_eof_time != NULL)
		*ret_eof_time = g_get_monotonic_time();
	return (gssize)total;
}

/* What a kernel peer thread did. */
typedef struct {
	int fd;           /* listening or connecting socket */
	const char *ip;   /* for a connecting peer: where lwIP listens */
	guint16 port;
	gsize send_size;  /* bytes to send after reading to EOF */
	guint32 seed;
	gssize received;
	guint32 hash;
	gint64 eof_time;
	gboolean sent_ok;
} KernelPeer;

/* Server: accept one connection, read to EOF, answer send_size bytes. */
static gpointer
kernel_sink_source(gpointer data)
{
	KernelPeer *k = data;
	int c = accept4(k->fd, NULL, NULL, SOCK_CLOEXEC);
	g_autofree guint8 *reply = make_data(k->send_size, k->seed);

	k->hash = FNV_INIT;
	k->received = -1;
	if (c < 0)
		return NULL;
	set_timeouts(c);
	k->received = read_all_fd(c, &k->hash, &k->eof_time);
	k->sent_ok = write_all_fd(c, reply, k->send_size);
	close(c);
	return NULL;
}

/* Client: connect to lwIP, send send_size bytes, shut down writing, read to EOF. */
static gpointer
kernel_client(gpointer data)
{
	KernelPeer *k = data;
	struct sockaddr_storage ss;
	socklen_t len = make_sockaddr(k->ip, k->port, &ss);
	g_autofree guint8 *payload = make_data(k->send_size, k->seed);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	k->hash = FNV_INIT;
	k->received = -1;
	set_timeouts(fd);
	if (connect(fd, (struct sockaddr *)&ss, len) == 0) {
		k->sent_ok = write_all_fd(fd, payload, k->send_size);
		shutdown(fd, SHUT_WR);
		k->received = read_all_fd(fd, &k->hash, &k->eof_time);
	}
	close(fd);
	return NULL;
}

/* Echo server for @n connections, each on its own thread. */
static gpointer
kernel_echo_one(gpointer data)
{
	int c = GPOINTER_TO_INT(data);
	g_autofree guint8 *buf = g_malloc(64 * 1024);
	ssize_t n;

	set_timeouts(c);
	while ((n = read(c, buf, 64 * 1024)) > 0)
		if (!write_all_fd(c, buf, (gsize)n))
			break;
	close(c);
	return NULL;
}

typedef struct {
	int fd;
	guint n;
} EchoServer;

static gpointer
kernel_echo_server(gpointer data)
{
	EchoServer *e = data;
	GPtrArray *threads = g_ptr_array_new();

	for (guint i = 0; i < e->n; i++) {
		int c = accept4(e->fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0)
			break;
		g_ptr_array_add(threads, g_thread_new("echo", kernel_echo_one, GINT_TO_POINTER(c)));
	}
	for (guint i = 0; i < threads->len; i++)
		g_thread_join(threads->pdata[i]);
	g_ptr_array_free(threads, TRUE);
	return NULL;
}

/* ---- lwIP side stream helpers ---------------------------------------------------- */

static gssize
read_to_eof(GInputStream *in, guint32 *hash, GError **error)
{
	g_autofree guint8 *buf = g_malloc(128 * 1024);
	gsize total = 0;

	for (;;) {
		gssize n = g_input_stream_read(in, buf, 128 * 1024, NULL, error);

		if (n < 0)
			return -1;
		if (n == 0)
			return (gssize)total;
		*hash = fnv1a(*hash, buf, (gsize)n);
		total += (gsize)n;
	}
}

static void
write_and_close(GOutputStream *out, const guint8 *data, gsize size)
{
	g_autoptr(GError) error = NULL;
	gsize written = 0;

	g_assert_true(g_output_stream_write_all(out, data, size, &written, NULL, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(written, ==, size);
	g_assert_true(g_output_stream_close(out, NULL, &error));
}

/* The kernel's TCP retransmission count in our namespace (0 if unreadable). */
static guint64
kernel_retransmits(void)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	guint64 value = 0;

	if (!g_file_get_contents("/proc/net/snmp", &text, NULL, NULL))
		return 0;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i] != NULL && lines[i + 1] != NULL; i++) {
		g_auto(GStrv) names = NULL;
		g_auto(GStrv) values = NULL;

		if (!g_str_has_prefix(lines[i], "Tcp:") || !g_str_has_prefix(lines[i + 1], "Tcp:"))
			continue;
		names = g_strsplit(lines[i], " ", -1);
		values = g_strsplit(lines[i + 1], " ", -1);
		for (guint j = 0; names[j] != NULL && values[j] != NULL; j++)
			if (g_str_equal(names[j], "RetransSegs"))
				value = g_ascii_strtoull(values[j], NULL, 10);
		break;
	}
	return value;
}

/* ---- A link that runs out of room ------------------------------------------------- */

/*
 * The TAP's link, wrapped: once armed, it takes @room more of the
 * IPv4 UDP frames to the kernel, then refuses every frame until
 * choke_room(), as a device's full OUT queue does. It records the UDP
 * frames it passed on until disarmed.
 */
typedef struct _ChokeLink {
	NcmLink link;
	NcmLink *tap;
	const NcmLinkSink *sink;
	gpointer sink_data;
	GMutex lock;
	gboolean armed, full;
	guint room;
	GPtrArray *taken; /* GBytes */
} ChokeLink;

/* An IPv4 UDP frame (or fragment) to the kernel's address. */
static gboolean
choke_watches(const guint8 *f, gsize len)
{
	guint8 kernel[4];

	inet_pton(AF_INET, KERNEL_V4, kernel);
	return len >= 34 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17 &&
	       memcmp(f + 30, kernel, 4) == 0;
}

static NcmSendResult
choke_sendv(NcmLink *link, const GOutputVector *v, guint n)
{
	ChokeLink *c = (ChokeLink *)link;
	g_autoptr(GByteArray) frame = g_byte_array_new();
	NcmSendResult r;
	gboolean watched;

	for (guint i = 0; i < n; i++)
		g_byte_array_append(frame, v[i].buffer, (guint)v[i].size);
	g_mutex_lock(&c->lock);
	watched = c->armed && choke_watches(frame->data, frame->len);
	if (c->armed && (c->full || (watched && c->room == 0))) {
		c->full = TRUE;
		g_mutex_unlock(&c->lock);
		return NCM_SEND_WOULD_BLOCK;
	}
	r = ncm_link_sendv(c->tap, v, n);
	if (watched && r == NCM_SEND_OK) {
		c->room--;
		g_ptr_array_add(c->taken, g_byte_array_free_to_bytes(g_steal_pointer(&frame)));
	}
	g_mutex_unlock(&c->lock);
	return r;
}

static void
choke_flush(NcmLink *link)
{
	ncm_link_flush(((ChokeLink *)link)->tap);
}

static void
choke_set_sink(NcmLink *link, const NcmLinkSink *sink, gpointer user_data)
{
	ChokeLink *c = (ChokeLink *)link;

	c->sink = sink;
	c->sink_data = user_data;
	c->tap->ops->set_sink(c->tap, sink, user_data);
}

static gboolean
choke_start(NcmLink *link, GError **error)
{
	return ((ChokeLink *)link)->tap->ops->start(((ChokeLink *)link)->tap, error);
}

static void
choke_stop(NcmLink *link)
{
	ChokeLink *c = (ChokeLink *)link;

	c->tap->ops->stop(c->tap);
}

static void
choke_free(NcmLink *link)
{
	ChokeLink *c = (ChokeLink *)link;

	ncm_link_free(c->tap);
	g_ptr_array_unref(c->taken);
	g_mutex_clear(&c->lock);
	if (choke == c)
		choke = NULL;
	g_free(c);
}

static const NcmLinkOps choke_ops = {
	.sendv = choke_sendv,
	.flush = choke_flush,
	.set_sink = choke_set_sink,
	.start = choke_start,
	.stop = choke_stop,
	.free = choke_free,
};

static NcmLink *
choke_new(NcmLink *tap)
{
	ChokeLink *c = g_new0(ChokeLink, 1);

	c->link = *tap;
	c->link.ops = &choke_ops;
	c->tap = tap;
	g_mutex_init(&c->lock);
	c->taken = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	choke = c;
	return &c->link;
}

static void
choke_arm(guint room)
{
	g_mutex_lock(&choke->lock);
	choke->armed = TRUE;
	choke->full = FALSE;
	choke->room = room;
	g_ptr_array_set_size(choke->taken, 0);
	g_mutex_unlock(&choke->lock);
}

/* Room again, as a completed transfer gives it, and no more refusals;
 * the frames are still recorded. */
static void
choke_room(void)
{
	g_mutex_lock(&choke->lock);
	choke->full = FALSE;
	choke->room = G_MAXUINT;
	g_mutex_unlock(&choke->lock);
	choke->sink->writable(choke->sink_data);
}

/* How many watched frames the link took since armed. */
static guint
choke_taken(void)
{
	guint n;

	g_mutex_lock(&choke->lock);
	n = choke->taken->len;
	g_mutex_unlock(&choke->lock);
	return n;
}

/* TRUE once the link refused a frame (within IO_TIMEOUT_S). */
static gboolean
choke_wait_full(void)
{
	gint64 deadline = g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC;

	for (;;) {
		gboolean full;

		g_mutex_lock(&choke->lock);
		full = choke->full;
		g_mutex_unlock(&choke->lock);
		if (full)
			return TRUE;
		if (g_get_monotonic_time() > deadline)
			return FALSE;
		g_usleep(1000);
	}
}

static void
choke_disarm(void)
{
	g_mutex_lock(&choke->lock);
	choke->armed = FALSE;
	g_mutex_unlock(&choke->lock);
}

/* ---- TCP: lwIP client, kernel server ---------------------------------------------- */

/* The stack's input mode, as the running test set it. */
static gboolean input_queued;

/* lwIP sends @size bytes to a kernel server, which answers @size bytes
 * after EOF; both directions checksummed and timed. No main context is
 * involved, so the stack must schedule nothing on one. */
static void
run_client_transfer(const char *kernel_ip, gsize size, const char *label)
{
	KernelPeer k = {.send_size = size, .seed = 0xd0e1};
	g_autofree guint8 *up = make_data(size, 0x5eed);
	g_autoptr(GInetSocketAddress) addr = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	NcmLwipStats before, after;
	guint32 hash = FNV_INIT;
	gint64 t0, t1, t2;
	GThread *thread;
	gssize got;

	guint64 retrans = kernel_retransmits();

	k.fd = kernel_socket(kernel_ip, SOCK_STREAM, &k.port);
	thread = g_thread_new("kernel-server", kernel_sink_source, &k);
	addr = sockaddr(kernel_ip, k.port);
	ncm_lwip_stack_get_stats(stack, &before);
	conn = ncm_lwip_stack_connect(stack, addr, 10000, NULL, &error);
	g_assert_no_error(error);
	t0 = g_get_monotonic_time();
	write_and_close(g_io_stream_get_output_stream(G_IO_STREAM(conn)), up, size);
	got = read_to_eof(g_io_stream_get_input_stream(G_IO_STREAM(conn)), &hash, &error);
	t2 = g_get_monotonic_time();
	g_assert_no_error(error);
	g_assert_true(g_io_stream_close(G_IO_STREAM(conn), NULL, NULL));
	g_thread_join(thread);
	close(k.fd);
	t1 = k.eof_time;
	ncm_lwip_stack_get_stats(stack, &after);

	g_assert_cmpint(k.received, ==, (gssize)size);
	g_assert_cmphex(k.hash, ==, fnv1a(FNV_INIT, up, size));
	g_assert_true(k.sent_ok);
	g_assert_cmpint(got, ==, (gssize)size);
	{
		g_autofree guint8 *down = make_data(size, k.seed);

		g_assert_cmphex(hash, ==, fnv1a(FNV_INIT, down, size));
	}
	/* Data never went through a main context... */
	g_assert_cmpuint(after.main_dispatches, ==, before.main_dispatches);
	/* Reading woke the tcpip thread once per quarter window of credit
	 * (ncm-lwip-tcp.c, NLW_CREDIT_POST), not once per read: smaller credit
	 * rides along with the next batch. */
	g_assert_cmpuint(after.window_posts - before.window_posts, <=, size / CREDIT_POST + 2);
	/* ...and output was flushed per batch, not per frame. */
	g_assert_cmpuint(after.tx_flushes - before.tx_flushes, <,
			 (after.tx_frames - before.tx_frames) / 2);
	/* lwIP sent segments of several frames, cut to the TAP's MTU on their
	 * way (ncm-lwip-tso.c): the kernel took and checked every frame, and
	 * the peer's MSS it announced allowed that. */
	g_assert_cmpuint(after.tx_cut - before.tx_cut, >=, size / (16 * 1460));
	/* The kernel's segments came in batches, and locked input merged
	 * most of them (ncm-lwip-gro.c) into frames the bytes above survived. */
	if (!input_queued)
		g_assert_cmpuint(after.rx_merged - before.rx_merged, >, size / 1460 / 2);
	else
		g_assert_cmpuint(after.rx_merged, ==, before.rx_merged);
	g_test_message("%s: lwIP->kernel %.0f Mbit/s, kernel->lwIP %.0f Mbit/s (%" G_GSIZE_FORMAT
		       " bytes each; %" G_GUINT64_FORMAT " segments merged on input, %" G_GUINT64_FORMAT
		       " frames out, %" G_GUINT64_FORMAT " segments cut, %" G_GUINT64_FORMAT
		       " flushes, %" G_GUINT64_FORMAT " window posts, %" G_GUINT64_FORMAT
		       " tx drops so far; kernel retransmitted %" G_GUINT64_FORMAT " segments)",
		       label, mbit_per_s(size, t1 - t0), mbit_per_s(size, t2 - t1), size,
		       after.rx_merged - before.rx_merged, after.tx_frames - before.tx_frames,
		       after.tx_cut - before.tx_cut, after.tx_flushes - before.tx_flushes,
		       after.window_posts - before.window_posts, after.tx_drops,
		       kernel_retransmits() - retrans);
}

/* NCM_LWIP_TAP_MIB=N transfers N MiB each way instead: for measuring. */
static gsize
bulk_size(void)
{
	const char *mib = g_getenv("NCM_LWIP_TAP_MIB");

	return (mib ? g_ascii_strtoull(mib, NULL, 10) : 8) * 1024 * 1024;
}

static void
test_client_v4(void)
{
	if (!have_tap())
		return;
	run_client_transfer(KERNEL_V4, bulk_size(), "IPv4 locked input");
}

/* The other input mode, for comparison (see sink_receive() in ncm-lwip-netif.c). */
static void
test_client_v4_queued(void)
{
	if (!have_tap())
		return;
	ncm_lwip_stack_set_input_mode(stack, NCM_LWIP_INPUT_QUEUED);
	input_queued = TRUE;
	run_client_transfer(KERNEL_V4, bulk_size(), "IPv4 queued input");
	input_queued = FALSE;
	ncm_lwip_stack_set_input_mode(stack, NCM_LWIP_INPUT_LOCKED);
}

static void
test_client_v6(void)
{
	if (!have_tap())
		return;
	run_client_transfer(KERNEL_V6, 4 * 1024 * 1024, "IPv6");
}

/* ---- TCP: kernel client, lwIP server ---------------------------------------------- */

static void
run_server_transfer(const char *lwip_ip, gsize size)
{
	g_autoptr(NcmLwipListener) listener = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree guint8 *up = make_data(size, 0xc11e);
	g_autofree guint8 *down = make_data(size, 0x5e4e);
	KernelPeer k = {.ip = lwip_ip, .send_size = size, .seed = 0xc11e};
	guint32 hash = FNV_INIT;
	GThread *thread;
	gssize got;

	listener = ncm_lwip_stack_listen(stack, NULL, 0, &error);
	g_assert_no_error(error);
	k.port = ncm_lwip_listener_get_port(listener);
	g_assert_cmpuint(k.port, !=, 0);
	thread = g_thread_new("kernel-client", kernel_client, &k);
	conn = ncm_lwip_listener_accept(listener, NULL, &error);
	g_assert_no_error(error);
	got = read_to_eof(g_io_stream_get_input_stream(G_IO_STREAM(conn)), &hash, &error);
	g_assert_no_error(error);
	g_assert_cmpint(got, ==, (gssize)size);
	g_assert_cmphex(hash, ==, fnv1a(FNV_INIT, up, size));
	write_and_close(g_io_stream_get_output_stream(G_IO_STREAM(conn)), down, size);
	g_assert_true(g_io_stream_close(G_IO_STREAM(conn), NULL, NULL));
	g_thread_join(thread);
	g_assert_true(k.sent_ok);
	g_assert_cmpint(k.received, ==, (gssize)size);
	g_assert_cmphex(k.hash, ==, fnv1a(FNV_INIT, down, size));
}

static void
test_server_v4(void)
{
	if (have_tap())
		run_server_transfer(LWIP_V4, 4 * 1024 * 1024);
}

static void
test_server_v6(void)
{
	if (have_tap())
		run_server_transfer(LWIP_V6, 4 * 1024 * 1024);
}

/* ---- TIME_WAIT ------------------------------------------------------------------------ */

/* NCM_LWIP_TIME_WAIT_MAX (ncm-lwip-hooks.h), as NcmLwipStats documents it. */
#define TW_CAP 512
#define TW_CONNS (TW_CAP + 200)

/* Connections that may go wrong under load (see test_time_wait()). */
#define TW_SLACK 4

typedef struct {
	guint16 port;
	guint done;            /* connections that ended in EOF */
	GCancellable *finished; /* the client is done: no more to accept */
	GString *failures;     /* what went wrong with the others */
} TimeWaitPeer;

/* Connects TW_CONNS times, reads each to the EOF of lwIP's close, then closes. */
static gpointer
time_wait_client(gpointer data)
{
	TimeWaitPeer *k = data;
	struct sockaddr_storage ss;
	socklen_t len = make_sockaddr(LWIP_V4, k->port, &ss);
	struct timeval tv = {.tv_sec = 10};
	guint8 b[16];

	for (guint i = 0; i < TW_CONNS; i++) {
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ssize_t r = -1;

		/* 10 s, not IO_TIMEOUT_S: a lost EOF must not take the test's time. */
		g_assert_no_errno(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
		g_assert_no_errno(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
		if (connect(fd, (struct sockaddr *)&ss, len) < 0)
			g_string_append_printf(k->failures, " %u: connect: %s;", i, g_strerror(errno));
		else if ((r = read(fd, b, sizeof(b))) != 0)
			g_string_append_printf(k->failures, " %u: read %zd: %s;", i, r,
					       r < 0 ? g_strerror(errno) : "data");
		else
			k->done++;
		close(fd);
	}
	g_cancellable_cancel(k->finished);
	return NULL;
}

/*
 * Issue 16: a peer that connects to a server that hangs up first leaves
 * each connection in TIME_WAIT on lwIP's side for 120 s, and lwIP's pool
 * count bounds nothing with malloc-backed pools. Past TW_CAP a new
 * connection drops the oldest (NcmLwipStats.time_wait_evicted).
 */
static void
test_time_wait(void)
{
	g_autoptr(NcmLwipListener) listener = NULL;
	g_autoptr(GError) error = NULL;
	TimeWaitPeer k = {0};
	NcmLwipStats before, after;
	GThread *thread;
	guint64 evicted;
	guint accepted = 0;

	if (!have_tap())
		return;
	listener = ncm_lwip_stack_listen(stack, NULL, 0, &error);
	g_assert_no_error(error);
	k.port = ncm_lwip_listener_get_port(listener);
	k.finished = g_cancellable_new();
	k.failures = g_string_new(NULL);
	ncm_lwip_stack_get_stats(stack, &before);
	thread = g_thread_new("time-wait-client", time_wait_client, &k);
	/* Until the client is done: a connection it lost must not leave this
	 * waiting for ever (the CI's TSan run hung here, twice). */
	for (;;) {
		g_autoptr(NcmLwipConnection) conn =
			ncm_lwip_listener_accept(listener, k.finished, &error);

		if (!conn) {
			g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
			g_clear_error(&error);
			break;
		}
		accepted++;
		/* Our side closes first: it is the one that waits in TIME_WAIT. */
		g_assert_true(g_io_stream_close(G_IO_STREAM(conn), NULL, NULL));
	}
	g_thread_join(thread);
	ncm_lwip_stack_get_stats(stack, &after);
	evicted = after.time_wait_evicted - before.time_wait_evicted;
	g_test_message("%u connections, %u accepted, %" G_GUINT64_FORMAT
		       " TIME_WAIT connections dropped%s%s", k.done, accepted, evicted,
		       k.failures->len ? "; failed:" : "", k.failures->str);
	/* Under the sanitizers beside other tests, a rare connection failed
	 * (not yet understood: the failures above say how); more is a fault. */
	g_assert_cmpuint(k.done, >=, TW_CONNS - TW_SLACK);
	g_assert_cmpuint(accepted, >=, k.done);
	g_object_unref(k.finished);
	g_string_free(k.failures, TRUE);
	/* All but TW_CAP of them, less the few whose peer's FIN lwIP had not
	 * handled yet when the next SYN came. */
	g_assert_cmpuint(evicted, >=, TW_CONNS - TW_CAP - 16 - TW_SLACK);
	g_assert_cmpuint(evicted, <=, TW_CONNS);
}

typedef struct {
	int fd;
	guint done;            /* connections that ended in EOF */
} TimeWaitServer;

/* Accepts TW_CONNS connections, reads each to the EOF of lwIP's close, then closes. */
static gpointer
time_wait_server(gpointer data)
{
	TimeWaitServer *k = data;
	guint8 b[16];

	for (guint i = 0; i < TW_CONNS; i++) {
		int c = accept4(k->fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0)
			break;
		set_timeouts(c);
		if (read(c, b, sizeof(b)) == 0)
			k->done++;
		close(c);
	}
	return NULL;
}

/*
 * The same cap for connections lwIP opens (ncm-proxy's SOCKS and -L): a
 * client that closes first leaves one in TIME_WAIT per connection, each
 * holding a local port for 120 s. Past TW_CAP a new connect drops the oldest.
 */
static void
test_time_wait_outgoing(void)
{
	TimeWaitServer k = {0};
	g_autoptr(GInetSocketAddress) addr = NULL;
	NcmLwipStats before, after;
	GThread *thread;
	guint16 port;
	guint64 evicted;

	if (!have_tap())
		return;
	k.fd = kernel_socket(KERNEL_V4, SOCK_STREAM, &port);
	addr = sockaddr(KERNEL_V4, port);
	ncm_lwip_stack_get_stats(stack, &before);
	thread = g_thread_new("time-wait-server", time_wait_server, &k);
	for (guint i = 0; i < TW_CONNS; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(NcmLwipConnection) conn = ncm_lwip_stack_connect(stack, addr, 10000, NULL,
									   &error);
		guint8 b[16];

		g_assert_no_error(error);
		/* Our side closes first, then waits for the peer's FIN. */
		g_assert_true(g_output_stream_close(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
						    NULL, NULL));
		g_assert_cmpint(g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(conn)),
						    b, sizeof(b), NULL, &error), ==, 0);
		g_assert_no_error(error);
		g_assert_true(g_io_stream_close(G_IO_STREAM(conn), NULL, NULL));
	}
	g_thread_join(thread);
	close(k.fd);
	ncm_lwip_stack_get_stats(stack, &after);
	evicted = after.time_wait_evicted - before.time_wait_evicted;
	g_test_message("%u connections, %" G_GUINT64_FORMAT " TIME_WAIT connections dropped",
		       k.done, evicted);
	g_assert_cmpuint(k.done, ==, TW_CONNS);
	/* Those of test_time_wait may still be there: at least all past the cap. */
	g_assert_cmpuint(evicted, >=, TW_CONNS - TW_CAP);
	g_assert_cmpuint(evicted, <=, 2 * TW_CONNS);
}

/* ---- Concurrent connections ---------------------------------------------------------- */

#define N_CONCURRENT 16
#define CONCURRENT_SIZE (256 * 1024)

typedef struct {
	guint16 port;
	guint index;
	gboolean ok;
} EchoClient;

static gpointer
echo_client(gpointer data)
{
	EchoClient *e = data;
	g_autoptr(GInetSocketAddress) addr = sockaddr(e->index % 2 ? KERNEL_V6 : KERNEL_V4, e->port);
	g_autofree guint8 *payload = make_data(CONCURRENT_SIZE, 0x1000 + e->index);
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	guint32 hash = FNV_INIT;
	gssize got;

	conn = ncm_lwip_stack_connect(stack, addr, 10000, NULL, &error);
	if (conn == NULL)
		return NULL;
	if (!g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)), payload,
				       CONCURRENT_SIZE, NULL, NULL, &error) ||
	    !g_output_stream_close(g_io_stream_get_output_stream(G_IO_STREAM(conn)), NULL, &error))
		return NULL;
	got = read_to_eof(g_io_stream_get_input_stream(G_IO_STREAM(conn)), &hash, &error);
	e->ok = got == CONCURRENT_SIZE && hash == fnv1a(FNV_INIT, payload, CONCURRENT_SIZE);
	return NULL;
}

/* The echo server listens on both families through one IPv6 socket. */
static int
kernel_dual_listener(guint16 *ret_port)
{
	return kernel_socket("::", SOCK_STREAM, ret_port);
}

static void
test_concurrent(void)
{
	EchoServer server = {.n = N_CONCURRENT};
	EchoClient clients[N_CONCURRENT];
	GThread *threads[N_CONCURRENT];
	GThread *server_thread;
	guint16 port;

	if (!have_tap())
		return;
	server.fd = kernel_dual_listener(&port);
	server_thread = g_thread_new("echo-server", kernel_echo_server, &server);
	for (guint i = 0; i < N_CONCURRENT; i++) {
		clients[i] = (EchoClient){.port = port, .index = i};
		threads[i] = g_thread_new("echo-client", echo_client, &clients[i]);
	}
	for (guint i = 0; i < N_CONCURRENT; i++)
		g_thread_join(threads[i]);
	g_thread_join(server_thread);
	close(server.fd);
	for (guint i = 0; i < N_CONCURRENT; i++)
		g_assert_true(clients[i].ok);
}

/* ---- Errors --------------------------------------------------------------------------- */

/* The kernel accepts and closes with SO_LINGER 0: an RST. */
static gpointer
kernel_resetter(gpointer data)
{
	KernelPeer *k = data;
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	int c = accept4(k->fd, NULL, NULL, SOCK_CLOEXEC);

	if (c >= 0) {
		g_assert_no_errno(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
		close(c);
	}
	return NULL;
}

static void
test_reset(void)
{
	KernelPeer k = {0};
	g_autoptr(GInetSocketAddress) addr = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	GThread *thread;
	guint8 buf[64];
	gssize n;

	if (!have_tap())
		return;
	k.fd = kernel_socket(KERNEL_V4, SOCK_STREAM, &k.port);
	thread = g_thread_new("kernel-reset", kernel_resetter, &k);
	addr = sockaddr(KERNEL_V4, k.port);
	conn = ncm_lwip_stack_connect(stack, addr, 10000, NULL, &error);
	g_assert_no_error(error);
	g_thread_join(thread);
	close(k.fd);
	n = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(conn)), buf, sizeof(buf),
				NULL, &error);
	g_assert_cmpint(n, ==, -1);
	/* G_IO_ERROR_CONNECTION_CLOSED and _BROKEN_PIPE are one code. */
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_clear_error(&error);
	n = g_output_stream_write(g_io_stream_get_output_stream(G_IO_STREAM(conn)), buf,
				  sizeof(buf), NULL, &error);
	g_assert_cmpint(n, ==, -1);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE);
}

/*
 * How the kernel's side sees our close: it sends @send_size bytes, then
 * reads until EOF (0) or a reset (-ECONNRESET), into @received.
 */
static gpointer
kernel_close_watcher(gpointer data)
{
	KernelPeer *k = data;
	struct timeval tv = {.tv_sec = 10};
	guint8 buf[256] = {0};
	int c = accept4(k->fd, NULL, NULL, SOCK_CLOEXEC);
	ssize_t n;

	g_assert_cmpint(c, >=, 0);
	g_assert_no_errno(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	if (k->send_size)
		g_assert_cmpint(write(c, buf, k->send_size), ==, (ssize_t)k->send_size);
	while ((n = read(c, buf, sizeof(buf))) > 0)
		;
	k->received = n == 0 ? 0 : -errno;
	close(c);
	return NULL;
}

typedef enum { CLOSE_READ_ALL, CLOSE_UNREAD, CLOSE_ABORT } CloseHow;

static gssize
close_seen_by_kernel(CloseHow how)
{
	KernelPeer k = {.send_size = how == CLOSE_ABORT ? 0 : 100};
	g_autoptr(GInetSocketAddress) addr = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	GInputStream *in;
	guint8 buf[256];
	gssize got = 0;
	GThread *thread;

	k.fd = kernel_socket(KERNEL_V4, SOCK_STREAM, &k.port);
	thread = g_thread_new("kernel-close", kernel_close_watcher, &k);
	addr = sockaddr(KERNEL_V4, k.port);
	conn = ncm_lwip_stack_connect(stack, addr, 10000, NULL, &error);
	g_assert_no_error(error);
	in = g_io_stream_get_input_stream(G_IO_STREAM(conn));
	if (how == CLOSE_READ_ALL) {
		while (got < 100) {
			gssize n = g_input_stream_read(in, buf, sizeof(buf), NULL, &error);

			g_assert_no_error(error);
			g_assert_cmpint(n, >, 0);
			got += n;
		}
	} else if (how == CLOSE_UNREAD) {
		/* Readable: the 100 bytes are queued, and stay unread. */
		while (!g_pollable_input_stream_is_readable(G_POLLABLE_INPUT_STREAM(in)))
			g_usleep(1000);
	}
	if (how == CLOSE_ABORT)
		ncm_lwip_connection_abort(conn);
	else
		g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	g_thread_join(thread);
	close(k.fd);
	return k.received;
}

/* FIN when everything was read; RST with data unread (as sockets do), and on abort. */
static void
test_close_resets(void)
{
	if (!have_tap())
		return;
	g_assert_cmpint(close_seen_by_kernel(CLOSE_READ_ALL), ==, 0);
	g_assert_cmpint(close_seen_by_kernel(CLOSE_UNREAD), ==, -ECONNRESET);
	g_assert_cmpint(close_seen_by_kernel(CLOSE_ABORT), ==, -ECONNRESET);
}

#define SMALL_SEGMENTS 3000

/* The kernel sends one byte per segment (Nagle off, a pause between writes). */
static gpointer
kernel_trickler(gpointer data)
{
	KernelPeer *k = data;
	int one = 1;
	int c = accept4(k->fd, NULL, NULL, SOCK_CLOEXEC);

	g_assert_cmpint(c, >=, 0);
	g_assert_no_errno(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	for (guint i = 0; i < SMALL_SEGMENTS; i++) {
		guint8 b = (guint8)(i * 7);

		g_assert_cmpint(write(c, &b, 1), ==, 1);
		g_usleep(100);
	}
	close(c);
	return NULL;
}

/*
 * Issue 16: one pbuf per tiny segment would cost ~100 bytes of memory per
 * byte queued for a slow reader. The small ones are copied into chunks;
 * the bytes still come out whole and in order.
 */
static void
test_small_segments(void)
{
	KernelPeer k = {0};
	g_autoptr(GInetSocketAddress) addr = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	NcmLwipStats before, after;
	guint8 buf[SMALL_SEGMENTS + 1];
	gsize got = 0;
	GThread *thread;

	if (!have_tap())
		return;
	ncm_lwip_stack_get_stats(stack, &before);
	k.fd = kernel_socket(KERNEL_V4, SOCK_STREAM, &k.port);
	thread = g_thread_new("kernel-trickle", kernel_trickler, &k);
	addr = sockaddr(KERNEL_V4, k.port);
	conn = ncm_lwip_stack_connect(stack, addr, 10000, NULL, &error);
	g_assert_no_error(error);
	/* A slow reader: everything queues first. */
	g_thread_join(thread);
	close(k.fd);
	while (got < sizeof(buf)) {
		gssize n = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(conn)),
					       buf + got, sizeof(buf) - got, NULL, &error);

		g_assert_no_error(error);
		if (n == 0)
			break;
		got += (gsize)n;
	}
	g_assert_cmpuint(got, ==, SMALL_SEGMENTS);
	for (guint i = 0; i < SMALL_SEGMENTS; i++)
		g_assert_cmpuint(buf[i], ==, (guint8)(i * 7));
	ncm_lwip_stack_get_stats(stack, &after);
	g_test_message("%" G_GUINT64_FORMAT " segments compacted",
		       after.rx_compacted - before.rx_compacted);
	/* The kernel may still merge a few writes; most arrive alone. */
	g_assert_cmpuint(after.rx_compacted - before.rx_compacted, >=, SMALL_SEGMENTS / 4);
}

/* ncm_lwip_connection_splice_nonblocking(): the kernel sends this much to
 * a local socket that stops reading, then reads slowly; far more than
 * lwIP's window, the kernel's send buffer and the local socket's together. */
#define SPLICE_SIZE (16 * 1024 * 1024)
/* lwipopts.h: TCP_WND, the most lwIP may hold unread. */
#define SPLICE_WND (1024 * 1024)
#define SPLICE_DRIPS 300

typedef struct {
	int fd;
	gint conn_fd; /* atomic: the accepted socket, -1 before */
	gint sent;    /* atomic: bytes its writes took */
	gint done;    /* atomic: sent everything */
	gint dripped; /* atomic: the reader's slow phase ended */
	gint go;      /* atomic: the reader may read at full speed */
	int local_fd;
	gssize received;
	guint32 hash;
} Splice;

static gpointer
splice_sender(gpointer data)
{
	Splice *s = data;
	int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
	g_autofree guint8 *payload = make_data(SPLICE_SIZE, 0x5911);
	gsize off = 0;

	if (c < 0)
		return NULL;
	set_timeouts(c);
	g_atomic_int_set(&s->conn_fd, c);
	while (off < SPLICE_SIZE) {
		gsize len = MIN(SPLICE_SIZE - off, 64 * 1024);

		if (!write_all_fd(c, payload + off, len))
			break;
		off += len;
		g_atomic_int_add(&s->sent, (gint)len);
	}
	g_atomic_int_set(&s->done, off == SPLICE_SIZE);
	shutdown(c, SHUT_WR);
	return NULL;
}

/* Reads 4 KB a millisecond for a while, then, when let, to the end. */
static gpointer
splice_reader(gpointer data)
{
	Splice *s = data;
	guint8 buf[4096];

	s->hash = FNV_INIT;
	s->received = 0;
	for (guint i = 0; i < SPLICE_DRIPS; i++) {
		ssize_t n = read(s->local_fd, buf, sizeof(buf));

		if (n <= 0) {
			s->received = -1;
			break;
		}
		s->hash = fnv1a(s->hash, buf, (gsize)n);
		s->received += n;
		g_usleep(1000);
	}
	g_atomic_int_set(&s->dripped, 1);
	while (!g_atomic_int_get(&s->go))
		g_usleep(1000);
	if (s->received >= 0) {
		gssize rest = read_all_fd(s->local_fd, &s->hash, NULL);

		s->received = rest < 0 ? -1 : s->received + rest;
	}
	return NULL;
}

/* Splices until @out stops taking (or @until_eof, until the end); adds
 * the bytes moved to @total and returns the last result. Polls: nothing
 * here runs a main context. */
static gssize
splice_some(NcmLwipConnection *conn, GPollableOutputStream *out, gboolean until_eof,
	    gsize *total)
{
	GPollableInputStream *in =
		G_POLLABLE_INPUT_STREAM(g_io_stream_get_input_stream(G_IO_STREAM(conn)));
	gint64 deadline = g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC;

	for (;;) {
		g_autoptr(GError) error = NULL;
		gssize n = ncm_lwip_connection_splice_nonblocking(conn, out, 64 * 1024, &error);

		if (n == 0)
			return 0;
		if (n > 0) {
			*total += (gsize)n;
			continue;
		}
		g_assert_error(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
		/* Full is data waiting and no room. Data that came just after
		 * this call found none (seen under qemu-arm) is tried again. */
		if (!until_eof && g_pollable_input_stream_is_readable(in) &&
		    !g_pollable_output_stream_is_writable(out))
			return -1;
		g_assert_cmpint(g_get_monotonic_time(), <, deadline);
		g_usleep(1000);
	}
}

/* What lwIP holds, once the kernel's segments have arrived: sent (less
 * what the kernel still queues) and not yet spliced. */
static gssize
splice_held(Splice *s, gsize spliced)
{
	int outq = 0;

	g_usleep(300 * 1000);
	g_assert_no_errno(ioctl(g_atomic_int_get(&s->conn_fd), SIOCOUTQ, &outq));
	return (gssize)g_atomic_int_get(&s->sent) - outq - (gssize)spliced;
}

static void
test_splice(void)
{
	Splice s = {.conn_fd = -1};
	g_autoptr(GInetSocketAddress) addr = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GSocketConnection) local = NULL;
	g_autoptr(GSocket) socket = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree guint8 *expect = NULL;
	GPollableOutputStream *out;
	GThread *sender, *reader;
	int sv[2], small = 64 * 1024;
	gsize spliced = 0, first;
	guint16 port;
	gssize held;

	if (!have_tap())
		return;
	s.fd = kernel_socket(KERNEL_V4, SOCK_STREAM, &port);
	sender = g_thread_new("splice-sender", splice_sender, &s);
	addr = sockaddr(KERNEL_V4, port);
	conn = ncm_lwip_stack_connect(stack, addr, 10000, NULL, &error);
	g_assert_no_error(error);
	g_assert_no_errno(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	g_assert_no_errno(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
	socket = g_socket_new_from_fd(sv[0], &error);
	g_assert_no_error(error);
	local = g_socket_connection_factory_create_connection(socket);
	out = G_POLLABLE_OUTPUT_STREAM(g_io_stream_get_output_stream(G_IO_STREAM(local)));

	/* Nobody reads the local socket: splicing stops when it is full, and
	 * what it did not take stays in lwIP, its window shut. */
	g_assert_cmpint(splice_some(conn, out, FALSE, &spliced), ==, -1);
	first = spliced;
	g_assert_cmpuint(first, >, 0);
	held = splice_held(&s, spliced);
	g_test_message("%" G_GSIZE_FORMAT " bytes spliced before the local socket filled, %"
		       G_GSSIZE_FORMAT " then held by lwIP", first, held);
	g_assert_cmpint(held, <=, SPLICE_WND);
	g_assert_cmpint(g_atomic_int_get(&s.done), ==, 0);

	/* A slow reader: every splice is partial; the window opens only for
	 * what the socket took each time. */
	s.local_fd = sv[1];
	reader = g_thread_new("splice-reader", splice_reader, &s);
	while (!g_atomic_int_get(&s.dripped)) {
		g_assert_cmpint(splice_some(conn, out, FALSE, &spliced), ==, -1);
		g_usleep(1000);
	}
	held = splice_held(&s, spliced);
	g_test_message("%" G_GSIZE_FORMAT " bytes spliced to a slow reader, %" G_GSSIZE_FORMAT
		       " then held by lwIP", spliced - first, held);
	g_assert_cmpint(held, <=, SPLICE_WND);
	g_assert_cmpint(g_atomic_int_get(&s.done), ==, 0);

	/* Then it reads fast: everything arrives, in order, once. */
	g_atomic_int_set(&s.go, 1);
	g_assert_cmpint(splice_some(conn, out, TRUE, &spliced), ==, 0);
	g_assert_true(g_socket_shutdown(socket, FALSE, TRUE, &error));
	g_assert_no_error(error);
	g_thread_join(reader);
	g_thread_join(sender);
	close(g_atomic_int_get(&s.conn_fd));
	close(s.fd);
	close(sv[1]);
	g_assert_cmpint(g_atomic_int_get(&s.done), ==, 1);
	g_assert_cmpuint(spliced, ==, SPLICE_SIZE);
	g_assert_cmpint(s.received, ==, SPLICE_SIZE);
	expect = make_data(SPLICE_SIZE, 0x5911);
	g_assert_cmphex(s.hash, ==, fnv1a(FNV_INIT, expect, SPLICE_SIZE));
}

/* ---- A writer on a pollable source ---------------------------------------------------- */

#define SOURCE_WRITE_SIZE (8 * 1024 * 1024)

typedef struct {
	int fd;
	gint received;                /* atomic */
	GPollableOutputStream *out;
	const guint8 *data;
	gsize written;
	guint dispatches;
} SourceWrite;

/* Reads 16 KB a millisecond to the end: lwIP's send buffer stays full and
 * every read's window update frees a little of it. */
static gpointer
source_write_reader(gpointer data)
{
	SourceWrite *w = data;
	int c = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
	guint8 buf[16384];
	ssize_t n;

	if (c < 0)
		return NULL;
	set_timeouts(c);
	while ((n = read(c, buf, sizeof(buf))) > 0) {
		g_atomic_int_add(&w->received, (gint)n);
		g_usleep(1000);
	}
	close(c);
	return NULL;
}

/* As ncm-proxy's relay writes: all it can at each dispatch, the source kept. */
static gboolean
source_write_cb(GObject *stream, gpointer data)
{
	SourceWrite *w = data;

	w->dispatches++;
	while (w->written < SOURCE_WRITE_SIZE) {
		g_autoptr(GError) error = NULL;
		gssize n = g_pollable_output_stream_write_nonblocking(
			w->out, w->data + w->written, SOURCE_WRITE_SIZE - w->written, NULL, &error);

		if (n < 0) {
			g_assert_error(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
			return G_SOURCE_CONTINUE;
		}
		w->written += (gsize)n;
	}
	return G_SOURCE_REMOVE;
}

/*
 * A writability source is woken when a quarter of the send buffer is free,
 * as a blocked writer is, not at 8 segments: with the buffer full, every
 * ACK frees a few segments, and ncm-proxy's relay (which writes from a
 * source) woke its main loop per ~12 KB, for 1.6-1.8x the lwip path's CPU
 * per MB in tcp_up where the link set the rate (tests/bench/RESULTS.md,
 * session 19). Without it this writer runs ~85 dispatches per MB.
 */
static void
test_source_write_wakes(void)
{
	g_autoptr(GMainContext) context = g_main_context_new();
	g_autoptr(GInetSocketAddress) addr = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree guint8 *payload = make_data(SOURCE_WRITE_SIZE, 0x1919);
	SourceWrite w = {0};
	gint64 deadline = g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC;
	int rcvbuf = 128 * 1024;
	GThread *reader;
	GSource *source;
	guint16 port;

	if (!have_tap())
		return;
	w.fd = kernel_socket(KERNEL_V4, SOCK_STREAM, &port);
	g_assert_no_errno(setsockopt(w.fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)));
	reader = g_thread_new("source-write-reader", source_write_reader, &w);
	addr = sockaddr(KERNEL_V4, port);
	conn = ncm_lwip_stack_connect(stack, addr, 10000, NULL, &error);
	g_assert_no_error(error);
	w.out = G_POLLABLE_OUTPUT_STREAM(g_io_stream_get_output_stream(G_IO_STREAM(conn)));
	w.data = payload;
	source = g_pollable_output_stream_create_source(w.out, NULL);
	g_source_set_callback(source, G_SOURCE_FUNC(source_write_cb), &w, NULL);
	g_source_attach(source, context);
	while (w.written < SOURCE_WRITE_SIZE) {
		g_assert_cmpint(g_get_monotonic_time(), <, deadline);
		g_main_context_iteration(context, TRUE);
	}
	g_source_destroy(source);
	g_source_unref(source);
	while (g_atomic_int_get(&w.received) < SOURCE_WRITE_SIZE) {
		g_assert_cmpint(g_get_monotonic_time(), <, deadline);
		g_usleep(10000);
	}
	g_io_stream_close(G_IO_STREAM(conn), NULL, &error);
	g_assert_no_error(error);
	g_thread_join(reader);
	close(w.fd);
	g_test_message("%u dispatches for %d MB", w.dispatches, SOURCE_WRITE_SIZE >> 20);
	g_assert_cmpint(g_atomic_int_get(&w.received), ==, SOURCE_WRITE_SIZE);
	/* 32 quarters of the buffer in 8 MB, plus the first fill: 64 leaves room. */
	g_assert_cmpuint(w.dispatches, <=, 64);
}

#ifdef TCP_RAW_PEER
static void
set_txqueuelen(int len)
{
	struct ifreq ifr = {0};
	int ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	g_strlcpy(ifr.ifr_name, TAP_NAME, IFNAMSIZ);
	ifr.ifr_qlen = len;
	g_assert_no_errno(ioctl(ctl, SIOCSIFTXQLEN, &ifr));
	close(ctl);
}

#define HOSTILE_PORT 6000
#define HOSTILE_BYTES 20000
#define HOSTILE_BLOCK 1024

typedef struct {
	NcmLwipListener *listener;
	NcmLwipConnection *conns[2];
} Acceptor;

static gpointer
hostile_acceptor(gpointer data)
{
	Acceptor *a = data;

	for (guint i = 0; i < G_N_ELEMENTS(a->conns); i++)
		a->conns[i] = ncm_lwip_listener_accept(a->listener, NULL, NULL);
	return NULL;
}

/* Reads @conn to its end: the byte count, every byte against the pattern. */
static void
read_pattern(NcmLwipConnection *conn, gsize expect)
{
	g_autofree guint8 *buf = g_malloc(65536);
	g_autoptr(GError) error = NULL;
	gsize got = 0, wrong = 0;
	gssize n;

	while ((n = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(conn)), buf,
					65536, NULL, &error)) > 0) {
		for (gssize i = 0; i < n; i++)
			wrong += buf[i] != tcp_raw_pattern(got + (gsize)i);
		got += (gsize)n;
	}
	g_assert_no_error(error);
	g_assert_cmpuint(got, ==, expect);
	g_assert_cmpuint(wrong, ==, 0);
}

/*
 * Issue 16, item 2: a peer sends 1-byte segments out of order (each block
 * of HOSTILE_BLOCK bytes with its first byte last) to a reader that reads
 * nothing yet, then floods the listener with spoofed SYNs while a real
 * client connects (tests/vm/tcp-raw-peer.c, on the kernel's side of the
 * TAP). lwIP hands a filled hole over as one chain of 1-byte pbufs; held
 * as such they would cost ~100 bytes of heap per byte. Copied into
 * chunks, the heap grows by about what is queued. The SYN flood must not
 * shut the real client out.
 */
static void
test_hostile_peer(void)
{
	g_autoptr(GInetSocketAddress) any = NULL;
	const gchar *argv[] = {
		TCP_RAW_PEER, "--ifname", TAP_NAME, "--target", LWIP_V4, "--src", "192.168.78.9",
		"--port", G_STRINGIFY(HOSTILE_PORT), "--ooseq", G_STRINGIFY(HOSTILE_BYTES),
		"--block", G_STRINGIFY(HOSTILE_BLOCK), "--syn", "3000", "--syn-rate", "2000",
		"--settle", "30", NULL,
	};
	g_autoptr(GError) error = NULL;
	g_autofree gchar *out = NULL;
	gint status = -1;
	Acceptor a = {0};
	GThread *thread;
	gsize before, after;

	if (!have_tap())
		return;
	/* The peer sends thousands of frames back to back, more than the
	 * kernel side of the TAP queues by default. */
	set_txqueuelen(10000);
	any = sockaddr("0.0.0.0", HOSTILE_PORT);
	a.listener = ncm_lwip_stack_listen(stack, any, 4, &error);
	g_assert_no_error(error);
	thread = g_thread_new("hostile-accept", hostile_acceptor, &a);
	before = vmtest_heap_in_use();
	/* g_spawn_sync(), not GSubprocess: no GLib worker thread, whose
	 * uninstrumented hand-overs ThreadSanitizer would report. */
	g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, &status,
		     &error);
	g_assert_no_error(error);
	g_test_message("%s", out);
	g_assert_true(g_spawn_check_wait_status(status, NULL));
	after = vmtest_heap_in_use();
	g_test_message("heap: %zu bytes more with %u bytes queued", after - MIN(before, after),
		       HOSTILE_BYTES);
	g_assert_nonnull(strstr(out, "completed during the flood"));
	g_assert_nonnull(strstr(out, "4 bytes acked"));
	g_thread_join(thread);
	g_assert_nonnull(a.conns[0]);
	g_assert_nonnull(a.conns[1]);
	/* The bytes in 2 KiB chunks (twice them at most), the flood's
	 * half-open connections (the backlog: 255 of under 1 KiB each), and
	 * 128 KiB for everything else. Held as 1-byte pbufs, the bytes alone
	 * would cost ~90 bytes each. */
	g_assert_cmpuint(after, <, before + 2 * HOSTILE_BYTES + (255 + 128) * 1024);
	read_pattern(a.conns[0], HOSTILE_BYTES);
	read_pattern(a.conns[1], 4);
	g_object_unref(a.conns[0]);
	g_object_unref(a.conns[1]);
	ncm_lwip_listener_close(a.listener);
	g_object_unref(a.listener);
}
#endif

static void
expect_connect_error(const char *ip, guint16 port, guint timeout_ms, gint code)
{
	g_autoptr(GInetSocketAddress) addr = sockaddr(ip, port);
	g_autoptr(GError) error = NULL;
	NcmLwipConnection *conn;

	conn = ncm_lwip_stack_connect(stack, addr, timeout_ms, NULL, &error);
	g_assert_null(conn);
	g_assert_error(error, G_IO_ERROR, code);
}

static void
test_refused(void)
{
	guint16 port;
	int fd;

	if (!have_tap())
		return;
	/* A port that was just free: bound, then closed. */
	fd = kernel_socket(KERNEL_V4, SOCK_STREAM, &port);
	close(fd);
	expect_connect_error(KERNEL_V4, port, 10000, G_IO_ERROR_CONNECTION_REFUSED);
	expect_connect_error(KERNEL_V6, port, 10000, G_IO_ERROR_CONNECTION_REFUSED);
}

/* lwIP's lwip_strerr() is "" in our build: the messages must still say what went wrong. */
static void
test_error_messages(void)
{
	g_autoptr(GInetSocketAddress) any = sockaddr("0.0.0.0", 0);
	g_autoptr(GInetSocketAddress) again = NULL;
	g_autoptr(GInetSocketAddress) far = sockaddr("10.250.1.1", 9);
	g_autoptr(NcmLwipListener) first = NULL;
	g_autoptr(NcmLwipListener) second = NULL;
	g_autoptr(GError) error = NULL;
	NcmLwipConnection *conn;

	if (!have_tap())
		return;
	first = ncm_lwip_stack_listen(stack, any, 0, &error);
	g_assert_no_error(error);
	again = sockaddr("0.0.0.0", ncm_lwip_listener_get_port(first));
	second = ncm_lwip_stack_listen(stack, again, 0, &error);
	g_assert_null(second);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE);
	g_assert_nonnull(strstr(error->message, "address in use"));
	g_clear_error(&error);
	/* Off the netif's network, no gateway: refused at once, with a reason. */
	conn = ncm_lwip_stack_connect(stack, far, 2000, NULL, &error);
	g_assert_null(conn);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NETWORK_UNREACHABLE);
	g_assert_nonnull(strstr(error->message, "no route to host"));
}

static void
test_timeout(void)
{
	gint64 t0;
	gint64 elapsed;

	if (!have_tap())
		return;
	/* Nobody owns .99: ARP goes unanswered. */
	t0 = g_get_monotonic_time();
	expect_connect_error("192.168.78.99", 80, 500, G_IO_ERROR_TIMED_OUT);
	elapsed = g_get_monotonic_time() - t0;
	g_assert_cmpint(elapsed, >=, 450 * 1000);
	g_assert_cmpint(elapsed, <, 10 * G_TIME_SPAN_SECOND);
	/* Off-link without a gateway: no route at all. */
	expect_connect_error("10.99.0.1", 80, 500, G_IO_ERROR_NETWORK_UNREACHABLE);
}

static gpointer
cancel_later(gpointer data)
{
	g_usleep(100 * 1000);
	g_cancellable_cancel(data);
	return NULL;
}

static void
test_cancel(void)
{
	g_autoptr(GInetSocketAddress) addr = sockaddr("192.168.78.98", 80);
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autoptr(GError) error = NULL;
	GThread *thread;

	if (!have_tap())
		return;
	thread = g_thread_new("cancel", cancel_later, cancellable);
	g_assert_null(ncm_lwip_stack_connect(stack, addr, 0, cancellable, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_thread_join(thread);
}

/* ---- UDP ------------------------------------------------------------------------------ */

static gpointer
kernel_udp_echo(gpointer data)
{
	int fd = GPOINTER_TO_INT(data);
	guint8 buf[2048];

	for (;;) {
		struct sockaddr_storage from;
		socklen_t len = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len);

		/* A zero-length datagram ends the echo. */
		if (n <= 0)
			break;
		sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, len);
	}
	return NULL;
}

static void
udp_echo_family(NcmLwipUdpSocket *sock, const char *ip, guint16 port, gsize max_len)
{
	g_autoptr(GInetSocketAddress) to = sockaddr(ip, port);
	guint8 out[2048], in[2048];
	guint lost = 0;

	for (guint i = 0; i < 300; i++) {
		g_autoptr(GInetSocketAddress) from = NULL;
		g_autoptr(GError) error = NULL;
		gsize len = i == 0 ? max_len : 1 + (i * 97u) % max_len;
		gssize n;

		for (gsize j = 0; j < len; j++)
			out[j] = (guint8)(i * 31 + j);
		g_assert_true(ncm_lwip_udp_socket_send_to(sock, to, out, len, &error));
		g_assert_no_error(error);
		n = ncm_lwip_udp_socket_receive_from(sock, &from, in, sizeof(in), 5000, NULL, &error);
		if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)) {
			lost++;
			continue;
		}
		g_assert_no_error(error);
		g_assert_cmpint(n, ==, (gssize)len);
		g_assert_cmpmem(in, len, out, len);
		g_assert_cmpuint(g_inet_socket_address_get_port(from), ==, port);
	}
	/* Over a TAP nothing should be lost; allow a stray one under load. */
	g_assert_cmpuint(lost, <=, 1);
}

static void
test_udp_echo(void)
{
	g_autoptr(NcmLwipUdpSocket) sock = NULL;
	g_autoptr(GInetSocketAddress) stop = NULL;
	g_autoptr(GError) error = NULL;
	GThread *thread;
	guint16 port;
	int fd;

	if (!have_tap())
		return;
	fd = kernel_socket("::", SOCK_DGRAM, &port);
	thread = g_thread_new("udp-echo", kernel_udp_echo, GINT_TO_POINTER(fd));
	sock = ncm_lwip_stack_udp_bind(stack, NULL, &error);
	g_assert_no_error(error);
	/* Up to the MTU: 1500 - 20 - 8 and 1500 - 40 - 8. */
	udp_echo_family(sock, KERNEL_V4, port, 1472);
	udp_echo_family(sock, KERNEL_V6, port, 1452);
	stop = sockaddr(KERNEL_V4, port);
	g_assert_true(ncm_lwip_udp_socket_send_to(sock, stop, "", 0, &error));
	g_thread_join(thread);
	close(fd);
	g_assert_cmpuint(ncm_lwip_udp_socket_get_drops(sock), ==, 0);
}

/* The kernel's next datagram on @fd, which must be @len bytes of @want. */
static void
kernel_expect_datagram(int fd, const guint8 *want, gsize len)
{
	g_autofree guint8 *buf = g_malloc(len + 1);
	ssize_t n = recv(fd, buf, len + 1, 0);

	g_assert_cmpint(n, ==, (gssize)len);
	g_assert_cmpmem(buf, len, want, len);
}

/*
 * A datagram over the link's MTU leaves as IPv4 fragments cut by the
 * netif. The link takes two of them and then has no room; a small
 * datagram of another flow, sent meanwhile, goes ahead of the bulk
 * (tx_sparse_ahead), but only after the cut datagram's rest: the netif
 * resumes a cut at the fragment where the link stopped it, and had it sent
 * anything in between it would have started the cut again, sending the
 * first fragments twice (as TCP segments of 8 frames, the peer's D-SACKs
 * then cost lwIP's window a fifth of a paced upload).
 */
static void
test_udp_cut_resumes(void)
{
	enum { BIG = 6000, FRAGS = (BIG + 8 + 1479) / 1480 };
	g_autoptr(NcmLwipUdpSocket) bulk = NULL;
	g_autoptr(GInetSocketAddress) to = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree guint8 *big = make_data(BIG, 0xf4a9);
	guint8 small[64] = {0};
	guint16 port;
	guint offsets = 0, tries = 0;
	int fd;

	if (!have_tap())
		return;
	fd = kernel_socket(KERNEL_V4, SOCK_DGRAM, &port);
	to = sockaddr(KERNEL_V4, port);
	bulk = ncm_lwip_stack_udp_bind(stack, NULL, &error);
	g_assert_no_error(error);
	/* The kernel's MAC is known before the link runs out of room. */
	g_assert_true(ncm_lwip_udp_socket_send_to(bulk, to, small, sizeof(small), &error));
	kernel_expect_datagram(fd, small, sizeof(small));
	for (;;) {
		g_autoptr(NcmLwipUdpSocket) sparse = ncm_lwip_stack_udp_bind(stack, NULL, &error);
		NcmLwipStats before, after;
		GBytes *last;

		g_assert_no_error(error);
		choke_arm(2);
		ncm_lwip_stack_get_stats(stack, &before);
		g_assert_true(ncm_lwip_udp_socket_send_to(bulk, to, big, BIG, &error));
		g_assert_no_error(error);
		/* Another thread that releases lwIP's lock (the TAP reader
		 * answering a probe) may be the one that drains the queue: the
		 * cut is done once the link is full. */
		g_assert_true(choke_wait_full());
		g_assert_cmpuint(choke_taken(), ==, 2);
		small[0] = 0x5a;
		g_assert_true(ncm_lwip_udp_socket_send_to(sparse, to, small, sizeof(small), &error));
		ncm_lwip_stack_get_stats(stack, &after);
		choke_room();
		kernel_expect_datagram(fd, big, BIG);
		kernel_expect_datagram(fd, small, sizeof(small));
		/* Both flows in one of the 256 buckets: the small one rightly
		 * waits its turn; another port draws another bucket. More than
		 * one went ahead when the kernel's neighbour probes (ARP, NS)
		 * came meanwhile (seen under qemu-arm): lwIP's answers go ahead
		 * too, and any frame sent ahead restarted the cut in the old
		 * code, which the fragments below would show. */
		if (after.tx_sparse_ahead == before.tx_sparse_ahead) {
			g_assert_cmpuint(++tries, <, 4);
			continue;
		}
		/* Each fragment once, then the small datagram. (The kernel had it,
		 * so choke_sendv() has let go of the lock that covers its record.) */
		g_assert_cmpuint(choke_taken(), ==, FRAGS + 1);
		for (guint i = 0; i < FRAGS; i++) {
			gsize len;
			const guint8 *f = g_bytes_get_data(g_ptr_array_index(choke->taken, i), &len);
			guint off = ((f[20] & 0x1fu) << 8 | f[21]) * 8u;

			g_assert_cmpuint(off % 1480, ==, 0);
			g_assert_cmpuint(off / 1480, <, FRAGS);
			g_assert_false(offsets & (1u << (off / 1480)));
			offsets |= 1u << (off / 1480);
		}
		last = g_ptr_array_index(choke->taken, FRAGS);
		g_assert_cmpuint(g_bytes_get_size(last), ==, 14 + 20 + 8 + sizeof(small));
		break;
	}
	choke_disarm();
	g_assert_cmpuint(offsets, ==, (1u << FRAGS) - 1);
	close(fd);
}

typedef struct {
	GMainLoop *loop;
	GBytes *bytes;
	GInetSocketAddress *from;
	GError *error;
	GThread *thread;
} UdpAsync;

static void
udp_received(GObject *source, GAsyncResult *result, gpointer data)
{
	UdpAsync *u = data;

	u->thread = g_thread_self();
	u->bytes = ncm_lwip_udp_socket_receive_finish(NCM_LWIP_UDP_SOCKET(source), result, &u->from,
						      &u->error);
	g_main_loop_quit(u->loop);
}

/* One datagram from the kernel, received by ncm_lwip_udp_socket_receive_async
 * on this thread's main context; then a closed socket's pending receive. */
static void
test_udp_receive_async(void)
{
	g_autoptr(NcmLwipUdpSocket) sock = NULL;
	g_autoptr(GMainContext) context = g_main_context_new();
	g_autoptr(GError) error = NULL;
	UdpAsync u = {0};
	struct sockaddr_in to = {.sin_family = AF_INET};
	guint16 kport;
	int fd;

	if (!have_tap())
		return;
	g_main_context_push_thread_default(context);
	u.loop = g_main_loop_new(context, FALSE);
	sock = ncm_lwip_stack_udp_bind(stack, NULL, &error);
	g_assert_no_error(error);
	ncm_lwip_udp_socket_receive_async(sock, NULL, udp_received, &u);
	fd = kernel_socket(KERNEL_V4, SOCK_DGRAM, &kport);
	to.sin_port = htons(ncm_lwip_udp_socket_get_port(sock));
	inet_pton(AF_INET, LWIP_V4, &to.sin_addr);
	g_assert_cmpint(sendto(fd, "datagram", 8, 0, (struct sockaddr *)&to, sizeof(to)), ==, 8);
	g_main_loop_run(u.loop);
	g_assert_no_error(u.error);
	g_assert_true(u.thread == g_thread_self());
	g_assert_cmpmem(g_bytes_get_data(u.bytes, NULL), g_bytes_get_size(u.bytes), "datagram", 8);
	g_assert_cmpuint(g_inet_socket_address_get_port(u.from), ==, kport);
	g_clear_pointer(&u.bytes, g_bytes_unref);
	g_clear_object(&u.from);
	/* A receive waiting when the socket closes fails with CLOSED. */
	ncm_lwip_udp_socket_receive_async(sock, NULL, udp_received, &u);
	ncm_lwip_udp_socket_close(sock);
	g_main_loop_run(u.loop);
	g_assert_error(u.error, G_IO_ERROR, G_IO_ERROR_CLOSED);
	g_assert_null(u.bytes);
	g_clear_error(&u.error);
	close(fd);
	g_main_loop_unref(u.loop);
	g_main_context_pop_thread_default(context);
}

/* ---- Async on a main context: connect, splice, GDataInputStream -------------------- */

#define ASYNC_LINES 20000

typedef struct {
	GMainLoop *loop;
	NcmLwipConnection *conn;
	GDataInputStream *data_in;
	guint lines;
	gboolean bad_line;
	gboolean splice_done;
	gboolean read_done;
	GError *error;
} AsyncState;

static void
async_maybe_quit(AsyncState *s)
{
	if ((s->splice_done && s->read_done) || s->error != NULL)
		g_main_loop_quit(s->loop);
}

static void
async_line_cb(GObject *source, GAsyncResult *result, gpointer data)
{
	AsyncState *s = data;
	g_autofree char *line =
	    g_data_input_stream_read_line_finish(s->data_in, result, NULL, &s->error);
	char expect[32];

	if (line == NULL) {
		s->read_done = TRUE;
		async_maybe_quit(s);
		return;
	}
	g_snprintf(expect, sizeof(expect), "line %05u", s->lines);
	if (strcmp(line, expect) != 0)
		s->bad_line = TRUE;
	s->lines++;
	g_data_input_stream_read_line_async(s->data_in, G_PRIORITY_DEFAULT, NULL, async_line_cb, s);
}

static void
async_splice_cb(GObject *source, GAsyncResult *result, gpointer data)
{
	AsyncState *s = data;

	if (g_output_stream_splice_finish(G_OUTPUT_STREAM(source), result, &s->error) >= 0)
		s->splice_done = TRUE;
	async_maybe_quit(s);
}

static GInputStream *
make_lines(void)
{
	GString *text = g_string_new(NULL);
	g_autoptr(GBytes) bytes = NULL;

	for (guint i = 0; i < ASYNC_LINES; i++)
		g_string_append_printf(text, "line %05u\n", i);
	bytes = g_string_free_to_bytes(text);
	return g_memory_input_stream_new_from_bytes(bytes);
}

static void
async_connected_cb(GObject *source, GAsyncResult *result, gpointer data)
{
	AsyncState *s = data;
	g_autoptr(GInputStream) lines = NULL;

	s->conn = ncm_lwip_stack_connect_finish(stack, result, &s->error);
	if (s->conn == NULL) {
		async_maybe_quit(s);
		return;
	}
	lines = make_lines();
	s->data_in = g_data_input_stream_new(g_io_stream_get_input_stream(G_IO_STREAM(s->conn)));
	g_output_stream_splice_async(g_io_stream_get_output_stream(G_IO_STREAM(s->conn)), lines,
				     G_OUTPUT_STREAM_SPLICE_CLOSE_SOURCE |
					 G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET,
				     G_PRIORITY_DEFAULT, NULL, async_splice_cb, s);
	g_data_input_stream_read_line_async(s->data_in, G_PRIORITY_DEFAULT, NULL, async_line_cb, s);
}

static gboolean
async_deadline(gpointer data)
{
	AsyncState *s = data;

	g_set_error_literal(&s->error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "async echo stalled");
	g_main_loop_quit(s->loop);
	return G_SOURCE_REMOVE;
}

static void
test_async_echo(void)
{
	g_autoptr(GMainContext) context = g_main_context_new();
	g_autoptr(GInetSocketAddress) addr = NULL;
	EchoServer server = {.n = 1};
	AsyncState s = {0};
	NcmLwipStats before, after;
	GThread *server_thread;
	GSource *deadline;
	guint16 port;

	if (!have_tap())
		return;
	server.fd = kernel_dual_listener(&port);
	server_thread = g_thread_new("echo-server", kernel_echo_server, &server);
	addr = sockaddr(KERNEL_V6, port);
	g_main_context_push_thread_default(context);
	s.loop = g_main_loop_new(context, FALSE);
	deadline = g_timeout_source_new_seconds(IO_TIMEOUT_S);
	g_source_set_callback(deadline, async_deadline, &s, NULL);
	g_source_attach(deadline, context);
	ncm_lwip_stack_get_stats(stack, &before);
	ncm_lwip_stack_connect_async(stack, addr, 10000, NULL, async_connected_cb, &s);
	g_main_loop_run(s.loop);
	ncm_lwip_stack_get_stats(stack, &after);
	g_source_destroy(deadline);
	g_source_unref(deadline);
	g_assert_no_error(s.error);
	g_assert_false(s.bad_line);
	g_assert_cmpuint(s.lines, ==, ASYNC_LINES);
	/* The async path does use the main context, and the counter sees it. */
	g_assert_cmpuint(after.main_dispatches, >, before.main_dispatches);
	g_clear_object(&s.data_in);
	g_io_stream_close(G_IO_STREAM(s.conn), NULL, NULL);
	g_clear_object(&s.conn);
	g_main_loop_unref(s.loop);
	g_main_context_pop_thread_default(context);
	g_thread_join(server_thread);
	close(server.fd);
}

/* ---- Peer learning ----------------------------------------------------------------------- */

static void
test_peer(void)
{
	g_autoptr(GInetAddress) v4 = NULL;
	g_autoptr(GInetAddress) v6 = NULL;
	g_autoptr(GInetAddress) expect4 = g_inet_address_new_from_string(KERNEL_V4);
	guint8 mac[6];

	if (!have_tap())
		return;
	/* Talk to both families so the kernel resolves us by ARP and ND. */
	test_refused();
	g_assert_true(ncm_lwip_netif_get_peer(netif, G_SOCKET_FAMILY_IPV4, &v4, mac));
	g_assert_true(g_inet_address_equal(v4, expect4));
	g_assert_cmpmem(mac, 6, kernel_mac, 6);
	g_assert_true(ncm_lwip_netif_get_peer(netif, G_SOCKET_FAMILY_IPV6, &v6, mac));
	g_assert_cmpint(g_inet_address_get_family(v6), ==, G_SOCKET_FAMILY_IPV6);
	g_assert_cmpmem(mac, 6, kernel_mac, 6);
}

/* ---- IPv6 link-local and SLAAC ---------------------------------------------------------- */

/* Connects to the kernel at @ip (with @scope), echoes a little, and
 * returns the local address lwIP used. */
static GInetSocketAddress *
echo_once(const char *ip, guint scope)
{
	EchoServer server = {.n = 1};
	g_autoptr(GInetAddress) inet = g_inet_address_new_from_string(ip);
	g_autoptr(GSocketAddress) addr = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	GInetSocketAddress *local;
	char buf[6] = {0};
	GThread *thread;
	guint16 port;

	server.fd = kernel_dual_listener(&port);
	thread = g_thread_new("echo-server", kernel_echo_server, &server);
	addr = g_object_new(G_TYPE_INET_SOCKET_ADDRESS, "address", inet, "port", (guint)port,
			    "scope-id", scope, NULL);
	conn = ncm_lwip_stack_connect(stack, G_INET_SOCKET_ADDRESS(addr), 10000, NULL, &error);
	g_assert_no_error(error);
	write_and_close(g_io_stream_get_output_stream(G_IO_STREAM(conn)), (const guint8 *)"hello", 5);
	g_assert_true(g_input_stream_read_all(g_io_stream_get_input_stream(G_IO_STREAM(conn)), buf,
					      5, NULL, NULL, &error));
	g_assert_cmpstr(buf, ==, "hello");
	local = g_object_ref(ncm_lwip_connection_get_local_address(conn));
	/* The peer as connected to, scope id included. */
	g_assert_true(g_inet_address_equal(
		g_inet_socket_address_get_address(ncm_lwip_connection_get_remote_address(conn)), inet));
	g_assert_cmpuint(g_inet_socket_address_get_port(ncm_lwip_connection_get_remote_address(conn)),
			 ==, port);
	if (scope != 0)
		g_assert_cmpuint(g_inet_socket_address_get_scope_id(
					 ncm_lwip_connection_get_remote_address(conn)),
				 ==, scope);
	g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	g_thread_join(thread);
	close(server.fd);
	return local;
}

static void
test_link_local(void)
{
	g_autoptr(GInetSocketAddress) local = NULL;
	char ip[64];

	if (!have_tap())
		return;
	/* The kernel's EUI-64 link-local address, reached through our netif's scope. */
	g_snprintf(ip, sizeof(ip), "fe80::%02x%02x:%02xff:fe%02x:%02x%02x", kernel_mac[0] ^ 2,
		   kernel_mac[1], kernel_mac[2], kernel_mac[3], kernel_mac[4], kernel_mac[5]);
	local = echo_once(ip, ncm_lwip_netif_get_index(netif));
	g_assert_true(g_inet_address_get_is_link_local(g_inet_socket_address_get_address(local)));
}

/* A router advertisement for fd79::/64 (autonomous), from the kernel's
 * link-local address to all nodes, as radvd would send it. */
static void
send_router_advertisement(void)
{
	struct sockaddr_in6 to = {.sin6_family = AF_INET6};
	guint8 ra[16 + 32 + 8] = {134, 0, 0, 0, 64, 0, 0, 0};
	guint8 *pi = ra + 16, *sll = ra + 48;
	int fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6);
	int hops = 255;
	guint32 life = htonl(3600);

	g_assert_cmpint(fd, >=, 0);
	pi[0] = 3; /* prefix information */
	pi[1] = 4;
	pi[2] = 64;
	pi[3] = 0xC0; /* on-link, autonomous */
	memcpy(pi + 4, &life, 4);
	memcpy(pi + 8, &life, 4);
	inet_pton(AF_INET6, "fd79::", pi + 16);
	sll[0] = 1; /* source link-layer address */
	sll[1] = 1;
	memcpy(sll + 2, kernel_mac, 6);
	g_assert_no_errno(setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof(hops)));
	inet_pton(AF_INET6, "ff02::1", &to.sin6_addr);
	to.sin6_scope_id = if_nametoindex(TAP_NAME);
	/* The kernel fills in the ICMPv6 checksum of raw ICMPv6 sockets. */
	g_assert_cmpint(sendto(fd, ra, sizeof(ra), 0, (struct sockaddr *)&to, sizeof(to)), ==,
			sizeof(ra));
	close(fd);
}

static GInetAddress *
find_slaac_address(void)
{
	g_autoptr(GInetAddress) prefix = g_inet_address_new_from_string("fd79::");
	g_autoptr(GInetAddressMask) mask = g_inet_address_mask_new(prefix, 64, NULL);
	GList *addresses = ncm_lwip_netif_get_addresses(netif);
	GInetAddress *found = NULL;

	for (GList *l = addresses; l != NULL && found == NULL; l = l->next)
		if (g_inet_address_mask_matches(mask, l->data))
			found = g_object_ref(l->data);
	g_list_free_full(addresses, g_object_unref);
	return found;
}

static void
test_slaac(void)
{
	gint64 end = g_get_monotonic_time() + 20 * G_TIME_SPAN_SECOND;
	g_autoptr(GInetAddress) slaac = NULL;
	g_autoptr(GInetSocketAddress) local = NULL;
	g_autofree char *text = NULL;
	struct tap_in6_ifreq r6 = {.prefixlen = 64};
	int ctl6;

	if (!have_tap())
		return;
	g_assert_null(find_slaac_address());
	send_router_advertisement();
	/* One DAD probe (lwipopts.h) takes about a second. */
	while ((slaac = find_slaac_address()) == NULL && g_get_monotonic_time() < end)
		g_usleep(50 * 1000);
	g_assert_nonnull(slaac);
	/* The interface id is the EUI-64 of our MAC. */
	text = g_inet_address_to_string(slaac);
	g_assert_cmpstr(text, ==, "fd79::ff:fe00:7802");

	/* And it is used: the kernel gets an address in the prefix, lwIP
	 * picks the SLAAC address as its source. */
	ctl6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	r6.ifindex = (int)if_nametoindex(TAP_NAME);
	inet_pton(AF_INET6, "fd79::1", &r6.addr);
	g_assert_no_errno(ioctl(ctl6, SIOCSIFADDR, &r6));
	close(ctl6);
	local = echo_once("fd79::1", 0);
	g_assert_true(g_inet_address_equal(g_inet_socket_address_get_address(local), slaac));
}

/* ---- Network namespace and TAP set-up ------------------------------------------------------ */

static gboolean
write_file(const char *path, const char *text)
{
	return g_file_set_contents(path, text, -1, NULL);
}

/* The kernel keeps IPv6 addresses tentative until link-watch has seen the
 * carrier (up to a second), DAD or not: wait until one can bind. */
static const char *
wait_v6_usable(void)
{
	gint64 end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;

	while (g_get_monotonic_time() < end) {
		struct sockaddr_storage ss;
		socklen_t len = make_sockaddr(KERNEL_V6, 0, &ss);
		int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int r = bind(fd, (struct sockaddr *)&ss, len);

		close(fd);
		if (r == 0)
			return NULL;
		g_usleep(20 * 1000);
	}
	return "the kernel's IPv6 address stayed tentative";
}

static const char *
kernel_side_up(int ctl, int ctl6)
{
	struct ifreq ifr = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	struct tap_in6_ifreq r6 = {.prefixlen = 64};

	/* Before up, so the kernel's own addresses skip DAD too. */
	write_file("/proc/sys/net/ipv6/conf/" TAP_NAME "/accept_dad", "0");
	g_strlcpy(ifr.ifr_name, TAP_NAME, IFNAMSIZ);
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, KERNEL_V4, &sin->sin_addr);
	if (ioctl(ctl, SIOCSIFADDR, &ifr) < 0)
		return "SIOCSIFADDR failed";
	inet_pton(AF_INET, "255.255.255.0", &sin->sin_addr);
	if (ioctl(ctl, SIOCSIFNETMASK, &ifr) < 0)
		return "SIOCSIFNETMASK failed";
	if (ioctl(ctl, SIOCGIFFLAGS, &ifr) < 0)
		return "SIOCGIFFLAGS failed";
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(ctl, SIOCSIFFLAGS, &ifr) < 0)
		return "SIOCSIFFLAGS failed";
	if (ioctl(ctl, SIOCGIFHWADDR, &ifr) < 0)
		return "SIOCGIFHWADDR failed";
	memcpy(kernel_mac, ifr.ifr_hwaddr.sa_data, 6);
	r6.ifindex = (int)if_nametoindex(TAP_NAME);
	inet_pton(AF_INET6, KERNEL_V6, &r6.addr);
	if (ioctl(ctl6, SIOCSIFADDR, &r6) < 0)
		return "adding the kernel's IPv6 address failed";
	return wait_v6_usable();
}

/* Moves the whole test into a private network namespace (before any
 * thread exists) holding one TAP device; returns its fd, or -1 with
 * skip_reason set. */
static int
setup_tap(void)
{
	struct ifreq ifr = {0};
	int fd, ctl, ctl6;

	if (geteuid() != 0)
		return skip_reason = "needs root for a network namespace and a TAP device", -1;
	if (unshare(CLONE_NEWNET) < 0)
		return skip_reason = "unshare(CLONE_NEWNET) failed", -1;
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return skip_reason = "cannot open /dev/net/tun", -1;
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	g_strlcpy(ifr.ifr_name, TAP_NAME, IFNAMSIZ);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		close(fd);
		return skip_reason = "TUNSETIFF failed", -1;
	}
	ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ctl6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	skip_reason = kernel_side_up(ctl, ctl6);
	close(ctl);
	close(ctl6);
	if (skip_reason != NULL) {
		close(fd);
		return -1;
	}
	return fd;
}

static gboolean
netif_has(const char *ip)
{
	g_autoptr(GInetAddress) want = g_inet_address_new_from_string(ip);
	GList *addresses = ncm_lwip_netif_get_addresses(netif);
	gboolean found = FALSE;

	for (GList *l = addresses; l != NULL; l = l->next)
		found = found || g_inet_address_equal(l->data, want);
	g_list_free_full(addresses, g_object_unref);
	return found;
}

/* Another IPv4 address at run time, reached by the kernel; bad ones refused. */
static void
test_set_ipv4(void)
{
	g_autoptr(GInetAddress) other = g_inet_address_new_from_string("192.168.78.3");
	g_autoptr(GInetAddress) v4 = g_inet_address_new_from_string(LWIP_V4);
	g_autoptr(GInetAddress) v6 = g_inet_address_new_from_string(LWIP_V6);
	g_autoptr(GInetSocketAddress) local = NULL;
	g_autoptr(GError) error = NULL;

	if (!have_tap())
		return;
	g_assert_false(ncm_lwip_netif_set_ipv4(netif, v6, 24, NULL, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
	g_clear_error(&error);
	g_assert_false(ncm_lwip_netif_set_ipv4(netif, v4, 33, NULL, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
	g_clear_error(&error);
	g_assert_true(netif_has(LWIP_V4));
	g_assert_true(ncm_lwip_netif_set_ipv4(netif, other, 24, NULL, &error));
	g_assert_no_error(error);
	g_assert_true(netif_has("192.168.78.3"));
	g_assert_false(netif_has(LWIP_V4));
	local = echo_once(KERNEL_V4, 0);
	g_assert_true(g_inet_address_equal(g_inet_socket_address_get_address(local), other));
	g_assert_true(ncm_lwip_netif_set_ipv4(netif, v4, 24, NULL, &error));
	g_assert_true(netif_has(LWIP_V4));
}

static void
count_emission(NcmLwipNetif *n, gpointer data)
{
	(void)n;
	(*(guint *)data)++;
}

/* Runs the default context (the netif's owner) until @count passes @from,
 * for at most @ms; whether it did. */
static gboolean
emitted_since(const guint *count, guint from, guint ms)
{
	gint64 end = g_get_monotonic_time() + ms * G_TIME_SPAN_MILLISECOND;

	while (*count == from && g_get_monotonic_time() < end)
		if (!g_main_context_iteration(NULL, FALSE))
			g_usleep(2 * 1000);
	return *count != from;
}

/*
 * ::addresses-changed, what owners watch instead of polling: an address
 * set from another thread, and DNS servers changed (which lwIP tells
 * nobody: the stack looks once a second, on its own beat).
 */
static void
test_addresses_changed(void)
{
	g_autoptr(GInetAddress) other = g_inet_address_new_from_string("192.168.78.3");
	g_autoptr(GInetAddress) v4 = g_inet_address_new_from_string(LWIP_V4);
	g_autoptr(GInetAddress) server = g_inet_address_new_from_string("192.168.78.53");
	g_autoptr(GError) error = NULL;
	guint count = 0, before;
	gulong id;

	if (!have_tap())
		return;
	id = g_signal_connect(netif, "addresses-changed", G_CALLBACK(count_emission), &count);
	/* Whatever earlier tests left on the way. */
	while (emitted_since(&count, count, 300))
		;
	before = count;
	g_assert_true(ncm_lwip_netif_set_ipv4(netif, other, 24, NULL, &error));
	g_assert_true(emitted_since(&count, before, 5000));
	g_assert_true(netif_has("192.168.78.3"));
	before = count;
	g_assert_true(ncm_lwip_netif_set_ipv4(netif, v4, 24, NULL, &error));
	g_assert_no_error(error);
	g_assert_true(emitted_since(&count, before, 5000));
	g_assert_true(netif_has(LWIP_V4));
	/* Nothing changes: nothing is emitted, beat after beat. */
	before = count;
	g_assert_false(emitted_since(&count, before, 2500));
	ncm_lwip_stack_set_dns_server(stack, 1, server);
	g_assert_true(emitted_since(&count, before, 5000));
	before = count;
	ncm_lwip_stack_set_dns_server(stack, 1, NULL);
	g_assert_true(emitted_since(&count, before, 5000));
	g_signal_handler_disconnect(netif, id);
}

/* set_ipv4() from another thread while the netif is removed: it works,
 * or says the netif was removed; never a link freed under it. */
static gint set_ipv4_calls; /* atomic */

static gpointer
set_ipv4_until_removed(gpointer data)
{
	g_autoptr(GInetAddress) v4 = g_inet_address_new_from_string("192.168.79.2");
	guint n = 0;

	for (;; n++) {
		g_autoptr(GError) error = NULL;

		if (ncm_lwip_netif_set_ipv4(data, v4, 24, NULL, &error)) {
			g_assert_no_error(error);
			g_atomic_int_inc(&set_ipv4_calls);
			/* Leaves the core lock to remove() now and then. */
			g_thread_yield();
			continue;
		}
		g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CLOSED);
		return GUINT_TO_POINTER(n);
	}
}

static void
test_set_ipv4_removed(void)
{
	g_autoptr(GInetAddress) v4 = g_inet_address_new_from_string("192.168.79.1");
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmLwipNetif) n = NULL;
	NcmLwipNetifConfig config;
	GThread *thread;
	int sv[2];

	g_assert_no_errno(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv));
	ncm_lwip_netif_config_init(&config);
	config.ipv4 = v4;
	config.ipv4_prefix = 24;
	n = ncm_lwip_netif_add(ncm_lwip_stack_get_default(),
			       ncm_link_new_for_tap_fd(sv[0], lwip_mac, 1514), &config, &error);
	g_assert_no_error(error);
	g_atomic_int_set(&set_ipv4_calls, 0);
	thread = g_thread_new("set-ipv4", set_ipv4_until_removed, n);
	/* Removed while the calls go on, after the first has worked. */
	while (g_atomic_int_get(&set_ipv4_calls) < 3)
		g_usleep(1000);
	ncm_lwip_netif_remove(n);
	g_assert_cmpuint(GPOINTER_TO_UINT(g_thread_join(thread)), >=, 3);
	g_assert_false(ncm_lwip_netif_set_ipv4(n, v4, 24, NULL, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CLOSED);
	close(sv[1]);
}

/*
 * A netif on a socketpair link (@sv, the far end left to the caller to
 * close), added with @owner as the thread's default context, with an
 * ::addresses-changed emission queued there (an address set). @count, if
 * given, counts the emissions.
 */
static NcmLwipNetif *
netif_with_emission_queued(GMainContext *owner, int sv[2], guint *count)
{
	g_autoptr(GInetAddress) v4 = g_inet_address_new_from_string("192.168.79.1");
	g_autoptr(GError) error = NULL;
	NcmLwipNetifConfig config;
	NcmLwipNetif *n;

	g_assert_no_errno(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv));
	ncm_lwip_netif_config_init(&config);
	g_main_context_push_thread_default(owner);
	n = ncm_lwip_netif_add(ncm_lwip_stack_get_default(),
			       ncm_link_new_for_tap_fd(sv[0], lwip_mac, 1514), &config, &error);
	g_main_context_pop_thread_default(owner);
	g_assert_no_error(error);
	if (count)
		g_signal_connect(n, "addresses-changed", G_CALLBACK(count_emission), count);
	g_assert_true(ncm_lwip_netif_set_ipv4(n, v4, 24, NULL, &error));
	g_assert_true(g_main_context_pending(owner));
	return n;
}

/*
 * The owner's last unref removes the netif at once, with an emission of
 * ::addresses-changed still queued on a context nobody runs (a program
 * with no main loop): the emission holds no reference. Netif up, DHCP
 * started and an address set make such emissions.
 */
static void
test_unref_with_emission_queued(void)
{
	g_autoptr(GMainContext) owner = g_main_context_new();
	NcmLwipNetif *n;
	gpointer weak;
	int sv[2];

	n = netif_with_emission_queued(owner, sv, NULL);
	weak = n;
	g_object_add_weak_pointer(G_OBJECT(n), &weak);
	g_object_unref(n);
	g_assert_null(weak);
	/* What was queued finds no netif. */
	while (g_main_context_iteration(owner, FALSE))
		;
	close(sv[1]);
}

/* Removed while an emission is queued and the netif still held: the
 * emission does not come (the owner let go of its handlers' data). */
static void
test_removed_emits_nothing(void)
{
	g_autoptr(GMainContext) owner = g_main_context_new();
	g_autoptr(NcmLwipNetif) n = NULL;
	guint count = 0;
	int sv[2];

	n = netif_with_emission_queued(owner, sv, &count);
	ncm_lwip_netif_remove(n);
	while (g_main_context_iteration(owner, FALSE))
		;
	g_assert_cmpuint(count, ==, 0);
	close(sv[1]);
}

static void
attach_lwip(int fd)
{
	g_autoptr(GInetAddress) v4 = g_inet_address_new_from_string(LWIP_V4);
	g_autoptr(GInetAddress) v6 = g_inet_address_new_from_string(LWIP_V6);
	g_autoptr(GError) error = NULL;
	NcmLwipNetifConfig config;

	ncm_lwip_netif_config_init(&config);
	config.ipv4 = v4;
	config.ipv4_prefix = 24;
	config.ipv6 = v6;
	config.ipv6_dad = FALSE;
	config.ipv6_slaac = TRUE; /* only test_slaac() sends an advertisement */
	stack = ncm_lwip_stack_get_default();
	netif = ncm_lwip_netif_add(stack, choke_new(ncm_link_new_for_tap_fd(fd, lwip_mac, 1514)),
				   &config, &error);
	g_assert_no_error(error);
}

int
main(int argc, char **argv)
{
	int fd, ret;

	/* GLib < 2.76 recycles GSlice blocks between threads under its own,
	 * uninstrumented lock: ThreadSanitizer would report every GObject
	 * allocated on one thread after another freed it. GLib reads G_SLICE
	 * before main(), hence the re-exec. */
	if (g_getenv("G_SLICE") == NULL) {
		g_setenv("G_SLICE", "always-malloc", TRUE);
		execv("/proc/self/exe", argv);
	}
	g_test_init(&argc, &argv, NULL);
	fd = setup_tap();
	if (fd >= 0)
		attach_lwip(fd);
	g_test_add_func("/lwip-tap/tcp/client-v4", test_client_v4);
	g_test_add_func("/lwip-tap/tcp/client-v4-queued-input", test_client_v4_queued);
	g_test_add_func("/lwip-tap/tcp/client-v6", test_client_v6);
	g_test_add_func("/lwip-tap/tcp/server-v4", test_server_v4);
	g_test_add_func("/lwip-tap/tcp/server-v6", test_server_v6);
	g_test_add_func("/lwip-tap/tcp/concurrent", test_concurrent);
	g_test_add_func("/lwip-tap/tcp/reset", test_reset);
	g_test_add_func("/lwip-tap/tcp/close-resets", test_close_resets);
	g_test_add_func("/lwip-tap/tcp/small-segments", test_small_segments);
	g_test_add_func("/lwip-tap/tcp/splice", test_splice);
	g_test_add_func("/lwip-tap/tcp/source-write-wakes", test_source_write_wakes);
	g_test_add_func("/lwip-tap/tcp/refused", test_refused);
	g_test_add_func("/lwip-tap/tcp/timeout", test_timeout);
	g_test_add_func("/lwip-tap/tcp/error-messages", test_error_messages);
	g_test_add_func("/lwip-tap/tcp/cancel", test_cancel);
	g_test_add_func("/lwip-tap/tcp/async-echo", test_async_echo);
	g_test_add_func("/lwip-tap/tcp/time-wait", test_time_wait);
	g_test_add_func("/lwip-tap/tcp/time-wait-outgoing", test_time_wait_outgoing);
	g_test_add_func("/lwip-tap/udp/echo", test_udp_echo);
	g_test_add_func("/lwip-tap/udp/receive-async", test_udp_receive_async);
	g_test_add_func("/lwip-tap/udp/cut-resumes", test_udp_cut_resumes);
	g_test_add_func("/lwip-tap/netif/peer", test_peer);
	g_test_add_func("/lwip-tap/ipv6/link-local", test_link_local);
	g_test_add_func("/lwip-tap/ipv6/slaac", test_slaac);
	g_test_add_func("/lwip-tap/netif/set-ipv4", test_set_ipv4);
	g_test_add_func("/lwip-tap/netif/set-ipv4-removed", test_set_ipv4_removed);
	g_test_add_func("/lwip-tap/netif/addresses-changed", test_addresses_changed);
	g_test_add_func("/lwip-tap/netif/unref-with-emission-queued", test_unref_with_emission_queued);
	g_test_add_func("/lwip-tap/netif/removed-emits-nothing", test_removed_emits_nothing);
#ifdef TCP_RAW_PEER
	/* Last: its ARP, from an address the kernel does not own, makes the
	 * netif's peer (test_peer) that address. */
	g_test_add_func("/lwip-tap/hostile/tcp-peer", test_hostile_peer);
#endif
	ret = g_test_run();
	g_clear_object(&netif);
	g_clear_object(&stack);
	return ret;
}
