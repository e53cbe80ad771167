/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-lwip-build.c: smoke test of our lwIP build: sys_arch and TCP over two in-memory netifs. */
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "lwip/etharp.h"
#include "lwip/ethip6.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/sys.h"
#include "lwip/tcp.h"
#include "lwip/tcpip.h"
#include "lwip/timeouts.h"

#include "ncm-lwip-chunk.h"
#include "ncm-lwip-timers.h"
#include "ncm-sync.h"

/* Long enough for TSan on a loaded two-core machine. */
#define DEADLINE_US (25 * G_TIME_SPAN_SECOND)

/* ---- Shared helpers ------------------------------------------------------ */

/* A GMutex/GCond flag, set from one thread and awaited in another. */
struct flag {
	GMutex lock; /* guards set */
	GCond cond;
	gboolean set;
};

static void
flag_raise(struct flag *f)
{
	ncm_mutex_lock(&f->lock);
	f->set = TRUE;
	g_cond_broadcast(&f->cond);
	ncm_mutex_unlock(&f->lock);
}

static gboolean
flag_wait(struct flag *f, gint64 timeout_us)
{
	gint64 end = g_get_monotonic_time() + timeout_us;
	gboolean set;

	ncm_mutex_lock(&f->lock);
	while (!f->set && ncm_cond_wait_until(&f->cond, &f->lock, end))
		;
	set = f->set;
	ncm_mutex_unlock(&f->lock);
	return set;
}

static void
tcpip_ready(void *arg)
{
	flag_raise(arg);
}

/* tcpip_init() may run once per process; tests start it on first use. */
static void
start_tcpip(void)
{
	static gsize once;
	static struct flag ready;

	if (g_once_init_enter(&once)) {
		tcpip_init(tcpip_ready, &ready);
		g_assert_true(flag_wait(&ready, DEADLINE_US));
		g_once_init_leave(&once, 1);
	}
}

/* Deterministic test data: xorshift32, so a shifted or repeated chunk
 * never matches by accident. */
static guint8 *
make_data(gsize size)
{
	guint8 *data = g_malloc(size);
	guint32 x = 0x9e3779b9u;

	for (gsize i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = (guint8)x;
	}
	return data;
}

/* FNV-1a 32, continued from h. */
static guint32
fnv1a(guint32 h, const void *buf, gsize len)
{
	const guint8 *b = buf;

	for (gsize i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

#define FNV_INIT 2166136261u

/* ---- sys_arch: semaphores ------------------------------------------------ */

struct signaller {
	sys_sem_t *sem;
	gint64 signalled_at; /* read after g_thread_join() */
};

static gpointer
signal_later(gpointer data)
{
	struct signaller *s = data;

	g_usleep(30 * 1000);
	s->signalled_at = g_get_monotonic_time();
	sys_sem_signal(s->sem);
	return NULL;
}

static void
test_sem_timeout(void)
{
	sys_sem_t sem;
	struct signaller sig = {.sem = &sem};
	gint64 start, end;
	u32_t waited;
	GThread *t;

	g_assert_cmpint(sys_sem_new(&sem, 0), ==, ERR_OK);
	g_assert_true(sys_sem_valid(&sem));

	start = g_get_monotonic_time();
	g_assert_cmpuint(sys_arch_sem_wait(&sem, 50), ==, SYS_ARCH_TIMEOUT);
	g_assert_cmpint(g_get_monotonic_time() - start, >=, 50 * 1000);

	/* Woken by another thread: returns the time waited, not a timeout.
	 * It cannot exceed the time measured around the call, and cannot be
	 * much less than the time until the signal (the slack covers this
	 * thread being preempted between reading start and waiting). */
	t = g_thread_new("signal", signal_later, &sig);
	start = g_get_monotonic_time();
	waited = sys_arch_sem_wait(&sem, 5000);
	end = g_get_monotonic_time();
	g_thread_join(t);
	g_assert_cmpuint(waited, !=, SYS_ARCH_TIMEOUT);
	g_assert_cmpint(waited, <=, (end - start) / 1000);
	g_assert_cmpint((gint64)waited + 20, >=, (sig.signalled_at - start) / 1000);

	/* Timeout 0 waits for ever. */
	t = g_thread_new("signal", signal_later, &sig);
	g_assert_cmpuint(sys_arch_sem_wait(&sem, 0), !=, SYS_ARCH_TIMEOUT);
	g_thread_join(t);

	sys_sem_free(&sem);
	g_assert_false(sys_sem_valid(&sem));

	/* Counting: the initial count is consumed, then waits time out. */
	g_assert_cmpint(sys_sem_new(&sem, 2), ==, ERR_OK);
	g_assert_cmpuint(sys_arch_sem_wait(&sem, 20), !=, SYS_ARCH_TIMEOUT);
	g_assert_cmpuint(sys_arch_sem_wait(&sem, 20), !=, SYS_ARCH_TIMEOUT);
	g_assert_cmpuint(sys_arch_sem_wait(&sem, 20), ==, SYS_ARCH_TIMEOUT);
	sys_sem_signal(&sem);
	sys_sem_signal(&sem);
	g_assert_cmpuint(sys_arch_sem_wait(&sem, 20), !=, SYS_ARCH_TIMEOUT);
	g_assert_cmpuint(sys_arch_sem_wait(&sem, 20), !=, SYS_ARCH_TIMEOUT);
	g_assert_cmpuint(sys_arch_sem_wait(&sem, 20), ==, SYS_ARCH_TIMEOUT);
	sys_sem_free(&sem);
}

/* ---- sys_arch: mailboxes ------------------------------------------------- */

struct poster {
	sys_mbox_t *mbox;
	guintptr first, count;
	gint done; /* atomic */
};

static gpointer
post_all(gpointer data)
{
	struct poster *p = data;

	for (guintptr i = 0; i < p->count; i++)
		sys_mbox_post(p->mbox, GSIZE_TO_POINTER(p->first + i));
	g_atomic_int_set(&p->done, 1);
	return NULL;
}

static void
test_mbox(void)
{
	sys_mbox_t mbox;
	void *msg = &msg;
	struct poster p;
	GThread *t;

	g_assert_cmpint(sys_mbox_new(&mbox, 4), ==, ERR_OK);
	g_assert_true(sys_mbox_valid(&mbox));

	/* Bounded: the fifth non-blocking post fails. */
	for (guintptr i = 1; i <= 4; i++)
		g_assert_cmpint(sys_mbox_trypost(&mbox, GSIZE_TO_POINTER(i)), ==, ERR_OK);
	g_assert_cmpint(sys_mbox_trypost(&mbox, GSIZE_TO_POINTER(5)), ==, ERR_MEM);
	g_assert_cmpint(sys_mbox_trypost_fromisr(&mbox, GSIZE_TO_POINTER(5)), ==, ERR_MEM);

	/* FIFO order. */
	for (guintptr i = 1; i <= 4; i++) {
		g_assert_cmpuint(sys_arch_mbox_tryfetch(&mbox, &msg), ==, 0);
		g_assert_true(msg == GSIZE_TO_POINTER(i));
	}
	g_assert_cmpuint(sys_arch_mbox_tryfetch(&mbox, &msg), ==, SYS_MBOX_EMPTY);

	/* An empty fetch times out after the timeout, and clears msg. */
	{
		gint64 start = g_get_monotonic_time();

		g_assert_cmpuint(sys_arch_mbox_fetch(&mbox, &msg, 30), ==, SYS_ARCH_TIMEOUT);
		g_assert_cmpint(g_get_monotonic_time() - start, >=, 30 * 1000);
		g_assert_null(msg);
	}

	/* A blocking post on a full mailbox waits for a fetch. */
	for (guintptr i = 1; i <= 4; i++)
		sys_mbox_post(&mbox, GSIZE_TO_POINTER(i));
	p = (struct poster){.mbox = &mbox, .first = 5, .count = 1};
	t = g_thread_new("post", post_all, &p);
	g_usleep(50 * 1000);
	g_assert_cmpint(g_atomic_int_get(&p.done), ==, 0);
	g_assert_cmpuint(sys_arch_mbox_fetch(&mbox, &msg, 0), !=, SYS_ARCH_TIMEOUT);
	g_assert_true(msg == GSIZE_TO_POINTER(1));
	g_thread_join(t);
	g_assert_cmpint(g_atomic_int_get(&p.done), ==, 1);
	for (guintptr i = 2; i <= 5; i++) {
		g_assert_cmpuint(sys_arch_mbox_fetch(&mbox, &msg, 1000), !=, SYS_ARCH_TIMEOUT);
		g_assert_true(msg == GSIZE_TO_POINTER(i));
	}

	/* Producer and consumer racing through a small ring keep order. */
	p = (struct poster){.mbox = &mbox, .first = 1, .count = 20000};
	t = g_thread_new("post", post_all, &p);
	for (guintptr i = 1; i <= p.count; i++) {
		g_assert_cmpuint(sys_arch_mbox_fetch(&mbox, &msg, 0), !=, SYS_ARCH_TIMEOUT);
		if (msg != GSIZE_TO_POINTER(i))
			g_error("mbox message %" G_GUINTPTR_FORMAT " arrived out of order", i);
	}
	g_thread_join(t);
	sys_mbox_free(&mbox);
	g_assert_false(sys_mbox_valid(&mbox));

	/* Size 0 asks for the port's default capacity. */
	g_assert_cmpint(sys_mbox_new(&mbox, 0), ==, ERR_OK);
	for (guintptr i = 0; i < NCM_LWIP_MBOX_DEFAULT_SIZE; i++)
		g_assert_cmpint(sys_mbox_trypost(&mbox, &mbox), ==, ERR_OK);
	g_assert_cmpint(sys_mbox_trypost(&mbox, &mbox), ==, ERR_MEM);
	for (guintptr i = 0; i < NCM_LWIP_MBOX_DEFAULT_SIZE; i++)
		g_assert_cmpuint(sys_arch_mbox_tryfetch(&mbox, NULL), ==, 0);
	sys_mbox_free(&mbox);
}

static void
test_now(void)
{
	u32_t t0 = sys_now();

	g_usleep(20 * 1000);
	g_assert_cmpuint((u32_t)(sys_now() - t0), >=, 20);
	g_assert_cmpuint((u32_t)(sys_now() - t0), <, 20 * 1000);
}

/* ---- Core lock ----------------------------------------------------------- */

static void
test_core_lock_assert(void)
{
	if (g_test_subprocess()) {
		start_tcpip();
		/* The raw API without LOCK_TCPIP_CORE() must abort. */
		(void)tcp_new();
		return;
	}
	g_test_trap_subprocess(NULL, 20 * G_TIME_SPAN_SECOND, G_TEST_SUBPROCESS_DEFAULT);
	g_test_trap_assert_failed();
	g_test_trap_assert_stderr("*tcp_alloc() called without the lwIP core lock*");
}

static void
test_core_lock_held(void)
{
	struct tcp_pcb *pcb;

	start_tcpip();
	LOCK_TCPIP_CORE();
	pcb = tcp_new();
	g_assert_nonnull(pcb);
	tcp_abort(pcb);
	UNLOCK_TCPIP_CORE();
}

/* A second thread that takes the core lock while the test holds it. */
struct contender {
	struct flag started;
	struct flag done;
};

static gpointer
contend(gpointer data)
{
	struct contender *c = data;

	flag_raise(&c->started);
	LOCK_TCPIP_CORE();
	UNLOCK_TCPIP_CORE();
	flag_raise(&c->done);
	return NULL;
}

/* NcmLwipStats.core_lock_waits/_wait_us: a busy core lock is counted, and
 * so is the time its waiter spent; an uncontended one is not. */
static void
test_core_lock_waits(void)
{
	struct contender c = { 0 };
	guint64 w0, us0, w1, us1, w2, us2;
	GThread *th;

	start_tcpip();
	/* The tcpip thread may take the lock for its timers meanwhile: count
	 * from here, and expect at least ours. */
	ncm_lwip_core_lock_waits(&w0, &us0);
	LOCK_TCPIP_CORE();
	th = g_thread_new("contender", contend, &c);
	g_assert_true(flag_wait(&c.started, DEADLINE_US));
	/* It is about to block on the lock: hold it long enough that it does. */
	g_usleep(200 * 1000);
	UNLOCK_TCPIP_CORE();
	g_assert_true(flag_wait(&c.done, DEADLINE_US));
	g_thread_join(th);
	ncm_lwip_core_lock_waits(&w1, &us1);
	g_assert_cmpuint(w1 - w0, >=, 1);
	/* Most of the 200 ms, less the time the contender took to reach the lock. */
	g_assert_cmpuint(us1 - us0, >=, 50 * 1000);
	/* Alone, and quick: no wait to count unless a timer of the tcpip thread
	 * happens to hold it (a few µs at most). */
	LOCK_TCPIP_CORE();
	UNLOCK_TCPIP_CORE();
	ncm_lwip_core_lock_waits(&w2, &us2);
	g_assert_cmpuint(us2 - us1, <, 50 * 1000);
}

/* ---- Two netifs, back to back -------------------------------------------- */

/* One end of an in-memory Ethernet cable. Static: frames queued to the
 * tcpip thread keep pointing at the netif. */
struct link_end {
	struct netif netif;
	struct link_end *peer;
	guint64 frames; /* tcpip thread */
	guint64 drops;  /* tcpip thread */
};

static struct link_end ends[2];

/* linkoutput: runs with the core lock held. The frame is copied because
 * TCP keeps p for retransmission, then queued to the peer's input
 * (tcpip_input) exactly as a driver's receive path would. */
static err_t
link_end_output(struct netif *netif, struct pbuf *p)
{
	struct link_end *end = netif->state;
	struct pbuf *copy = pbuf_alloc(PBUF_RAW, p->tot_len, PBUF_RAM);

	if (copy == NULL)
		return ERR_MEM;
	if (pbuf_copy(copy, p) != ERR_OK) {
		pbuf_free(copy);
		return ERR_BUF;
	}
	end->frames++;
	if (end->peer->netif.input(copy, &end->peer->netif) != ERR_OK) {
		end->drops++;
		pbuf_free(copy);
	}
	return ERR_OK;
}

static err_t
link_end_init(struct netif *netif)
{
	struct link_end *end = netif->state;

	netif->name[0] = 't';
	netif->name[1] = (char)('0' + (end - ends));
	netif->mtu = 1500;
	netif->hwaddr_len = ETH_HWADDR_LEN;
	memcpy(netif->hwaddr, (const u8_t[]){0x02, 0, 0, 0, 0, (u8_t)(1 + (end - ends))},
	       ETH_HWADDR_LEN);
	netif->flags =
	    NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET | NETIF_FLAG_MLD6;
	netif->output = etharp_output;
	netif->output_ip6 = ethip6_output;
	netif->linkoutput = link_end_output;
	return ERR_OK;
}

/* 192.168.7.1 and .2 on t0 and t1, plus IPv6 link-local addresses. */
static void
start_link(void)
{
	static gsize once;

	start_tcpip();
	if (!g_once_init_enter(&once))
		return;
	LOCK_TCPIP_CORE();
	for (int i = 0; i < 2; i++) {
		ip4_addr_t addr, mask, gw;

		IP4_ADDR(&addr, 192, 168, 7, 1 + i);
		IP4_ADDR(&mask, 255, 255, 255, 0);
		ip4_addr_set_zero(&gw);
		ends[i].peer = &ends[1 - i];
		g_assert_nonnull(netif_add(&ends[i].netif, &addr, &mask, &gw, &ends[i],
		                           link_end_init, tcpip_input));
		netif_create_ip6_linklocal_address(&ends[i].netif, 1);
	}
	/* Up only once both exist: link-up sends gratuitous ARP to the peer. */
	for (int i = 0; i < 2; i++) {
		netif_set_up(&ends[i].netif);
		netif_set_link_up(&ends[i].netif);
	}
	UNLOCK_TCPIP_CORE();
	g_once_init_leave(&once, 1);
}

/* ---- A TCP transfer between the two ends ---------------------------------- */

/* Window credit is returned in batches bigger than a u16_t so that
 * ncm_lwip_recved_chunked() has to split them. */
#define RECVED_BATCH (256 * 1024)

/* Everything but `data`, `size` and `done` is touched only on the tcpip
 * thread or under the core lock. */
struct transfer {
	const guint8 *data;
	gsize size;
	struct flag done;

	struct tcp_pcb *listener;
	struct tcp_pcb *client;
	struct tcp_pcb *server;
	err_t error;
	const char *failure;

	gsize written, acked;
	gsize max_in_flight;
	gboolean client_scaled;
	tcpwnd_size_t client_snd_wnd_max;

	gsize received;
	gsize uncredited;
	guint32 rx_hash;
	guint big_credits; /* credits > 0xFFFF handed to the chunk helper */
	gboolean server_scaled;
	tcpwnd_size_t server_rcv_wnd_at_fin;
};

static void
transfer_fail(struct transfer *t, const char *why, err_t err)
{
	if (t->failure == NULL) {
		t->failure = why;
		t->error = err;
	}
	flag_raise(&t->done);
}

static void
detach(struct tcp_pcb *pcb)
{
	tcp_arg(pcb, NULL);
	tcp_recv(pcb, NULL);
	tcp_sent(pcb, NULL);
	tcp_err(pcb, NULL);
}

/* tcp_write() takes a u16_t and tcp_sndbuf() is clamped to 0xFFFF: feed
 * the send buffer one tcp_sndbuf() at a time. */
static void
client_send_more(struct transfer *t)
{
	struct tcp_pcb *pcb = t->client;
	gsize in_flight;
	err_t err;

	while (t->written < t->size) {
		u16_t room = tcp_sndbuf(pcb);
		u16_t len = (u16_t)MIN((gsize)room, t->size - t->written);

		if (len == 0)
			break;
		err = tcp_write(pcb, t->data + t->written, len,
		                TCP_WRITE_FLAG_COPY |
		                    (t->written + len < t->size ? TCP_WRITE_FLAG_MORE : 0));
		if (err == ERR_MEM)
			break;
		if (err != ERR_OK) {
			transfer_fail(t, "tcp_write", err);
			return;
		}
		t->written += len;
	}
	err = tcp_output(pcb);
	if (err != ERR_OK) {
		transfer_fail(t, "tcp_output", err);
		return;
	}
	in_flight = pcb->snd_nxt - pcb->lastack;
	t->max_in_flight = MAX(t->max_in_flight, in_flight);
}

static err_t
client_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	struct transfer *t = arg;

	t->acked += len;
	t->client_snd_wnd_max = MAX(t->client_snd_wnd_max, pcb->snd_wnd_max);
	if (t->acked < t->size) {
		client_send_more(t);
		return ERR_OK;
	}
	detach(pcb);
	t->client = NULL;
	if (tcp_close(pcb) != ERR_OK) {
		tcp_abort(pcb);
		transfer_fail(t, "client tcp_close", ERR_MEM);
		return ERR_ABRT;
	}
	return ERR_OK;
}

static void
client_error(void *arg, err_t err)
{
	struct transfer *t = arg;

	t->client = NULL;
	transfer_fail(t, "client connection error", err);
}

static err_t
client_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct transfer *t = arg;

	t->client_scaled = (pcb->flags & TF_WND_SCALE) != 0;
	client_send_more(t);
	return ERR_OK;
}

static void
server_credit(struct transfer *t, struct tcp_pcb *pcb)
{
	if (t->uncredited > 0xFFFF)
		t->big_credits++;
	ncm_lwip_recved_chunked(pcb, t->uncredited);
	t->uncredited = 0;
}

static err_t
server_fin(struct transfer *t, struct tcp_pcb *pcb)
{
	server_credit(t, pcb);
	t->server_rcv_wnd_at_fin = pcb->rcv_wnd;
	detach(pcb);
	t->server = NULL;
	if (tcp_close(pcb) != ERR_OK) {
		tcp_abort(pcb);
		transfer_fail(t, "server tcp_close", ERR_MEM);
		return ERR_ABRT;
	}
	flag_raise(&t->done);
	return ERR_OK;
}

static err_t
server_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct transfer *t = arg;

	if (p == NULL)
		return server_fin(t, pcb);
	for (struct pbuf *q = p; q != NULL; q = q->next) {
		if (t->received + q->len > t->size ||
		    memcmp(q->payload, t->data + t->received, q->len) != 0) {
			transfer_fail(t, "received bytes differ from the sent ones", ERR_VAL);
			break;
		}
		t->rx_hash = fnv1a(t->rx_hash, q->payload, q->len);
		t->received += q->len;
	}
	t->uncredited += p->tot_len;
	pbuf_free(p);
	if (t->uncredited >= RECVED_BATCH)
		server_credit(t, pcb);
	return ERR_OK;
}

static void
server_error(void *arg, err_t err)
{
	struct transfer *t = arg;

	t->server = NULL;
	transfer_fail(t, "server connection error", err);
}

static err_t
server_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct transfer *t = arg;

	if (err != ERR_OK || pcb == NULL || t->server != NULL)
		return ERR_VAL;
	t->server = pcb;
	t->server_scaled = (pcb->flags & TF_WND_SCALE) != 0;
	tcp_arg(pcb, t);
	tcp_recv(pcb, server_recv);
	tcp_err(pcb, server_error);
	return ERR_OK;
}

/* Runs size bytes from ends[0] to ends[1] at server_ip:port and checks what
 * arrived and how the windows were negotiated. */
static void
run_transfer(const ip_addr_t *server_ip, u16_t port, gsize size)
{
	struct transfer *t = g_new0(struct transfer, 1);
	g_autofree guint8 *data = make_data(size);
	struct tcp_pcb *pcb;
	guint64 frames_before;
	gboolean finished;
	err_t err;

	t->data = data;
	t->size = size;
	t->rx_hash = FNV_INIT;

	LOCK_TCPIP_CORE();
	frames_before = ends[0].frames;
	pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);
	g_assert_nonnull(pcb);
	/* Both ends share a subnet, so routing alone could pick either netif:
	 * pin the server to ends[1] and the client to ends[0]. */
	tcp_bind_netif(pcb, &ends[1].netif);
	g_assert_cmpint(tcp_bind(pcb, IP_ANY_TYPE, port), ==, ERR_OK);
	t->listener = tcp_listen(pcb);
	g_assert_nonnull(t->listener);
	tcp_arg(t->listener, t);
	tcp_accept(t->listener, server_accept);

	t->client = tcp_new_ip_type(IP_GET_TYPE(server_ip));
	g_assert_nonnull(t->client);
	tcp_bind_netif(t->client, &ends[0].netif);
	tcp_arg(t->client, t);
	tcp_sent(t->client, client_sent);
	tcp_err(t->client, client_error);
	err = tcp_connect(t->client, server_ip, port, client_connected);
	UNLOCK_TCPIP_CORE();
	g_assert_cmpint(err, ==, ERR_OK);

	finished = flag_wait(&t->done, DEADLINE_US);

	LOCK_TCPIP_CORE();
	if (!finished)
		g_error("transfer stalled: %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
		        " bytes written, %" G_GSIZE_FORMAT " acked, %" G_GSIZE_FORMAT
		        " received, %" G_GUINT64_FORMAT " frames dropped",
		        t->written, size, t->acked, t->received, ends[0].drops + ends[1].drops);
	if (t->failure != NULL)
		g_error("transfer failed: %s (err %d) after %" G_GSIZE_FORMAT " bytes", t->failure,
		        t->error, t->received);
	tcp_arg(t->listener, NULL);
	g_assert_cmpint(tcp_close(t->listener), ==, ERR_OK);
	g_assert_null(t->server);

	/* Every byte arrived, in order, through our linkoutput. */
	g_assert_cmpuint(ends[0].frames - frames_before, >=, size / NCM_LWIP_LINK_MSS);
	g_assert_cmpuint(t->received, ==, size);
	g_assert_cmpuint(t->acked, ==, size);
	g_assert_cmphex(t->rx_hash, ==, fnv1a(FNV_INIT, data, size));

	/* Both ends agreed on window scaling, the client saw a window above
	 * 64 KiB, and really had more than 64 KiB in flight. */
	g_assert_true(t->client_scaled);
	g_assert_true(t->server_scaled);
	g_assert_cmpuint(t->client_snd_wnd_max, >, 0xFFFF);
	g_assert_cmpuint(t->max_in_flight, >, 0xFFFF);

	/* Credit larger than a u16_t went through the chunk helper and the
	 * receive window is whole again. */
	g_assert_cmpuint(t->big_credits, >, 0);
	g_assert_cmpuint(t->server_rcv_wnd_at_fin, ==, TCP_WND);

	/* No frame failed a checksum (generated on copy, checked on input). */
	g_assert_cmpuint(lwip_stats.tcp.chkerr, ==, 0);
	g_assert_cmpuint(lwip_stats.ip.chkerr, ==, 0);
	g_assert_cmpuint(lwip_stats.tcp.recv, >, size / NCM_LWIP_LINK_MSS);
	UNLOCK_TCPIP_CORE();

	g_test_message(
	    "max in flight %" G_GSIZE_FORMAT ", client snd_wnd_max %u, drops %" G_GUINT64_FORMAT,
	    t->max_in_flight, (unsigned)t->client_snd_wnd_max, ends[0].drops + ends[1].drops);
	/* No pcb refers to t any more: the listener is closed, both
	 * connection pcbs were detached before closing. */
	g_free(t);
}

static void
test_tcp_ipv4(void)
{
	ip_addr_t server;

	start_link();
	IP_ADDR4(&server, 192, 168, 7, 2);
	run_transfer(&server, 5001, 8 * 1024 * 1024);
}

/* IPv6 link-local: waits for duplicate address detection, then resolves
 * the peer by neighbour discovery. */
static void
test_tcp_ipv6_link_local(void)
{
	gint64 end = g_get_monotonic_time() + DEADLINE_US;
	ip_addr_t server;
	gboolean ready = FALSE;

	start_link();
	while (!ready && g_get_monotonic_time() < end) {
		LOCK_TCPIP_CORE();
		ready = ip6_addr_ispreferred(netif_ip6_addr_state(&ends[0].netif, 0)) &&
		        ip6_addr_ispreferred(netif_ip6_addr_state(&ends[1].netif, 0));
		ip_addr_copy(server, *netif_ip_addr6(&ends[1].netif, 0));
		/* The peer's link-local address, as seen from ends[0]'s link. */
		ip6_addr_assign_zone(ip_2_ip6(&server), IP6_UNICAST, &ends[0].netif);
		UNLOCK_TCPIP_CORE();
		if (!ready)
			g_usleep(20 * 1000);
	}
	g_assert_true(ready);
	g_assert_true(ip6_addr_islinklocal(ip_2_ip6(&server)));
	run_transfer(&server, 5002, 1024 * 1024);
}

/* ---- Timers --------------------------------------------------------------- */

/* Context switches of the thread named @name in this process so far. */
static guint64
thread_switches(const gchar *name)
{
	g_autoptr(GDir) dir = g_dir_open("/proc/self/task", 0, NULL);
	const gchar *tid;

	g_assert_nonnull(dir);
	while ((tid = g_dir_read_name(dir))) {
		g_autofree gchar *comm_path = g_strdup_printf("/proc/self/task/%s/comm", tid);
		g_autofree gchar *status_path = g_strdup_printf("/proc/self/task/%s/status", tid);
		g_autofree gchar *comm = NULL, *status = NULL;
		g_auto(GStrv) lines = NULL;
		guint64 sum = 0;

		if (!g_file_get_contents(comm_path, &comm, NULL, NULL) ||
		    g_strcmp0(g_strstrip(comm), name) != 0 ||
		    !g_file_get_contents(status_path, &status, NULL, NULL))
			continue;
		lines = g_strsplit(status, "\n", -1);
		for (gchar **l = lines; *l; l++) {
			guint64 n;

			if (sscanf(*l, "voluntary_ctxt_switches: %" G_GUINT64_FORMAT, &n) == 1 ||
			    sscanf(*l, "nonvoluntary_ctxt_switches: %" G_GUINT64_FORMAT, &n) == 1)
				sum += n;
		}
		return sum;
	}
	g_assert_not_reached();
}

/*
 * Two netifs up with IPv4 and IPv6 link-local addresses, nothing sent: once
 * duplicate detection and the MLD reports are over, the tcpip thread wakes
 * for lwIP's one-second timers alone. lwIP's own timeouts woke it ten
 * times a second (mld6_tmr) for ever. In a subprocess: no connection or
 * TIME_WAIT of another test keeps TCP's timer going.
 */
static void
test_timers_idle(void)
{
	guint64 before, woken;

	if (!g_test_subprocess()) {
		g_test_trap_subprocess(NULL, 60 * G_TIME_SPAN_SECOND, G_TEST_SUBPROCESS_INHERIT_STDERR);
		g_test_trap_assert_passed();
		return;
	}
	start_link();
	g_usleep(3 * G_USEC_PER_SEC);
	before = thread_switches(TCPIP_THREAD_NAME);
	g_usleep(4 * G_USEC_PER_SEC);
	woken = thread_switches(TCPIP_THREAD_NAME) - before;
	g_printerr("tcpip thread: %" G_GUINT64_FORMAT " switches in 4 s idle\n", woken);
	g_assert_cmpuint(woken, <=, 10);
}

static void
raise_timeout(void *arg)
{
	flag_raise(arg);
}

/*
 * A timeout added on another thread, under the core lock, right after the
 * tcpip thread went to sleep for the next second's beat: it fires on time,
 * not at that beat (sys_arch kicks the sleeping thread).
 */
static void
test_timers_kick(void)
{
	struct flag fired = { 0 };
	guint64 rounds;
	gint64 t0, end = g_get_monotonic_time() + DEADLINE_US;

	if (!g_test_subprocess()) {
		g_test_trap_subprocess(NULL, 60 * G_TIME_SPAN_SECOND, G_TEST_SUBPROCESS_INHERIT_STDERR);
		g_test_trap_assert_passed();
		return;
	}
	start_tcpip();
	g_usleep(500 * 1000);
	/* Just after a beat: the next is a second away. */
	LOCK_TCPIP_CORE();
	rounds = ncm_lwip_timers_rounds();
	UNLOCK_TCPIP_CORE();
	for (;;) {
		LOCK_TCPIP_CORE();
		if (ncm_lwip_timers_rounds() != rounds)
			break;
		UNLOCK_TCPIP_CORE();
		g_assert_cmpint(g_get_monotonic_time(), <, end);
		g_usleep(2 * 1000);
	}
	sys_timeout(20, raise_timeout, &fired);
	t0 = g_get_monotonic_time();
	UNLOCK_TCPIP_CORE();
	g_assert_true(flag_wait(&fired, DEADLINE_US));
	g_printerr("the timeout fired after %" G_GINT64_FORMAT " ms\n", (g_get_monotonic_time() - t0) / 1000);
	g_assert_cmpint(g_get_monotonic_time() - t0, <, 700 * G_TIME_SPAN_MILLISECOND);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lwip/sys/sem-timeout", test_sem_timeout);
	g_test_add_func("/lwip/sys/mbox", test_mbox);
	g_test_add_func("/lwip/sys/now", test_now);
	g_test_add_func("/lwip/core-lock/held", test_core_lock_held);
	g_test_add_func("/lwip/core-lock/assert", test_core_lock_assert);
	g_test_add_func("/lwip/core-lock/waits", test_core_lock_waits);
	g_test_add_func("/lwip/tcp/ipv4-8MiB", test_tcp_ipv4);
	g_test_add_func("/lwip/tcp/ipv6-link-local", test_tcp_ipv6_link_local);
	g_test_add_func("/lwip/timers/idle", test_timers_idle);
	g_test_add_func("/lwip/timers/kick", test_timers_kick);
	return g_test_run();
}
