/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ffs-ncm-gadgetfs.c: ffs-ncm's ep0 through gadgetfs, which takes a whole device: CDC functional descriptors, strings, SET_INTERFACE. */

/*
 * Linux 6.1's FunctionFS rejects the CDC class-specific descriptors, so a
 * device whose quirk lives in them (CRC mode in bmNetworkCapabilities,
 * a multicast or missing iMACAddress) is served through gadgetfs instead
 * (tests/vm/README.md, "The gadgetfs backend"). gadgetfs hands the
 * controller's whole ep0 to userspace, except the device and configuration
 * descriptors and the bus-level requests: this file answers strings,
 * SET_CONFIGURATION, SET/GET_INTERFACE, and passes the function's class
 * requests to ffs-ncm.c's on_setup(), whose ep0 I/O (a reply, a data
 * stage, a stall by I/O against the request's direction) gadgetfs shares
 * with FunctionFS. The data path, the NTB checks and the profile are
 * ffs-ncm's own; only the endpoint files differ (named by the controller,
 * configured by writing their descriptors after SET_CONFIGURATION).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/usb/gadgetfs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ffs-ncm.h"

#define CONFIG_VALUE 1
#define STR_MAC 1       /* ncm_descs() names iMACAddress string 1 */
#define STR_MANUFACTURER 2
#define STR_PRODUCT 3
#define STR_SERIAL 4

static const GadgetfsIds *ids;
static char dir_path[4096];
static bool configured;
static uint8_t data_alt;

/* dummy_udc's endpoints for the addresses ncm_descs() uses. Its bulk
 * endpoints also take interrupt transfers, and it routes the host's
 * transfers by the descriptor's address, not by the endpoint's name. */
static const struct {
	uint8_t addr;
	const char *name;
} ep_names[] = {
	{ 0x81, "ep1in-bulk" }, { 0x82, "ep6in-bulk" }, { 0x02, "ep2out-bulk" }, { 0x03, "ep7out-bulk" },
};

static void
open_controller(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[sizeof(dir_path) + 256];

	if (!d)
		die("opening %s: %s (mount -t gadgetfs gadgetfs %s)", dir, strerror(errno), dir);
	/* Before the bind, the controller's file is the only one. */
	while ((e = readdir(d)) && e->d_name[0] == '.')
		;
	if (!e)
		die("%s holds no controller file: is a gadget (configfs) bound to the UDC?", dir);
	snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
	closedir(d);
	ep0 = open(path, O_RDWR | O_CLOEXEC);
	if (ep0 < 0)
		die("opening %s: %s", path, strerror(errno));
	snprintf(dir_path, sizeof(dir_path), "%s", dir);
}

static void
config_desc(Blob *d, bool hs)
{
	Blob f = { 0 };
	uint8_t c[9] = { 9, 0x02, 0, 0, 2, CONFIG_VALUE, 0, 0xc0, 50 };

	ncm_descs(&f, hs);
	put16(c, sizeof(c), 2, (uint16_t)(sizeof(c) + f.len));
	blob_put(d, c, sizeof(c));
	blob_put(d, f.b, f.len);
}

void
gadgetfs_start(const char *dir, const GadgetfsIds *g)
{
	Blob all = { 0 };
	const uint8_t tag[4] = { 0 };
	/* Class 0xEF/2/1: the function is grouped by its IAD, as on FunctionFS. */
	uint8_t dev[18] = { 18, 0x01, 0x00, 0x02, 0xef, 0x02, 0x01, 64, 0, 0, 0, 0, 0x00, 0x01,
			    STR_MANUFACTURER, STR_PRODUCT, STR_SERIAL, 1 };
	ssize_t r;

	ids = g;
	ep0_gadgetfs = true;
	put16(dev, sizeof(dev), 8, g->vid);
	put16(dev, sizeof(dev), 10, g->pid);
	open_controller(dir);
	blob_put(&all, tag, sizeof(tag));
	config_desc(&all, false);
	config_desc(&all, true);
	blob_put(&all, dev, sizeof(dev));
	r = write(ep0, all.b, all.len);
	if (r != (ssize_t)all.len)
		die("writing the descriptors to gadgetfs: %s", r < 0 ? strerror(errno) : "short write");
}

/*
 * gadgetfs's read of an OUT data stage sleeps until that stage is in, and
 * its wait does not end when the host's next request comes: that request
 * clears the "data in" flag the sleeper waits for. dummy_hcd completes the
 * host's request as soon as the data is in, so the host's next request
 * (SET_CRC_MODE after SET_NTB_INPUT_SIZE) can come between the wake-up and
 * the sleeper running, and ep0 then hangs for good (a CI run of
 * vm-ffs-crc-accept). A non-blocking read returns the data once it is in,
 * or EIDRM once the next request came; it is retried until one of them.
 */
ssize_t
gadgetfs_read_out(uint8_t *b, size_t n)
{
	int flags = fcntl(ep0, F_GETFL), err = 0;
	unsigned waits = 0;
	ssize_t r = -1;

	if (flags < 0 || fcntl(ep0, F_SETFL, flags | O_NONBLOCK) < 0)
		return read(ep0, b, n);
	for (; waits < 5000; waits++) {
		r = read(ep0, b, n);
		if (r >= 0 || errno != EAGAIN)
			break;
		usleep(1000);
	}
	if (r < 0)
		err = errno;
	trace_ep0_call(r, "data stage of %zu bytes after %u waits", n, waits);
	if (err == EAGAIN)
		say("gadgetfs: an OUT data stage of %zu bytes did not come in 5 s", n);
	else if (err == EIDRM)
		say("gadgetfs: the host's next request came before an OUT data stage of %zu bytes "
		    "was read: that data is lost", n);
	(void)fcntl(ep0, F_SETFL, flags);
	errno = err;
	return r;
}

/* ---- standard requests gadgetfs leaves to userspace ------------------------ */

static void
ack(void)
{
	uint8_t b[1];

	/* A zero-length read is the status stage of a request without data. */
	ssize_t r = read(ep0, b, 0);

	trace_ep0_call(r, "status stage");
	if (r < 0)
		say("gadgetfs status stage: %s", strerror(errno));
}

static void
reply(const struct usb_ctrlrequest *rq, const uint8_t *b, size_t n)
{
	ssize_t r = write(ep0, b, rq->wLength < n ? rq->wLength : n);

	trace_ep0_call(r, "reply 0x%02x", rq->bRequest);
	if (r < 0)
		say("gadgetfs reply to 0x%02x: %s", rq->bRequest, strerror(errno));
}

static void
string_desc(const struct usb_ctrlrequest *rq)
{
	uint8_t b[2 + 2 * 126] = { 0 };
	char mac[MAC_HEX_LEN];
	const char *s = NULL;
	unsigned idx = rq->wValue & 0xff;
	size_t n = 0;

	/* libncm reads iMACAddress while it looks for NCM functions: --vanish-on 0x06. */
	if (idx == STR_MAC && vanish(rq))
		return;
	mac_hex(mac);
	switch (idx) {
	case 0: /* the languages: en-US only (--no-langids: none) */
		b[0] = prof.no_langids ? 2 : 4, b[1] = 0x03, b[2] = 0x09, b[3] = 0x04;
		if (prof.no_langids)
			say("string 0 lists no language");
		reply(rq, b, b[0]);
		return;
	case STR_MAC: s = prof.mac && !prof.mac_string_missing ? mac : NULL; break;
	case STR_MANUFACTURER: s = "libncm"; break;
	case STR_PRODUCT: s = "libncm programmable NCM device (ffs-ncm, gadgetfs)"; break;
	case STR_SERIAL: s = ids->serial; break;
	}
	if (!s) {
		say("stalling GET_DESCRIPTOR string %u", idx);
		stall(rq);
		return;
	}
	for (; s[n] && n < 126; n++)
		b[2 + 2 * n] = (uint8_t)s[n];
	b[0] = (uint8_t)(2 + 2 * n), b[1] = 0x03;
	reply(rq, b, b[0]);
}

/* The n-th endpoint descriptor of a speed's set. */
static const uint8_t *
nth_endpoint(const Blob *d, unsigned n)
{
	for (size_t off = 0; off + 2 <= d->len && d->b[off] >= 2; off += d->b[off])
		if (d->b[off + 1] == 0x05 && n-- == 0)
			return off + 7 <= d->len ? d->b + off : NULL;
	return NULL;
}

static int
open_endpoint(const uint8_t *fs, const uint8_t *hs)
{
	char path[sizeof(dir_path) + 32];
	uint8_t b[4 + 7 + 7] = { 1, 0, 0, 0 };
	const char *name = NULL;
	int fd;

	for (size_t i = 0; i < sizeof(ep_names) / sizeof(ep_names[0]); i++)
		if (ep_names[i].addr == fs[2])
			name = ep_names[i].name;
	if (!name)
		die("no dummy_udc endpoint for address 0x%02x", fs[2]);
	snprintf(path, sizeof(path), "%s/%s", dir_path, name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("opening %s: %s", path, strerror(errno));
	/* Tag 1, then the full- and the high-speed descriptor; it enables the endpoint. */
	memcpy(b + 4, fs, 7);
	memcpy(b + 11, hs, 7);
	if (write(fd, b, sizeof(b)) != (ssize_t)sizeof(b))
		die("configuring %s (0x%02x): %s", path, fs[2], strerror(errno));
	return fd;
}

static void
open_endpoints(void)
{
	Blob fs = { 0 }, hs = { 0 };
	const uint8_t *f, *h;

	ncm_descs(&fs, false);
	ncm_descs(&hs, true);
	for (unsigned i = 0; (f = nth_endpoint(&fs, i)) && (h = nth_endpoint(&hs, i)); i++) {
		int fd = open_endpoint(f, h);

		if ((f[3] & 0x03) == 0x03)
			ep_intr = fd;
		else if (f[2] & 0x80)
			ep_in = fd;
		else
			ep_out = fd;
	}
	configured = true;
}

static void
on_gadgetfs_setup(const struct usb_ctrlrequest *rq)
{
	uint8_t alt;

	switch (rq->bRequestType << 8 | rq->bRequest) {
	case 0x8006: /* GET_DESCRIPTOR: gadgetfs serves all but strings */
		if ((rq->wValue >> 8) == 0x03) {
			string_desc(rq);
			return;
		}
		break;
	case 0x0009: /* SET_CONFIGURATION: gadgetfs checked the value; no stall allowed */
		if (rq->wValue == CONFIG_VALUE && !configured)
			open_endpoints();
		if (rq->wValue != CONFIG_VALUE)
			set_enabled(false);
		data_alt = 0;
		ack();
		return;
	case 0x010B: /* SET_INTERFACE: the data interface's alt 1 carries the bulk pair */
		if ((rq->wIndex & 0xff) == 0 && rq->wValue == 0) {
			ack();
			return;
		}
		if ((rq->wIndex & 0xff) == 1 && rq->wValue <= 1) {
			data_alt = (uint8_t)rq->wValue;
			say("SET_INTERFACE data alt %u", data_alt);
			/*
			 * gadgetfs reports an OUT request with data after its
			 * transfer completed, and drops that event if the host's
			 * next request comes first: SET_NTB_INPUT_SIZE can go
			 * unseen. Alt 1 ends the negotiation, so the host's
			 * session starts here (input size: what was seen).
			 */
			if (data_alt == 1) {
				pthread_mutex_lock(&lock);
				host_negotiated = true;
				in_since_nego = 0;
				pthread_mutex_unlock(&lock);
			}
			set_enabled(data_alt == 1);
			ack();
			return;
		}
		break;
	case 0x810A: /* GET_INTERFACE */
		alt = (rq->wIndex & 0xff) == 1 ? data_alt : 0;
		reply(rq, &alt, 1);
		return;
	default:
		if ((rq->bRequestType & 0x60) == 0x20) { /* class */
			on_setup(rq);
			return;
		}
	}
	say("stalling standard request 0x%02x/0x%02x wValue 0x%04x wIndex %u", rq->bRequestType,
	    rq->bRequest, rq->wValue, rq->wIndex);
	stall(rq);
}

/*
 * A request can strand gadgetfs's ep0: when the host's next request comes
 * while ffs-ncm answers the last one (an OUT data stage, which the host
 * finished before the event was read, or a reply after a STALL), the
 * answer fails with EIDRM and gadgetfs stays in its setup state for the
 * new request, whose event it holds back until that request is answered.
 * A blocking event read then answers it blindly: an IN one is STALLed,
 * and one without data waits for a data stage that never comes, so ep0
 * hangs and every later request times out (vm-ffs-mac-desc in CI).
 * poll() tells the state without touching it: POLLOUT without POLLIN is
 * a stranded IN or stallable OUT request, which a zero-length read ends
 * (a STALL, or the status stage of one without data); its event follows.
 * A stranded OUT request with data shows nothing: the event read takes
 * its data stage, which the host already sent.
 */
static bool
answer_stranded(void)
{
	struct pollfd p = { .fd = ep0, .events = POLLIN | POLLOUT };
	uint8_t b[1];

	if (poll(&p, 1, 0) <= 0 || (p.revents & POLLIN))
		return false;
	trace_ep0("poll: revents 0x%x", (unsigned)p.revents);
	/* POLLHUP: gadgetfs reported (and forgot) an abort; look again. */
	if (p.revents & POLLHUP)
		return true;
	if (!(p.revents & POLLOUT))
		return false;
	COUNT(st_stranded_requests, 1);
	ssize_t r = read(ep0, b, 0);

	trace_ep0_call(r, "stranded");
	if (r == 0)
		say("gadgetfs: acked a request without data that came while the last was answered");
	else if (errno == EL2HLT)
		say("gadgetfs: stalled an IN request that came while the last was answered");
	else
		say("gadgetfs: answering a stranded request: %s", strerror(errno));
	return true;
}

static void
serve_events(bool until_configured)
{
	struct usb_gadgetfs_event ev[5];

	while (!until_configured || !configured) {
		if (answer_stranded())
			continue;

		ssize_t n = read(ep0, ev, sizeof(ev));

		trace_ep0_call(n, "events");
		if (n < 0) {
			/* EIDRM: the host gave up on a request (a reset); the next one comes. */
			if (errno == EINTR || errno == EIDRM || errno == EAGAIN)
				continue;
			/* A request cut by our soft-disconnect (--vanish-on), as on FunctionFS. */
			if (errno == ESHUTDOWN || errno == ENODEV) {
				usleep(10000);
				continue;
			}
			/* EL2HLT: stranded after the poll (answer_stranded()); it is STALLed. */
			if (errno == EL2HLT) {
				COUNT(st_stranded_requests, 1);
				say("gadgetfs stalled an IN request that came while the last was answered");
				continue;
			}
			die("reading gadgetfs events: %s", strerror(errno));
		}
		for (size_t i = 0; i < (size_t)n / sizeof(ev[0]); i++) {
			switch (ev[i].type) {
			case GADGETFS_CONNECT:
				say("gadgetfs: connected (speed %d)", (int)ev[i].u.speed);
				break;
			case GADGETFS_DISCONNECT:
				set_enabled(false);
				break;
			case GADGETFS_SETUP:
				trace_setup(&ev[i].u.setup);
				if (prof.ep0_delay_ms)
					usleep(prof.ep0_delay_ms * 1000u);
				on_gadgetfs_setup(&ev[i].u.setup);
				break;
			default:
				break;
			}
		}
	}
}

void
gadgetfs_until_configured(void)
{
	serve_events(true);
}

void
gadgetfs_loop(void)
{
	struct sched_param sp = { .sched_priority = 10 };
	int r;

	/*
	 * The host sends its next request as soon as an OUT one's data stage
	 * is in, which gadgetfs takes before ffs-ncm has read the request; if
	 * ffs-ncm reads that data only after the next request came, the next
	 * one is stranded (answer_stranded()). A device's firmware answers
	 * ep0 at once: so does this thread, ahead of the data path and the
	 * host's programs. Set here, after the data threads were started,
	 * which would otherwise inherit it.
	 */
	r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (r)
		say("ep0 thread stays at normal priority (SCHED_FIFO: %s)", strerror(r));
	serve_events(false);
	die("gadgetfs event loop ended");
}
