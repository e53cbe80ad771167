/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-transport-tun.c: ncm-bench's path through ncm-tun, started as a child, over kernel sockets. */
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
#include <sys/wait.h>
#include <unistd.h>

#include "ncm-bench.h"

#define TUN_DEFAULT_IFNAME "ncmbench0"
/* Claiming, negotiating and configuring take a few seconds under QEMU TCG. */
#define TUN_UP_TIMEOUT_S 20
/* ncm-tun prints statistics and re-attaches cdc_ncm before it exits. */
#define TUN_STOP_TIMEOUT_S 15
/* After a driver switch f_ncm sometimes sends nothing for ~20 s (README). */
#define TUN_TRAFFIC_TIMEOUT_S 60
#define TUN_STDERR_KEEP 4096
/* ncm-tun answers SIGUSR1 from its main loop, within milliseconds. */
#define TUN_STATS_TIMEOUT_US (2 * G_USEC_PER_SEC)

/* One block of ncm-tun's statistics: its NTB counts, and when we had them. */
typedef struct {
	gint64 t_us;
	guint64 rx_ntbs;
	guint64 tx_ntbs;
} TunStats;

typedef struct {
	BenchTransport base;
	BenchTransport *kernel;  /* the sockets, bound to the interface */
	GPid pid;                /* 0 once reaped */
	int status;              /* wait status, valid once reaped */
	GThread *reader;
	GMutex lock;             /* guards last_error and the statistics below (written by the reader thread) */
	char *last_error;        /* ncm-tun's last "ncm-tun: ..." line, or its last line */
	GArray *asked;           /* gint64: when each SIGUSR1 was sent, one per usb_mark() */
	GArray *stats;           /* TunStats, each block as it came */
	guint64 pending_rx;      /* the current block's "usb rx" count */
	gboolean quiet;          /* in a block we asked for: not echoed */
	gboolean stopping;       /* the statistics at exit are always echoed */
	char *env;
} TunTransport;

typedef struct {
	char *server;
	char *ipv4;              /* ADDR/PREFIX as given */
	char *addr;              /* ADDR alone */
	char *exec;
	char *ifname;
	GPtrArray *dev;
	gint64 first_traffic_ms;  /* open to the first connection through it */
	gboolean all_acks;        /* acks=all: ncm-tun --no-ack-merge */
} TunSpec;

/* ---- the child's stderr ---------------------------------------------------- */

typedef struct {
	TunTransport *tun;
	int fd;
} Reader;

/*
 * Under the lock: keeps the NTB counts of a statistics block (print_stats()
 * in ncm-tun.c: a header, then indented lines). Blocks we asked for are not
 * echoed: there are two per repetition. Returns TRUE when @line is quiet.
 */
static gboolean
stats_line_locked(TunTransport *tun, const char *line)
{
	guint64 n;

	if (strstr(line, " device session(s)"))
		tun->quiet = tun->stats->len < tun->asked->len && !tun->stopping;
	else if (!g_str_has_prefix(line, "  "))
		tun->quiet = FALSE;
	if (sscanf(line, "  usb rx: %" G_GUINT64_FORMAT " NTBs", &n) == 1) {
		tun->pending_rx = n;
	} else if (sscanf(line, "  usb tx: %" G_GUINT64_FORMAT " NTBs", &n) == 1) {
		TunStats st = {g_get_monotonic_time(), tun->pending_rx, n};

		g_array_append_val(tun->stats, st);
	}
	return tun->quiet;
}

static void
reader_line(TunTransport *tun, const char *line)
{
	gboolean quiet;

	ncm_mutex_lock(&tun->lock);
	quiet = stats_line_locked(tun, line);
	ncm_mutex_unlock(&tun->lock);
	if (!quiet)
		g_printerr("  [ncm-tun] %s\n", line);
	/* The statistics at exit would hide the error that preceded them. */
	if (!*line || g_str_has_prefix(line, "  ") || strstr(line, " device session(s)"))
		return;
	ncm_mutex_lock(&tun->lock);
	/* Its fatal errors start with "ncm-tun: "; they win over log lines. */
	if (g_str_has_prefix(line, "ncm-tun: ") || !tun->last_error ||
	    !g_str_has_prefix(tun->last_error, "ncm-tun: ")) {
		g_free(tun->last_error);
		tun->last_error = g_strndup(line, TUN_STDERR_KEEP);
	}
	ncm_mutex_unlock(&tun->lock);
}

/* Echoes ncm-tun's stderr to ours and keeps what explains a failure. */
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
			reader_line(r->tun, buf->str);
			g_string_erase(buf, 0, nl - buf->str + 1);
		}
	}
	if (buf->len)
		reader_line(r->tun, buf->str);
	close(r->fd);
	g_free(r);
	return NULL;
}

static char *
tun_last_error(TunTransport *tun)
{
	const char *p;
	char *msg;

	ncm_mutex_lock(&tun->lock);
	p = tun->last_error ? tun->last_error : "";
	if (g_str_has_prefix(p, "ncm-tun: "))
		p += strlen("ncm-tun: ");
	msg = g_strdup(*p ? p : "no message");
	ncm_mutex_unlock(&tun->lock);
	return msg;
}

/* ---- the child process ---------------------------------------------------- */

/* Runs in the child: if ncm-bench dies, ncm-tun must still give the function back. */
static void
child_setup(gpointer data)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* TRUE once the child is reaped (now or before). */
static gboolean
tun_reap(TunTransport *tun, gboolean block)
{
	pid_t r;

	if (!tun->pid)
		return TRUE;
	do
		r = waitpid(tun->pid, &tun->status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return FALSE;
	tun->pid = 0;
	if (tun->reader)
		g_thread_join(g_steal_pointer(&tun->reader));
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
set_exit_error(TunTransport *tun, GError **error)
{
	g_autofree char *st = status_text(tun->status);
	g_autofree char *msg = tun_last_error(tun);

	g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "ncm-tun %s: %s", st, msg);
}

static void
tun_stop(TunTransport *tun, guint timeout_s)
{
	gint64 end = g_get_monotonic_time() + (gint64)timeout_s * G_USEC_PER_SEC;

	if (!tun->pid)
		return;
	ncm_mutex_lock(&tun->lock);
	tun->stopping = TRUE;
	ncm_mutex_unlock(&tun->lock);
	kill(tun->pid, SIGTERM);
	while (!tun_reap(tun, FALSE)) {
		if (g_get_monotonic_time() > end) {
			g_printerr("ncm-bench: ncm-tun did not stop within %u s; killing it\n", timeout_s);
			kill(tun->pid, SIGKILL);
			tun_reap(tun, TRUE);
			return;
		}
		g_usleep(50000);
	}
}

static gboolean
tun_spawn(TunTransport *tun, const TunSpec *s, double pace_mbit, GError **error)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	Reader *r;
	int err_fd = -1;

	g_ptr_array_add(argv, g_strdup(s->exec));
	g_ptr_array_add(argv, g_strdup("--name"));
	g_ptr_array_add(argv, g_strdup(s->ifname));
	g_ptr_array_add(argv, g_strdup("--ipv4"));
	g_ptr_array_add(argv, g_strdup(s->ipv4));
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
				      child_setup, NULL, &tun->pid, NULL, NULL, &err_fd, error))
		return FALSE;
	r = g_new0(Reader, 1);
	r->tun = tun;
	r->fd = err_fd;
	tun->reader = g_thread_new("bench-ncm-tun", reader_main, r);
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

static gboolean
tun_wait_ready(TunTransport *tun, const TunSpec *s, GError **error)
{
	g_autoptr(GInetAddress) want = g_inet_address_new_from_string(s->addr);
	gint64 end = g_get_monotonic_time() + TUN_UP_TIMEOUT_S * G_USEC_PER_SEC;
	g_autofree char *msg = NULL;

	for (;;) {
		if (tun_reap(tun, FALSE)) {
			set_exit_error(tun, error);
			return FALSE;
		}
		if (if_nametoindex(s->ifname) && iface_up(s->ifname) &&
		    iface_has_address(s->ifname, want))
			return TRUE;
		if (g_get_monotonic_time() > end)
			break;
		g_usleep(50000);
	}
	tun_stop(tun, TUN_STOP_TIMEOUT_S);
	msg = tun_last_error(tun);
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
		    "%s was not up and running with %s within %d s (ncm-tun's last words: %s)",
		    s->ifname, s->addr, TUN_UP_TIMEOUT_S, msg);
	return FALSE;
}

/*
 * The interface being up says nothing about the device: the tests start
 * once a connection to the server went through, and the wait is reported
 * (first_traffic_ms), so that a slow start is seen rather than timed as a
 * slow test.
 */
static gboolean
tun_wait_traffic(TunTransport *tun, TunSpec *s, GError **error)
{
	gint64 start = g_get_monotonic_time();
	gint64 end = start + TUN_TRAFFIC_TIMEOUT_S * G_USEC_PER_SEC;
	g_autoptr(GError) last = NULL;

	for (;;) {
		g_autoptr(GIOStream) io = NULL;

		if (tun_reap(tun, FALSE)) {
			set_exit_error(tun, error);
			return FALSE;
		}
		g_clear_error(&last);
		io = tun->kernel->ops->tcp_connect(tun->kernel, &last);
		if (io) {
			g_io_stream_close(io, NULL, NULL);
			s->first_traffic_ms = (g_get_monotonic_time() - start) / 1000;
			return TRUE;
		}
		if (g_get_monotonic_time() > end)
			break;
		g_usleep(200000);
	}
	tun_stop(tun, TUN_STOP_TIMEOUT_S);
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
		    "no connection to the server through %s within %d s (last: %s)", s->ifname,
		    TUN_TRAFFIC_TIMEOUT_S, last ? last->message : "?");
	return FALSE;
}

/* ---- the transport ------------------------------------------------------- */

/* A test that fails because ncm-tun died should say so, not "connection refused". */
static gboolean
tun_alive(TunTransport *tun, GError **error)
{
	if (!tun_reap(tun, FALSE))
		return TRUE;
	set_exit_error(tun, error);
	return FALSE;
}

static GIOStream *
tun_tcp_connect(BenchTransport *t, GError **error)
{
	TunTransport *tun = (TunTransport *)t;

	if (!tun_alive(tun, error))
		return NULL;
	return tun->kernel->ops->tcp_connect(tun->kernel, error);
}

static BenchUdp *
tun_udp_open(BenchTransport *t, guint16 port, GError **error)
{
	TunTransport *tun = (TunTransport *)t;

	if (!tun_alive(tun, error))
		return NULL;
	return tun->kernel->ops->udp_open(tun->kernel, port, error);
}

/* utime + stime, fields 14 and 15 of /proc/PID/stat, counted after the ")" that ends comm. */
static double
tun_child_cpu_seconds(BenchTransport *t)
{
	TunTransport *tun = (TunTransport *)t;
	g_autofree char *path = NULL, *text = NULL;
	g_auto(GStrv) f = NULL;
	char *p;

	if (!tun->pid)
		return 0;
	path = g_strdup_printf("/proc/%d/stat", (int)tun->pid);
	if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strrchr(text, ')')))
		return 0;
	/* After ")": state is field 3, so utime (14) is index 11. */
	f = g_strsplit(p + 2, " ", 14);
	if (g_strv_length(f) < 14)
		return 0;
	return (double)(g_ascii_strtoull(f[11], NULL, 10) + g_ascii_strtoull(f[12], NULL, 10)) /
	       (double)sysconf(_SC_CLK_TCK);
}

/* Asks ncm-tun for its statistics; the mark is the request's index. */
static guint
tun_usb_mark(BenchTransport *t)
{
	TunTransport *tun = (TunTransport *)t;
	gint64 now = g_get_monotonic_time();
	guint mark;

	ncm_mutex_lock(&tun->lock);
	g_array_append_val(tun->asked, now);
	mark = tun->asked->len - 1;
	ncm_mutex_unlock(&tun->lock);
	if (tun->pid)
		kill(tun->pid, SIGUSR1);
	return mark;
}

/*
 * The first block that came after the request. Two requests close together
 * may get one block (signals merge): each still gets the counts of a moment
 * just after it asked.
 */
static gboolean
tun_stats_after_locked(TunTransport *tun, gint64 asked, TunStats *ret)
{
	for (guint i = 0; i < tun->stats->len; i++) {
		const TunStats *st = &g_array_index(tun->stats, TunStats, i);

		if (st->t_us >= asked) {
			*ret = *st;
			return TRUE;
		}
	}
	return FALSE;
}

static gboolean
tun_usb_count(BenchTransport *t, guint mark, guint64 *ret_rx_ntbs, guint64 *ret_tx_ntbs)
{
	TunTransport *tun = (TunTransport *)t;
	gint64 end = g_get_monotonic_time() + TUN_STATS_TIMEOUT_US;
	gboolean found = FALSE;
	TunStats st;

	for (;;) {
		ncm_mutex_lock(&tun->lock);
		found = mark < tun->asked->len &&
			tun_stats_after_locked(tun, g_array_index(tun->asked, gint64, mark), &st);
		ncm_mutex_unlock(&tun->lock);
		if (found || g_get_monotonic_time() > end || !tun->pid)
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
tun_abort(BenchTransport *t)
{
	GPid pid = ((TunTransport *)t)->pid;
	gint64 end = g_get_monotonic_time() + TUN_STOP_TIMEOUT_S * G_USEC_PER_SEC;
	int status;

	if (!pid || kill(pid, SIGTERM) < 0)
		return;
	while (waitpid(pid, &status, WNOHANG) == 0 && g_get_monotonic_time() < end)
		g_usleep(50000);
}

static const char *
tun_env(BenchTransport *t)
{
	return ((TunTransport *)t)->env;
}

static void
tun_free(BenchTransport *t)
{
	TunTransport *tun = (TunTransport *)t;

	tun_stop(tun, TUN_STOP_TIMEOUT_S);
	/* A failed open says this in its error already. */
	if (tun->kernel && (!WIFEXITED(tun->status) || WEXITSTATUS(tun->status) != 0)) {
		g_autofree char *st = status_text(tun->status);

		g_printerr("ncm-bench: %s: ncm-tun %s\n", t->name, st);
	}
	bench_transport_free(tun->kernel);
	g_free(t->name);
	g_free(t->iface);
	g_clear_object(&t->server);
	g_free(tun->last_error);
	g_free(tun->env);
	g_array_unref(tun->asked);
	g_array_unref(tun->stats);
	g_mutex_clear(&tun->lock);
	g_free(tun);
}

static const BenchTransportOps tun_ops = {
	.tcp_connect = tun_tcp_connect,
	.udp_open = tun_udp_open,
	.main_dispatches = NULL,
	.child_cpu_seconds = tun_child_cpu_seconds,
	.usb_mark = tun_usb_mark,
	.usb_count = tun_usb_count,
	.abort = tun_abort,
	.env = tun_env,
	.free = tun_free,
};

/* ---- the spec ------------------------------------------------------------ */

static void
spec_clear(TunSpec *s)
{
	g_free(s->server);
	g_free(s->ipv4);
	g_free(s->addr);
	g_free(s->exec);
	g_free(s->ifname);
	g_clear_pointer(&s->dev, g_ptr_array_unref);
}

/*
 * The ncm-tun built next to us (installed: the same bindir; build tree:
 * examples/ncm-tun/ beside our examples/ncm-bench/), else the one on PATH.
 */
static char *
default_exec(void)
{
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *dir = self ? g_path_get_dirname(self) : NULL;
	g_autofree char *next = dir ? g_build_filename(dir, "ncm-tun", NULL) : NULL;
	g_autofree char *built = dir ? g_build_filename(dir, "..", "ncm-tun", "ncm-tun", NULL) : NULL;

	if (next && g_file_test(next, G_FILE_TEST_IS_EXECUTABLE))
		return g_steal_pointer(&next);
	if (built && g_file_test(built, G_FILE_TEST_IS_EXECUTABLE))
		return g_steal_pointer(&built);
	return g_find_program_in_path("ncm-tun");
}

static gboolean
spec_option(TunSpec *s, const char *key, const char *v)
{
	char **slot = g_str_equal(key, "ipv4") ? &s->ipv4 : g_str_equal(key, "exec") ? &s->exec
		    : g_str_equal(key, "name") ? &s->ifname : NULL;

	if (g_str_equal(key, "acks")) {
		s->all_acks = g_str_equal(v, "all");
		return TRUE;
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
spec_parse(const char *text, TunSpec *s, GError **error)
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
			    "ncm-tun path %s: expected SERVER,ipv4=ADDR/PREFIX[,dev=SEL...][,exec=PATH]"
			    "[,name=IFNAME] with IPv4 addresses", text);
		return FALSE;
	}
	if (!s->ifname)
		s->ifname = g_strdup(TUN_DEFAULT_IFNAME);
	if (!s->exec)
		s->exec = default_exec();
	if (!s->exec) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "ncm-tun path: no ncm-tun next to ncm-bench or on PATH (give exec=PATH)");
		return FALSE;
	}
	return TRUE;
}

static char *
tun_env_json(const TunSpec *s)
{
	g_autoptr(GString) o = g_string_new(NULL);
	g_autofree char *devs = NULL;

	g_ptr_array_add(s->dev, NULL);
	devs = g_strjoinv(" ", (char **)s->dev->pdata);
	g_ptr_array_remove_index(s->dev, s->dev->len - 1);
	bench_json_str(o, "exec", s->exec);
	bench_json_str(o, "ifname", s->ifname);
	bench_json_str(o, "ipv4", s->ipv4);
	bench_json_str(o, "devices", devs);
	bench_json_num(o, "first_traffic_ms", (double)s->first_traffic_ms);
	return g_strdup_printf(",\"ncm_tun\":{%s}", o->str + 1);
}

BenchTransport *
bench_transport_tun_new(const char *name, const char *spec, guint16 port, double pace_mbit,
			GError **error)
{
	TunTransport *tun = g_new0(TunTransport, 1);
	g_autoptr(GInetAddress) server = NULL;
	TunSpec s;
	gboolean ok;

	tun->base.ops = &tun_ops;
	tun->base.name = g_strdup(name);
	tun->base.port = port;
	g_mutex_init(&tun->lock);
	tun->asked = g_array_new(FALSE, FALSE, sizeof(gint64));
	tun->stats = g_array_new(FALSE, FALSE, sizeof(TunStats));
	ok = spec_parse(spec, &s, error);
	if (ok && if_nametoindex(s.ifname)) {
		/* A stale one would look ready before ncm-tun has claimed anything. */
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
			    "interface %s exists already: remove it or give name=IFNAME", s.ifname);
		ok = FALSE;
	}
	ok = ok && tun_spawn(tun, &s, pace_mbit, error) && tun_wait_ready(tun, &s, error);
	if (!ok) {
		spec_clear(&s);
		tun_free(&tun->base);
		return NULL;
	}
	server = g_inet_address_new_from_string(s.server);
	tun->kernel = bench_transport_kernel_new(name, server, port, s.ifname);
	tun->base.server = g_object_ref(server);
	tun->base.iface = g_strdup(s.ifname);
	tun->base.mtu = tun->kernel->mtu;
	if (!tun_wait_traffic(tun, &s, error)) {
		spec_clear(&s);
		tun_free(&tun->base);
		return NULL;
	}
	tun->env = tun_env_json(&s);
	spec_clear(&s);
	return &tun->base;
}
