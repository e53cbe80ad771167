/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lwipopts.h: libncm's lwIP 2.1.x configuration, tuned for bulk TCP over one USB link. */

/*
 * The goal is to keep a USB 2.0/3.x NCM link full with a single TCP flow, so
 * windows and send buffers are megabytes, not the kilobytes of lwIP's
 * embedded defaults; memory comes from malloc instead of fixed pools.
 *
 * Callers beware, lwIP 2.1.x keeps 16-bit interfaces at the edges:
 *  - tcp_sndbuf() is clamped to 0xFFFF even though snd_buf is 32-bit here,
 *    and tcp_write() takes a u16_t length: write in chunks of at most
 *    tcp_sndbuf() bytes and refill from the tcp_sent callback;
 *  - tcp_recved() takes a u16_t: credit large amounts with
 *    ncm_lwip_recved_chunked() from ncm-lwip-chunk.h.
 *
 * Threads: NO_SYS=0 with the tcpip thread and core locking. The raw API runs
 * on the tcpip thread or under LOCK_TCPIP_CORE(); with LWIP_ASSERT_CORE_LOCKED
 * below, lwIP aborts when that rule is broken.
 *
 * Memory barriers: lwIP 2.1 has no barrier hook. Every hand-over between
 * threads goes through sys_arch (core lock, mbox, semaphore), whose GMutex
 * acquire/release orders memory, so no extra fences are needed.
 *
 * Debug output: LWIP_DEBUG is tested with #ifdef by lwIP, so it is left
 * undefined here rather than set to 0; define it on the command line to get
 * LWIP_PLATFORM_DIAG output through g_log (domain "ncm-lwip").
 */
#ifndef NCM_LWIPOPTS_H
#define NCM_LWIPOPTS_H

/* ---- Operating system ---------------------------------------------------- */

/* We run lwIP's tcpip thread and its timers on GLib threads (sys_arch.c). */
#define NO_SYS 0

/* Threads touch pbuf reference counts and stats outside the core lock
 * (pbuf_free from a USB thread); sys_arch_protect() guards those. */
#define SYS_LIGHTWEIGHT_PROT 1

/* One mutex instead of message passing for API calls: a raw-API call costs a
 * lock, not a round trip to the tcpip thread. */
#define LWIP_TCPIP_CORE_LOCKING 1

/* 0: tcpip_input() only queues the frame for the tcpip thread. The caller is
 * the libusb event thread, which must never block; with 1 it would wait for
 * the core lock behind any application call. Costs one hand-over per frame. */
#define LWIP_TCPIP_CORE_LOCKING_INPUT 0

/* Our timeouts (ncm-lwip-timers.c): lwIP's own run its cyclic timers for
 * ever, and woke an idle stack ten times a second. */
#define LWIP_TIMERS_CUSTOM 1

/* The tcpip mbox carries every received frame (see above); it must hold a
 * whole receive window of MSS-sized frames (1 MiB / 1460 = 719) plus ACKs,
 * or frames are dropped when the tcpip thread falls behind a burst. */
#define TCPIP_MBOX_SIZE 4096

/* Thread names show up in gdb and /proc; GLib truncates to 15 characters. */
#define TCPIP_THREAD_NAME "ncm-lwip-tcpip"

/* GLib picks the stack size; lwIP only passes this through to sys_thread_new. */
#define TCPIP_THREAD_STACKSIZE 0

/* GLib threads have no priorities; passed through and ignored. */
#define TCPIP_THREAD_PRIO 0

/* Every raw-API entry point checks that the caller holds the core lock
 * (sys_arch.c tracks the owner of each sys_mutex) and names itself when
 * the check fails. */
#define LWIP_ASSERT_CORE_LOCKED() ncm_lwip_assert_core_locked(__func__)
void ncm_lwip_assert_core_locked(const char *function);

/* ---- Memory -------------------------------------------------------------- */

/* mem_malloc() is malloc(): no fixed heap to size for megabyte windows, and
 * ASan sees every lwIP allocation... */
#define MEM_LIBC_MALLOC 1

/* ...through ncm-lwip-mem.c, which keeps freed frame-sized blocks for the
 * next pbuf: glibc's per-thread cache stops short of them. */
#include <stddef.h>
void *nlw_mem_malloc(size_t size);
void *nlw_mem_calloc(size_t count, size_t size);
void nlw_mem_free(void *mem);
#define mem_clib_malloc nlw_mem_malloc
#define mem_clib_calloc nlw_mem_calloc
#define mem_clib_free nlw_mem_free

/* Pools (pbufs, segments, pcbs) come from mem_malloc() too. Fixed pools
 * would cap the data in flight at compile time: a 1 MiB send buffer alone
 * needs ~720 segments and pbufs per connection. */
#define MEMP_MEM_MALLOC 1

/* Pointer size on 64-bit hosts, so pbuf payloads and lwIP's structs that
 * follow them in one allocation stay naturally aligned. */
#define MEM_ALIGNMENT 8

/* Unused with MEM_LIBC_MALLOC; sized for one window in case it is turned off. */
#define MEM_SIZE (8 * 1024 * 1024)

/* Only a pool count when MEMP_MEM_MALLOC is off (then: a 4 MiB receive
 * window of MSS-sized pbufs); with malloc pools it caps nothing. */
#define PBUF_POOL_SIZE 3072

/* No 2-byte pad in front of Ethernet headers: x86-64 and arm64 read the then
 * unaligned IP header at no cost, and the NTB code copies plain frames. */
#define ETH_PAD_SIZE 0

/* ---- Link layer ---------------------------------------------------------- */

/* NCM carries Ethernet frames. */
#define LWIP_ETHERNET 1

/* IPv4 over Ethernet needs ARP. */
#define LWIP_ARP 1

/* Hold the first packets of a connection while ARP resolves the peer rather
 * than dropping them and waiting for a TCP retransmission. */
#define ARP_QUEUEING 1

/* Several NCM devices may be attached at once. */
#define LWIP_SINGLE_NETIF 0

/* No loopback interface: it would be added from lwip_init() outside the core
 * lock, and applications reach localhost through the host's own stack. */
#define LWIP_HAVE_LOOPIF 0

/* No loopback through the netif either: traffic to our own address has no
 * use on a USB link. */
#define LWIP_NETIF_LOOPBACK 0

/* Carrier changes come from NCM NETWORK_CONNECTION notifications. */
#define LWIP_NETIF_LINK_CALLBACK 1

/* The netstack reports interface up/down to its owner. */
#define LWIP_NETIF_STATUS_CALLBACK 1

/* Address changes (SLAAC, DHCP) are reported to the netstack's owner. */
#define LWIP_NETIF_EXT_STATUS_CALLBACK 1

/* DHCP needs no host name, and nobody resolves ours. */
#define LWIP_NETIF_HOSTNAME 0

/* ---- IPv4 ---------------------------------------------------------------- */

/* Phones, modems and Linux gadgets all speak IPv4. */
#define LWIP_IPV4 1

/* ICMP echo answers make the link debuggable with ping from the device. */
#define LWIP_ICMP 1

/* NCM devices (tethering phones, modems, dnsmasq on a gadget) lease IPv4
 * addresses by DHCP. */
#define LWIP_DHCP 1

/* DHCP runs over UDP, and so do applications' datagram sockets. */
#define LWIP_UDP 1

/* Link-local IPv4 is of no use on a point-to-point USB link. */
#define LWIP_AUTOIP 0

/* No multicast groups for IPv4 applications. */
#define LWIP_IGMP 0

/* No raw IP sockets. */
#define LWIP_RAW 0

/* Names resolve through the device (ncm-lwip-dns.c): a program behind the
 * device (ncm-proxy's SOCKS clients) must reach the device's DNS server, not
 * the host's. lwIP's client takes its servers from DHCP and RDNSS too. */
#define LWIP_DNS 1

/* Names cached and looked up at once; each outstanding lookup also holds a
 * random source port (LWIP_DNS_SECURE's default). More at once are refused
 * with ERR_MEM, which the caller reports as a temporary failure. */
#define DNS_TABLE_SIZE 32

/* Fragments held for reassembly, IPv4 and IPv6 each, over all datagrams:
 * lwIP's 10 took UDP datagrams of about 14 KB (IPv4) and 11.5 KB (IPv6),
 * and a 64 KiB one needs 45 to 46. 256 takes a few at once; a peer that
 * sends fragments and never finishes holds at most ~400 KB for
 * IP_REASS_MAXAGE (15 s). */
#define IP_REASS_MAX_PBUFS 256

/* ---- IPv6 ---------------------------------------------------------------- */

/* Some devices (Apple's, carrier modems) prefer or only offer IPv6. */
#define LWIP_IPV6 1

/* SLAAC from the device's router advertisements: no DHCPv6 needed. */
#define LWIP_IPV6_AUTOCONFIG 1

/* Ask for a router advertisement at link-up instead of waiting minutes. */
#define LWIP_IPV6_SEND_ROUTER_SOLICIT 1

/* Devices with multicast filters (NCM packet filter) deliver solicited-node
 * neighbour solicitations only to MLD listeners. */
#define LWIP_IPV6_MLD 1

/* RFC 4862's default of one probe: the device may bridge the link to a
 * LAN, so duplicates are possible, but one probe costs only ~1 s. */
#define LWIP_IPV6_DUP_DETECT_ATTEMPTS 1

/* Link-local plus a SLAAC address per advertised prefix. */
#define LWIP_IPV6_NUM_ADDRESSES 3

/* DNS servers from router advertisements (RFC 8106 RDNSS), as many as
 * lwIP's DNS client holds. */
#define LWIP_ND6_RDNSS_MAX_DNS_SERVERS 2

/* Stateless configuration covers NCM devices; no DHCPv6 client. */
#define LWIP_IPV6_DHCP6 0

/* Required on 64-bit hosts: lwIP's fragment bookkeeping holds a pointer
 * and no longer fits into the 8-byte fragment header it overwrites. */
#define IPV6_FRAG_COPYHEADER 1

/* ---- TCP ----------------------------------------------------------------- */

/* The point of the in-process stack. */
#define LWIP_TCP 1

/* Ethernet MTU 1500 - 20 (IP) - 20 (TCP); NCM carries 1514-byte frames. */
#define NCM_LWIP_LINK_MSS 1460

/* Link-sized segments one lwIP TCP segment over IPv4 may carry: lwIP's
 * cost is per segment (tcp_write()'s allocations, tcp_output() and the IP
 * layer, and tcp_output()'s walk of the unacked list on every ACK, which
 * is as long as the segments in flight), and the netif cuts its large
 * segments into frames of the link's size on their way to the device
 * (ncm-lwip-tso.c), as the kernel's TSO does. 1 = off. Side by side in
 * two VM boots (tests/bench/RESULTS.md, session 23): tcp_up 1.24x and
 * 1.13x at 0.87x and 0.97x the CPU per MB, tcp_bidir 1.30x and 1.16x;
 * 4 did as well in one boot and less in the other. lwIP then counts its
 * congestion window in these segments: the initial window is two of
 * them, and it grows by one per round trip in congestion avoidance. At
 * most 10: init.c wants TCP_SNDLOWAT 4 * TCP_MSS below 0xFFFF. -D
 * overrides it for comparisons. */
#ifndef NCM_LWIP_TSO_SEGS
#define NCM_LWIP_TSO_SEGS 8
#endif
#if NCM_LWIP_TSO_SEGS < 1 || NCM_LWIP_TSO_SEGS > 10
#error "NCM_LWIP_TSO_SEGS must be 1 to 10"
#endif

/* The largest segment lwIP builds; the MSS a peer announces is raised to
 * it on IPv4 when it allows full frames (ncm-lwip-tso.c). */
#define TCP_MSS (NCM_LWIP_TSO_SEGS * NCM_LWIP_LINK_MSS)

/* 1 MiB receive window: several times the link's bandwidth-delay product
 * (see TCP_SND_BUF), so the sender is not held back, without letting it
 * queue megabytes in the device and the USB path. Measured against 4 MiB
 * in two VM boots (tests/bench/ab.sh, 3 rounds each, paired medians):
 * tcp_down 1.52x and 2.29x throughput at 0.66x and 0.50x CPU per MB,
 * tcp_up 2.70x and 1.42x, tcp_bidir 0.84x and 1.34x. -D overrides it. */
#ifndef TCP_WND
#define TCP_WND (1024 * 1024)
#endif

/* A window update of its own only when reading opened a quarter window
 * (lwIP's default: 4 MSS, which with a 4 MiB window meant one pure ACK to
 * the peer for nearly every read). The ACKs that data gets carry the
 * window anyway; this is for a reader that let the window close. */
#define TCP_WND_UPDATE_THRESHOLD (TCP_WND / 4)

/* Windows above 64 KiB need RFC 7323 window scaling. */
#define LWIP_WND_SCALE 1

/* Fits TCP_WND into the 16-bit header field with room to spare: 5 would
 * do for 1 MiB (0xFFFF << 4 is 16 bytes short), 7 leaves a -DTCP_WND of up
 * to 8 MiB valid and is what was measured. */
#define TCP_RCV_SCALE 7

/* Send buffer: a few times a USB link's bandwidth-delay product (~400
 * Mbit/s x 1-5 ms = 50-250 KB), not more. lwIP 2.1's tcp_output() walks
 * the whole unacked list on every call, and tcp_write() the unsent list,
 * so each ACK costs time in proportion to the buffer. Measured in one VM
 * boot against 4 MiB (tests/bench/ab.sh, 3 rounds, paired medians):
 * tcp_up 1.30x throughput at 0.74x CPU per MB with 1 MiB, 1.51x at 0.75x
 * with 512 KiB, 0.94x at 1.01x with 256 KiB (too small). 1 MiB leaves room
 * for USB 3 rates. -D overrides it for such comparisons. */
#ifndef TCP_SND_BUF
#define TCP_SND_BUF (1024 * 1024)
#endif

/* pbufs queued per connection: up to two per segment (header + data for
 * non-copied writes) with slack for small writes; must stay < 0xFFFF. */
#define TCP_SND_QUEUELEN ((4 * (TCP_SND_BUF) + (NCM_LWIP_LINK_MSS - 1)) / (NCM_LWIP_LINK_MSS))

/* Only a pool size when MEMP_MEM_MALLOC is off; matches TCP_SND_QUEUELEN so
 * init.c's sanity check holds either way. */
#define MEMP_NUM_TCP_SEG TCP_SND_QUEUELEN

/* Writability threshold used only by netconn/sockets (off here), but init.c
 * requires it 4 * MSS below 0xFFFF, and the default (half of TCP_SND_BUF)
 * is not. */
#define TCP_SNDLOWAT (NCM_LWIP_LINK_MSS)

/* netconn's writability threshold in pbufs, kept below TCP_SND_QUEUELEN. */
#define TCP_SNDQUEUELOWAT ((TCP_SND_QUEUELEN) / 2)

/* Keep out-of-order segments: with megabyte windows a single loss would
 * otherwise throw away a window's worth of data. */
#define TCP_QUEUE_OOSEQ 1
/* ... but bounded: pools are malloc-backed here, so nothing else limits
 * what a peer sending many tiny out-of-order segments makes us hold. Each
 * pbuf costs its segment plus ~100 bytes; 4096 of them is over a window of
 * full-size segments and at most a few MB per connection of tiny ones. */
#define TCP_OOSEQ_MAX_BYTES TCP_WND
#define TCP_OOSEQ_MAX_PBUFS 4096

/* Honour listen backlogs: without it a SYN flood creates half-open pcbs
 * without bound (walked linearly under the core lock the USB thread needs);
 * with it each listener keeps at most its backlog (255) in SYN_RCVD. */
#define TCP_LISTEN_BACKLOG 1

/* ... and when a listener's backlog is full, a new SYN drops its oldest
 * half-open connection instead of being dropped itself, so that a spoofed
 * SYN flood does not shut real clients out for the 20 s a half-open
 * connection lives (ncm-lwip-backlog.c). */
#define LWIP_HOOK_FILENAME "ncm-lwip-hooks.h"
#define LWIP_HOOK_TCP_INPACKET_PCB(pcb, hdr, optlen, opt1len, opt2, p) \
	ncm_lwip_tcp_inpacket(pcb, hdr, optlen, opt1len, opt2, p)

/* Tell the sender what we hold (SACK) so it resends only the holes. */
#define LWIP_TCP_SACK_OUT 1

/* lwIP samples RTT without timestamps, and a USB link does not reorder
 * packets across a sequence wrap; the option would cost 12 bytes a segment. */
#define LWIP_TCP_TIMESTAMPS 0

/* Lets the netstack set keepalive per pcb (SOF_KEEPALIVE, keep_idle...) to
 * notice a peer behind the device that vanished without a FIN. */
#define LWIP_TCP_KEEPALIVE 1

/* ---- Checksums ----------------------------------------------------------- */

/* The link (USB CRC) is not end to end: the device may route our packets,
 * so generate every checksum... */
#define CHECKSUM_GEN_IP 1
#define CHECKSUM_GEN_UDP 1
#define CHECKSUM_GEN_TCP 1
#define CHECKSUM_GEN_ICMP 1
#define CHECKSUM_GEN_ICMP6 1

/* ...and check every checksum on input, for the same reason. */
#define CHECKSUM_CHECK_IP 1
#define CHECKSUM_CHECK_UDP 1
#define CHECKSUM_CHECK_TCP 1
#define CHECKSUM_CHECK_ICMP 1
#define CHECKSUM_CHECK_ICMP6 1

/* A netif may switch checks off (a trusted in-memory peer in tests, or a
 * device that verifies checksums itself). */
#define LWIP_CHECKSUM_CTRL_PER_NETIF 1

/* tcp_write() with TCP_WRITE_FLAG_COPY sums the data while copying it,
 * saving a second pass over every byte sent. Not with large segments: the
 * netif sums each frame it cuts from them, and lwIP's TCP checksums are
 * off on its netifs (ncm-lwip-tso.c). */
#define LWIP_CHECKSUM_ON_COPY (NCM_LWIP_TSO_SEGS == 1)

/* lwIP's sums on ours (ncm-lwip-csum.c): whole 64-bit words. */
#include <stdint.h>
uint16_t ncm_lwip_chksum(const void *data, int len);
uint16_t ncm_lwip_chksum_copy(void *dst, const void *src, uint16_t len);
#define LWIP_CHKSUM ncm_lwip_chksum
#define LWIP_CHKSUM_COPY(dst, src, len) ncm_lwip_chksum_copy(dst, src, len)
/* lwIP's own 32-bit loop is still built: unit test lwip-csum checks ours
 * against it, and bench-csum times both. */
#define LWIP_CHKSUM_ALGORITHM 3
uint16_t lwip_standard_chksum(const void *dataptr, int len);

/* ---- APIs ---------------------------------------------------------------- */

/* Raw API plus the tcpip thread; no BSD sockets (they would clash with the
 * host's) ... */
#define LWIP_SOCKET 0

/* ... and no netconn layer, whose per-call message passing we do not need. */
#define LWIP_NETCONN 0

/* netifapi wraps calls in messages; core locking makes it unnecessary. */
#define LWIP_NETIF_API 0

/* Keep htons() and friends out of lwIP's headers: code that includes both
 * lwIP and <arpa/inet.h> would otherwise see two definitions. */
#define LWIP_DONT_PROVIDE_BYTEORDER_FUNCTIONS 1

/* ---- Statistics ---------------------------------------------------------- */

/* Per-protocol counters (drops, checksum errors, retransmits) are how a
 * throughput problem gets diagnosed; they are updated under the core lock. */
#define LWIP_STATS 1

/* Printing belongs to the caller, through the counters. */
#define LWIP_STATS_DISPLAY 0

/* Heap and pool counters would only mirror malloc here (MEMP_MEM_MALLOC), and
 * are touched by whichever thread frees a pbuf; ASan and heaptrack see more. */
#define MEM_STATS 0
#define MEMP_STATS 0

/* sys_arch object counters have no users. */
#define SYS_STATS 0

#endif /* NCM_LWIPOPTS_H */
