/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-timers.c: lwIP's timeouts (LWIP_TIMERS_CUSTOM): its cyclic timers run only while they have work, so an idle stack sleeps. */
#define G_LOG_DOMAIN "ncm-lwip"

#include <glib.h>

#include "lwip/opt.h"
#include "lwip/dhcp.h"
#include "lwip/mld6.h"
#include "lwip/netif.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/sys.h"
#include "lwip/timeouts.h"

#include "ncm-lwip-timers.h"

/*
 * lwIP's own timeouts.c runs every cyclic timer for ever: mld6_tmr every
 * 100 ms, dhcp_fine_tmr every 500 ms, the rest every second. That woke the
 * tcpip thread ten times a second on a link with no traffic, all day long
 * for a phone left plugged in (idle_check in tests/vm/guest-lib.sh). Here the timers
 * whose ticks only count down work in hand run while that work exists: TCP
 * while a connection is open or in TIME_WAIT (as lwIP itself does), MLD
 * while a report is pending, DHCP's fine timer while a request awaits its
 * answer. The others age state by wall clock (ARP and neighbour caches,
 * address lifetimes, reassembly, DNS) and keep their one-second tick, all
 * on the same beat: one wake-up a second when idle.
 *
 * Work for a timer can appear on another thread, under the core lock (a
 * connect, an address added, DHCP started): the core lock's release then
 * asks ncm_lwip_timers_moved_earlier() whether the tcpip thread now sleeps
 * too long, and sys_arch wakes it (its mailbox's kick).
 */

/* The tcpip thread never sleeps longer than this, so that a kick can
 * always be answered as a timeout (an endless wait must return a message). */
#define SLEEP_CAP_MS (60 * 60 * 1000)

/* How often, at most, a resting timer that walks lists to know whether
 * it has work asks (MLD's groups, DHCP's clients): sys_timeouts_sleeptime()
 * runs before every message the tcpip thread takes. Well under MLD's 100 ms
 * tick; TCP's question is two loads and asked every time. */
#define DORMANT_LOOK_MS 50

typedef gboolean (*NeededFunc)(void);

typedef struct {
	gboolean armed;
	gint64 due;              /* ms, g_get_monotonic_time()'s clock */
	NeededFunc needed;       /* NULL: always */
	gboolean walks;          /* needed() walks lists: asked at most every DORMANT_LOOK_MS */
	gboolean tcp;            /* tcp_tmr: its rest mirrored in tcp_resting */
} Cyclic;

typedef struct _Timeout Timeout;
struct _Timeout {
	Timeout *next;
	gint64 due;
	sys_timeout_handler handler;
	void *arg;
};

/* All under the core lock. */
static Cyclic *cyclic;
static Timeout *timeouts;          /* by due time; equal ones in order added */
static gint64 dormant_looked_at = -DORMANT_LOOK_MS;  /* ms: asked first at once */
static gboolean tcp_resting = TRUE;  /* TCP's timer is not armed */
static gint64 sleeps_until = G_MAXINT64;  /* what the tcpip thread waits for */
static GThread *timers_thread;     /* atomic: the one thread that runs the timers */
static guint64 rounds;             /* sys_check_timeouts() calls that ran a timer */
static void (*after_round)(void);

static gint64
now_ms(void)
{
	return g_get_monotonic_time() / 1000;
}

#if LWIP_TCP
static gboolean
tcp_needed(void)
{
	return tcp_active_pcbs != NULL || tcp_tw_pcbs != NULL;
}
#endif

#if LWIP_IPV6 && LWIP_IPV6_MLD
static gboolean
mld6_needed(void)
{
	struct netif *netif;

	NETIF_FOREACH(netif) {
		for (struct mld_group *g = netif_mld6_data(netif); g; g = g->next)
			if (g->timer)
				return TRUE;
	}
	return FALSE;
}
#endif

#if LWIP_IPV4 && LWIP_DHCP
static gboolean
dhcp_fine_needed(void)
{
	struct netif *netif;

	NETIF_FOREACH(netif) {
		struct dhcp *dhcp = netif_dhcp_data(netif);

		if (dhcp && dhcp->request_timeout)
			return TRUE;
	}
	return FALSE;
}
#endif

static NeededFunc
needed_for(lwip_cyclic_timer_handler handler)
{
#if LWIP_TCP
	if (handler == tcp_tmr)
		return tcp_needed;
#endif
#if LWIP_IPV6 && LWIP_IPV6_MLD
	if (handler == mld6_tmr)
		return mld6_needed;
#endif
#if LWIP_IPV4 && LWIP_DHCP
	if (handler == dhcp_fine_tmr)
		return dhcp_fine_needed;
#endif
	return NULL;
}

void
sys_timeouts_init(void)
{
	gint64 now = now_ms();
	gboolean beat = FALSE;

	cyclic = g_new0(Cyclic, lwip_num_cyclic_timers);
	for (int i = 0; i < lwip_num_cyclic_timers; i++) {
		cyclic[i].needed = needed_for(lwip_cyclic_timers[i].handler);
#if LWIP_TCP
		cyclic[i].tcp = lwip_cyclic_timers[i].handler == tcp_tmr;
#endif
		cyclic[i].walks = cyclic[i].needed && !cyclic[i].tcp;
		/* The same start for all: equal intervals stay on one beat. */
		cyclic[i].armed = cyclic[i].needed == NULL;
		cyclic[i].due = now + lwip_cyclic_timers[i].interval_ms;
		beat = beat || cyclic[i].armed;
	}
	/* Resting timers whose work comes from other threads are looked at on
	 * the tcpip thread's rounds: some timer must always run (lwipopts.h
	 * keeps ARP and IPv6, whose timers do). */
	g_assert(beat);
}

/* Arms a resting timer whose work appeared (as lwIP's tcp_timer_needed()
 * does: one interval from now); returns the earliest due time. */
static gint64
next_due(gint64 now)
{
	gint64 next = timeouts ? timeouts->due : G_MAXINT64;
	gboolean look = now - dormant_looked_at >= DORMANT_LOOK_MS;

	if (look)
		dormant_looked_at = now;
	for (int i = 0; cyclic && i < lwip_num_cyclic_timers; i++) {
		Cyclic *c = &cyclic[i];

		/* A look put off comes back when due, not at the next beat. */
		if (!c->armed && c->walks && !look)
			next = MIN(next, dormant_looked_at + DORMANT_LOOK_MS);
		if (!c->armed && (look || !c->walks) && c->needed()) {
			c->armed = TRUE;
			if (c->tcp)
				tcp_resting = FALSE;
			c->due = now + lwip_cyclic_timers[i].interval_ms;
		}
		if (c->armed)
			next = MIN(next, c->due);
	}
	return next;
}

static void
timeout_add(u32_t msecs, sys_timeout_handler handler, void *arg)
{
	Timeout *t = g_new(Timeout, 1);
	Timeout **at = &timeouts;

	LWIP_ASSERT_CORE_LOCKED();
	t->due = now_ms() + msecs;
	t->handler = handler;
	t->arg = arg;
	while (*at && (*at)->due <= t->due)
		at = &(*at)->next;
	t->next = *at;
	*at = t;
}

#if LWIP_DEBUG_TIMERNAMES
void
sys_timeout_debug(u32_t msecs, sys_timeout_handler handler, void *arg, const char *handler_name)
{
	(void)handler_name;
	timeout_add(msecs, handler, arg);
}
#else
void
sys_timeout(u32_t msecs, sys_timeout_handler handler, void *arg)
{
	timeout_add(msecs, handler, arg);
}
#endif

void
sys_untimeout(sys_timeout_handler handler, void *arg)
{
	LWIP_ASSERT_CORE_LOCKED();
	for (Timeout **at = &timeouts; *at; at = &(*at)->next) {
		if ((*at)->handler == handler && (*at)->arg == arg) {
			Timeout *t = *at;

			*at = t->next;
			g_free(t);
			return;
		}
	}
}

void
sys_check_timeouts(void)
{
	gint64 now = now_ms();
	gboolean ran = FALSE;

	LWIP_ASSERT_CORE_LOCKED();
	for (int i = 0; cyclic && i < lwip_num_cyclic_timers; i++) {
		Cyclic *c = &cyclic[i];
		u32_t interval = lwip_cyclic_timers[i].interval_ms;

		if (!c->armed || c->due > now)
			continue;
		lwip_cyclic_timers[i].handler();
		ran = TRUE;
		if (c->needed && !c->needed()) {
			c->armed = FALSE;
			if (c->tcp)
				tcp_resting = TRUE;
			continue;
		}
		/* On the beat, unless a late round lost it (as lwIP's own). */
		c->due += interval;
		if (c->due <= now)
			c->due = now + interval;
	}
	/* A handler may add timeouts, due now or later: take them from the head. */
	while (timeouts && timeouts->due <= now) {
		Timeout *t = timeouts;

		timeouts = t->next;
		t->handler(t->arg);
		g_free(t);
		ran = TRUE;
	}
	if (!ran)
		return;
	rounds++;
	if (after_round)
		after_round();
}

void
ncm_lwip_timers_after_round(void (*func)(void))
{
	LWIP_ASSERT_CORE_LOCKED();
	after_round = func;
}

u32_t
sys_timeouts_sleeptime(void)
{
	gint64 now = now_ms();
	gint64 next;
	u32_t ms;

	LWIP_ASSERT_CORE_LOCKED();
	/* Once: a store per message would be a barrier per message. */
	if (g_atomic_pointer_get(&timers_thread) != g_thread_self())
		g_atomic_pointer_set(&timers_thread, g_thread_self());
	next = next_due(now);
	if (next <= now)
		ms = 0;
	else
		ms = (u32_t)MIN(next - now, (gint64)SLEEP_CAP_MS);
	sleeps_until = now + ms;
	return ms;
}

/*
 * On every release of the core lock by another thread, so without a clock
 * read and without walking lists (both cost the lwip path a tenth of its
 * throughput in the VM). A timeout added, or TCP's timer needed by a
 * connection begun (also by a SYN the link thread put in): the tcpip
 * thread wakes and arms it. MLD's and DHCP's timers, whose work comes from
 * another thread (a netif up, DHCP started, an MLD query or a DHCP offer
 * the link thread put in), wait for the tcpip thread's next round: its
 * next message, or the beat a second. A report or a retransmission may so
 * come up to a second late, which both protocols allow (MLD answers a
 * query after a random delay of up to 10 s by default).
 */
gboolean
ncm_lwip_timers_moved_earlier(void)
{
	GThread *thread = g_atomic_pointer_get(&timers_thread);
	gboolean earlier;

	if (!thread || g_thread_self() == thread)
		return FALSE;
	earlier = timeouts && timeouts->due < sleeps_until;
#if LWIP_TCP
	earlier = earlier || (tcp_resting && tcp_needed());
#endif
	if (!earlier)
		return FALSE;
	/* Once: the tcpip thread reads its deadline afresh when woken. */
	sleeps_until = G_MININT64;
	return TRUE;
}

gboolean
ncm_lwip_timers_is_thread(void)
{
	return g_atomic_pointer_get(&timers_thread) == g_thread_self();
}

guint64
ncm_lwip_timers_rounds(void)
{
	LWIP_ASSERT_CORE_LOCKED();
	return rounds;
}
