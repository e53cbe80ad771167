/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-transport-child.c: ncm-bench's paths through a program it starts: ncm-tun (sockets bound to its interface) or ncm-proxy (loopback sockets to its forward). */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ncm-bench.h"
#include "ncm-bench-cpu.h"
#include "ncm-bench-proto.h"

/*
 * ncm-tun and ncm-proxy are run, watched and stopped alike: both print
 * statistics on SIGUSR1 (a header line, then indented lines with "usb rx"
 * and "usb tx" NTB counts), exit 0 on SIGTERM after giving the function
 * back to cdc_ncm, and start their fatal errors with "PROGRAM: ". They
 * differ in how the path is reached and when it is ready.
 */
typedef struct {
	const char *program;       /* "ncm-tun": argv[0], messages, error prefix */
	const char *stats_header;  /* what the header line of a statistics block holds */
	const char *json_key;      /* the env member that describes the path */
	gboolean proxy;            /* ncm-proxy: -L and SOCKS on loopback, no interface */
} ChildKind;

static const ChildKind kind_tun = { "ncm-tun", " device session(s)", "ncm_tun", FALSE };
static const ChildKind kind_proxy = { "ncm-proxy", " connection(s) open", "ncm_proxy", TRUE };

#define TUN_DEFAULT_IFNAME "ncmbench0"
/* ncm-proxy's -L port on loopback; its SOCKS server (for UDP) listens on the next. */
#define PROXY_DEFAULT_LPORT 15288
/* Claiming, negotiating and configuring take a few seconds under QEMU TCG. */
#define CHILD_UP_TIMEOUT_S 20
/* The child prints statistics and re-attaches cdc_ncm before it exits. */
#define CHILD_STOP_TIMEOUT_S 15
/* After a driver switch f_ncm sometimes sends nothing for ~20 s (README). */
#define CHILD_TRAFFIC_TIMEOUT_S 60
#define CHILD_STDERR_KEEP 4096
/* The child answers SIGUSR1 from its main loop, within milliseconds. */
#define CHILD_STATS_TIMEOUT_US (2 * G_USEC_PER_SEC)

/* One block of the child's statistics: its NTB counts, and when we had them. */
typedef struct {
	gint64 t_us;
	guint64 rx_ntbs;
	guint64 tx_ntbs;
} ChildStats;

typedef struct {
	BenchTransport base;
	const ChildKind *kind;
	BenchTransport *kernel;  /* the sockets: bound to ncm-tun's interface, or to ncm-proxy's -L */
	GInetSocketAddress *socks; /* ncm-proxy's SOCKS server, for UDP */
	GPid pid;                /* 0 once reaped */
	int status;              /* wait status, valid once reaped */
	GThread *reader;
	GMutex lock;             /* guards last_error and the statistics below (written by the reader thread) */
	char *last_error;        /* the child's last "PROGRAM: ..." line, or its last line */
	GArray *asked;           /* gint64: when each SIGUSR1 was sent, one per usb_mark() */
	GArray *stats;           /* ChildStats, each block as it came */
	guint64 pending_rx;      /* the current block's "usb rx" count */
	gboolean quiet;          /* in a block we asked for: not echoed */
	gboolean stopping;       /* the statistics at exit are always echoed */
	gboolean running;        /* ncm-proxy said it runs */
	char *env;
} ChildTransport;

typedef struct {
	char *server;
	char *ipv4;              /* ADDR/PREFIX as given */
	char *addr;              /* ADDR alone */
	char *exec;
	char *ifname;
	guint16 lport;           /* ncm-proxy: its -L port on 127.0.0.1 (and SOCKS on the next) */
	GPtrArray *dev;
	gint64 first_traffic_ms;  /* open to the first connection through it */
	gboolean all_acks;        /* acks=all: the child's --no-ack-merge */
	gboolean group;           /* several devices: ifname is a %d pattern, no --ipv4 */
} ChildSpec;

/* ---- the child's stderr ---------------------------------------------------- */

typedef struct {
	ChildTransport *child;
	int fd;
} Reader;

/*
 * Under the lock: keeps the NTB counts of a statistics block (print_stats()
 * in ncm-tun.c: a header, then indented lines). Blocks we asked for are not
 * echoed: there are two per repetition. Returns TRUE when @line is quiet.
 */
static gboolean
stats_line_locked(ChildTransport *child, const char *line)
{
	guint64 n;

	if (strstr(line, child->kind->stats_header))
		child->quiet = child->stats->len < child->asked->len && !child->stopping;
	else if (!g_str_has_prefix(line, "  "))
		child->quiet = FALSE;
	if (sscanf(line, "  usb rx: %" G_GUINT64_FORMAT " NTBs", &n) == 1) {
		child->pending_rx = n;
	} else if (sscanf(line, "  usb tx: %" G_GUINT64_FORMAT " NTBs", &n) == 1) {
		ChildStats st = {g_get_monotonic_time(), child->pending_rx, n};

		g_array_append_val(child->stats, st);
	}
	return child->quiet;
}

/* "PROGRAM: ": how the child's fatal errors start. */
static gboolean
is_fatal(ChildTransport *child, const char *line)
{
	size_t n = strlen(child->kind->program);

	return !strncmp(line, child->kind->program, n) && !strncmp(line + n, ": ", 2);
}

static void
reader_line(ChildTransport *child, const char *line)
{
	gboolean quiet;

	ncm_mutex_lock(&child->lock);
	quiet = stats_line_locked(child, line);
	if (strstr(line, "running on"))
		child->running = TRUE;
	ncm_mutex_unlock(&child->lock);
	if (!quiet)
		g_printerr("  [%s] %s\n", child->kind->program, line);
	/* The statistics at exit would hide the error that preceded them. */
	if (!*line || g_str_has_prefix(line, "  ") || strstr(line, child->kind->stats_header))
		return;
	ncm_mutex_lock(&child->lock);
	/* Its fatal errors win over log lines. */
	if (is_fatal(child, line) || !child->last_error || !is_fatal(child, child->last_error)) {
		g_free(child->last_error);
		child->last_error = g_strndup(line, CHILD_STDERR_KEEP);
	}
	ncm_mutex_unlock(&child->lock);
}

/* Echoes the child's stderr to ours and keeps what explains a failure. */
static gpointer
reader_main(gpointer data)
{
	Reader *r = data;
	g_autoptr(GString) buf = g_string_new(NULL);
	char chunk[1024];
	gssize n;

	while ((n = read(r->fd, chunk, sizeof(chunk))) != 0) {
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		g_string_append_len(buf, chunk, n);
		while ((nl = strchr(buf->str, '\n'))) {
			*nl = '\0';
			reader_line(r->child, buf->str);
			g_string_erase(buf, 0, nl - buf->str + 1);
		}
	}
	if (buf->len)
		reader_line(r->child, buf->str);
	close(r->fd);
	g_free(r);
	return NULL;
}

static char *
child_last_error(ChildTransport *child)
{
	const char *p;
	char *msg;

	ncm_mutex_lock(&child->lock);
	p = child->last_error ? child->last_error : "";
	if (is_fatal(child, p))
		p += strlen(child->kind->program) + 2;
	msg = g_strdup(*p ? p : "no message");
	ncm_mutex_unlock(&child->lock);
	return msg;
}

/* ---- the child process ---------------------------------------------------- */

/* Runs in the child: if ncm-bench dies, it must still give the function back. */
static void
child_setup(gpointer data)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* TRUE once the child is reaped (now or before). */
static gboolean
child_reap(ChildTransport *child, gboolean block)
{
	pid_t r;

	if (!child->pid)
		return TRUE;
	do
		r = waitpid(child->pid, &child->status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return FALSE;
	child->pid = 0;
	if (child->reader)
		g_thread_join(g_steal_pointer(&child->reader));
	return TRUE;
}

static char *
status_text(int status)
{
	if (WIFEXITED(status))
		return g_strdup_printf("exited with status %d", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return g_strdup_printf("was killed by signal %d", WTERMSIG(status));
	return g_strdup("stopped");
}

/* The error for a child that is gone: its status and its own words. */
static void
set_exit_error(ChildTransport *child, GError **error)
{
	g_autofree char *st = status_text(child->status);
	g_autofree char *msg = child_last_error(child);

	g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s %s: %s", child->kind->program, st,
		    msg);
}

static void
child_stop(ChildTransport *child, guint timeout_s)
{
	gint64 end = g_get_monotonic_time() + (gint64)timeout_s * G_USEC_PER_SEC;

	if (!child->pid)
		return;
	ncm_mutex_lock(&child->lock);
	child->stopping = TRUE;
	ncm_mutex_unlock(&child->lock);
	kill(child->pid, SIGTERM);
	while (!child_reap(child, FALSE)) {
		if (g_get_monotonic_time() > end) {
			g_printerr("ncm-bench: %s did not stop within %u s; killing it\n",
				   child->kind->program, timeout_s);
			kill(child->pid, SIGKILL);
			child_reap(child, TRUE);
			return;
		}
		g_usleep(50000);
	}
}

static gboolean
child_spawn(ChildTransport *child, const ChildSpec *s, double pace_mbit, GError **error)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	Reader *r;
	int err_fd = -1;

	g_ptr_array_add(argv, g_strdup(s->exec));
	if (child->kind->proxy) {
		/* One -L to the server's port: every test's TCP goes through it. */
		g_ptr_array_add(argv, g_strdup_printf("--local=127.0.0.1:%u:%s:%u", s->lport,
						      s->server, child->base.port));
		g_ptr_array_add(argv, g_strdup_printf("--socks=127.0.0.1:%u", s->lport + 1u));
	} else {
		g_ptr_array_add(argv, g_strdup("--name"));
		g_ptr_array_add(argv, g_strdup(s->ifname));
	}
	/* A group's interfaces get their addresses from us (ncm-tun takes one). */
	if (!s->group) {
		g_ptr_array_add(argv, g_strdup("--ipv4"));
		g_ptr_array_add(argv, g_strdup(s->ipv4));
	}
	for (guint i = 0; i < s->dev->len; i++) {
		g_ptr_array_add(argv, g_strdup("--device"));
		g_ptr_array_add(argv, g_strdup(s->dev->pdata[i]));
	}
	if (s->all_acks)
		g_ptr_array_add(argv, g_strdup("--no-ack-merge"));
	if (pace_mbit > 0) {
		g_ptr_array_add(argv, g_strdup("--pace"));
		g_ptr_array_add(argv, g_strdup_printf("%.0f", pace_mbit * 1e6 / 8));
	}
	g_ptr_array_add(argv, NULL);
	if (!g_spawn_async_with_pipes(NULL, (char **)argv->pdata, NULL,
				      G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH |
				      G_SPAWN_STDOUT_TO_DEV_NULL,
				      child_setup, NULL, &child->pid, NULL, NULL, &err_fd, error))
		return FALSE;
	r = g_new0(Reader, 1);
	r->child = child;
	r->fd = err_fd;
	child->reader = g_thread_new("bench-child", reader_main, r);
	return TRUE;
}

/* ---- waiting for the interface ------------------------------------------- */

static gboolean
iface_up(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	gboolean up = FALSE;

	if (fd < 0)
		return FALSE;
	memset(&ifr, 0, sizeof(ifr));
	g_strlcpy(ifr.ifr_name, ifname, IFNAMSIZ);
	/* IFF_RUNNING: ncm-tun sets the carrier from the device's link notification. */
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0)
		up = (ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING);
	close(fd);
	return up;
}

static gboolean
iface_has_address(const char *ifname, GInetAddress *want)
{
	struct ifaddrs *all, *a;
	gboolean found = FALSE;

	if (getifaddrs(&all) < 0)
		return FALSE;
	for (a = all; a && !found; a = a->ifa_next) {
		g_autoptr(GSocketAddress) sa = NULL;

		if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || strcmp(a->ifa_name, ifname))
			continue;
		sa = g_socket_address_new_from_native(a->ifa_addr, sizeof(struct sockaddr_in));
		found = sa && g_inet_address_equal(
			g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(sa)), want);
	}
	freeifaddrs(all);
	return found;
}

/* ADDR/PREFIX on @ifname, and the link up: what ncm-tun --ipv4 does for one device. */
static void
iface_set_ipv4(const char *ifname, const char *cidr)
{
	g_auto(GStrv) ap = g_strsplit(cidr, "/", 2);
	guint prefix = ap[1] ? (guint)g_ascii_strtoull(ap[1], NULL, 10) : 24;
	struct sockaddr_in *sin;
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	g_strlcpy(ifr.ifr_name, ifname, IFNAMSIZ);
	sin = (struct sockaddr_in *)(void *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	/* Failures show as the interface not being ready in time. */
	if (inet_pton(AF_INET, ap[0], &sin->sin_addr) == 1 && ioctl(fd, SIOCSIFADDR, &ifr) == 0) {
		sin->sin_addr.s_addr = htonl(prefix >= 32 ? 0xffffffffu : prefix ? ~0u << (32 - prefix) : 0);
		(void)ioctl(fd, SIOCSIFNETMASK, &ifr);
	}
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		(void)ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

static gboolean
child_wait_ready(ChildTransport *child, const ChildSpec *s, GError **error)
{
	g_autoptr(GInetAddress) want = g_inet_address_new_from_string(s->addr);
	gint64 end = g_get_monotonic_time() + CHILD_UP_TIMEOUT_S * G_USEC_PER_SEC;
	g_autofree char *msg = NULL;

	for (;;) {
		gboolean ready;

		if (child_reap(child, FALSE)) {
			set_exit_error(child, error);
			return FALSE;
		}
		if (child->kind->proxy) {
			ncm_mutex_lock(&child->lock);
			ready = child->running;
			ncm_mutex_unlock(&child->lock);
		} else {
			if (s->group && if_nametoindex(s->ifname) && !iface_has_address(s->ifname, want))
				iface_set_ipv4(s->ifname, s->ipv4);
			ready = if_nametoindex(s->ifname) && iface_up(s->ifname) &&
				iface_has_address(s->ifname, want);
		}
		if (ready)
			return TRUE;
		if (g_get_monotonic_time() > end)
			break;
		g_usleep(50000);
	}
	child_stop(child, CHILD_STOP_TIMEOUT_S);
	msg = child_last_error(child);
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
		    "%s was not up and running with %s within %d s (its last words: %s)",
		    child->kind->proxy ? child->kind->program : s->ifname, s->addr,
		    CHILD_UP_TIMEOUT_S, msg);
	return FALSE;
}

/* One byte echoed by the server: the path carries data both ways. A
 * connect alone proves nothing through ncm-proxy, which accepts first. */
static gboolean
echo_once(BenchTransport *kernel, GError **error)
{
	g_autoptr(GIOStream) io = kernel->ops->tcp_connect(kernel, error);
	static const char hello[] = "ECHO\nx";
	char back = 0;
	gsize n = 0;

	if (!io || !g_output_stream_write_all(g_io_stream_get_output_stream(io), hello,
					      sizeof hello - 1, NULL, NULL, error) ||
	    !g_input_stream_read_all(g_io_stream_get_input_stream(io), &back, 1, &n, NULL, error))
		return FALSE;
	g_io_stream_close(io, NULL, NULL);
	if (n == 1 && back == 'x')
		return TRUE;
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED, "the server's echo did not come");
	return FALSE;
}

/*
 * The interface being up (or ncm-proxy running) says nothing about the
 * device: the tests start once an echo came back from the server, and the
 * wait is reported (first_traffic_ms), so that a slow start is seen rather
 * than timed as a slow test.
 */
static gboolean
child_wait_traffic(ChildTransport *child, BenchTransport *kernel, ChildSpec *s, GError **error)
{
	gint64 start = g_get_monotonic_time();
	gint64 end = start + CHILD_TRAFFIC_TIMEOUT_S * G_USEC_PER_SEC;
	g_autoptr(GError) last = NULL;

	for (;;) {
		if (child_reap(child, FALSE)) {
			set_exit_error(child, error);
			return FALSE;
		}
		g_clear_error(&last);
		if (echo_once(kernel, &last)) {
			s->first_traffic_ms = (g_get_monotonic_time() - start) / 1000;
			return TRUE;
		}
		if (g_get_monotonic_time() > end)
			break;
		g_usleep(200000);
	}
	child_stop(child, CHILD_STOP_TIMEOUT_S);
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
		    "no echo from the server through %s within %d s (last: %s)",
		    child->kind->proxy ? child->kind->program : s->ifname, CHILD_TRAFFIC_TIMEOUT_S,
		    last ? last->message : "?");
	return FALSE;
}

/* ---- the transport ------------------------------------------------------- */

/* A test that fails because the child died should say so, not "connection refused". */
static gboolean
child_alive(ChildTransport *child, GError **error)
{
	if (!child_reap(child, FALSE))
		return TRUE;
	set_exit_error(child, error);
	return FALSE;
}

static GIOStream *
child_tcp_connect(BenchTransport *t, GError **error)
{
	ChildTransport *child = (ChildTransport *)t;

	if (!child_alive(child, error))
		return NULL;
	return child->kernel->ops->tcp_connect(child->kernel, error);
}

static BenchUdp *
child_udp_open(BenchTransport *t, guint16 port, GError **error)
{
	ChildTransport *child = (ChildTransport *)t;

	if (!child_alive(child, error))
		return NULL;
	if (child->kind->proxy)
		return bench_socks_udp_open(child->socks, t->server, port, error);
	return child->kernel->ops->udp_open(child->kernel, port, error);
}

/* utime + stime, fields 14 and 15 of /proc/PID/stat, counted after the ")" that ends comm. */
static double
child_helper_cpu_seconds(BenchTransport *t)
{
	ChildTransport *child = (ChildTransport *)t;
	g_autofree char *path = NULL, *text = NULL;
	g_auto(GStrv) f = NULL;
	char *p;

	if (!child->pid)
		return 0;
	path = g_strdup_printf("/proc/%d/stat", (int)child->pid);
	if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strrchr(text, ')')))
		return 0;
	/* After ")": state is field 3, so utime (14) is index 11. */
	f = g_strsplit(p + 2, " ", 14);
	if (g_strv_length(f) < 14)
		return 0;
	return (double)(g_ascii_strtoull(f[11], NULL, 10) + g_ascii_strtoull(f[12], NULL, 10)) /
	       (double)sysconf(_SC_CLK_TCK);
}

static guint64
child_event_thread_ticks(BenchTransport *t)
{
	ChildTransport *child = (ChildTransport *)t;

	return child->pid ? bench_thread_ticks(child->pid, NCM_BENCH_EVENT_THREAD) : 0;
}

/* Asks ncm-tun for its statistics; the mark is the request's index. */
static guint
child_usb_mark(BenchTransport *t)
{
	ChildTransport *child = (ChildTransport *)t;
	gint64 now = g_get_monotonic_time();
	guint mark;

	ncm_mutex_lock(&child->lock);
	g_array_append_val(child->asked, now);
	mark = child->asked->len - 1;
	ncm_mutex_unlock(&child->lock);
	if (child->pid)
		kill(child->pid, SIGUSR1);
	return mark;
}

/*
 * The first block that came after the request. Two requests close together
 * may get one block (signals merge): each still gets the counts of a moment
 * just after it asked.
 */
static gboolean
child_stats_after_locked(ChildTransport *child, gint64 asked, ChildStats *ret)
{
	for (guint i = 0; i < child->stats->len; i++) {
		const ChildStats *st = &g_array_index(child->stats, ChildStats, i);

		if (st->t_us >= asked) {
			*ret = *st;
			return TRUE;
		}
	}
	return FALSE;
}

static gboolean
child_usb_count(BenchTransport *t, guint mark, guint64 *ret_rx_ntbs, guint64 *ret_tx_ntbs)
{
	ChildTransport *child = (ChildTransport *)t;
	gint64 end = g_get_monotonic_time() + CHILD_STATS_TIMEOUT_US;
	gboolean found = FALSE;
	ChildStats st;

	for (;;) {
		ncm_mutex_lock(&child->lock);
		found = mark < child->asked->len &&
			child_stats_after_locked(child, g_array_index(child->asked, gint64, mark), &st);
		ncm_mutex_unlock(&child->lock);
		if (found || g_get_monotonic_time() > end || !child->pid)
			break;
		g_usleep(10000);
	}
	if (!found)
		return FALSE;
	*ret_rx_ntbs = st.rx_ntbs;
	*ret_tx_ntbs = st.tx_ntbs;
	return TRUE;
}

/*
 * The main thread is stuck somewhere and may reap too: only signal and
 * watch, so that the device goes back to cdc_ncm before we exit.
 */
static void
child_abort(BenchTransport *t)
{
	GPid pid = ((ChildTransport *)t)->pid;
	gint64 end = g_get_monotonic_time() + CHILD_STOP_TIMEOUT_S * G_USEC_PER_SEC;
	int status;

	if (!pid || kill(pid, SIGTERM) < 0)
		return;
	while (waitpid(pid, &status, WNOHANG) == 0 && g_get_monotonic_time() < end)
		g_usleep(50000);
}

static const char *
child_env(BenchTransport *t)
{
	return ((ChildTransport *)t)->env;
}

static void
child_free(BenchTransport *t)
{
	ChildTransport *child = (ChildTransport *)t;

	child_stop(child, CHILD_STOP_TIMEOUT_S);
	/* A failed open says this in its error already. */
	if (child->kernel && (!WIFEXITED(child->status) || WEXITSTATUS(child->status) != 0)) {
		g_autofree char *st = status_text(child->status);

		g_printerr("ncm-bench: %s: %s %s\n", t->name, child->kind->program, st);
	}
	bench_transport_free(child->kernel);
	g_clear_object(&child->socks);
	g_free(t->name);
	g_free(t->iface);
	g_clear_object(&t->server);
	g_free(child->last_error);
	g_free(child->env);
	g_array_unref(child->asked);
	g_array_unref(child->stats);
	g_mutex_clear(&child->lock);
	g_free(child);
}

static const BenchTransportOps child_ops = {
	.tcp_connect = child_tcp_connect,
	.udp_open = child_udp_open,
	.main_dispatches = NULL,
	.child_cpu_seconds = child_helper_cpu_seconds,
	.event_thread_ticks = child_event_thread_ticks,
	.usb_mark = child_usb_mark,
	.usb_count = child_usb_count,
	.abort = child_abort,
	.env = child_env,
	.free = child_free,
};

/* ---- the spec ------------------------------------------------------------ */

static void
spec_clear(ChildSpec *s)
{
	g_free(s->server);
	g_free(s->ipv4);
	g_free(s->addr);
	g_free(s->exec);
	g_free(s->ifname);
	g_clear_pointer(&s->dev, g_ptr_array_unref);
}

/*
 * The @program built next to us (installed: the same bindir; build tree:
 * examples/PROGRAM/ beside our examples/ncm-bench/), else the one on PATH.
 */
static char *
default_exec(const char *program)
{
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *dir = self ? g_path_get_dirname(self) : NULL;
	g_autofree char *next = dir ? g_build_filename(dir, program, NULL) : NULL;
	g_autofree char *built = dir ? g_build_filename(dir, "..", program, program, NULL) : NULL;

	if (next && g_file_test(next, G_FILE_TEST_IS_EXECUTABLE))
		return g_steal_pointer(&next);
	if (built && g_file_test(built, G_FILE_TEST_IS_EXECUTABLE))
		return g_steal_pointer(&built);
	return g_find_program_in_path(program);
}

static gboolean
spec_option(ChildSpec *s, const char *key, const char *v)
{
	char **slot = g_str_equal(key, "ipv4") ? &s->ipv4 : g_str_equal(key, "exec") ? &s->exec
		    : g_str_equal(key, "name") ? &s->ifname : NULL;
	guint64 lport;

	if (g_str_equal(key, "acks")) {
		s->all_acks = g_str_equal(v, "all");
		return TRUE;
	}
	if (g_str_equal(key, "lport")) {
		lport = g_ascii_strtoull(v, NULL, 10);
		s->lport = (guint16)lport;
		return lport > 0 && lport < 65535;
	}
	if (g_str_equal(key, "dev")) {
		g_ptr_array_add(s->dev, g_strdup(v));
		return TRUE;
	}
	if (!slot)
		return FALSE;
	g_free(*slot);
	*slot = g_strdup(v);
	return TRUE;
}

static gboolean
spec_parse(const ChildKind *kind, const char *text, ChildSpec *s, GError **error)
{
	g_auto(GStrv) parts = g_strsplit(text, ",", -1);
	g_autoptr(GInetAddress) server = NULL, addr = NULL;
	gboolean ok = parts[0] != NULL;

	memset(s, 0, sizeof(*s));
	s->dev = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 1; ok && parts[i]; i++) {
		char *v = strchr(parts[i], '=');

		if (v)
			*v++ = '\0';
		ok = v && spec_option(s, parts[i], v);
	}
	if (ok) {
		s->server = g_strdup(parts[0]);
		s->addr = s->ipv4 ? g_strndup(s->ipv4, strcspn(s->ipv4, "/")) : NULL;
		server = g_inet_address_new_from_string(s->server);
		addr = s->addr ? g_inet_address_new_from_string(s->addr) : NULL;
		ok = server && addr && g_inet_address_get_family(server) == G_SOCKET_FAMILY_IPV4 &&
		     g_inet_address_get_family(addr) == G_SOCKET_FAMILY_IPV4;
	}
	if (!ok) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "%s path %s: expected SERVER,ipv4=ADDR/PREFIX[,dev=SEL...][,exec=PATH][,acks=all]%s "
			    "with IPv4 addresses", kind->program, text,
			    kind->proxy ? "[,lport=PORT]" : "[,name=IFNAME]");
		return FALSE;
	}
	if (!s->ifname && !kind->proxy)
		s->ifname = g_strdup(TUN_DEFAULT_IFNAME);
	if (!s->lport)
		s->lport = PROXY_DEFAULT_LPORT;
	if (!s->exec)
		s->exec = default_exec(kind->program);
	if (!s->exec) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "%s path: no %s next to ncm-bench or on PATH (give exec=PATH)",
			    kind->program, kind->program);
		return FALSE;
	}
	return TRUE;
}

static char *
child_env_json(const ChildKind *kind, const ChildSpec *s)
{
	g_autoptr(GString) o = g_string_new(NULL);
	g_autofree char *devs = NULL;

	g_ptr_array_add(s->dev, NULL);
	devs = g_strjoinv(" ", (char **)s->dev->pdata);
	g_ptr_array_remove_index(s->dev, s->dev->len - 1);
	bench_json_str(o, "exec", s->exec);
	if (kind->proxy)
		bench_json_num(o, "lport", s->lport);
	else
		bench_json_str(o, "ifname", s->ifname);
	bench_json_str(o, "ipv4", s->ipv4);
	bench_json_str(o, "devices", devs);
	bench_json_num(o, "first_traffic_ms", (double)s->first_traffic_ms);
	return g_strdup_printf(",\"%s\":{%s}", kind->json_key, o->str + 1);
}

/* A child transport before its process: one device's or a group's. */
static ChildTransport *
child_alloc(const ChildKind *kind, const char *name, guint16 port)
{
	ChildTransport *child = g_new0(ChildTransport, 1);

	child->kind = kind;
	child->base.ops = &child_ops;
	child->base.name = g_strdup(name);
	child->base.port = port;
	g_mutex_init(&child->lock);
	child->asked = g_array_new(FALSE, FALSE, sizeof(gint64));
	child->stats = g_array_new(FALSE, FALSE, sizeof(ChildStats));
	return child;
}

static BenchTransport *
child_new(const ChildKind *kind, const char *name, const char *spec, guint16 port,
	  double pace_mbit, GError **error)
{
	ChildTransport *child = child_alloc(kind, name, port);
	g_autoptr(GInetAddress) server = NULL;
	g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	ChildSpec s;
	gboolean ok;

	ok = spec_parse(kind, spec, &s, error);
	if (ok && !kind->proxy && if_nametoindex(s.ifname)) {
		/* A stale one would look ready before ncm-tun has claimed anything. */
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
			    "interface %s exists already: remove it or give name=IFNAME", s.ifname);
		ok = FALSE;
	}
	ok = ok && child_spawn(child, &s, pace_mbit, error) && child_wait_ready(child, &s, error);
	if (!ok) {
		spec_clear(&s);
		child_free(&child->base);
		return NULL;
	}
	server = g_inet_address_new_from_string(s.server);
	if (kind->proxy) {
		child->kernel = bench_transport_kernel_new(name, loopback, s.lport, NULL);
		child->socks = G_INET_SOCKET_ADDRESS(g_inet_socket_address_new(loopback,
									       s.lport + 1u));
	} else {
		child->kernel = bench_transport_kernel_new(name, server, port, s.ifname);
		child->base.iface = g_strdup(s.ifname);
		child->base.mtu = child->kernel->mtu;
	}
	child->base.server = g_object_ref(server);
	if (!child_wait_traffic(child, child->kernel, &s, error)) {
		spec_clear(&s);
		child_free(&child->base);
		return NULL;
	}
	child->env = child_env_json(kind, &s);
	spec_clear(&s);
	return &child->base;
}

BenchTransport *
bench_transport_tun_new(const char *name, const char *spec, guint16 port, double pace_mbit,
			GError **error)
{
	return child_new(&kind_tun, name, spec, port, pace_mbit, error);
}

BenchTransport *
bench_transport_proxy_new(const char *name, const char *spec, guint16 port, double pace_mbit,
			  GError **error)
{
	return child_new(&kind_proxy, name, spec, port, pace_mbit, error);
}

/* ---- several devices in one ncm-tun ---------------------------------------- */

/* @pattern with its %d replaced by @i (not a format: it comes from the command line). */
static char *
group_ifname(const char *pattern, guint i)
{
	g_auto(GStrv) parts = g_strsplit(pattern, "%d", 2);
	g_autofree char *num = g_strdup_printf("%u", i);

	return g_strjoin(num, parts[0], parts[1], NULL);
}

/*
 * The process's spec: the first device's exec, acks and name pattern,
 * every device's selector, their addresses for the env.
 */
static gboolean
group_spec(ChildSpec *all, ChildSpec *s, guint n, GError **error)
{
	g_autoptr(GPtrArray) addrs = g_ptr_array_new();

	memset(all, 0, sizeof(*all));
	all->group = TRUE;
	all->dev = g_ptr_array_new_with_free_func(g_free);
	all->exec = g_strdup(s[0].exec);
	all->all_acks = s[0].all_acks;
	all->ifname = g_strdup(strstr(s[0].ifname, "%d") ? s[0].ifname : "ncmbench%d");
	for (guint i = 0; i < n; i++) {
		if (s[i].dev->len != 1) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
				    "ncm-tun multi path: device %u has %u dev= selectors; give each "
				    "device exactly one (e.g. dev=serial=S)", i, s[i].dev->len);
			return FALSE;
		}
		g_ptr_array_add(all->dev, g_strdup(s[i].dev->pdata[0]));
		g_ptr_array_add(addrs, s[i].ipv4);
		g_free(s[i].ifname);
		s[i].ifname = group_ifname(all->ifname, i);
		s[i].group = TRUE;
		if (if_nametoindex(s[i].ifname)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
				    "interface %s exists already: remove it or give name=PATTERN%%d",
				    s[i].ifname);
			return FALSE;
		}
	}
	g_ptr_array_add(addrs, NULL);
	all->ipv4 = g_strjoinv(" ", (char **)addrs->pdata);
	return TRUE;
}

/*
 * ncm-tun numbers its interfaces in the order of its -d options (it opens
 * them one after the other, and the kernel gives each the lowest free
 * number of the pattern), so device I has interface PATTERN-with-I.
 */
BenchTransport *
bench_transport_tun_group_new(const char *name, char **specs, guint16 port, double pace_mbit,
			      GPtrArray *ret_members, GError **error)
{
	guint n = g_strv_length(specs);
	g_autofree ChildSpec *s = g_new0(ChildSpec, n);
	ChildTransport *child = child_alloc(&kind_tun, name, port);
	ChildSpec all = {0};
	gint64 first_ms = 0;
	guint parsed = 0;
	gboolean ok = TRUE;

	for (; ok && parsed < n; parsed++)
		ok = spec_parse(&kind_tun, specs[parsed], &s[parsed], error);
	ok = ok && group_spec(&all, s, n, error) && child_spawn(child, &all, pace_mbit, error);
	for (guint i = 0; ok && i < n; i++)
		ok = child_wait_ready(child, &s[i], error);
	for (guint i = 0; ok && i < n; i++) {
		g_autoptr(GInetAddress) server = g_inet_address_new_from_string(s[i].server);
		g_autofree char *member = g_strdup_printf("%s#%u", name, i);
		BenchTransport *k = bench_transport_kernel_new(member, server, port, s[i].ifname);

		g_ptr_array_add(ret_members, k);
		ok = child_wait_traffic(child, k, &s[i], error);
		first_ms = MAX(first_ms, s[i].first_traffic_ms);
	}
	all.first_traffic_ms = first_ms;
	if (ok)
		child->env = child_env_json(&kind_tun, &all);
	for (guint i = 0; i < parsed; i++)
		spec_clear(&s[i]);
	spec_clear(&all);
	if (!ok) {
		/* The members' sockets first, then the process and its interfaces. */
		g_ptr_array_set_size(ret_members, 0);
		child_free(&child->base);
		return NULL;
	}
	return &child->base;
}
