/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ffs-ncm.c: a programmable CDC-NCM device for the VM: FunctionFS on ep0..epN, a TAP on the other side, every received NTB checked. */

/*
 * The test gadget. It serves one NCM function through FunctionFS (usb_f_fs)
 * with the NTB parameters, endpoints and notification behaviour of a
 * profile, bridges its data to a TAP interface (in netns "peer", where the
 * peer's Linux stack answers), and checks every NTB the host sends against
 * what it advertised. Violations are printed, counted, and make the exit
 * status 3 at SIGTERM. tests/vm/README.md, "The programmable device".
 *
 * Threads: main reads ep0 (events, class requests); "rx" reads bulk OUT
 * and writes the TAP (through "drain" with --hold); "tx" reads the TAP and
 * writes bulk IN (and, after each NTB, what ffs-ncm-hostile.c adds);
 * "notify" and "late" write the interrupt endpoint (ffs-ncm-notify.c);
 * "signals" prints the summary. Shared state is under `lock` (ffs-ncm.h).
 * --apple-modes is another device altogether (ffs-ncm-apple.c).
 *
 * Plain C on purpose: the device links libncm's pure NTB codec for its
 * data path (packing IN, parsing OUT) but checks the wire rules itself,
 * through ncm-le.h, so that a packer bug in libncm cannot hide from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/usb/functionfs.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "ffs-ncm.h"
#include "ncm-le.h"
#include "ncm-ntb.h"

Profile prof = {
	.name = "basic",
	.formats = NCM_NTB_FORMAT_BIT_16 | NCM_NTB_FORMAT_BIT_32,
	.in_max = 16384, .in_div = 4, .in_rem = 0, .in_align = 4,
	.out_max = 16384, .out_div = 4, .out_rem = 0, .out_align = 4,
	.out_max_datagrams = 0,
	.caps = 0x11,
	.intr = true,
	.mac = true,
	.mac_addr = { 0x02, 0x4e, 0x43, 0x4d, 0x00, 0x02 },
	.max_datagram_reply = -1,
	.max_segment = FRAME_MAX,
	.intr_mps = INTR_MPS,
	.bulk_mps = HS_BULK_MPS,
	.flap_ms = 300,
	.udc_fd = -1,
};

/* Named starting points; single options given after --profile adjust them. */
static bool
profile_select(const char *name)
{
	if (!strcmp(name, "basic"))
		return true;  /* f_ncm's figures */
	if (!strcmp(name, "apple")) {
		prof.intr = false;
	} else if (!strcmp(name, "ntb16-only")) {
		prof.formats = NCM_NTB_FORMAT_BIT_16;
	} else if (!strcmp(name, "ntb32-only")) {
		/* Not allowed by the spec (NTB16 is mandatory): a host must refuse. */
		prof.formats = NCM_NTB_FORMAT_BIT_32;
	} else if (!strcmp(name, "notify-flood")) {
		prof.flood_s = 5;
	} else if (!strcmp(name, "stall-in-once")) {
		prof.stall_in_at = 3;
	} else if (!strcmp(name, "tinyusb")) {
		/*
		 * TinyUSB's ncm_device.c (2024 rewrite) on a full-speed chip:
		 * NTB16 only, 3200-byte NTBs each way, divisor 1, IN NTBs with
		 * the NDP first and a fixed table for 8 datagrams, 6 datagrams
		 * per OUT NTB (its recommended value), bmNetworkCapabilities 0,
		 * and every class request but GET_NTB_PARAMETERS STALLed (it
		 * answers no other); the speed before the link, once after a
		 * bus reset: a host that reopens hears neither again.
		 */
		prof.formats = NCM_NTB_FORMAT_BIT_16;
		prof.in_max = prof.out_max = 3200;
		prof.in_div = prof.out_div = 1;
		prof.out_max_datagrams = 6;
		prof.in_ndp_first = true;
		prof.in_max_datagrams = 8;
		prof.caps = 0;
		prof.params_only = true;
		prof.refuse_input_size = true;
		prof.speed_first = true;
		prof.notify_once = true;
		prof.bulk_mps = FS_BULK_MPS;
	} else {
		return false;
	}
	prof.name = name;
	return true;
}

/* ---- shared state -------------------------------------------------------- */

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;  /* guards the block below */
pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
unsigned enable_gen;
bool enabled;
NcmNtbFormat format = NCM_NTB_FORMAT_16;
uint32_t input_size;
static uint16_t max_datagram = FRAME_MAX;
static uint16_t filter;
static uint16_t crc_mode;
unsigned in_since_nego;
bool host_negotiated;
static bool stalled_once;
static bool stalled_out_once;     /* rx thread only */
static unsigned vanished;         /* ep0 thread only: bit i = vanish_on[i] done */
static unsigned params_refused;   /* ep0 thread only: --refuse-params so far */

unsigned long st_ntbs_out, st_dgrams_out, st_ntbs_in, st_dgrams_in, st_tap_errors,
	st_in_errors, st_out_errors, st_violations, st_notifications, st_stalls, st_requests,
	st_stalled_requests, st_max_ntb_in, st_hostile, st_zlps, st_runts, st_holds,
	st_hold_drops, st_stranded_requests, st_joins, st_max_ntb_out;

int ep0 = -1, ep_intr = -1, ep_in = -1, ep_out = -1, tap = -1;
bool ep0_gadgetfs;

static void violation(unsigned long ntb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ffs-ncm: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout);
}

void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ffs-ncm: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static void
violation(unsigned long ntb, const char *fmt, ...)
{
	unsigned long n = COUNT(st_violations, 1);
	va_list ap;

	if (n > MAX_PRINTED_VIOLATIONS)
		return;
	va_start(ap, fmt);
	printf("ffs-ncm: VIOLATION in OUT NTB %lu: ", ntb);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout);
}

static void
summary(void)
{
	bool n32;
	uint32_t isize;

	pthread_mutex_lock(&lock);
	n32 = format == NCM_NTB_FORMAT_32;
	isize = input_size;
	pthread_mutex_unlock(&lock);
	say("summary: profile=%s ntbs_out=%lu datagrams_out=%lu ntbs_in=%lu datagrams_in=%lu "
	    "violations=%lu notifications=%lu stalls=%lu requests=%lu stalled_requests=%lu "
	    "in_errors=%lu out_errors=%lu tap_errors=%lu format=NTB%s input_size=%u "
	    "max_ntb_in=%lu crafted=%lu runts=%lu zlps=%lu holds=%lu hold_drops=%lu stranded=%lu "
	    "joins=%lu max_ntb_out=%lu",
	    prof.name, READ(st_ntbs_out), READ(st_dgrams_out), READ(st_ntbs_in),
	    READ(st_dgrams_in), READ(st_violations), READ(st_notifications), READ(st_stalls),
	    READ(st_requests), READ(st_stalled_requests), READ(st_in_errors),
	    READ(st_out_errors), READ(st_tap_errors),
	    n32 ? "32" : "16", isize, READ(st_max_ntb_in),
	    READ(st_hostile), READ(st_runts), READ(st_zlps), READ(st_holds), READ(st_hold_drops),
	    READ(st_stranded_requests), READ(st_joins), READ(st_max_ntb_out));
}

/* ---- descriptors --------------------------------------------------------- */

void
blob_put(Blob *d, const uint8_t *p, size_t n)
{
	if (d->len + n > sizeof(d->b))
		die("descriptor buffer overflow");
	memcpy(d->b + d->len, p, n);
	d->len += n;
}

static void
put_le32(Blob *d, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	blob_put(d, b, 4);
}

static void
desc(Blob *d, const uint8_t *p, size_t n)
{
	blob_put(d, p, n);
	d->count++;
}

/* One speed's set. Endpoint order (interrupt, bulk IN, bulk OUT) gives the
 * ep1..epN file numbering of FunctionFS. */
void
ncm_descs(Blob *d, bool hs)
{
	const uint8_t n_if_eps = prof.intr ? 1 : 0;
	const uint8_t in_addr = prof.intr ? 0x82 : 0x81, out_addr = prof.intr ? 0x03 : 0x02;
	const uint16_t mps = hs ? HS_BULK_MPS : FS_BULK_MPS;
	/*
	 * The IAD names the data interface: f_fs 6.1 takes no Union descriptor.
	 * The bulk pair sits in data alt 0 unless --data-alt1: f_fs has no
	 * get_alt(), so the composite layer stalls SET_INTERFACE to any alt but 0.
	 */
	const uint8_t iad[] = { 8, 0x0b, prof.iad_first, 2, 0x02, 0x0d, 0x00, 0 };
	const uint8_t comm[] = { 9, 0x04, 0, 0, n_if_eps, 0x02, 0x0d, 0x00, 0 };
	const uint8_t header[] = { 5, 0x24, 0x00, 0x10, 0x01 };
	const uint8_t uni[] = { 5, 0x24, 0x06, 0, 1 };
	const uint8_t eth[] = { 13, 0x24, 0x0f, prof.mac ? 1 : 0, 0, 0, 0, 0,
				(uint8_t)prof.max_segment, (uint8_t)(prof.max_segment >> 8), 0, 0, 0 };
	const uint8_t ncm[] = { 6, 0x24, 0x1a, 0x00, 0x01, prof.caps };
	const uint8_t intr[] = { 7, 0x05, 0x81, 0x03, (uint8_t)prof.intr_mps, 0, hs ? 9 : 32 };
	const uint8_t data0[] = { 9, 0x04, 1, 0, prof.alt1 ? 0 : 2, 0x0a, 0x00, 0x01, 0 };
	const uint8_t data1[] = { 9, 0x04, 1, 1, 2, 0x0a, 0x00, 0x01, 0 };
	const uint8_t bin[] = { 7, 0x05, in_addr, 0x02, (uint8_t)mps, (uint8_t)(mps >> 8), 0 };
	const uint8_t bout[] = { 7, 0x05, out_addr, 0x02, (uint8_t)mps, (uint8_t)(mps >> 8), 0 };

	desc(d, iad, sizeof(iad));
	desc(d, comm, sizeof(comm));
	if (prof.cs_desc) {
		desc(d, header, sizeof(header));
		desc(d, uni, sizeof(uni));
		desc(d, eth, sizeof(eth));
		desc(d, ncm, sizeof(ncm));
	}
	if (prof.intr)
		desc(d, intr, sizeof(intr));
	desc(d, data0, sizeof(data0));
	if (prof.alt1)
		desc(d, data1, sizeof(data1));
	desc(d, bin, sizeof(bin));
	desc(d, bout, sizeof(bout));
}

static void
write_all(int fd, const void *p, size_t n, const char *what)
{
	ssize_t r = write(fd, p, n);

	if (r < 0 && errno == EINVAL && prof.cs_desc)
		die("FunctionFS rejected the %s (EINVAL): Linux's f_fs accepts no CDC class-specific "
		    "(0x24) descriptors; drop --cs-desc (the host then finds the function through "
		    "its IAD, without iMACAddress)", what);
	if (r != (ssize_t)n)
		die("writing the %s to ep0: %s", what, r < 0 ? strerror(errno) : "short write");
}

static void
write_descriptors(void)
{
	Blob fs = { 0 }, hs = { 0 }, all = { 0 }, str = { 0 };
	char mac[MAC_HEX_LEN];

	ncm_descs(&fs, false);
	ncm_descs(&hs, true);
	put_le32(&all, FUNCTIONFS_DESCRIPTORS_MAGIC_V2);
	put_le32(&all, (uint32_t)(12 + 8 + fs.len + hs.len));
	put_le32(&all, FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC);
	put_le32(&all, fs.count);
	put_le32(&all, hs.count);
	blob_put(&all, fs.b, fs.len);
	blob_put(&all, hs.b, hs.len);
	write_all(ep0, all.b, all.len, "descriptors");

	/* Strings: only iMACAddress, and only with the functional descriptors. */
	mac_hex(mac);
	bool with_mac = prof.cs_desc && prof.mac;
	put_le32(&str, FUNCTIONFS_STRINGS_MAGIC);
	put_le32(&str, (uint32_t)(16 + (with_mac ? 2 + sizeof(mac) : 0)));
	put_le32(&str, with_mac ? 1 : 0);
	put_le32(&str, with_mac ? 1 : 0);
	if (with_mac) {
		const uint8_t lang[2] = { 0x09, 0x04 };

		blob_put(&str, lang, 2);
		blob_put(&str, (const uint8_t *)mac, sizeof(mac));
	}
	write_all(ep0, str.b, str.len, "strings");
}

/* iMACAddress's string: 12 hex digits, as CDC ECM 5.4 asks. */
void
mac_hex(char out[MAC_HEX_LEN])
{
	snprintf(out, MAC_HEX_LEN, "%02X%02X%02X%02X%02X%02X", prof.mac_addr[0],
		 prof.mac_addr[1], prof.mac_addr[2], prof.mac_addr[3], prof.mac_addr[4],
		 prof.mac_addr[5]);
}

/* ---- ep0: class requests ------------------------------------------------- */

void
put16(uint8_t *b, size_t len, size_t off, uint16_t v)
{
	if (ncm_le_fits(len, off, 2))
		b[off] = (uint8_t)v, b[off + 1] = (uint8_t)(v >> 8);
}

void
put32(uint8_t *b, size_t len, size_t off, uint32_t v)
{
	put16(b, len, off, (uint16_t)v);
	put16(b, len, off + 2, (uint16_t)(v >> 16));
}

static size_t
ntb_parameters(uint8_t *b, size_t len)
{
	memset(b, 0, 28);
	put16(b, len, 0, 28);
	put16(b, len, 2, (uint16_t)prof.formats);
	put32(b, len, 4, prof.in_max);
	put16(b, len, 8, prof.in_div);
	put16(b, len, 10, prof.in_rem);
	put16(b, len, 12, prof.in_align);
	put32(b, len, 16, prof.out_max);
	put16(b, len, 20, prof.out_div);
	put16(b, len, 22, prof.out_rem);
	put16(b, len, 24, prof.out_align);
	put16(b, len, 26, prof.out_max_datagrams);
	return 28;
}

void
stall(const struct usb_ctrlrequest *rq)
{
	uint8_t b[64];
	ssize_t r;

	/*
	 * gadgetfs has taken an OUT data stage before it reports the request,
	 * and then cannot stall it (its ep0_write calls that "bogus"): the data
	 * is read, which completes the request, and the refusal is only logged.
	 */
	if (ep0_gadgetfs && !(rq->bRequestType & 0x80) && rq->wLength) {
		say("gadgetfs cannot stall request 0x%02x with %u data bytes: taken and ignored",
		    rq->bRequest, rq->wLength);
		r = gadgetfs_read_out(b, rq->wLength < sizeof(b) ? rq->wLength : sizeof(b));
		(void)r;
		return;
	}
	/* Both stall ep0 for I/O in the direction the request did not ask for. */
	COUNT(st_stalled_requests, 1);
	if (rq->bRequestType & 0x80)
		r = read(ep0, b, 0);
	else
		r = write(ep0, b, 0);
	trace_ep0_call(r, "stall 0x%02x", rq->bRequest);
}

static void
reply_in(const struct usb_ctrlrequest *rq, const uint8_t *b, size_t n)
{
	size_t want = rq->wLength < n ? rq->wLength : n;
	ssize_t r = write(ep0, b, want);

	trace_ep0_call(r, "reply 0x%02x, %zu bytes", rq->bRequest, want);
	if (r < 0)
		say("ep0 reply to 0x%02x: %s", rq->bRequest, strerror(errno));
}

/* Reads an OUT request's data stage (also its status stage when empty). */
static ssize_t
read_out(const struct usb_ctrlrequest *rq, uint8_t *b, size_t cap)
{
	size_t n = rq->wLength < cap ? rq->wLength : cap;
	ssize_t r = ep0_gadgetfs && n ? gadgetfs_read_out(b, n) : read(ep0, b, n);

	trace_ep0_call(r, "read 0x%02x, %zu bytes", rq->bRequest, n);
	if (r < 0)
		say("ep0 data of 0x%02x: %s", rq->bRequest, strerror(errno));
	return r;
}

static bool
class_in(const struct usb_ctrlrequest *rq)
{
	uint8_t b[32] = { 0 };

	switch (rq->bRequest) {
	case 0x80: /* GET_NTB_PARAMETERS */
		if (params_refused < prof.refuse_params) {
			say("refusing GET_NTB_PARAMETERS (%u of %u)", ++params_refused,
			    prof.refuse_params);
			return false;
		}
		reply_in(rq, b, ntb_parameters(b, sizeof(b)));
		return true;
	case 0x83: /* GET_NTB_FORMAT */
		pthread_mutex_lock(&lock);
		put16(b, sizeof(b), 0, format == NCM_NTB_FORMAT_32);
		pthread_mutex_unlock(&lock);
		reply_in(rq, b, 2);
		return true;
	case 0x85: /* GET_NTB_INPUT_SIZE */
		pthread_mutex_lock(&lock);
		put32(b, sizeof(b), 0, input_size);
		pthread_mutex_unlock(&lock);
		reply_in(rq, b, (prof.caps & 0x20) ? 8 : 4);
		return true;
	case 0x87: /* GET_MAX_DATAGRAM_SIZE */
		if (!(prof.caps & 0x08))
			return false;
		put16(b, sizeof(b), 0, prof.max_datagram_reply >= 0 ?
				(uint16_t)prof.max_datagram_reply : max_datagram);
		reply_in(rq, b, 2);
		return true;
	case 0x89: /* GET_CRC_MODE */
		if (!(prof.caps & 0x10))
			return false;
		put16(b, sizeof(b), 0, crc_mode);
		reply_in(rq, b, 2);
		return true;
	}
	return false;
}

static bool
class_out(const struct usb_ctrlrequest *rq)
{
	uint8_t b[16] = { 0 };
	ssize_t n;

	switch (rq->bRequest) {
	case 0x84: /* SET_NTB_FORMAT */
		if (prof.refuse_ntb_format) {
			say("refusing SET_NTB_FORMAT NTB%s: staying at NTB16", rq->wValue ? "32" : "16");
			return false;
		}
		if (rq->wValue > 1 || !(prof.formats & (1u << rq->wValue)))
			return false;
		pthread_mutex_lock(&lock);
		format = rq->wValue ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16;
		pthread_mutex_unlock(&lock);
		read_out(rq, b, 0);
		say("SET_NTB_FORMAT NTB%s", rq->wValue ? "32" : "16");
		return true;
	case 0x86: { /* SET_NTB_INPUT_SIZE */
		size_t want = (prof.caps & 0x20) ? 8 : 4;

		/* Taken either way, but the host's length must follow bit 5. */
		if (rq->wLength != 4 && rq->wLength != 8)
			return false;
		if (rq->wLength != want)
			violation(0, "SET_NTB_INPUT_SIZE of %u bytes, but bmNetworkCapabilities "
				  "0x%02x asks for %zu", rq->wLength, prof.caps, want);
		pthread_mutex_lock(&lock);
		host_negotiated = true;
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
		if (prof.refuse_input_size) {
			say("refusing SET_NTB_INPUT_SIZE: keeping %u", prof.in_max);
			return false;
		}
		n = read_out(rq, b, sizeof(b));
		if (n < 4)
			return true;
		uint32_t v = ncm_le32_at(b, (size_t)n, 0);
		if (prof.ignore_input_size) {
			say("ignoring SET_NTB_INPUT_SIZE %u: keeping %u", v, prof.in_max);
			v = prof.in_max;
		}
		/* Under 2048 only the device's own size, when that is smaller. */
		if ((v < 2048 && v != prof.in_max) || (prof.in_max && v > prof.in_max)) {
			violation(0, "SET_NTB_INPUT_SIZE %u outside [2048, dwNtbInMaxSize %u]", v,
				  prof.in_max);
			v = prof.in_max;
		}
		pthread_mutex_lock(&lock);
		input_size = v;
		in_since_nego = 0;
		pthread_mutex_unlock(&lock);
		say("SET_NTB_INPUT_SIZE %u", v);
		if (n >= 6)
			say("wNtbInMaxDatagrams %u", ncm_le16_at(b, (size_t)n, 4));
		return true;
	}
	case 0x82: /* SET_NET_ADDRESS */
		if (!(prof.caps & 0x02) || rq->wLength != 6)
			return false;
		n = read_out(rq, b, 6);
		if (n == 6)
			say("SET_NET_ADDRESS %02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3],
			    b[4], b[5]);
		return true;
	case 0x88: /* SET_MAX_DATAGRAM_SIZE */
		if (!(prof.caps & 0x08) || rq->wLength != 2)
			return false;
		n = read_out(rq, b, sizeof(b));
		if (n == 2)
			max_datagram = ncm_le16_at(b, 2, 0);
		say("SET_MAX_DATAGRAM_SIZE %u", max_datagram);
		return true;
	case 0x43: /* SET_ETHERNET_PACKET_FILTER */
		if (!(prof.caps & 0x01))
			return false;
		filter = rq->wValue;
		read_out(rq, b, 0);
		say("SET_ETHERNET_PACKET_FILTER 0x%02x", filter);
		return true;
	case 0x8A: /* SET_CRC_MODE: the device appends no CRC, so only mode 0 */
		say("SET_CRC_MODE %u %s", rq->wValue,
		    !(prof.caps & 0x10) || rq->wValue != 0 || prof.refuse_crc ? "stalled" : "accepted");
		if (!(prof.caps & 0x10) || rq->wValue != 0 || prof.refuse_crc)
			return false;
		crc_mode = 0;
		read_out(rq, b, 0);
		return true;
	}
	return false;
}

/*
 * --vanish-on: the device goes away with the request pending, as a cable
 * pulled mid-open. Over FunctionFS, unbinding the UDC disconnects it from
 * dummy_hcd; over gadgetfs, which has no configfs gadget, the UDC's
 * soft_connect does (a pull-up off: the host sees the cable go). ep0 is
 * not touched until that is over (a read would answer the request). Each
 * listed request vanishes once; the caller rebinds or reconnects.
 */
bool
vanish(const struct usb_ctrlrequest *rq)
{
	const char *how = ep0_gadgetfs ? "disconnect" : "\n";
	const size_t len = strlen(how);

	/*
	 * In list order: gadgetfs STALLs or drops some requests unseen (README,
	 * "The gadgetfs backend"), and a later one must not take their turn.
	 */
	for (unsigned i = 0; i < prof.n_vanish; i++) {
		if (vanished & (1u << i))
			continue;
		if (prof.vanish_on[i] != rq->bRequest)
			return false;
		vanished |= 1u << i;
		say("vanishing during request 0x%02x: %s", rq->bRequest,
		    ep0_gadgetfs ? "soft-disconnecting the UDC" : "unbinding the UDC");
		if (pwrite(prof.udc_fd, how, len, 0) != (ssize_t)len)
			die("%s the UDC: %s", ep0_gadgetfs ? "soft-disconnecting" : "unbinding",
			    strerror(errno));
		say("vanished");
		return true;
	}
	return false;
}

void
on_setup(const struct usb_ctrlrequest *rq)
{
	bool done = false;

	COUNT(st_requests, 1);
	if (vanish(rq))
		return;
	/* f_fs hands over the requests addressed to our interfaces; wIndex is ours (0 = comm). */
	if (prof.params_only && (rq->bRequestType & 0x60) == 0x20 && rq->bRequest != 0x80 &&
	    rq->bRequest != 0x86) {
		/* SET_NTB_INPUT_SIZE goes on to class_out: the IN side waits for it. */
		done = false;
	} else if (rq->bRequestType == 0xA1 && (rq->wIndex & 0xff) == 0)
		done = class_in(rq);
	else if (rq->bRequestType == 0x21 && (rq->wIndex & 0xff) == 0)
		done = class_out(rq);
	if (!done) {
		say("stalling request 0x%02x/0x%02x wValue %u wIndex %u wLength %u",
		    rq->bRequestType, rq->bRequest, rq->wValue, rq->wIndex, rq->wLength);
		stall(rq);
	}
}

void
set_enabled(bool on)
{
	pthread_mutex_lock(&lock);
	enabled = on;
	if (on)
		enable_gen++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

static void
ep0_loop(void)
{
	struct usb_functionfs_event ev[4];

	for (;;) {
		ssize_t n = read(ep0, ev, sizeof(ev));

		trace_ep0_call(n, "events");
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			/* A request cancelled by an unbind (--vanish-on) is reported once. */
			if (errno == EIDRM || errno == ESHUTDOWN || errno == ENODEV) {
				usleep(10000);
				continue;
			}
			die("reading ep0 events: %s", strerror(errno));
		}
		for (size_t i = 0; i < (size_t)n / sizeof(ev[0]); i++) {
			switch (ev[i].type) {
			case FUNCTIONFS_ENABLE:
				set_enabled(true);
				break;
			case FUNCTIONFS_DISABLE:
			case FUNCTIONFS_UNBIND:
				set_enabled(false);
				break;
			case FUNCTIONFS_SETUP:
				trace_setup(&ev[i].u.setup);
				on_setup(&ev[i].u.setup);
				break;
			default:
				break;
			}
		}
	}
}

/* ---- host -> device: check, parse, bridge -------------------------------- */

typedef struct {
	unsigned long ntb;
	NcmNtbFormat fmt;
	unsigned datagrams;
	uint32_t max_datagram;  /* the largest datagram the host was told of (0: none) */
} OutCheck;

void
tap_write(const uint8_t *frame, size_t len)
{
	if (write(tap, frame, len) != (ssize_t)len)
		COUNT(st_tap_errors, 1);
}

/*
 * What the host may send, as it can know it (under `lock`): the answer to
 * GET_MAX_DATAGRAM_SIZE when it may ask, else wMaxSegmentSize; without the
 * functional descriptors (f_fs), 1514.
 */
static uint32_t
host_datagram_limit(void)
{
	if (!prof.cs_desc)
		return FRAME_MAX;
	if (prof.caps & 0x08)
		return prof.max_datagram_reply >= 0 ? (uint32_t)prof.max_datagram_reply : max_datagram;
	/* Under an Ethernet frame the descriptor is taken for an error, by
	 * Linux' cdc_ncm and libncm alike: such a device gets 1514 bytes. */
	return prof.max_segment < FRAME_MAX ? FRAME_MAX : prof.max_segment;
}

static bool
to_tap(void *user_data, const uint8_t *d, size_t len)
{
	if (prof.drain_kbit)
		hold_push(d, len);
	else
		tap_write(d, len);
	COUNT(st_dgrams_out, 1);
	return true;
}

/* The wire rules of this device's GET_NTB_PARAMETERS, for one NDP. */
static void
check_ndp(OutCheck *c, const uint8_t *b, size_t len, size_t ndp)
{
	const bool n32 = c->fmt == NCM_NTB_FORMAT_32;
	const size_t first = n32 ? NCM_NDP32_HEADER_LEN : NCM_NDP16_HEADER_LEN;
	const size_t step = n32 ? NCM_NDP32_ENTRY_LEN : NCM_NDP16_ENTRY_LEN;
	const size_t wlen = ncm_le16_at(b, len, ndp + 4);
	const uint32_t rem = prof.out_rem % (prof.out_div ? prof.out_div : 1);

	if (ndp % prof.out_align)
		violation(c->ntb, "NDP at %zu is not a multiple of wNdpOutAlignment %u", ndp,
			  prof.out_align);
	for (size_t e = ndp + first; e + step <= ndp + wlen && ncm_le_fits(len, e, step);
	     e += step) {
		uint32_t idx = n32 ? ncm_le32_at(b, len, e) : ncm_le16_at(b, len, e);
		uint32_t dlen = n32 ? ncm_le32_at(b, len, e + 4) : ncm_le16_at(b, len, e + 2);

		if (!idx || !dlen)
			break;
		c->datagrams++;
		if (c->max_datagram && dlen > c->max_datagram)
			violation(c->ntb, "datagram of %u bytes, over the %u the device %s", dlen,
				  c->max_datagram, (prof.caps & 0x08) ? "answered to GET_MAX_DATAGRAM_SIZE" :
									"named in wMaxSegmentSize");
		if (prof.out_div && idx % prof.out_div != rem)
			violation(c->ntb, "datagram at %u: %u %% wNdpOutDivisor %u != remainder %u",
				  idx, idx, prof.out_div, rem);
	}
}

static void
check_out_ntb(OutCheck *c, const uint8_t *b, size_t len)
{
	const bool n32 = c->fmt == NCM_NTB_FORMAT_32;
	const uint32_t sig = ncm_le32_at(b, len, 0);
	size_t ndp, block;

	if (prof.out_max && len > prof.out_max)
		violation(c->ntb, "%zu bytes, over dwNtbOutMaxSize %u", len, prof.out_max);
	if (sig != (n32 ? NCM_NTH32_SIGNATURE : NCM_NTH16_SIGNATURE)) {
		violation(c->ntb, "NTH signature 0x%08x, but NTB%s was negotiated", sig,
			  n32 ? "32" : "16");
		return;
	}
	block = n32 ? ncm_le32_at(b, len, 8) : ncm_le16_at(b, len, 8);
	/* Past the block only the spec's pad byte may come: anything else is
	 * the next NTB, run into this read for want of a ZLP. */
	if (block && block < len && !(len == block + 1 && b[block] == 0))
		violation(c->ntb, "%zu bytes after the NTB's %zu in one transfer: no ZLP after it",
			  len - block, block);
	ndp = n32 ? ncm_le32_at(b, len, 12) : ncm_le16_at(b, len, 10);
	for (unsigned hops = 0; ndp && ndp < len && hops < NCM_NTB_MAX_NDP_HOPS; hops++) {
		check_ndp(c, b, len, ndp);
		ndp = n32 ? ncm_le32_at(b, len, ndp + 8) : ncm_le16_at(b, len, ndp + 6);
	}
	if (prof.out_max_datagrams && c->datagrams > prof.out_max_datagrams)
		violation(c->ntb, "%u datagrams, over wNtbOutMaxDatagrams %u", c->datagrams,
			  prof.out_max_datagrams);
}

void
wait_enabled(void)
{
	pthread_mutex_lock(&lock);
	while (!enabled)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
}

void
wait_host_session(void)
{
	pthread_mutex_lock(&lock);
	while (!host_negotiated)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
}

/*
 * Writing an OUT endpoint's file halts it (f_fs halts on I/O against the
 * endpoint's direction); the host must clear the halt. --stall-out-always
 * keeps halting it, as a device that wedged its OUT pipe, and reads no more.
 */
static bool
halt_out(void)
{
	uint8_t b[1] = { 0 };

	if (write(ep_out, b, 0) < 0 && errno == EBADMSG) {
		COUNT(st_stalls, 1);
		return true;
	}
	return false;
}

static void
before_out_read(void)
{
	unsigned long next = READ(st_ntbs_out) + 1;

	if (prof.no_out_read) {
		say("never reading bulk OUT");
		for (;;)
			pause();
	}
	if (prof.stall_out_always && next >= prof.stall_out_always) {
		say("halting bulk OUT for good from host NTB %lu on", next);
		for (;;) {
			wait_enabled();
			halt_out();
			usleep(HALT_REPEAT_US);
		}
	}
	if (prof.stall_out_at && next == prof.stall_out_at && !stalled_out_once) {
		stalled_out_once = true;
		wait_enabled();
		if (halt_out())
			say("bulk OUT halted before host NTB %lu", next);
		else
			say("halting bulk OUT failed: %s", strerror(errno));
	}
}

static void *
rx_thread(void *arg)
{
	static uint8_t buf[NTB_BUF_MAX + HS_BULK_MPS];

	for (;;) {
		before_out_read();
		/*
		 * As f_ncm (fixed_out_len): one read of dwNtbOutMaxSize. A host
		 * NTB of exactly that size, a multiple of wMaxPacketSize, ends
		 * without a ZLP (NCM 1.0, 3.3.1); a longer read would run it into
		 * the next NTB. (f_fs rounds the length up to wMaxPacketSize.)
		 */
		ssize_t n = read(ep_out, buf, prof.out_max && prof.out_max < sizeof(buf) ?
						  prof.out_max : sizeof(buf));

		if (n < 0) {
			if (errno != EINTR)
				COUNT(st_out_errors, 1);
			wait_enabled();
			continue;
		}
		if (n == 0)
			continue;  /* a ZLP ending a max-packet-multiple NTB */
		if ((unsigned long)n > READ(st_max_ntb_out))
			__atomic_store_n(&st_max_ntb_out, (unsigned long)n, __ATOMIC_RELAXED);
		pthread_mutex_lock(&lock);
		OutCheck c = { .ntb = COUNT(st_ntbs_out, 1), .fmt = format,
			       .max_datagram = host_datagram_limit() };
		NcmNtbParseConfig pc = {
			.formats = format == NCM_NTB_FORMAT_32 ? NCM_NTB_FORMAT_BIT_32 :
								 NCM_NTB_FORMAT_BIT_16,
			.max_block = prof.out_max,
			/* Longer ones are the check's to report, by name. */
			.max_datagram = 0,
		};
		pthread_mutex_unlock(&lock);
		NcmNtbParseResult res;

		check_out_ntb(&c, buf, (size_t)n);
		if (ncm_ntb_parse(&pc, buf, (size_t)n, to_tap, NULL, &res) != NCM_NTB_OK) {
			for (unsigned e = 1; e < NCM_NTB_N_ERRORS; e++)
				if (res.reasons[e])
					violation(c.ntb, "parser rejected %u: %s", res.reasons[e],
						  ncm_ntb_error_name((NcmNtbError)e));
		}
	}
	return arg;
}

/*
 * --self-test: the checker must catch what it claims to. Each case packs
 * NTBs with libncm's packer under host rules that break one advertised
 * rule (or none, the control) and counts what check_out_ntb() reports.
 */
typedef struct {
	const char *what;
	NcmNtbFormat host_format;
	uint16_t host_div, host_rem, host_align;
	uint32_t host_max;
	unsigned frames;
	uint16_t div, rem, align, max_datagrams;
	uint32_t out_max;
	bool want;
	uint32_t max_datagram;  /* what GET_MAX_DATAGRAM_SIZE or wMaxSegmentSize said (0: 1514) */
} SelfCase;

static bool
self_case(const SelfCase *t)
{
	static uint8_t ntb[NTB_BUF_MAX];
	uint8_t frame[60] = { 0 };
	NcmNtbPackConfig cfg = {
		.format = t->host_format, .max_size = t->host_max, .divisor = t->host_div,
		.remainder = t->host_rem, .alignment = t->host_align,
	};
	NcmNtbPacker pk;
	OutCheck c = { .ntb = 1, .fmt = NCM_NTB_FORMAT_16,
		       .max_datagram = t->max_datagram ? t->max_datagram : FRAME_MAX };
	unsigned long before = READ(st_violations);

	prof.out_div = t->div, prof.out_rem = t->rem, prof.out_align = t->align;
	prof.out_max_datagrams = t->max_datagrams, prof.out_max = t->out_max;
	ncm_ntb_packer_init(&pk, &cfg, ntb, sizeof(ntb), 1);
	for (unsigned i = 0; i < t->frames; i++)
		ncm_ntb_packer_add(&pk, frame, sizeof(frame));
	check_out_ntb(&c, ntb, ncm_ntb_packer_finish(&pk, NULL));
	bool got = READ(st_violations) != before;
	printf("%s: %s: %s\n", got == t->want ? "ok" : "FAIL", t->what,
	       got ? "violation reported" : "no violation");
	return got == t->want;
}

static int
self_test(void)
{
	static const SelfCase cases[] = {
		{ "control: the advertised rules kept", NCM_NTB_FORMAT_16, 4, 0, 4, 16384, 10,
		  4, 0, 4, 0, 16384, false, 0 },
		{ "control: 512/14/512 kept", NCM_NTB_FORMAT_16, 512, 14, 512, 16384, 10,
		  512, 14, 512, 0, 16384, false, 0 },
		{ "datagram offsets off wNdpOutDivisor/remainder", NCM_NTB_FORMAT_16, 4, 0, 4,
		  16384, 3, 8, 2, 4, 0, 16384, true, 0 },
		{ "NDP off wNdpOutAlignment", NCM_NTB_FORMAT_16, 4, 0, 4, 16384, 3,
		  4, 0, 512, 0, 16384, true, 0 },
		{ "more datagrams than wNtbOutMaxDatagrams", NCM_NTB_FORMAT_16, 4, 0, 4, 16384, 3,
		  4, 0, 4, 1, 16384, true, 0 },
		{ "larger than dwNtbOutMaxSize", NCM_NTB_FORMAT_16, 4, 0, 4, 16384, 100,
		  4, 0, 4, 0, 4096, true, 0 },
		{ "NTB32 while NTB16 was negotiated", NCM_NTB_FORMAT_32, 4, 0, 4, 16384, 3,
		  4, 0, 4, 0, 16384, true, 0 },
		{ "control: datagrams of the maximum datagram size", NCM_NTB_FORMAT_16, 4, 0, 4,
		  16384, 3, 4, 0, 4, 0, 16384, false, 60 },
		{ "a datagram over the maximum datagram size", NCM_NTB_FORMAT_16, 4, 0, 4, 16384, 3,
		  4, 0, 4, 0, 16384, true, 59 },
	};
	bool all = true;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		all &= self_case(&cases[i]);
	return all ? 0 : 1;
}

/* ---- device -> host: TAP frames packed into NTBs -------------------------- */

static bool
tap_ready(void)
{
	struct pollfd p = { .fd = tap, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void
stall_in_once(void)
{
	uint8_t b[HS_BULK_MPS];

	/* Reading an IN endpoint's file halts it; the host must clear the halt. */
	if (read(ep_in, b, sizeof(b)) < 0 && errno == EBADMSG) {
		COUNT(st_stalls, 1);
		say("bulk IN halted before IN NTB %u of the host's session", prof.stall_in_at);
	} else {
		say("halting bulk IN failed: %s", strerror(errno));
	}
}

/* --stall-in-always: halted for good; each time the host clears it, again. */
static void
stall_in_for_good(void)
{
	uint8_t b[HS_BULK_MPS];

	say("halting bulk IN for good from IN NTB %u of the host's session on",
	    prof.stall_in_always);
	for (;;) {
		wait_enabled();
		if (read(ep_in, b, sizeof(b)) < 0 && errno == EBADMSG)
			COUNT(st_stalls, 1);
		usleep(HALT_REPEAT_US);
	}
}

/* --in-batch: the next TAP frame within the batch's time, else none. */
static bool
tap_ready_by(const struct timespec *end)
{
	struct pollfd p = { .fd = tap, .events = POLLIN };
	struct timespec now;
	long ms;

	if (!prof.in_batch_ms)
		return tap_ready();
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
	return poll(&p, 1, ms > 0 ? (int)ms : 0) == 1 && (p.revents & POLLIN);
}

/*
 * --join-ntbs: the NTB in @pk (one frame) padded with zeros, wBlockLength
 * too, to a whole number of packets, and no ZLP after it: the next NTB
 * follows in the same transfer, as from a device that leaves out its ZLPs.
 * Returns its length, or 0 when no room would be left for the next (then
 * the NTB goes out alone, as usual).
 */
static size_t
join_head(NcmNtbPacker *pk, const NcmNtbPackConfig *cfg, uint8_t *ntb)
{
	size_t len = ncm_ntb_packer_finish(pk, NULL);
	size_t padded = (len + prof.bulk_mps - 1) / prof.bulk_mps * prof.bulk_mps;

	if (padded + 2048 > cfg->max_size)
		return 0;
	memset(ntb + len, 0, padded - len);
	if (cfg->format == NCM_NTB_FORMAT_32)
		put32(ntb, padded, 8, (uint32_t)padded);
	else
		put16(ntb, padded, 8, (uint16_t)padded);
	return padded;
}

static void *
tx_thread(void *arg)
{
	static uint8_t ntb[IN_BUF_MAX], frame[2048];
	const unsigned max_dgrams = prof.in_batch_ms ? TX_MAX_DATAGRAMS_BATCHED : TX_MAX_DATAGRAMS;
	NcmNtbPacker pk;
	uint16_t seq = 0;
	struct timespec end;

	for (;;) {
		ssize_t n = read(tap, frame, sizeof(frame));

		if (n < 0) {
			COUNT(st_tap_errors, 1);
			usleep(10000);
			continue;
		}
		wait_enabled();
		pthread_mutex_lock(&lock);
		/*
		 * Before the host's SET_NTB_INPUT_SIZE its SET_NTB_FORMAT may still
		 * come: an NTB packed now could wait in write() (the endpoint off
		 * while the host sets alt 0) and reach it in the old format.
		 */
		if (!host_negotiated) {
			pthread_mutex_unlock(&lock);
			continue;
		}
		NcmNtbPackConfig cfg = {
			.format = format,
			.max_size = input_size < IN_BUF_MAX ? input_size : IN_BUF_MAX,
			.divisor = prof.in_div,
			.remainder = prof.in_rem,
			.alignment = prof.in_align,
			.max_packet = prof.bulk_mps,
			.short_mode = NCM_NTB_SHORT_PAD,
			.max_datagrams = prof.in_max_datagrams,
			.ndp_first = prof.in_ndp_first,
		};
		pthread_mutex_unlock(&lock);
		ncm_ntb_packer_init(&pk, &cfg, ntb, sizeof(ntb), seq++);
		if (ncm_ntb_packer_add(&pk, frame, (size_t)n) != NCM_NTB_PACK_OK) {
			COUNT(st_tap_errors, 1);
			continue;
		}
		/* The bytes before the open NTB in this transfer (--join-ntbs). */
		size_t head = prof.join_ntbs ? join_head(&pk, &cfg, ntb) : 0;

		if (head) {
			NcmNtbPackConfig rest = cfg;

			rest.max_size = cfg.max_size - (uint32_t)head;
			ncm_ntb_packer_init(&pk, &rest, ntb + head, sizeof(ntb) - head, seq++);
		} else if (prof.join_ntbs) {
			ncm_ntb_packer_init(&pk, &cfg, ntb, sizeof(ntb), seq - 1);
			ncm_ntb_packer_add(&pk, frame, (size_t)n);
		}
		/* What is queued now rides along, as f_ncm batches up to its flush. */
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += prof.in_batch_ms / 1000;
		end.tv_nsec += (long)(prof.in_batch_ms % 1000) * 1000000;
		if (end.tv_nsec >= 1000000000)
			end.tv_sec++, end.tv_nsec -= 1000000000;
		while (ncm_ntb_packer_count(&pk) < max_dgrams && tap_ready_by(&end)) {
			n = read(tap, frame, sizeof(frame));
			if (n <= 0)
				break;
			if (ncm_ntb_packer_add(&pk, frame, (size_t)n) == NCM_NTB_PACK_FULL) {
				/* Rare: this frame opens the next NTB. Keep it simple: send
				 * what we have, then this one alone. */
				size_t len = head + ncm_ntb_packer_finish(&pk, NULL);

				if (write(ep_in, ntb, len) != (ssize_t)len)
					COUNT(st_in_errors, 1);
				else if (len > READ(st_max_ntb_in))
					__atomic_store_n(&st_max_ntb_in, len, __ATOMIC_RELAXED);
				if (head)
					COUNT(st_joins, 1);
				head = 0;
				ncm_ntb_packer_init(&pk, &cfg, ntb, sizeof(ntb), seq++);
				ncm_ntb_packer_add(&pk, frame, (size_t)n);
			}
		}
		unsigned count = ncm_ntb_packer_count(&pk);
		/* A joined NTB that found no company ends its transfer with a ZLP. */
		bool alone = head && count == 0;
		size_t len = alone ? head : head + ncm_ntb_packer_finish(&pk, NULL);
		bool halt;

		count += head ? 1 : 0;

		COUNT(st_ntbs_in, 1);
		pthread_mutex_lock(&lock);
		++in_since_nego;
		halt = prof.stall_in_at && !stalled_once && in_since_nego == prof.stall_in_at;
		stalled_once |= halt;
		bool for_good = prof.stall_in_always && in_since_nego >= prof.stall_in_always;
		unsigned in_session = in_since_nego;
		pthread_mutex_unlock(&lock);
		if (for_good)
			stall_in_for_good();
		if (halt)
			stall_in_once();
		hostile_in_gate(in_session);
		if (write(ep_in, ntb, len) != (ssize_t)len) {
			COUNT(st_in_errors, 1);
		} else {
			COUNT(st_dgrams_in, count);
			if (len > READ(st_max_ntb_in))
				__atomic_store_n(&st_max_ntb_in, len, __ATOMIC_RELAXED);
			if (alone && write(ep_in, frame, 0) != 0)
				say("the ZLP after a lone joined NTB failed: %s", strerror(errno));
			else if (head && !alone)
				COUNT(st_joins, 1);
			hostile_after_ntb(&seq);
		}
	}
	return arg;
}

/* ---- setup ----------------------------------------------------------------- */

static int
open_tap(const char *name)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("opening /dev/net/tun: %s", strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		die("creating TAP %s: %s", name, strerror(errno));
	return fd;
}

static int
open_ep(const char *dir, unsigned n, int flags)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/ep%u", dir, n);
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		die("opening %s: %s", path, strerror(errno));
	return fd;
}

void
touch_ready(const char *ready)
{
	int fd;

	if (!ready)
		return;
	fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("creating %s: %s", ready, strerror(errno));
	close(fd);
}

static void *
signal_thread(void *arg)
{
	sigset_t *set = arg;
	int sig;

	for (;;) {
		if (sigwait(set, &sig))
			continue;
		if (sig == SIGHUP) {
			trace_ep0_print();
			continue;
		}
		if (sig == SIGUSR2)
			hostile_quiesce();
		if (prof.hostile_one_in || prof.runt_one_in || prof.zlp_after_ntb)
			hostile_summary();
		summary();
		if (sig == SIGUSR2)
			continue;
		if (sig != SIGUSR1)
			_exit(READ(st_violations) ? 3 : 0);
	}
	return NULL;
}

static bool
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return true;
}

static unsigned long
num(const char *opt, const char *s, unsigned long max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (*s == '\0' || *end != '\0' || v > max)
		die("--%s takes a number up to %lu, not '%s'", opt, max, s);
	return v;
}

static const char usage_text[] =
	"usage: ffs-ncm --ffs DIR|--gadgetfs DIR [--tap NAME] [--ready FILE] [--profile NAME] [options]\n"
	"  --ffs DIR                the mounted FunctionFS instance (mount -t functionfs NAME DIR)\n"
	"  --gadgetfs DIR           the whole device through gadgetfs (mount -t gadgetfs gadgetfs\n"
	"                           DIR, no gadget bound): with the CDC functional descriptors\n"
	"                           and the spec's data alt 1; --vid N, --pid N, --serial S\n"
	"  --refuse-crc             (gadgetfs) offer CRC mode, STALL SET_CRC_MODE\n"
	"  --mac-string-missing     (gadgetfs) iMACAddress names string 1, which is STALLed\n"
	"  --ep0-delay-ms N         (gadgetfs) answer each request N ms late: after an OUT\n"
	"                           one with data the host's next request comes first\n"
	"  --tap NAME               the TAP interface to bridge to (default ffs0)\n"
	"  --ready FILE             created once the descriptors are written (bind the UDC then)\n"
	"  --profile NAME           basic (f_ncm's figures), apple (no interrupt endpoint),\n"
	"                           ntb16-only, ntb32-only, notify-flood, stall-in-once,\n"
	"                           tinyusb (TinyUSB's NCM at full speed: --in-ndp-first,\n"
	"                           --in-max-datagrams 8, --params-only, --speed-first,\n"
	"                           --notify-once, --full-speed, --refuse-input-size, caps 0,\n"
	"                           NTB16, 3200-byte NTBs at divisor 1, 6 datagrams per OUT NTB)\n"
	"  --formats 16|32|both     bmNtbFormatsSupported\n"
	"  --in-max N, --out-max N  dwNtbInMaxSize, dwNtbOutMaxSize\n"
	"  --in-ndp D/R/A           wNdpInDivisor/PayloadRemainder/Alignment (device -> host)\n"
	"  --out-ndp D/R/A          wNdpOutDivisor/PayloadRemainder/Alignment, checked on every NTB\n"
	"  --out-max-datagrams N    wNtbOutMaxDatagrams, checked on every NTB (0 = no limit)\n"
	"  --caps N                 bmNetworkCapabilities: which optional requests are answered\n"
	"  --no-intr                no interrupt endpoint (as Apple's functions)\n"
	"  --notify-flood S         send NETWORK_CONNECTION on every interrupt poll for S seconds\n"
	"  --stall-intr             after the first notifications, keep the interrupt endpoint\n"
	"                           halted (halted again every 5 ms)\n"
	"  --stall-in-once N        halt bulk IN once, before the Nth IN NTB after the host's\n"
	"                           SET_NTB_INPUT_SIZE (that is, in its session)\n"
	"  --stall-in-always N      halt bulk IN before the Nth IN NTB of the host's session and\n"
	"                           keep halting it every 5 ms (each clear meets a new halt)\n"
	"  --stall-out-once N       halt bulk OUT once, when the Nth host NTB would be read\n"
	"  --stall-out-always N     from the Nth host NTB on, keep bulk OUT halted (no more reads)\n"
	"  --no-out-read            never read bulk OUT: the host's OUT transfers never complete\n"
	"  --refuse-input-size      STALL SET_NTB_INPUT_SIZE: NTBs up to dwNtbInMaxSize\n"
	"  --ignore-input-size      accept SET_NTB_INPUT_SIZE but keep dwNtbInMaxSize, and say so\n"
	"                           in GET_NTB_INPUT_SIZE\n"
	"                           (IN NTBs are at most 131072 bytes, whatever --in-max says)\n"
	"  --max-datagram-reply N   GET_MAX_DATAGRAM_SIZE answers N (needs --caps with 0x08);\n"
	"                           with --gadgetfs, a host datagram over N is a violation\n"
	"  --max-segment N          (--gadgetfs) wMaxSegmentSize N (default 1514); host datagrams\n"
	"                           over it (over 1514 when N is less) are violations (unless\n"
	"                           --caps 0x08 negotiates)\n"
	"  --in-batch MS            gather TAP frames for up to MS ms into one IN NTB (up to 128)\n"
	"  --cs-desc                also write the CDC Header/Union/Ethernet/NCM descriptors\n"
	"                           (Linux 6.1's f_fs rejects them: EINVAL)\n"
	"  --mac XX:..:XX, --no-mac iMACAddress (with --cs-desc or --gadgetfs)\n"
	"  --data-alt1              data alt 0 without endpoints, bulk pair in alt 1 (the spec's\n"
	"                           layout; Linux 6.1's composite layer stalls SET_INTERFACE alt 1\n"
	"                           for FunctionFS, so the default puts the pair in alt 0)\n"
	"  --hostile-one-in N       one IN transfer in N is a crafted, malformed NTB (classes in\n"
	"                           turn; SIGUSR2 stops them and prints what a host must count)\n"
	"  --replay PATH            with --hostile-one-in: the crafted transfers are PATH's bytes\n"
	"                           instead, sent as they are (a directory: each file in it, by\n"
	"                           name, in turn); what the host must count is what libncm's\n"
	"                           parser finds under the negotiated format and input size.\n"
	"                           Repeatable\n"
	"  --replay-skip N          leave out each file's first N bytes (5: a fuzz-ntb-parse input)\n"
	"  --zlp-after-ntb          a zero-length packet after every IN NTB\n"
	"  --full-speed             the gadget runs at full speed (configfs max_speed): IN NTBs\n"
	"                           follow its 64-byte packets\n"
	"  --in-ndp-first           IN NTBs with the NDP right after the NTH (room reserved)\n"
	"  --in-max-datagrams N     at most N datagrams per IN NTB\n"
	"  --params-only            STALL every class request but GET_NTB_PARAMETERS (and take\n"
	"                           SET_NTB_INPUT_SIZE only as --refuse-input-size says)\n"
	"  --speed-first            CONNECTION_SPEED_CHANGE before NETWORK_CONNECTION\n"
	"  --notify-once            those two after the first ENABLE only: a host that opens the\n"
	"                           function again hears no link state (TinyUSB: once per reset)\n"
	"  --join-ntbs              an IN transfer of several frames is two NTBs run together, the\n"
	"                           first of a whole number of packets and no ZLP between (a\n"
	"                           device that leaves out its ZLPs; use with --in-batch)\n"
	"  --runt-one-in N          after one IN NTB in N, a transfer of 1..11 bytes\n"
	"  --in-stop-after N        after N IN NTBs of the host's session, complete no IN transfer\n"
	"  1 s into the host's session, once, on the interrupt endpoint (in this order):\n"
	"  --stall-intr-once        halt it (the host must clear the halt)\n"
	"  --speed DOWN/UP          send CONNECTION_SPEED_CHANGE with these bit/s ...\n"
	"  --speed-split            ... as two transfers, header then data\n"
	"  --notify-overlong        notifications with 8-24 bytes past what their header says\n"
	"                           (the speed above, then link down and up)\n"
	"  --link-flap N            NETWORK_CONNECTION down then up, N times ...\n"
	"  --link-flap-ms MS        ... each state held MS ms (default 300)\n"
	"  --hold FRAMES,MS,KBIT    frames toward the peer drain at KBIT kbit/s; one arriving with\n"
	"                           more than FRAMES queued is held MS ms (the holding gadget)\n"
	"  --refuse-params N        stall the first N GET_NTB_PARAMETERS: every open until then fails\n"
	"  --intr-mps N             the interrupt endpoint's wMaxPacketSize: 8, 16 (default) or 64\n"
	"  --refuse-ntb-format      stall SET_NTB_FORMAT (either format): NTB16 stays\n"
	"  --no-langids             gadgetfs: string 0 lists no language (2 bytes); iMACAddress\n"
	"                           and the serial are then read in US English, as Linux does\n"
	"  --vanish-on REQ,...      unbind the UDC while one of these class requests (0x80 ...)\n"
	"                           is pending, once each, in order; needs --udc-fd\n"
	"                           (gadgetfs: 0x06 is GET_DESCRIPTOR of the iMACAddress string)\n"
	"  --udc-fd FD              the gadget's configfs UDC file, open for writing (gadgetfs:\n"
	"                           the UDC's soft_connect, written \"disconnect\")\n"
	"  --iad-first N            the IAD's bFirstInterface: f_fs renumbers interfaces but not\n"
	"                           the IAD, so a function behind others names its real number\n"
	"  --apple-modes            no NCM: serve an Apple device's PTP and usbmux interfaces and\n"
	"                           answer its mode switch (GET_MODE 0x45, SET_MODE 0x52); link\n"
	"                           it into every configuration, NCM (--profile apple) into the 5th\n"
	"  --self-test              check the NTB checker on packed NTBs and each crafted class\n"
	"                           against libncm's parser, without a device\n"
	"SIGUSR1 prints the counters; SIGUSR2 stops crafted transfers and prints them; SIGTERM prints\n"
	"them and exits 3 if a host NTB broke a rule. SIGHUP prints the last ep0 calls.\n";

static void
parse_speed(const char *s)
{
	unsigned long d, u;
	char c;

	if (sscanf(s, "%lu/%lu%c", &d, &u, &c) != 2 || d > UINT32_MAX || u > UINT32_MAX || !(d | u))
		die("--speed takes DOWN/UP in bit/s, not '%s'", s);
	prof.speed_down = (uint32_t)d, prof.speed_up = (uint32_t)u;
}

static void
parse_hold(const char *s)
{
	unsigned k, ms, kbit;
	char c;

	if (sscanf(s, "%u,%u,%u%c", &k, &ms, &kbit, &c) != 3 || !kbit || ms > 600000)
		die("--hold takes FRAMES,MS,KBIT (hold for MS ms past FRAMES queued; drain at "
		    "KBIT kbit/s), not '%s'", s);
	prof.hold_after = k, prof.hold_ms = ms, prof.drain_kbit = kbit;
}

static void
parse_vanish(const char *s)
{
	char *copy = strdup(s), *save = NULL;

	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (prof.n_vanish == MAX_VANISH)
			die("--vanish-on takes at most %u requests", MAX_VANISH);
		prof.vanish_on[prof.n_vanish++] = (uint8_t)num("vanish-on", t, 0xff);
	}
	free(copy);
}

static void
parse_ndp(const char *opt, const char *s, uint16_t *d, uint16_t *r, uint16_t *a)
{
	unsigned v[3];

	if (sscanf(s, "%u/%u/%u", &v[0], &v[1], &v[2]) != 3 || v[0] > 0xffff || v[1] > 0xffff ||
	    v[2] > 0xffff)
		die("--%s takes DIVISOR/REMAINDER/ALIGNMENT, not '%s'", opt, s);
	*d = (uint16_t)v[0], *r = (uint16_t)v[1], *a = (uint16_t)v[2];
}

int
main(int argc, char **argv)
{
	enum { O_FORMATS = 256, O_IN_MAX, O_OUT_MAX, O_IN_NDP, O_OUT_NDP, O_OUT_MAXDG, O_CAPS,
	       O_NO_INTR, O_FLOOD, O_STALL, O_CS, O_MAC, O_NO_MAC, O_READY, O_TAP, O_FFS,
	       O_PROFILE, O_ALT1, O_SELF, O_STALL_IN_ALWAYS, O_STALL_OUT_ONCE, O_STALL_OUT_ALWAYS,
	       O_NO_OUT_READ, O_REFUSE_INPUT, O_IGNORE_INPUT, O_MAXDG_REPLY, O_IN_BATCH,
	       O_STALL_INTR, O_HOSTILE, O_ZLP, O_RUNT, O_IN_STOP, O_STALL_INTR_ONCE, O_SPEED,
	       O_SPEED_SPLIT, O_OVERLONG, O_FLAP, O_FLAP_MS, O_HOLD, O_VANISH, O_UDC_FD,
	       O_APPLE_MODES, O_IAD_FIRST, O_GADGETFS, O_VID, O_PID, O_SERIAL, O_REFUSE_CRC,
	       O_MAC_STRING_MISSING, O_MAX_SEGMENT, O_REPLAY, O_REPLAY_SKIP, O_EP0_DELAY,
	       O_REFUSE_PARAMS, O_INTR_MPS, O_REFUSE_FORMAT, O_NO_LANGIDS, O_JOIN, O_FULL_SPEED,
	       O_IN_NDP_FIRST, O_IN_MAXDG, O_PARAMS_ONLY, O_SPEED_FIRST, O_NOTIFY_ONCE };
	static const struct option opts[] = {
		{ "ffs", required_argument, NULL, O_FFS },
		{ "gadgetfs", required_argument, NULL, O_GADGETFS },
		{ "vid", required_argument, NULL, O_VID },
		{ "pid", required_argument, NULL, O_PID },
		{ "serial", required_argument, NULL, O_SERIAL },
		{ "refuse-crc", no_argument, NULL, O_REFUSE_CRC },
		{ "mac-string-missing", no_argument, NULL, O_MAC_STRING_MISSING },
		{ "max-segment", required_argument, NULL, O_MAX_SEGMENT },
		{ "tap", required_argument, NULL, O_TAP },
		{ "ready", required_argument, NULL, O_READY },
		{ "profile", required_argument, NULL, O_PROFILE },
		{ "formats", required_argument, NULL, O_FORMATS },
		{ "in-max", required_argument, NULL, O_IN_MAX },
		{ "out-max", required_argument, NULL, O_OUT_MAX },
		{ "in-ndp", required_argument, NULL, O_IN_NDP },
		{ "out-ndp", required_argument, NULL, O_OUT_NDP },
		{ "out-max-datagrams", required_argument, NULL, O_OUT_MAXDG },
		{ "caps", required_argument, NULL, O_CAPS },
		{ "no-intr", no_argument, NULL, O_NO_INTR },
		{ "notify-flood", required_argument, NULL, O_FLOOD },
		{ "stall-intr", no_argument, NULL, O_STALL_INTR },
		{ "stall-in-once", required_argument, NULL, O_STALL },
		{ "stall-in-always", required_argument, NULL, O_STALL_IN_ALWAYS },
		{ "stall-out-once", required_argument, NULL, O_STALL_OUT_ONCE },
		{ "stall-out-always", required_argument, NULL, O_STALL_OUT_ALWAYS },
		{ "no-out-read", no_argument, NULL, O_NO_OUT_READ },
		{ "refuse-input-size", no_argument, NULL, O_REFUSE_INPUT },
		{ "refuse-params", required_argument, NULL, O_REFUSE_PARAMS },
		{ "intr-mps", required_argument, NULL, O_INTR_MPS },
		{ "refuse-ntb-format", no_argument, NULL, O_REFUSE_FORMAT },
		{ "no-langids", no_argument, NULL, O_NO_LANGIDS },
		{ "ignore-input-size", no_argument, NULL, O_IGNORE_INPUT },
		{ "max-datagram-reply", required_argument, NULL, O_MAXDG_REPLY },
		{ "in-batch", required_argument, NULL, O_IN_BATCH },
		{ "hostile-one-in", required_argument, NULL, O_HOSTILE },
		{ "replay", required_argument, NULL, O_REPLAY },
		{ "replay-skip", required_argument, NULL, O_REPLAY_SKIP },
		{ "ep0-delay-ms", required_argument, NULL, O_EP0_DELAY },
		{ "zlp-after-ntb", no_argument, NULL, O_ZLP },
		{ "join-ntbs", no_argument, NULL, O_JOIN },
		{ "full-speed", no_argument, NULL, O_FULL_SPEED },
		{ "in-ndp-first", no_argument, NULL, O_IN_NDP_FIRST },
		{ "in-max-datagrams", required_argument, NULL, O_IN_MAXDG },
		{ "params-only", no_argument, NULL, O_PARAMS_ONLY },
		{ "speed-first", no_argument, NULL, O_SPEED_FIRST },
		{ "notify-once", no_argument, NULL, O_NOTIFY_ONCE },
		{ "runt-one-in", required_argument, NULL, O_RUNT },
		{ "in-stop-after", required_argument, NULL, O_IN_STOP },
		{ "stall-intr-once", no_argument, NULL, O_STALL_INTR_ONCE },
		{ "speed", required_argument, NULL, O_SPEED },
		{ "speed-split", no_argument, NULL, O_SPEED_SPLIT },
		{ "notify-overlong", no_argument, NULL, O_OVERLONG },
		{ "link-flap", required_argument, NULL, O_FLAP },
		{ "link-flap-ms", required_argument, NULL, O_FLAP_MS },
		{ "hold", required_argument, NULL, O_HOLD },
		{ "vanish-on", required_argument, NULL, O_VANISH },
		{ "udc-fd", required_argument, NULL, O_UDC_FD },
		{ "apple-modes", no_argument, NULL, O_APPLE_MODES },
		{ "iad-first", required_argument, NULL, O_IAD_FIRST },
		{ "cs-desc", no_argument, NULL, O_CS },
		{ "data-alt1", no_argument, NULL, O_ALT1 },
		{ "self-test", no_argument, NULL, O_SELF },
		{ "mac", required_argument, NULL, O_MAC },
		{ "no-mac", no_argument, NULL, O_NO_MAC },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *gfs_dir = NULL, *tap_name = "ffs0", *ready = NULL;
	GadgetfsIds ids = { .vid = 0x1d6b, .pid = 0x0104, .serial = "libncm-vm-0001" };
	bool apple = false;
	size_t replay_skip = 0;
	pthread_t th;
	sigset_t set;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_FFS: dir = optarg; break;
		case O_GADGETFS: gfs_dir = optarg; break;
		case O_VID: ids.vid = (uint16_t)num("vid", optarg, 0xffff); break;
		case O_PID: ids.pid = (uint16_t)num("pid", optarg, 0xffff); break;
		case O_SERIAL: ids.serial = optarg; break;
		case O_REFUSE_CRC: prof.refuse_crc = true; break;
		case O_MAC_STRING_MISSING: prof.mac_string_missing = true; break;
		case O_MAX_SEGMENT:
			prof.max_segment = (uint16_t)num("max-segment", optarg, 0xffff);
			if (prof.max_segment < 64)
				die("--max-segment takes 64 or more");
			break;
		case O_TAP: tap_name = optarg; break;
		case O_READY: ready = optarg; break;
		case O_PROFILE:
			if (!profile_select(optarg))
				die("unknown profile '%s'", optarg);
			break;
		case O_FORMATS:
			if (!strcmp(optarg, "16"))
				prof.formats = NCM_NTB_FORMAT_BIT_16;
			else if (!strcmp(optarg, "32"))
				prof.formats = NCM_NTB_FORMAT_BIT_32;
			else if (!strcmp(optarg, "both"))
				prof.formats = NCM_NTB_FORMAT_BIT_16 | NCM_NTB_FORMAT_BIT_32;
			else
				die("--formats takes 16, 32 or both");
			break;
		case O_IN_MAX: prof.in_max = (uint32_t)num("in-max", optarg, IN_MAX_ADVERTISED); break;
		case O_OUT_MAX: prof.out_max = (uint32_t)num("out-max", optarg, NTB_BUF_MAX); break;
		case O_IN_NDP: parse_ndp("in-ndp", optarg, &prof.in_div, &prof.in_rem, &prof.in_align); break;
		case O_OUT_NDP: parse_ndp("out-ndp", optarg, &prof.out_div, &prof.out_rem, &prof.out_align); break;
		case O_OUT_MAXDG: prof.out_max_datagrams = (uint16_t)num("out-max-datagrams", optarg, 0xffff); break;
		case O_CAPS: prof.caps = (uint8_t)num("caps", optarg, 0xff); break;
		case O_NO_INTR: prof.intr = false; break;
		case O_FLOOD: prof.flood_s = (unsigned)num("notify-flood", optarg, 3600); break;
		case O_STALL_INTR: prof.stall_intr = true; break;
		case O_STALL: prof.stall_in_at = (unsigned)num("stall-in-once", optarg, 1000000); break;
		case O_STALL_IN_ALWAYS:
			prof.stall_in_always = (unsigned)num("stall-in-always", optarg, 1000000);
			break;
		case O_STALL_OUT_ONCE:
			prof.stall_out_at = (unsigned)num("stall-out-once", optarg, 1000000);
			break;
		case O_STALL_OUT_ALWAYS:
			prof.stall_out_always = (unsigned)num("stall-out-always", optarg, 1000000);
			break;
		case O_NO_OUT_READ: prof.no_out_read = true; break;
		case O_REFUSE_INPUT: prof.refuse_input_size = true; break;
		case O_REFUSE_FORMAT: prof.refuse_ntb_format = true; break;
		case O_NO_LANGIDS: prof.no_langids = true; break;
		case O_INTR_MPS:
			prof.intr_mps = (unsigned)num("intr-mps", optarg, INTR_MPS_MAX);
			if (prof.intr_mps != 8 && prof.intr_mps != 16 && prof.intr_mps != 64)
				die("--intr-mps takes 8, 16 or 64");
			break;
		case O_REFUSE_PARAMS:
			prof.refuse_params = (unsigned)num("refuse-params", optarg, 1000);
			break;
		case O_IGNORE_INPUT: prof.ignore_input_size = true; break;
		case O_MAXDG_REPLY:
			prof.max_datagram_reply = (int)num("max-datagram-reply", optarg, 0xffff);
			break;
		case O_IN_BATCH: prof.in_batch_ms = (unsigned)num("in-batch", optarg, 10000); break;
		case O_HOSTILE:
			prof.hostile_one_in = (unsigned)num("hostile-one-in", optarg, 1000000);
			if (prof.hostile_one_in < 2)
				die("--hostile-one-in takes 2 or more: one crafted transfer after N - 1 "
				    "valid NTBs");
			break;
		case O_REPLAY: replay_add(optarg); break;
		case O_REPLAY_SKIP: replay_skip = (size_t)num("replay-skip", optarg, 65536); break;
		case O_EP0_DELAY: prof.ep0_delay_ms = (unsigned)num("ep0-delay-ms", optarg, 2000); break;
		case O_ZLP: prof.zlp_after_ntb = true; break;
		case O_JOIN: prof.join_ntbs = true; break;
		case O_FULL_SPEED: prof.bulk_mps = FS_BULK_MPS; break;
		case O_IN_NDP_FIRST: prof.in_ndp_first = true; break;
		case O_IN_MAXDG:
			prof.in_max_datagrams = (uint16_t)num("in-max-datagrams", optarg, 0xffff);
			break;
		case O_PARAMS_ONLY: prof.params_only = true; break;
		case O_SPEED_FIRST: prof.speed_first = true; break;
		case O_NOTIFY_ONCE: prof.notify_once = true; break;
		case O_RUNT: prof.runt_one_in = (unsigned)num("runt-one-in", optarg, 1000000); break;
		case O_IN_STOP: prof.in_stop_after = (unsigned)num("in-stop-after", optarg, 1000000); break;
		case O_STALL_INTR_ONCE: prof.stall_intr_once = true; break;
		case O_SPEED: parse_speed(optarg); break;
		case O_SPEED_SPLIT: prof.speed_split = true; break;
		case O_OVERLONG: prof.notify_overlong = true; break;
		case O_FLAP: prof.link_flaps = (unsigned)num("link-flap", optarg, 10000); break;
		case O_FLAP_MS: prof.flap_ms = (unsigned)num("link-flap-ms", optarg, 60000); break;
		case O_HOLD: parse_hold(optarg); break;
		case O_VANISH: parse_vanish(optarg); break;
		case O_UDC_FD: prof.udc_fd = (int)num("udc-fd", optarg, 1000); break;
		case O_APPLE_MODES: apple = true; break;
		case O_IAD_FIRST: prof.iad_first = (uint8_t)num("iad-first", optarg, 0xff); break;
		case O_CS: prof.cs_desc = true; break;
		case O_ALT1: prof.alt1 = true; break;
		case O_SELF: return self_test() | (hostile_self_test() ? 0 : 1);
		case O_MAC:
			if (!parse_mac(optarg, prof.mac_addr))
				die("--mac takes XX:XX:XX:XX:XX:XX");
			prof.mac = true;
			break;
		case O_NO_MAC: prof.mac = false; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	if (!dir == !gfs_dir || optind != argc) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (apple && dir)
		return apple_main(dir, ready);
	if (gfs_dir) {
		/* gadgetfs takes the CDC descriptors, and SET_INTERFACE is ours to answer. */
		prof.cs_desc = true;
		prof.alt1 = true;
		if (apple || prof.refuse_input_size || prof.iad_first)
			die("--gadgetfs serves one NCM function as the whole device: no --apple-modes, "
			    "--iad-first, nor --refuse-input-size (gadgetfs cannot stall an OUT request "
			    "with data)");
	} else if (prof.ep0_delay_ms) {
		die("--ep0-delay-ms needs --gadgetfs: it delays gadgetfs's events");
	} else if (prof.refuse_crc || prof.mac_string_missing || prof.no_langids ||
		   prof.max_segment != FRAME_MAX) {
		die("--refuse-crc, --mac-string-missing, --no-langids and --max-segment need "
		    "--gadgetfs: f_fs in "
		    "Linux 6.1 takes no CDC functional descriptor, so the host never sees CRC mode, "
		    "iMACAddress or wMaxSegmentSize");
	}
	/* Under the spec's 2048 (libncm takes them, as Linux does); 0: not said. */
	if ((prof.in_max && prof.in_max < 1600) || (prof.out_max && prof.out_max < 128))
		die("--in-max under 1600 carries no full frame, --out-max under 128 no IP packet");
	if (!prof.out_div || !prof.out_align)
		die("--out-ndp: divisor and alignment must not be 0");
	if (prof.max_datagram_reply >= 0 && !(prof.caps & 0x08))
		die("--max-datagram-reply needs --caps with bit 3 (0x08): without it the host "
		    "never asks");
	if (prof.stall_intr && !prof.intr)
		die("--stall-intr needs the interrupt endpoint (no --no-intr)");
	if (prof.refuse_input_size && prof.ignore_input_size)
		die("--refuse-input-size and --ignore-input-size exclude each other");
	replay_load(replay_skip);
	if (replay_count() && !prof.hostile_one_in)
		die("--replay needs --hostile-one-in N: the files take the crafted transfers' turn");
	if (prof.n_vanish && prof.udc_fd < 0)
		die("--vanish-on needs --udc-fd: the gadget's configfs UDC file (with --gadgetfs: "
		    "the UDC's sysfs soft_connect), opened for writing (ffs-ncm runs in another "
		    "network namespace, whose /sys has neither)");
	if ((prof.stall_intr_once || prof.speed_split || prof.notify_overlong || prof.link_flaps ||
	     prof.speed_down || prof.speed_up) && !prof.intr)
		die("the interrupt options need the interrupt endpoint (no --no-intr)");
	input_size = prof.in_max;

	/* Every thread inherits the mask; one thread takes the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_create(&th, NULL, signal_thread, &set);

	tap = open_tap(tap_name);
	if (gfs_dir) {
		gadgetfs_start(gfs_dir, &ids);
		touch_ready(ready);
		gadgetfs_until_configured();
	} else {
		ep0 = open_ep(dir, 0, O_RDWR);
		write_descriptors();
		unsigned n = 1;
		if (prof.intr)
			ep_intr = open_ep(dir, n++, O_RDWR);
		ep_in = open_ep(dir, n++, O_RDWR);
		ep_out = open_ep(dir, n++, O_RDWR);
	}
	say("profile %s: formats 0x%x in %u %u/%u/%u out %u %u/%u/%u max datagrams %u caps 0x%02x "
	    "%s, tap %s%s%s%s%s", prof.name, prof.formats, prof.in_max, prof.in_div, prof.in_rem,
	    prof.in_align, prof.out_max, prof.out_div, prof.out_rem, prof.out_align,
	    prof.out_max_datagrams, prof.caps, prof.intr ? "interrupt endpoint" : "no interrupt endpoint",
	    tap_name, prof.in_ndp_first ? ", IN NDP first" : "",
	    prof.params_only ? ", class requests but GET_NTB_PARAMETERS STALLed" : "",
	    prof.speed_first ? ", speed before link" : "",
	    prof.notify_once ? ", notifications once" : "");
	if (prof.in_max_datagrams)
		say("at most %u datagrams per IN NTB", prof.in_max_datagrams);
	if (!gfs_dir)
		touch_ready(ready);
	pthread_create(&th, NULL, rx_thread, NULL);
	pthread_create(&th, NULL, tx_thread, NULL);
	if (prof.intr)
		pthread_create(&th, NULL, notify_thread, NULL);
	if (prof.stall_intr_once || prof.speed_down || prof.speed_up || prof.notify_overlong ||
	    prof.link_flaps) {
		/* It ends on its own; nobody joins it. */
		pthread_create(&th, NULL, notify_late_thread, NULL);
		pthread_detach(th);
	}
	if (prof.drain_kbit)
		hold_start();
	if (gfs_dir)
		gadgetfs_loop();
	ep0_loop();
	return 0;
}
