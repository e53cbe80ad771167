/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-netif.c: an lwIP Ethernet netif over an NcmLink: input batches, output packing, peer learning. */
#define G_LOG_DOMAIN "ncm-lwip"

#include <string.h>

#include "lwip/dhcp.h"
#include "lwip/dns.h"
#include "lwip/etharp.h"
#include "lwip/ethip6.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/tcpip.h"
#include "netif/ethernet.h"

#include "ncm-eth.h"
#include "ncm-flow.h"
#include "ncm-lwip-private.h"
#include "ncm-lwip-gro.h"
#include "ncm-lwip-outq.h"
#include "ncm-lwip-rxsum.h"
#include "ncm-lwip-timers.h"
#include "ncm-lwip-tso.h"
#include "ncm-sync.h"

/* Frames collected on the link thread before they enter lwIP under one
 * acquisition of the core lock; an NTB rarely carries more. */
#define RX_BATCH 64

/* Merging of received in-order TCP segments (ncm-lwip-gro.c); 0 in a
 * build for a before/after comparison (tests/bench/ab.sh). */
#ifndef NCM_LWIP_GRO
#define NCM_LWIP_GRO 1
#endif

/* A frame with more pieces than this is flattened first (rare: lwIP
 * chains headers + at most a few data pbufs). */
#define TX_MAX_VECTORS 16

struct _NcmLwipNetif {
	GObject parent;
	struct netif netif;
	NcmLink *link; /* NULL once removed */
	gboolean started;

	/* Core lock: output since the last drain was arranged. */
	gboolean out_pending;
	/* Frames lwIP output, as pbuf references, on their way to the link:
	 * sent by the thread that releases the core lock, or on writable
	 * after NCM_SEND_WOULD_BLOCK (ncm-lwip-outq.h). */
	NlwOutq outq;

	/* IP packets the link carries (its MTU), and the segment size lwIP
	 * builds over IPv4 (ncm-lwip-tso.h); equal without large segments. */
	guint link_mtu;
	guint super_mss;
	/* The draining thread's (ncm-lwip-outq.h): the frame being cut, the
	 * pieces of it sent, its IPv6 fragment ID, what the link said to the
	 * last piece, the pieces' headers, and a flat copy of a chained frame. */
	gpointer tx_item;
	gsize tx_next;
	guint32 tx_frag_id;
	NcmSendResult tx_result;
	guint8 tx_hdr[NLW_TSO_HDR_MAX];
	guint8 *tx_flat;

	/* Link thread only. */
	struct pbuf *rx_batch[RX_BATCH];
	gboolean rx_summed[RX_BATCH]; /* TCP checksum checked on the copy */
	guint rx_len;

	/* Peer learnt from ARP / ND; a leaf lock. */
	GMutex peer_lock;
	gboolean have_peer4, have_peer6;
	guint8 peer4[4], peer6[16];
	guint8 peer4_mac[6], peer6_mac[6];

	/* ::addresses-changed goes to the context that added the netif. Core
	 * lock: one emission already on its way there; none from removal on. */
	GMainContext *owner;
	gboolean addresses_posted;
	gboolean addresses_done;
};

/* Core lock: every netif we added. */
static GList *netifs;

/* Core lock: lwIP's one list of status callbacks, ours added once. */
static netif_ext_callback_t ext_status;

enum { SIGNAL_ADDRESSES_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_TYPE(NcmLwipNetif, ncm_lwip_netif, G_TYPE_OBJECT)

/* ---- Address changes -------------------------------------------------- */

/*
 * The emission on its way holds the netif weakly: a strong reference kept
 * it, its link and its device open past the owner's last unref until the
 * owner's context ran (never, for a program with no main loop).
 */
static gboolean
addresses_dispatch(gpointer data)
{
	GWeakRef *ref = data;
	g_autoptr(NcmLwipNetif) n = NULL;
	gboolean done;

	ncm_tsan_acquire(ref);
	n = g_weak_ref_get(ref);
	if (!n)
		return G_SOURCE_REMOVE;
	nlw_core_lock();
	n->addresses_posted = FALSE;
	done = n->addresses_done;
	nlw_core_unlock();
	/* One posted before the removal, and the netif still held elsewhere. */
	if (done)
		return G_SOURCE_REMOVE;
	g_signal_emit(n, signals[SIGNAL_ADDRESSES_CHANGED], 0);
	return G_SOURCE_REMOVE;
}

static void
addresses_ref_free(gpointer data)
{
	GWeakRef *ref = data;

	ncm_tsan_acquire(ref);
	g_weak_ref_clear(ref);
	g_free(ref);
}

/* Core lock held. Never once the netif is being removed or disposed
 * (addresses_done): it may be on its last reference. */
static void
addresses_post(NcmLwipNetif *n)
{
	GWeakRef *ref;
	GSource *source;

	if (n->addresses_posted || n->addresses_done)
		return;
	n->addresses_posted = TRUE;
	ref = g_new(GWeakRef, 1);
	g_weak_ref_init(ref, n);
	source = g_idle_source_new();
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, addresses_dispatch, ref, addresses_ref_free);
	ncm_tsan_release(ref);
	g_source_attach(source, n->owner);
	g_source_unref(source);
}

/* Any thread: no emission from now on. Before the last reference goes
 * (dispose), since a weak reference may not be taken after. */
static void
addresses_stop(NcmLwipNetif *n)
{
	nlw_core_lock();
	n->addresses_done = TRUE;
	nlw_core_unlock();
}

/*
 * Core lock held, on whichever thread changed the address (the tcpip
 * thread for DHCP, SLAAC and duplicate detection). Owners used to poll
 * ncm_lwip_netif_get_addresses(): a wake-up a second for as long as the
 * device stayed plugged in. Changes that come together (an address and
 * its state, DHCP's address, mask and gateway) make one emission.
 */
static void
netif_ext_status(struct netif *netif, netif_nsc_reason_t reason,
		 const netif_ext_callback_args_t *args)
{
	const netif_nsc_reason_t addressing =
	    LWIP_NSC_IPV4_ADDRESS_CHANGED | LWIP_NSC_IPV4_SETTINGS_CHANGED |
	    LWIP_NSC_IPV6_SET | LWIP_NSC_IPV6_ADDR_STATE_CHANGED | LWIP_NSC_STATUS_CHANGED;
	NcmLwipNetif *n = netif->state;

	(void)args;
	if ((reason & addressing) && g_list_find(netifs, n))
		addresses_post(n);
}

/*
 * The stack's DNS servers, which lwIP changes with no callback (DHCP, a
 * router advertisement's RDNSS, ncm_lwip_stack_set_dns_server()): looked at
 * after each round of timers, which runs once a second anyway (the tcpip
 * thread's own beat, no wake-up of its own), and told to every netif.
 */
static ip_addr_t dns_seen[DNS_MAX_SERVERS];

static void
dns_check(void)
{
	gboolean changed = FALSE;

	for (u8_t i = 0; i < DNS_MAX_SERVERS; i++) {
		const ip_addr_t *now = dns_getserver(i);

		if (!ip_addr_cmp(now, &dns_seen[i])) {
			ip_addr_copy(dns_seen[i], *now);
			changed = TRUE;
		}
	}
	if (!changed)
		return;
	for (GList *l = netifs; l; l = l->next)
		addresses_post(l->data);
}

/* ---- Output ---------------------------------------------------------------- */

/* lwIP builds segments larger than the link's frames (ncm-lwip-tso.h). */
static inline gboolean
large_segments(const NcmLwipNetif *n)
{
	return n->super_mss != n->link_mtu - 40;
}

/* One piece of a cut frame (nlw_tso_cut()). */
static gboolean
send_piece(gpointer data, const guint8 *hdr, gsize hdr_len, const guint8 *payload,
	   gsize payload_len)
{
	NcmLwipNetif *n = data;
	GOutputVector v[2] = {{hdr, hdr_len}, {payload, payload_len}};

	n->tx_result = ncm_link_sendv(n->link, v, payload_len > 0 ? 2 : 1);
	if (n->tx_result == NCM_SEND_OK)
		nlw_count(NLW_COUNT_TX_FRAMES, 1);
	return n->tx_result == NCM_SEND_OK;
}

/* Large segments: cuts and sums @p's frame; ASIS leaves it to the caller. */
static NlwTsoResult
send_cut(NcmLwipNetif *n, struct pbuf *p)
{
	guint8 *frame = p->payload;
	NlwTsoResult r;

	if (n->tx_item != p) {
		n->tx_item = p;
		n->tx_next = 0;
		n->tx_frag_id++;
	}
	if (p->next != NULL) {
		if (n->tx_flat == NULL)
			n->tx_flat = g_malloc(0xFFFF);
		frame = n->tx_flat;
		pbuf_copy_partial(p, frame, p->tot_len, 0);
	}
	r = nlw_tso_cut(frame, p->tot_len, n->link_mtu, n->tx_frag_id, n->tx_hdr, &n->tx_next,
			send_piece, n);
	/* A flattened frame that fits leaves from the copy, which has its sum. */
	if (r == NLW_TSO_ASIS && frame != p->payload)
		r = send_piece(n, frame, p->tot_len, NULL, 0) ? NLW_TSO_SENT : NLW_TSO_STOPPED;
	if (r == NLW_TSO_STOPPED && n->tx_result == NCM_SEND_WOULD_BLOCK)
		return r; /* resumes at tx_next: the queue sends it next (NLW_OUTQ_BLOCKED) */
	n->tx_item = NULL;
	if (r == NLW_TSO_STOPPED || r == NLW_TSO_INVALID)
		nlw_count(NLW_COUNT_TX_DROPS, 1);
	else if (r == NLW_TSO_SENT && n->tx_next > 1)
		nlw_count(NLW_COUNT_TX_CUT, 1);
	return r;
}

/*
 * A TCP segment's pbuf stays untouched while referenced here: lwIP skips a
 * segment whose pbuf has other references when it retransmits. So frames
 * are read, sent and freed without the core lock (pbuf_free() takes lwIP's
 * SYS_ARCH_PROTECT, as the readers' frees do).
 */
static NlwOutqSend
outq_send(gpointer item, gpointer data)
{
	NcmLwipNetif *n = data;
	struct pbuf *p = item;
	GOutputVector v[TX_MAX_VECTORS];
	struct pbuf *flat = NULL;
	NcmSendResult r;
	guint count = 0;

	if (large_segments(n)) {
		switch (send_cut(n, p)) {
		case NLW_TSO_SENT:
			return NLW_OUTQ_SENT;
		case NLW_TSO_STOPPED:
			return n->tx_result == NCM_SEND_WOULD_BLOCK ? NLW_OUTQ_BLOCKED
								   : NLW_OUTQ_DROPPED;
		case NLW_TSO_INVALID:
			return NLW_OUTQ_DROPPED;
		case NLW_TSO_ASIS:
			break;
		}
	}
	for (struct pbuf *q = p; q != NULL && count < TX_MAX_VECTORS; q = q->next)
		v[count++] = (GOutputVector){q->payload, q->len};
	if (pbuf_clen(p) > TX_MAX_VECTORS) {
		flat = pbuf_clone(PBUF_RAW, PBUF_RAM, p);
		if (flat == NULL) {
			nlw_count(NLW_COUNT_TX_DROPS, 1);
			return NLW_OUTQ_DROPPED;
		}
		v[0] = (GOutputVector){flat->payload, flat->len};
		count = 1;
	}
	r = ncm_link_sendv(n->link, v, count);
	if (flat != NULL)
		pbuf_free(flat);
	if (r == NCM_SEND_WOULD_BLOCK)
		return NLW_OUTQ_BLOCKED;
	nlw_count(r == NCM_SEND_OK ? NLW_COUNT_TX_FRAMES : NLW_COUNT_TX_DROPS, 1);
	return r == NCM_SEND_OK ? NLW_OUTQ_SENT : NLW_OUTQ_DROPPED;
}

static void
outq_free(gpointer item)
{
	pbuf_free(item);
}

static void
outq_flush(gpointer data)
{
	NcmLwipNetif *n = data;

	ncm_link_flush(n->link);
	nlw_count(NLW_COUNT_TX_FLUSHES, 1);
}

static const NlwOutqOps outq_ops = {
	.send = outq_send,
	.free = outq_free,
	.flush = outq_flush,
};

/* Core lock: netifs whose drain waits for the release of the lock. */
#define DRAIN_AFTER_MAX NLW_UNLOCK_MAX
static NcmLwipNetif *drain_after[DRAIN_AFTER_MAX];
static guint drain_after_len;

/* Core lock held: the batch's NLW_BATCH_FLUSH stage. A thread about to
 * release the core lock drains after it; the tcpip thread (timers, queued
 * input, callbacks) drains right away, as it keeps the lock. */
static void
netifs_flush(void)
{
	for (GList *l = netifs; l != NULL; l = l->next) {
		NcmLwipNetif *n = l->data;

		if (!n->out_pending)
			continue;
		n->out_pending = FALSE;
		if (nlw_core_unlocking() && drain_after_len < DRAIN_AFTER_MAX) {
			nlw_outq_hold(&n->outq);
			drain_after[drain_after_len++] = n;
		} else {
			nlw_outq_drain(&n->outq, &outq_ops, n);
		}
	}
}

/* Core lock held, about to be released: hands over the drains. */
static guint
netifs_take_drains(gpointer *ret, guint max)
{
	guint n = MIN(max, drain_after_len);

	memcpy(ret, drain_after, n * sizeof(*ret));
	/* max >= DRAIN_AFTER_MAX: nothing is left behind. */
	drain_after_len = 0;
	return n;
}

/* Core lock released. nlw_outq_close() waits for this before the netif's
 * link goes. */
static void
netif_drain_after(gpointer data)
{
	NcmLwipNetif *n = data;

	nlw_outq_drain_held(&n->outq, &outq_ops, n);
}

/* Core lock held. Output outside a batch (timers, queued input on the
 * tcpip thread) would otherwise wait for the link's last-resort timer. */
static void
mark_output(NcmLwipNetif *n)
{
	n->out_pending = TRUE;
	if (!nlw_in_batch())
		nlw_schedule_flush();
}

/* netif->linkoutput: core lock held. Never fails towards lwIP: a frame the
 * queue cannot take is dropped and counted (TCP retransmits). */
static err_t
netif_linkoutput(struct netif *netif, struct pbuf *p)
{
	NcmLwipNetif *n = netif->state;
	gboolean blocked;
	NlwOutqPush pushed;
	guint sparse_len;

	/* Data lwIP only lends for this call (PBUF_REF) is copied. */
	if (PBUF_NEEDS_COPY(p))
		p = pbuf_clone(PBUF_RAW, PBUF_RAM, p);
	else
		pbuf_ref(p);
	if (p == NULL) {
		nlw_count(NLW_COUNT_TX_DROPS, 1);
		return ERR_OK;
	}
	/* lwIP puts a frame's headers in its first pbuf. Pure ACKs keep their
	 * place in line: sent first, they cost lwip's tcp_bidir 0.84x at 1.16x
	 * the CPU per MB (tests/bench/RESULTS.md, session 25). */
	sparse_len = p->tot_len <= NCM_FLOW_SPARSE_MAX && !ncm_flow_is_pure_ack(p->payload, p->len)
			     ? p->tot_len
			     : 0;
	pushed = nlw_outq_push(&n->outq, p, ncm_flow_bucket(p->payload, p->len), sparse_len,
			       &blocked);
	if (pushed == NLW_OUTQ_PUSH_REFUSED) {
		pbuf_free(p);
		nlw_count(NLW_COUNT_TX_DROPS, 1);
		return ERR_OK;
	}
	if (blocked)
		nlw_count(NLW_COUNT_TX_QUEUED, 1);
	if (pushed == NLW_OUTQ_PUSH_AHEAD)
		nlw_count(NLW_COUNT_TX_SPARSE_AHEAD, 1);
	mark_output(n);
	return ERR_OK;
}

/* ---- Peer learning ----------------------------------------------------------- */

static void
learn(NcmLwipNetif *n, gboolean v6, const guint8 *ip, const guint8 *mac)
{
	guint8 *dst_ip = v6 ? n->peer6 : n->peer4;
	guint8 *dst_mac = v6 ? n->peer6_mac : n->peer4_mac;
	gsize ip_len = v6 ? 16 : 4;

	ncm_mutex_lock(&n->peer_lock);
	memcpy(dst_ip, ip, ip_len);
	memcpy(dst_mac, mac, NCM_ETH_ALEN);
	if (v6)
		n->have_peer6 = TRUE;
	else
		n->have_peer4 = TRUE;
	ncm_mutex_unlock(&n->peer_lock);
}

/* Link thread: records the sender of ARP packets and of ICMPv6 neighbour
 * discovery messages (router/neighbour solicitations and advertisements).
 * The frame is read in place, through the checked views; nothing is
 * allocated. */
static void
learn_peer(NcmLwipNetif *n, const guint8 *frame, gsize len)
{
	NcmEthView eth;
	NcmArpView arp;
	NcmNdView nd;

	if (!ncm_eth_view(&eth, frame, len))
		return;
	if (ncm_eth_arp(&eth, &arp)) {
		/* 0.0.0.0 probes say nothing. */
		if (memcmp(arp.spa, "\0\0\0\0", 4) != 0)
			learn(n, FALSE, arp.spa, arp.sha);
	} else if (ncm_eth_nd(&eth, &nd)) {
		/* Not redirects: a router sends those about others. */
		if (nd.type <= NCM_ND_NA && !ncm_ip6_is_unspecified(nd.src))
			learn(n, TRUE, nd.src, eth.src);
	}
}

gboolean
ncm_lwip_netif_get_peer(NcmLwipNetif *netif, GSocketFamily family, GInetAddress **ret_address,
			guint8 ret_mac[6])
{
	gboolean v6 = family == G_SOCKET_FAMILY_IPV6;
	gboolean have;

	ncm_mutex_lock(&netif->peer_lock);
	have = v6 ? netif->have_peer6 : netif->have_peer4;
	if (have && ret_address != NULL)
		*ret_address = g_inet_address_new_from_bytes(v6 ? netif->peer6 : netif->peer4,
							     family);
	if (have && ret_mac != NULL)
		memcpy(ret_mac, v6 ? netif->peer6_mac : netif->peer4_mac, 6);
	ncm_mutex_unlock(&netif->peer_lock);
	return have;
}

/* ---- Input (link thread) ---------------------------------------------------------- */

/*
 * Input runs on the link thread under the core lock, one lock hold per
 * batch of up to RX_BATCH frames (NCM_LWIP_INPUT_LOCKED, the default),
 * rather than as one tcpip_input() message per frame. Measured over TAP
 * (tests/unit/test-lwip-tap.c, NCM_LWIP_TAP_MIB=64, release build, 2-core
 * host shared with other jobs, 3 alternating runs each), Mbit/s:
 *   locked: kernel->lwIP 1015, 829, 550   lwIP->kernel 637, 525, 508
 *   queued: kernel->lwIP  421, 701, 537   lwIP->kernel 517, 650, 382
 * and on a busier host: locked 364, 390, 493 / 369, 210, 382; queued
 * 334, 280, 279 / 231, 192, 374.
 * Queueing costs a message, a mailbox hand-over and a thread wake-up per
 * frame; the lock is held for microseconds by writers (at most
 * NLW_CONN_WRITE_MAX bytes copied), so the link thread barely waits.
 */
static void
rx_drain(NcmLwipNetif *n)
{
	u16_t flags;

	if (n->rx_len == 0)
		return;
	if (NCM_LWIP_GRO) {
		guint64 merged = 0;

		n->rx_len = nlw_gro_merge(n->rx_batch, n->rx_summed, n->rx_len, &merged);
		nlw_count(NLW_COUNT_RX_MERGED, merged);
	}
	nlw_core_lock();
	flags = n->netif.chksum_flags;
	for (guint i = 0; i < n->rx_len; i++) {
		/* Per frame: tcp_input() reads the flags of the netif the
		 * frame came in on, within this call. */
		n->netif.chksum_flags = n->rx_summed[i] ? (u16_t)(flags & ~NETIF_CHECKSUM_CHECK_TCP)
							: flags;
		if (ethernet_input(n->rx_batch[i], &n->netif) != ERR_OK) {
			pbuf_free(n->rx_batch[i]);
			nlw_count(NLW_COUNT_RX_DROPS, 1);
		}
	}
	n->netif.chksum_flags = flags;
	n->rx_len = 0;
	nlw_core_unlock();
}

/* A peer's SYN that allows full link frames lets lwIP build large
 * segments (ncm-lwip-tso.h). */
static inline void
rx_syn(NcmLwipNetif *n, struct pbuf *p)
{
	if (large_segments(n))
		nlw_tso_rx_syn(p->payload, p->len, n->link_mtu, NCM_LWIP_TSO_SEGS, TCP_MSS);
}

static void
sink_receive(gpointer user_data, const guint8 *frame, gsize len)
{
	NcmLwipNetif *n = user_data;
	struct pbuf *p;

	learn_peer(n, frame, len);
	nlw_count(NLW_COUNT_RX_FRAMES, 1);
	/* The frame lives in the link's buffer only during this call. */
	p = len <= 0xFFFF ? pbuf_alloc(PBUF_RAW, (u16_t)len, PBUF_RAM) : NULL;
	if (p == NULL) {
		nlw_count(NLW_COUNT_RX_DROPS, 1);
		return;
	}
	if (nlw_input_mode() == NCM_LWIP_INPUT_QUEUED) {
		/* Summed later by lwIP: the tcpip thread cannot be told which
		 * queued frame was checked. */
		memcpy(p->payload, frame, len);
		rx_syn(n, p);
		if (tcpip_input(p, &n->netif) != ERR_OK) {
			pbuf_free(p);
			nlw_count(NLW_COUNT_RX_DROPS, 1);
		}
		return;
	}
	n->rx_summed[n->rx_len] = nlw_rx_copy_check(p->payload, frame, len);
	rx_syn(n, p);
	n->rx_batch[n->rx_len++] = p;
	if (n->rx_len == RX_BATCH)
		rx_drain(n);
}

static void
sink_receive_done(gpointer user_data)
{
	/* Queued input is flushed by the callback its output schedules. */
	rx_drain(user_data);
}

/* No core lock: the queue has its own. */
static void
sink_writable(gpointer user_data)
{
	NcmLwipNetif *n = user_data;

	nlw_outq_writable(&n->outq, &outq_ops, n);
}

static const NcmLinkSink netif_sink = {
	.receive = sink_receive,
	.receive_done = sink_receive_done,
	.writable = sink_writable,
};

/* ---- Set-up ------------------------------------------------------------------------- */

static err_t
netif_init_cb(struct netif *netif)
{
	NcmLwipNetif *n = netif->state;

	netif->name[0] = 'u';
	netif->name[1] = 'n';
	n->link_mtu = MIN(n->link->max_frame - NCM_ETH_HLEN, 0xFFFFu);
	/* lwIP caps its send MSS by the netif's MTUs: room for one large
	 * segment, whose frames the netif cuts (ncm-lwip-tso.h). */
	n->super_mss = nlw_tso_super_mss(n->link_mtu, FALSE, NCM_LWIP_TSO_SEGS, TCP_MSS);
	netif->mtu = (u16_t)MIN(n->super_mss + 40, 0xFFFFu);
	netif->mtu6 = (u16_t)MIN(
	    nlw_tso_super_mss(n->link_mtu, TRUE, NCM_LWIP_TSO_SEGS, TCP_MSS) + 60, 0xFFFFu);
	if (large_segments(n))
		NETIF_SET_CHECKSUM_CTRL(netif, NETIF_CHECKSUM_ENABLE_ALL & ~NETIF_CHECKSUM_GEN_TCP);
	netif->hwaddr_len = ETH_HWADDR_LEN;
	memcpy(netif->hwaddr, n->link->mac, ETH_HWADDR_LEN);
	netif->flags =
	    NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET | NETIF_FLAG_MLD6;
	netif->output = etharp_output;
	netif->output_ip6 = ethip6_output;
	netif->linkoutput = netif_linkoutput;
	return ERR_OK;
}

void
ncm_lwip_netif_config_init(NcmLwipNetifConfig *config)
{
	*config = (NcmLwipNetifConfig){
		.ipv6_link_local = TRUE,
		.ipv6_dad = TRUE,
		.ipv6_slaac = TRUE,
	};
}

/* Core lock held. */
static void
add_ip6(NcmLwipNetif *n, const NcmLwipNetifConfig *config)
{
	s8_t idx;

	if (config->ipv6_link_local) {
		netif_create_ip6_linklocal_address(&n->netif, 1);
		if (!config->ipv6_dad)
			netif_ip6_addr_set_state(&n->netif, 0, IP6_ADDR_PREFERRED);
	}
	if (config->ipv6 != NULL) {
		ip_addr_t ip;

		nlw_addr_from_gio(config->ipv6, &ip);
		if (netif_add_ip6_address(&n->netif, ip_2_ip6(&ip), &idx) == ERR_OK &&
		    !config->ipv6_dad)
			netif_ip6_addr_set_state(&n->netif, idx, IP6_ADDR_PREFERRED);
	}
	netif_set_ip6_autoconfig_enabled(&n->netif, config->ipv6_slaac ? 1 : 0);
}

static gboolean
check_config(NcmLink *link, const NcmLwipNetifConfig *config, GError **error)
{
	if (config->ipv4 != NULL && g_inet_address_get_family(config->ipv4) != G_SOCKET_FAMILY_IPV4)
		goto bad;
	if (config->ipv4_gateway != NULL &&
	    g_inet_address_get_family(config->ipv4_gateway) != G_SOCKET_FAMILY_IPV4)
		goto bad;
	if (config->ipv6 != NULL && g_inet_address_get_family(config->ipv6) != G_SOCKET_FAMILY_IPV6)
		goto bad;
	if (config->ipv4_prefix > 32)
		goto bad;
	if (link->max_frame < NCM_ETH_HLEN + 576) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "link frames of %u bytes are too small for IP", link->max_frame);
		return FALSE;
	}
	return TRUE;
bad:
	g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "netif config: ipv4 and ipv4_gateway must be IPv4 addresses with a "
			    "prefix of at most 32, ipv6 an IPv6 address");
	return FALSE;
}

/* @config's IPv4 settings as lwIP wants them (zeros for none). */
static void
config_ipv4(const NcmLwipNetifConfig *config, ip_addr_t *addr, ip_addr_t *mask, ip_addr_t *gw)
{
	guint prefix = config->ipv4_prefix ? config->ipv4_prefix : 24;

	ip_addr_set_zero_ip4(addr);
	ip_addr_set_zero_ip4(mask);
	ip_addr_set_zero_ip4(gw);
	if (config->ipv4 != NULL) {
		nlw_addr_from_gio(config->ipv4, addr);
		ip_2_ip4(mask)->addr = lwip_htonl(0xFFFFFFFFu << (32 - prefix));
	}
	if (config->ipv4_gateway != NULL)
		nlw_addr_from_gio(config->ipv4_gateway, gw);
}

/* Core lock held. */
static gboolean
netif_add_locked(NcmLwipNetif *n, const NcmLwipNetifConfig *config)
{
	ip_addr_t addr, mask, gw;

	config_ipv4(config, &addr, &mask, &gw);
	if (netif_add(&n->netif, ip_2_ip4(&addr), ip_2_ip4(&mask), ip_2_ip4(&gw), n,
		      netif_init_cb, tcpip_input) == NULL)
		return FALSE;
	add_ip6(n, config);
	nlw_batch_on_end(NLW_BATCH_FLUSH, netifs_flush);
	nlw_core_on_unlock(netifs_take_drains, netif_drain_after);
	if (ext_status.callback_fn == NULL) {
		netif_add_ext_callback(&ext_status, netif_ext_status);
		ncm_lwip_timers_after_round(dns_check);
	}
	netifs = g_list_append(netifs, n);
	return TRUE;
}

/* Core lock held. */
static void
netif_up_locked(NcmLwipNetif *n, const NcmLwipNetifConfig *config)
{
	if (config->make_default || config->ipv4_gateway != NULL || netif_default == NULL)
		netif_set_default(&n->netif);
	netif_set_up(&n->netif);
	netif_set_link_up(&n->netif);
	if (config->ipv4 == NULL && config->dhcp)
		dhcp_start(&n->netif);
}

NcmLwipNetif *
ncm_lwip_netif_add(NcmLwipStack *stack, NcmLink *link, const NcmLwipNetifConfig *config,
		   GError **error)
{
	NcmLwipNetif *n;
	gboolean added;

	g_return_val_if_fail(NCM_LWIP_IS_STACK(stack), NULL);
	if (!check_config(link, config, error)) {
		ncm_link_free(link);
		return NULL;
	}
	n = g_object_new(NCM_LWIP_TYPE_NETIF, NULL);
	n->link = link;
	n->owner = g_main_context_ref_thread_default();
	nlw_core_lock();
	added = netif_add_locked(n, config);
	nlw_core_unlock();
	if (!added) {
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED, "lwIP refused the netif, which our init never makes it do: please report this");
		g_object_unref(n);
		return NULL;
	}
	/* Frames may arrive as soon as the link starts: the netif exists, but
	 * it is down and drops them until it is up below. */
	link->ops->set_sink(link, &netif_sink, n);
	/* sink_writable() refills from the output queue, so one call per
	 * burst of OUT completions refills every freed slot in one drain
	 * (under the core lock until session 14): tcp_up 1.19x at 0.85x the
	 * CPU per MB over six rounds (tests/bench/RESULTS.md, 2026-12-04,
	 * branch wbatch15). */
	ncm_link_set_writable_batched(link, TRUE);
	if (!link->ops->start(link, error)) {
		g_object_unref(n);
		return NULL;
	}
	n->started = TRUE;
	nlw_core_lock();
	netif_up_locked(n, config);
	nlw_core_unlock();
	return n;
}

NcmLwipNetif *
ncm_lwip_stack_add_device(NcmLwipStack *self, NcmDevice *device, const NcmLwipNetifConfig *config,
			  GError **error)
{
	NcmLwipNetifConfig defaults;

	g_return_val_if_fail(NCM_LWIP_IS_STACK(self), NULL);
	g_return_val_if_fail(NCM_IS_DEVICE(device), NULL);
	if (config == NULL) {
		ncm_lwip_netif_config_init(&defaults);
		config = &defaults;
	}
	return ncm_lwip_netif_add(self, ncm_link_new_for_device(device), config, error);
}

gboolean
ncm_lwip_netif_set_ipv4(NcmLwipNetif *netif, GInetAddress *address, guint prefix,
			GInetAddress *gateway, GError **error)
{
	NcmLwipNetifConfig config;
	ip_addr_t addr, mask, gw;
	gboolean ok;

	g_return_val_if_fail(NCM_LWIP_IS_NETIF(netif), FALSE);
	ncm_lwip_netif_config_init(&config);
	config.ipv4 = address;
	config.ipv4_prefix = prefix;
	config.ipv4_gateway = gateway;
	/* Any thread, beside a remove() on another: that takes the netif off
	 * the list under the core lock before its link goes, so a netif still
	 * listed under the lock has its link. */
	nlw_core_lock();
	if (g_list_find(netifs, netif) == NULL) {
		nlw_core_unlock();
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "the netif was removed");
		return FALSE;
	}
	ok = check_config(netif->link, &config, error);
	if (ok) {
		config_ipv4(&config, &addr, &mask, &gw);
		netif_set_addr(&netif->netif, ip_2_ip4(&addr), ip_2_ip4(&mask), ip_2_ip4(&gw));
	}
	nlw_core_unlock();
	return ok;
}

void
ncm_lwip_netif_remove(NcmLwipNetif *n)
{
	g_return_if_fail(NCM_LWIP_IS_NETIF(n));
	if (n->link == NULL)
		return;
	addresses_stop(n);
	/* No sink callback may run once the netif is gone, and no frame it
	 * queued to the tcpip thread may wait there. */
	if (n->started)
		n->link->ops->stop(n->link);
	nlw_tcpip_barrier();
	nlw_core_lock();
	if (g_list_find(netifs, n) != NULL) {
		/* First: going down tells netif_ext_status(), which must not
		 * post a netif that may be finalizing. */
		netifs = g_list_remove(netifs, n);
		dhcp_stop(&n->netif);
		/* dhcp_stop() keeps the client's state for a restart; free it. */
		dhcp_cleanup(&n->netif);
		netif_set_down(&n->netif);
		netif_remove(&n->netif);
	}
	n->out_pending = FALSE;
	nlw_core_unlock();
	/* Threads that took a drain before the netif left the list finish
	 * it before the link goes; the queue's frames are freed with it. */
	nlw_outq_close(&n->outq);
	for (guint i = 0; i < n->rx_len; i++)
		pbuf_free(n->rx_batch[i]);
	n->rx_len = 0;
	ncm_link_free(n->link);
	n->link = NULL;
}

static void
netif_dispose(GObject *object)
{
	addresses_stop(NCM_LWIP_NETIF(object));
	G_OBJECT_CLASS(ncm_lwip_netif_parent_class)->dispose(object);
}

static void
netif_finalize(GObject *object)
{
	NcmLwipNetif *n = NCM_LWIP_NETIF(object);

	ncm_lwip_netif_remove(n);
	nlw_outq_clear(&n->outq, outq_free);
	g_free(n->tx_flat);
	g_mutex_clear(&n->peer_lock);
	if (n->owner)
		g_main_context_unref(n->owner);
	G_OBJECT_CLASS(ncm_lwip_netif_parent_class)->finalize(object);
}

static void
ncm_lwip_netif_init(NcmLwipNetif *n)
{
	g_mutex_init(&n->peer_lock);
	nlw_outq_init(&n->outq, NCM_LWIP_TXQ_LEN);
}

static void
ncm_lwip_netif_class_init(NcmLwipNetifClass *klass)
{
	G_OBJECT_CLASS(klass)->dispose = netif_dispose;
	G_OBJECT_CLASS(klass)->finalize = netif_finalize;
	signals[SIGNAL_ADDRESSES_CHANGED] =
	    g_signal_new("addresses-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
			 NULL, NULL, NULL, G_TYPE_NONE, 0);
}

guint
ncm_lwip_netif_get_index(NcmLwipNetif *netif)
{
	guint index;

	nlw_core_lock();
	index = netif_get_index(&netif->netif);
	nlw_core_unlock();
	return index;
}

GList *
ncm_lwip_netif_get_addresses(NcmLwipNetif *netif)
{
	struct netif *nif = &netif->netif;
	GList *list = NULL;

	nlw_core_lock();
	if (!ip4_addr_isany_val(*netif_ip4_addr(nif)))
		list = g_list_append(list, nlw_addr_to_gio(netif_ip_addr4(nif)));
	for (int i = 0; i < LWIP_IPV6_NUM_ADDRESSES; i++) {
		if (ip6_addr_isvalid(netif_ip6_addr_state(nif, i)))
			list = g_list_append(list, nlw_addr_to_gio(netif_ip_addr6(nif, i)));
	}
	nlw_core_unlock();
	return list;
}
