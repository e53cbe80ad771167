/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vmtest-lwip.c: the lwIP netstack over libncm against f_ncm's Linux stack: TCP/UDP, both families, checksummed. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib-unix.h>
#include <ncm.h>

#include "lwip/priv/tcp_priv.h"
#include "lwip/stats.h"
#include "lwip/tcpip.h"

#include "ncm-link.h"
#include "ncm-lwip.h"
#include "tcp-raw-peer.h"
#include "vmtest-heap.h"
#include "vmtest-tsan.h"

/*
 * Four modes. "peer" runs in the gadget's namespace on kernel sockets:
 * TCP port 5000 reads a command byte per connection ('E' echo to EOF,
 * 'S' sink to EOF then answer count + hash, 'G' + size + seed: generate
 * that many bytes and close), UDP port 5001 echoes. "host" opens the NCM
 * function through libncm, attaches lwIP, and runs every check against
 * the peer, printing "ok:"/"FAIL:" lines and throughput. "replug"
 * reacquires the function after each unplug and streams to the sink
 * until the device goes, --cycles times, printing one line per session.
 * "serve" is the target of tcp-raw-peer (issue 16, item 2): a listener
 * whose connections are read slowly, and echo rounds to the peer beside
 * it (see run_serve).
 */

#define TCP_PORT 5000
#define UDP_PORT 5001
#define FNV_INIT 2166136261u
#define CHUNK (256 * 1024)

static gint opt_size_mib = 64;
static gint opt_udp_count = 10000;
static gint opt_conns = 32;
static gint opt_timeout = 60;
static gint opt_cycles = 100;
static gint opt_duration;
static gint opt_echo_rounds = 1;
static gint opt_listen_port = 6000;
static gint opt_echo_kib = 64;
static gchar *opt_peer4 = (gchar *)"192.168.77.1";
static gchar *opt_peer6 = (gchar *)"fd77::1";
static gchar *opt_host4 = (gchar *)"192.168.77.2";
static gchar *opt_host6 = (gchar *)"fd77::2";

static const GOptionEntry entries[] = {
	{"size", 's', 0, G_OPTION_ARG_INT, &opt_size_mib, "MiB per bulk transfer (64)", "N"},
	{"udp", 'u', 0, G_OPTION_ARG_INT, &opt_udp_count, "UDP datagrams per family (10000)", "N"},
	{"conns", 'c', 0, G_OPTION_ARG_INT, &opt_conns, "concurrent connections (32)", "N"},
	{"timeout", 't', 0, G_OPTION_ARG_INT, &opt_timeout, "seconds to wait for the device", "S"},
	{"echo-rounds", 0, 0, G_OPTION_ARG_INT, &opt_echo_rounds,
	 "rounds of the 2-connection echo before the bulk tests (1); more hunt end-of-burst stalls", "N"},
	{"cycles", 0, 0, G_OPTION_ARG_INT, &opt_cycles, "replug: sessions to run (100)", "N"},
	{"duration", 0, 0, G_OPTION_ARG_INT, &opt_duration, "replug: overall limit, 0 = none", "S"},
	{"listen-port", 0, 0, G_OPTION_ARG_INT, &opt_listen_port, "serve: the port to listen on (6000)", "P"},
	{"echo-kib", 0, 0, G_OPTION_ARG_INT, &opt_echo_kib, "serve: KiB per echo round (64)", "N"},
	{"peer4", 0, 0, G_OPTION_ARG_STRING, &opt_peer4, "the peer's IPv4 address", "ADDR"},
	{"peer6", 0, 0, G_OPTION_ARG_STRING, &opt_peer6, "the peer's IPv6 address", "ADDR"},
	{"host4", 0, 0, G_OPTION_ARG_STRING, &opt_host4, "our IPv4 address (/24)", "ADDR"},
	{"host6", 0, 0, G_OPTION_ARG_STRING, &opt_host6, "our IPv6 address (/64)", "ADDR"},
	{0},
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

/* ---- Host mode (libncm + lwIP) ------------------------------------------------------ */

static NcmLwipStack *stack;

static NcmLwipConnection *
connect_cmd(const char *ip, const guint8 *hdr, gsize hdr_len, GError **error)
{
	g_autoptr(GSocketAddress) addr = g_inet_socket_address_new_from_string(ip, TCP_PORT);
	NcmLwipConnection *conn;

	conn = ncm_lwip_stack_connect(stack, G_INET_SOCKET_ADDRESS(addr), 10000, NULL, error);
	if (conn != NULL &&
	    !g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)), hdr,
				       hdr_len, NULL, NULL, error))
		g_clear_object(&conn);
	return conn;
}

static double
mbits(guint64 bytes, gint64 us)
{
	return (double)bytes * 8.0 / (double)MAX(us, 1);
}

/* Sends size bytes to the sink; the peer's count and hash must match. */
static void
bulk_up(const char *ip, guint64 size)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmLwipConnection) conn = connect_cmd(ip, (const guint8 *)"S", 1, &error);
	g_autofree guint8 *buf = g_malloc(CHUNK);
	g_autofree char *what = NULL;
	guint32 x = 0x1234567, hash = FNV_INIT, peer_hash = 0;
	guint64 left = size, peer_count = 0;
	gint64 t0 = g_get_monotonic_time();
	GOutputStream *out;
	guint8 reply[12];

	if (conn == NULL)
		goto out;
	out = g_io_stream_get_output_stream(G_IO_STREAM(conn));
	while (left > 0 && error == NULL) {
		gsize n = MIN(left, CHUNK);

		gen_fill(&x, buf, n);
		hash = fnv1a(hash, buf, n);
		g_output_stream_write_all(out, buf, n, NULL, NULL, &error);
		left -= n;
	}
	if (error == NULL && g_output_stream_close(out, NULL, &error) &&
	    g_input_stream_read_all(g_io_stream_get_input_stream(G_IO_STREAM(conn)), reply,
				    sizeof(reply), NULL, NULL, &error)) {
		memcpy(&peer_count, reply, 8);
		memcpy(&peer_hash, reply + 8, 4);
		peer_count = GUINT64_FROM_LE(peer_count);
		peer_hash = GUINT32_FROM_LE(peer_hash);
	}
out:
	what = g_strdup_printf("bulk lwIP->peer %s: %" G_GUINT64_FORMAT " bytes, %.0f Mbit/s%s%s",
			       ip, peer_count, mbits(peer_count, g_get_monotonic_time() - t0),
			       error ? ": " : "", error ? error->message : "");
	report(error == NULL && peer_count == size && peer_hash == hash, what);
}

/* The peer generates size bytes from a seed; the hash must match. */
static void
bulk_down(const char *ip, guint64 size)
{
	guint8 hdr[13] = {'G'};
	guint64 le_size = GUINT64_TO_LE(size);
	guint32 seed = 0x89abcdef, le_seed = GUINT32_TO_LE(seed), x = seed;
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autofree guint8 *buf = g_malloc(CHUNK), *ref = g_malloc(CHUNK);
	g_autofree char *what = NULL;
	guint64 got = 0;
	gint64 t0 = g_get_monotonic_time();
	gboolean same = TRUE;
	gssize n = 0;

	memcpy(hdr + 1, &le_size, 8);
	memcpy(hdr + 9, &le_seed, 4);
	conn = connect_cmd(ip, hdr, sizeof(hdr), &error);
	while (conn != NULL &&
	       (n = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(conn)), buf, CHUNK,
					NULL, &error)) > 0) {
		gen_fill(&x, ref, (gsize)n);
		same = same && memcmp(buf, ref, (gsize)n) == 0;
		got += (guint64)n;
	}
	what = g_strdup_printf("bulk peer->lwIP %s: %" G_GUINT64_FORMAT " bytes, %.0f Mbit/s%s%s",
			       ip, got, mbits(got, g_get_monotonic_time() - t0), error ? ": " : "",
			       error ? error->message : "");
	report(error == NULL && got == size && same, what);
}

typedef struct {
	const char *ip;
	gsize size;
	guint32 seed;
	gboolean ok;
} Echo;

/* Writes everything, half-closes, reads the echo back and compares. */
static gpointer
echo_run(gpointer data)
{
	Echo *e = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmLwipConnection) conn = connect_cmd(e->ip, (const guint8 *)"E", 1, &error);
	g_autofree guint8 *out = g_malloc(e->size), *in = g_malloc(e->size + 1);
	gsize got = 0;
	guint32 x = e->seed;

	gen_fill(&x, out, e->size);
	if (conn == NULL ||
	    !g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)), out,
				       e->size, NULL, NULL, &error) ||
	    !g_output_stream_close(g_io_stream_get_output_stream(G_IO_STREAM(conn)), NULL, &error) ||
	    !g_input_stream_read_all(g_io_stream_get_input_stream(G_IO_STREAM(conn)), in,
				     e->size + 1, &got, NULL, &error)) {
		g_printerr("echo %s: %s\n", e->ip, error ? error->message : "?");
		return NULL;
	}
	e->ok = got == e->size && memcmp(in, out, e->size) == 0;
	return NULL;
}

static void
echo_concurrent(guint n)
{
	g_autofree Echo *echoes = g_new0(Echo, n);
	g_autofree GThread **threads = g_new0(GThread *, n);
	g_autofree char *what = NULL;
	guint good = 0;

	for (guint i = 0; i < n; i++) {
		echoes[i] = (Echo){i % 2 ? opt_peer6 : opt_peer4, 256 * 1024, 0x100 + i, FALSE};
		threads[i] = g_thread_new("echo", echo_run, &echoes[i]);
	}
	for (guint i = 0; i < n; i++) {
		g_thread_join(threads[i]);
		good += echoes[i].ok;
	}
	what = g_strdup_printf("%u concurrent echo connections of 256 KiB: %u intact", n, good);
	report(good == n, what);
}

/* Datagrams in flight at once: a round trip through the VM's USB stack
 * takes milliseconds, so one at a time would take minutes. */
#define UDP_WINDOW 16

/* Datagram @seq: 4 bytes of sequence number, then xorshift bytes. */
static gsize
udp_make(guint32 seq, gsize max, guint8 *out)
{
	gsize len = seq == 0 ? max : 4 + (seq * 97u) % (max - 3);
	guint32 x = seq + 1;

	gen_fill(&x, out, len);
	memcpy(out, &seq, 4);
	return len;
}

/* Sends datagrams [first, first + n) that are not yet in @done, then
 * collects echoes until all are in or 1 s passes without one. */
static void
udp_round(NcmLwipUdpSocket *sock, GInetSocketAddress *to, gsize max, guint32 first, guint n,
	  gboolean *done, guint *bad)
{
	guint8 out[2048], in[2048];
	guint missing = 0;

	for (guint32 seq = first; seq < first + n; seq++) {
		if (done[seq - first])
			continue;
		missing++;
		ncm_lwip_udp_socket_send_to(sock, to, out, udp_make(seq, max, out), NULL);
	}
	while (missing > 0) {
		gssize len = ncm_lwip_udp_socket_receive_from(sock, NULL, in, sizeof(in), 1000, NULL,
							      NULL);
		guint32 seq;

		if (len < 0)
			return;
		memcpy(&seq, in, 4);
		/* Late echoes of earlier rounds are ignored. */
		if (len < 4 || seq < first || seq >= first + n || done[seq - first])
			continue;
		if ((gsize)len != udp_make(seq, max, out) || memcmp(in, out, (gsize)len) != 0)
			(*bad)++;
		done[seq - first] = TRUE;
		missing--;
	}
}

/* @count datagrams of 4..@max bytes, UDP_WINDOW at a time; lost ones are
 * sent once more (and counted). */
static void
udp_echo(const char *ip, guint count, gsize max)
{
	g_autoptr(GSocketAddress) to = g_inet_socket_address_new_from_string(ip, UDP_PORT);
	g_autoptr(NcmLwipUdpSocket) sock = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *what = NULL;
	guint good = 0, resent = 0, bad = 0;
	gint64 t0 = g_get_monotonic_time();

	sock = ncm_lwip_stack_udp_bind(stack, NULL, &error);
	for (guint32 first = 0; sock != NULL && first < count; first += UDP_WINDOW) {
		guint n = MIN(UDP_WINDOW, count - first);
		gboolean done[UDP_WINDOW] = {FALSE};

		udp_round(sock, G_INET_SOCKET_ADDRESS(to), max, first, n, done, &bad);
		for (guint i = 0; i < n; i++)
			resent += !done[i];
		udp_round(sock, G_INET_SOCKET_ADDRESS(to), max, first, n, done, &bad);
		for (guint i = 0; i < n; i++)
			good += done[i];
	}
	what = g_strdup_printf("UDP echo %s: %u of %u datagrams (4..%" G_GSIZE_FORMAT
			       " bytes) echoed, %u corrupt, %u resent, %.1f s",
			       ip, good, count, max, bad, resent,
			       (double)(g_get_monotonic_time() - t0) / 1e6);
	report(good == count && bad == 0, what);
}

static NcmDevice *device; /* for the watchdog's counters */
static gint stop_watchdog;
static gsize heap_peak; /* atomic: the most heap in use the watchdog saw */

/* The watchdog's 100 ms tick: memory an attack makes the stack hold stays
 * held, so sampling this often sees its peak. */
static void
heap_sample(void)
{
	gsize now = vmtest_heap_in_use();

	if (now > __atomic_load_n(&heap_peak, __ATOMIC_RELAXED))
		__atomic_store_n(&heap_peak, now, __ATOMIC_RELAXED);
}

/* SIGURG: the receiving thread prints its own stack (raw addresses; resolve
 * them with addr2line against the same build). */
static void
dump_stack_handler(int sig)
{
	void *frames[48];
	int n = backtrace(frames, G_N_ELEMENTS(frames));
	char line[64];
	int len = snprintf(line, sizeof line, "## stack of tid %ld\n", (long)syscall(SYS_gettid));

	(void)sig;
	if (write(STDOUT_FILENO, line, (size_t)len) < 0)
		return;
	backtrace_symbols_fd(frames, n, STDOUT_FILENO);
}

/* The watchdog's dump_threads() asks each thread for its stack with SIGURG. */
static void
install_stack_dumper(void)
{
	void *warm[2];

	/* backtrace() loads its unwinder on first use: not in a signal handler. */
	backtrace(warm, 2);
	signal(SIGURG, dump_stack_handler);
}

static void
print_file(const char *label, const char *path)
{
	g_autofree gchar *text = NULL;

	if (g_file_get_contents(path, &text, NULL, NULL))
		printf("## %s: %s%s", label, text, g_str_has_suffix(text, "\n") ? "" : "\n");
}

/* Core lock held: each TCP connection's view of the windows, so a stall
 * can be told apart as ours (window never reopened) or the link's. */
static void
dump_pcbs(void)
{
	for (struct tcp_pcb *pcb = tcp_active_pcbs; pcb != NULL; pcb = pcb->next) {
		guint unacked = 0, unsent = 0, ooseq = 0;

		for (struct tcp_seg *s = pcb->unacked; s != NULL; s = s->next)
			unacked++;
		for (struct tcp_seg *s = pcb->unsent; s != NULL; s = s->next)
			unsent++;
		for (struct tcp_seg *s = pcb->ooseq; s != NULL; s = s->next)
			ooseq++;
		printf("## pcb :%u->:%u state %d flags 0x%x rcv_nxt %u rcv_wnd %u rcv_ann_wnd %u "
		       "rcv_ann_right_edge %u snd_nxt %u lastack %u snd_wnd %u snd_wnd_max %u "
		       "cwnd %u ssthresh %u rto %d rtime %d nrtx %u persist_backoff %u "
		       "persist_cnt %u unacked %u unsent %u ooseq %u refused %s snd_buf %u\n",
		       pcb->local_port, pcb->remote_port, pcb->state, pcb->flags, pcb->rcv_nxt,
		       (guint)pcb->rcv_wnd, (guint)pcb->rcv_ann_wnd, pcb->rcv_ann_right_edge,
		       pcb->snd_nxt, pcb->lastack, (guint)pcb->snd_wnd, (guint)pcb->snd_wnd_max,
		       (guint)pcb->cwnd, (guint)pcb->ssthresh, pcb->rto, pcb->rtime, pcb->nrtx,
		       pcb->persist_backoff, pcb->persist_cnt, unacked, unsent, ooseq,
		       pcb->refused_data ? "yes" : "no", (guint)pcb->snd_buf);
	}
}

/* Where every thread waits: its syscall and kernel stack, then its user
 * stack. Tells a blocked event thread from a quiet device. */
static void
dump_threads(void)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;

	if (dir == NULL)
		return;
	while ((e = readdir(dir)) != NULL) {
		g_autofree gchar *base = NULL, *p1 = NULL, *p2 = NULL, *p3 = NULL;
		long tid = strtol(e->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		base = g_strdup_printf("/proc/self/task/%ld", tid);
		p1 = g_strdup_printf("%s/comm", base);
		p2 = g_strdup_printf("%s/syscall", base);
		p3 = g_strdup_printf("%s/stack", base);
		printf("## thread %ld\n", tid);
		print_file("comm", p1);
		print_file("syscall", p2);
		print_file("kernel stack", p3);
		fflush(stdout);
		if (tid != (long)syscall(SYS_gettid)) {
			syscall(SYS_tgkill, (long)getpid(), tid, SIGURG);
			g_usleep(200 * 1000);
		}
	}
	closedir(dir);
	fflush(stdout);
}

static guint64
rss_kb(void)
{
	g_autofree gchar *text = NULL;
	const gchar *p;

	if (!g_file_get_contents("/proc/self/status", &text, NULL, NULL) ||
	    (p = strstr(text, "VmRSS:")) == NULL)
		return 0;
	return g_ascii_strtoull(p + 6, NULL, 10);
}

/* Every 10 s: where data is, so a stall in the VM can be told apart from
 * a slow guest (the script's output is all that survives a timeout). */
static gpointer
watchdog(gpointer data)
{
	guint64 last_rx = 0, last_tx = 0;
	guint quiet = 0, dumps = 0;

	while (!g_atomic_int_get(&stop_watchdog)) {
		NcmLwipStats ls;
		NcmStats ds;
		guint32 xmit, recv, drop, rterr, chkerr, memerr, ipdrop, ip6drop, linkdrop;

		for (guint i = 0; i < 100 && !g_atomic_int_get(&stop_watchdog); i++) {
			g_usleep(100 * 1000);
			heap_sample();
		}
		ncm_lwip_stack_get_stats(stack, &ls);
		ncm_device_get_stats(device, &ds);
		LOCK_TCPIP_CORE();
		xmit = lwip_stats.tcp.xmit;
		recv = lwip_stats.tcp.recv;
		drop = lwip_stats.tcp.drop;
		rterr = lwip_stats.tcp.rterr;
		chkerr = lwip_stats.tcp.chkerr + lwip_stats.ip.chkerr + lwip_stats.udp.chkerr;
		memerr = lwip_stats.tcp.memerr;
		ipdrop = lwip_stats.ip.drop;
		ip6drop = lwip_stats.ip6.drop;
		linkdrop = lwip_stats.link.drop + lwip_stats.etharp.drop;
		UNLOCK_TCPIP_CORE();
		printf("# progress: lwip rx %" G_GUINT64_FORMAT " tx %" G_GUINT64_FORMAT
		       " queued %" G_GUINT64_FORMAT " txdrop %" G_GUINT64_FORMAT
		       "; tcp xmit %u recv %u drop %u rterr %u chkerr %u memerr %u; ip drop %u"
		       " ip6 drop %u link drop %u; usb rx_ntbs %" G_GUINT64_FORMAT
		       " rx_bad %" G_GUINT64_FORMAT " rx_overflows %" G_GUINT64_FORMAT
		       " tx_ntbs %" G_GUINT64_FORMAT " tx_would_block %" G_GUINT64_FORMAT
		       " tx_errors %" G_GUINT64_FORMAT " nudges %" G_GUINT64_FORMAT
		       " (freed %" G_GUINT64_FORMAT "); heap %zu kB (peak %zu kB), rss %"
		       G_GUINT64_FORMAT " kB\n",
		       ls.rx_frames, ls.tx_frames, ls.tx_queued, ls.tx_drops, xmit, recv, drop,
		       rterr, chkerr, memerr, ipdrop, ip6drop, linkdrop, ds.rx_ntbs, ds.rx_bad_ntbs, ds.rx_overflows, ds.tx_ntbs,
		       ds.tx_would_block, ds.tx_errors, ds.rx_nudges, ds.rx_nudge_freed,
		       vmtest_heap_in_use() / 1024,
		       __atomic_load_n(&heap_peak, __ATOMIC_RELAXED) / 1024, rss_kb());
		fflush(stdout);
		/* Data moving, or an idle test between steps, both change these;
		 * a stalled TCP peer keeps retransmitting, which would too. */
		quiet = ds.rx_ntbs == last_rx && ds.tx_ntbs == last_tx ? quiet + 1 : 0;
		last_rx = ds.rx_ntbs;
		last_tx = ds.tx_ntbs;
		if (quiet == 1 && dumps < 3) {
			dumps++;
			LOCK_TCPIP_CORE();
			dump_pcbs();
			UNLOCK_TCPIP_CORE();
			dump_threads();
		}
		if (quiet == 6) {
			printf("FAIL: no USB traffic for 60 s: giving up (stacks above)\n");
			fflush(stdout);
			_exit(1);
		}
	}
	return NULL;
}

static NcmLink *
open_link(NcmContext *ctx, GError **error)
{
	gint64 end = g_get_monotonic_time() + opt_timeout * G_USEC_PER_SEC;
	g_autoptr(GPtrArray) all = NULL;
	g_autoptr(NcmDevice) dev = NULL;
	NcmDeviceOptions options;

	do {
		g_clear_pointer(&all, g_ptr_array_unref);
		if ((all = ncm_context_enumerate(ctx, NULL, error)) == NULL)
			return NULL;
		if (all->len == 0)
			g_usleep(100 * 1000);
	} while (all->len == 0 && g_get_monotonic_time() < end);
	if (all->len == 0) {
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no NCM function");
		return NULL;
	}
	ncm_device_options_init(&options);
	dev = ncm_device_open(ctx, g_ptr_array_index(all, 0), &options, error);
	if (dev == NULL)
		return NULL;
	device = g_object_ref(dev);
	return ncm_link_new_for_device(dev);
}

/* Any TCP exchange proves the path (ARP, ND, the device's link-up). */
static gboolean
wait_reachable(const char *ip)
{
	gint64 end = g_get_monotonic_time() + opt_timeout * G_USEC_PER_SEC;

	while (g_get_monotonic_time() < end) {
		g_autoptr(GError) error = NULL;
		g_autoptr(NcmLwipConnection) conn = connect_cmd(ip, (const guint8 *)"E", 1, &error);

		if (conn != NULL)
			return TRUE;
		g_usleep(200 * 1000);
	}
	return FALSE;
}

/* The first NCM function as an lwIP netif with --host4 and --host6. */
static NcmLwipNetif *
attach_first(NcmContext **ret_ctx)
{
	g_autoptr(GInetAddress) v4 = g_inet_address_new_from_string(opt_host4);
	g_autoptr(GInetAddress) v6 = g_inet_address_new_from_string(opt_host6);
	g_autoptr(GError) error = NULL;
	NcmLwipNetifConfig config;
	NcmLwipNetif *netif = NULL;
	NcmLink *link;

	ncm_lwip_netif_config_init(&config);
	config.ipv4 = v4;
	config.ipv6 = v6;
	config.ipv6_dad = FALSE;
	stack = ncm_lwip_stack_get_default();
	*ret_ctx = ncm_context_new(&error);
	link = *ret_ctx ? open_link(*ret_ctx, &error) : NULL;
	if (link != NULL)
		netif = ncm_lwip_netif_add(stack, link, &config, &error);
	if (netif == NULL)
		printf("FAIL: setup: %s\n", error->message);
	return netif;
}

static int
run_host(void)
{
	g_autoptr(NcmContext) ctx = NULL;
	guint64 size = (guint64)opt_size_mib * 1024 * 1024;
	NcmLwipNetif *netif = attach_first(&ctx);
	NcmLwipStats stats;
	GThread *dog;

	if (netif == NULL)
		return 1;
	install_stack_dumper();
	dog = g_thread_new("watchdog", watchdog, NULL);
	report(wait_reachable(opt_peer4) && wait_reachable(opt_peer6), "peer reachable over both families");
	for (gint i = 0; i < opt_echo_rounds; i++)
		echo_concurrent(2);
	bulk_up(opt_peer4, size);
	bulk_down(opt_peer4, size);
	bulk_up(opt_peer6, size);
	bulk_down(opt_peer6, size);
	udp_echo(opt_peer4, (guint)opt_udp_count, 1500 - 20 - 8);
	udp_echo(opt_peer6, (guint)opt_udp_count, 1500 - 40 - 8);
	echo_concurrent((guint)opt_conns);
	ncm_lwip_stack_get_stats(stack, &stats);
	printf("stats: rx %" G_GUINT64_FORMAT " frames (%" G_GUINT64_FORMAT " dropped), tx %"
	       G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " queued, %" G_GUINT64_FORMAT
	       " dropped), %" G_GUINT64_FORMAT " flushes, %" G_GUINT64_FORMAT
	       " main-context dispatches\n",
	       stats.rx_frames, stats.rx_drops, stats.tx_frames, stats.tx_queued, stats.tx_drops,
	       stats.tx_flushes, stats.main_dispatches);
	report(stats.main_dispatches == 0, "no main-context dispatch on the data path");
	{
		NcmStats ds;

		/* Figures for the f_ncm workaround (ncm-nudge.h), not a check:
		 * whether a held tail occurs in a run is up to timing. */
		ncm_device_get_stats(device, &ds);
		printf("tail nudges: %" G_GUINT64_FORMAT " sent, %" G_GUINT64_FORMAT
		       " followed by held frames\n", ds.rx_nudges, ds.rx_nudge_freed);
	}
	g_atomic_int_set(&stop_watchdog, 1);
	g_thread_join(dog);
	g_clear_object(&netif);
	g_clear_object(&device);
	return failures ? 1 : 0;
}

/* ---- Serve mode: the target of tcp-raw-peer ------------------------------------------ */

/*
 * A listener on --listen-port whose connections are read one byte every
 * 100 ms, as a slow application would, until SIGUSR1 makes the readers
 * drain at full speed; each checks its bytes against tcp_raw_pattern()
 * and prints "conn N: B bytes, W wrong, eof". Beside it, echo rounds of
 * --echo-kib to the peer's kernel run all the time, each checked and
 * printed ("echo: N ok, M bad"): the connections an attack must not
 * disturb. SIGUSR2 prints "heap: N kB now, peak M kB" (the peak since the
 * last SIGUSR2, sampled every 100 ms) and starts a new peak. SIGTERM ends
 * it; the status is 1 when any check failed.
 */

static gint serve_fast;     /* atomic: readers drain at full speed */
static gint serve_stop;     /* atomic */
static gint serve_bad;      /* atomic: failed checks */

typedef struct {
	NcmLwipConnection *conn;
	guint id;
} Reader;

static gpointer
reader_run(gpointer data)
{
	Reader *r = data;
	GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(r->conn));
	g_autofree guint8 *buf = g_malloc(CHUNK);
	g_autoptr(GError) error = NULL;
	guint64 bytes = 0, wrong = 0;
	gssize n;

	for (;;) {
		gboolean fast = g_atomic_int_get(&serve_fast);

		n = g_input_stream_read(in, buf, fast ? CHUNK : 1, NULL, &error);
		if (n <= 0)
			break;
		for (gssize i = 0; i < n; i++)
			wrong += buf[i] != tcp_raw_pattern(bytes + (guint64)i);
		bytes += (guint64)n;
		if (!fast)
			g_usleep(100 * 1000);
	}
	if (error != NULL || wrong != 0)
		g_atomic_int_inc(&serve_bad);
	printf("conn %u: %" G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT " wrong, %s\n", r->id,
	       bytes, wrong, error ? error->message : "eof");
	fflush(stdout);
	g_object_unref(r->conn);
	g_free(r);
	return NULL;
}

static gpointer
acceptor_run(gpointer data)
{
	NcmLwipListener *listener = data;
	guint id = 0;

	for (;;) {
		NcmLwipConnection *conn = ncm_lwip_listener_accept(listener, NULL, NULL);
		Reader *r;

		if (conn == NULL)
			return NULL;  /* closed */
		r = g_new0(Reader, 1);
		r->conn = conn;
		r->id = ++id;
		printf("conn %u: accepted\n", r->id);
		fflush(stdout);
		g_thread_unref(g_thread_new("reader", reader_run, r));
	}
}

static gpointer
echo_loop(gpointer data)
{
	guint ok = 0, bad = 0;

	for (guint32 seed = 1; !g_atomic_int_get(&serve_stop); seed++) {
		Echo e = {opt_peer4, (gsize)opt_echo_kib * 1024, seed, FALSE};

		echo_run(&e);
		ok += e.ok;
		bad += !e.ok;
		printf("echo: %u ok, %u bad\n", ok, bad);
		fflush(stdout);
	}
	if (bad > 0 || ok == 0)
		g_atomic_int_inc(&serve_bad);
	return NULL;
}

static gboolean
on_heap_signal(gpointer data)
{
	gsize now = vmtest_heap_in_use();

	heap_sample();
	printf("heap: %zu kB now, peak %zu kB\n", now / 1024,
	       __atomic_exchange_n(&heap_peak, now, __ATOMIC_RELAXED) / 1024);
	fflush(stdout);
	return G_SOURCE_CONTINUE;
}

static gboolean
on_serve_signal(gpointer data)
{
	if (data == NULL) {
		g_atomic_int_set(&serve_fast, 1);
		printf("draining\n");
		fflush(stdout);
		return G_SOURCE_CONTINUE;
	}
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

static int
run_serve(void)
{
	g_autoptr(NcmContext) ctx = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	g_autoptr(GSocketAddress) any = g_inet_socket_address_new_from_string("0.0.0.0",
									     (guint)opt_listen_port);
	NcmLwipNetif *netif = attach_first(&ctx);
	NcmLwipListener *listener;
	GThread *acceptor, *echo, *dog;

	if (netif == NULL)
		return 1;
	listener = ncm_lwip_stack_listen(stack, G_INET_SOCKET_ADDRESS(any), 16, &error);
	if (listener == NULL || !wait_reachable(opt_peer4)) {
		printf("FAIL: serve: %s\n", error ? error->message : "the peer is unreachable");
		return 1;
	}
	install_stack_dumper();
	dog = g_thread_new("watchdog", watchdog, NULL);
	acceptor = g_thread_new("acceptor", acceptor_run, listener);
	echo = g_thread_new("echo", echo_loop, NULL);
	g_unix_signal_add(SIGUSR1, on_serve_signal, NULL);
	g_unix_signal_add(SIGUSR2, on_heap_signal, NULL);
	g_unix_signal_add(SIGTERM, on_serve_signal, loop);
	printf("ready: listening on port %u\n", ncm_lwip_listener_get_port(listener));
	fflush(stdout);
	g_main_loop_run(loop);
	g_atomic_int_set(&serve_stop, 1);
	g_thread_join(echo);
	g_atomic_int_set(&stop_watchdog, 1);
	g_thread_join(dog);
	ncm_lwip_listener_close(listener);
	g_thread_join(acceptor);
	g_object_unref(listener);
	printf("serve: %s\n", g_atomic_int_get(&serve_bad) ? "FAIL" : "ok");
	return g_atomic_int_get(&serve_bad) ? 1 : 0;
}

/* ---- Replug mode --------------------------------------------------------------------- */

typedef struct {
	guint n;
	GCancellable *cancel;
	GMainLoop *loop;
	gint64 t_found;
	gint up_after_ms;  /* device found to the first chunk accepted; -1 never */
	guint64 bytes;
	gchar *why;        /* what ended the stream */
} Session;

static gboolean
quit_loop(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

static void
on_removed(NcmDevice *dev, gpointer data)
{
	Session *s = data;

	(void)dev;
	g_cancellable_cancel(s->cancel);
	g_main_loop_quit(s->loop);
}

/* Connects (retrying while ARP/ND and the device's link come up) and
 * sinks CHUNKs until a write fails: the device gone cancels it. */
static gpointer
session_stream(gpointer data)
{
	Session *s = data;
	gint64 end = g_get_monotonic_time() + opt_timeout * G_USEC_PER_SEC;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree guint8 *buf = g_malloc(CHUNK);
	g_autofree gchar *last = NULL;
	guint32 x = 0x1234567;

	while (conn == NULL && !g_cancellable_is_cancelled(s->cancel) &&
	       g_get_monotonic_time() < end) {
		g_autoptr(GSocketAddress) addr = g_inet_socket_address_new_from_string(opt_peer4, TCP_PORT);

		g_clear_error(&error);
		conn = ncm_lwip_stack_connect(stack, G_INET_SOCKET_ADDRESS(addr), 2000, s->cancel,
					      &error);
		if (conn != NULL &&
		    !g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
					       "S", 1, NULL, s->cancel, &error))
			g_clear_object(&conn);
		if (conn == NULL && !g_cancellable_is_cancelled(s->cancel)) {
			/* Each new reason once: a refusal tells a live peer from a dead link. */
			if (error != NULL && g_strcmp0(last, error->message) != 0) {
				g_free(last);
				last = g_strdup(error->message);
				printf("session %u: connect: %s\n", s->n, last);
				fflush(stdout);
			}
			g_usleep(200 * 1000);
		}
	}
	while (conn != NULL && error == NULL) {
		gsize n = 0;

		gen_fill(&x, buf, CHUNK);
		g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)), buf,
					  CHUNK, &n, s->cancel, &error);
		s->bytes += n;
		if (s->up_after_ms < 0 && error == NULL) {
			s->up_after_ms = (gint)((g_get_monotonic_time() - s->t_found) / 1000);
			/* The script times the recovery from this line. */
			printf("session %u: streaming\n", s->n);
			fflush(stdout);
		}
	}
	s->why = g_strdup(error ? error->message : "no connection");
	g_idle_add(quit_loop, s->loop);
	return NULL;
}

/* The fewest of a few looks: without udevd, libncm polls for replugs with
 * a short-lived libusb context whose fds come and go; that is no leak. */
static guint
count_fds(void)
{
	guint min = G_MAXUINT;

	for (guint k = 0; k < 5; k++) {
		GDir *dir = g_dir_open("/proc/self/fd", 0, NULL);
		guint n = 0;

		while (dir != NULL && g_dir_read_name(dir) != NULL)
			n++;
		if (dir != NULL)
			g_dir_close(dir);
		min = MIN(min, n);
		g_usleep(50 * 1000);
	}
	return min;
}

static int
run_replug(void)
{
	g_autoptr(GInetAddress) v4 = g_inet_address_new_from_string(opt_host4);
	g_autoptr(GInetAddress) v6 = g_inet_address_new_from_string(opt_host6);
	g_autoptr(NcmContext) ctx = NULL;
	g_autoptr(GError) error = NULL;
	gint64 deadline = opt_duration > 0 ? g_get_monotonic_time() + opt_duration * G_USEC_PER_SEC
					   : G_MAXINT64;
	NcmLwipNetifConfig config;

	ncm_lwip_netif_config_init(&config);
	config.ipv4 = v4;
	config.ipv6 = v6;
	config.ipv6_dad = FALSE;
	stack = ncm_lwip_stack_get_default();
	ctx = ncm_context_new(&error);
	if (ctx == NULL) {
		printf("FAIL: context: %s\n", error->message);
		return 1;
	}
	for (guint n = 1; n <= (guint)opt_cycles; n++) {
		Session s = {.n = n, .up_after_ms = -1};
		gint64 wait_end = g_get_monotonic_time() + opt_timeout * G_USEC_PER_SEC;
		NcmLwipNetif *netif = NULL;
		NcmLink *link = NULL;
		GThread *writer;
		gulong handler;

		/* An open can fail while the previous device is still going away. */
		while (netif == NULL && g_get_monotonic_time() < MIN(wait_end, deadline)) {
			g_clear_error(&error);
			link = open_link(ctx, &error);
			if (link != NULL)
				netif = ncm_lwip_netif_add(stack, link, &config, &error);
			if (netif == NULL) {
				g_clear_object(&device);
				g_usleep(100 * 1000);
			}
		}
		if (netif == NULL) {
			printf("FAIL: session %u: no device: %s\n", n,
			       error ? error->message : "deadline");
			return 1;
		}
		s.t_found = g_get_monotonic_time();
		s.cancel = g_cancellable_new();
		s.loop = g_main_loop_new(NULL, FALSE);
		handler = g_signal_connect(device, "removed", G_CALLBACK(on_removed), &s);
		writer = g_thread_new("writer", session_stream, &s);
		g_main_loop_run(s.loop);
		g_cancellable_cancel(s.cancel);
		g_thread_join(writer);
		g_signal_handler_disconnect(device, handler);
		g_clear_object(&netif);
		g_clear_object(&device);
		/* Late idles of this session must not outlive its loop. */
		while (g_main_context_iteration(NULL, FALSE))
			;
		printf("session %u: up_after_ms=%d bytes=%" G_GUINT64_FORMAT " fds=%u rss_kb=%"
		       G_GUINT64_FORMAT " (%s)\n",
		       n, s.up_after_ms, s.bytes, count_fds(), rss_kb(), s.why);
		fflush(stdout);
		g_free(s.why);
		g_main_loop_unref(s.loop);
		g_object_unref(s.cancel);
		if (s.up_after_ms < 0) {
			printf("FAIL: session %u never streamed\n", n);
			return 1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	g_autoptr(GOptionContext) oc = g_option_context_new("peer|host|replug|serve");
	g_autoptr(GError) error = NULL;

	g_option_context_add_main_entries(oc, entries, NULL);
	if (!g_option_context_parse(oc, &argc, &argv, &error) || argc != 2) {
		g_printerr("usage: vmtest-lwip [OPTIONS] peer|host|replug|serve\n");
		return 2;
	}
	if (g_str_equal(argv[1], "peer"))
		return run_peer();
	if (g_str_equal(argv[1], "replug"))
		return run_replug();
	if (g_str_equal(argv[1], "serve"))
		return run_serve();
	return run_host();
}
