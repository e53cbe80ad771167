/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ffs-ncm-apple.c: ffs-ncm --apple-modes: an Apple device's other side for the VM: a PTP and a usbmux interface in every configuration, and the answers to the NCM mode switch. */
#include <errno.h>
#include <fcntl.h>
#include <linux/usb/functionfs.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ffs-ncm.h"

/*
 * An iPhone shows configurations 1-4 (PTP, then PTP with usbmux and more)
 * until a host asks for the NCM mode; it then re-enumerates with a fifth
 * configuration holding NCM. This function is what stays: PTP (still
 * image class, which makes Linux pick configuration 1) and usbmux (vendor
 * 0xff/0xfe/2) in each configuration, and the two vendor requests usbmuxd
 * and go-ios send to the device (recipient: device, so f_fs needs
 * FUNCTIONFS_ALL_CTRL_RECIP to see them, and CONFIG0_SETUP before a
 * configuration is set):
 * - GET_MODE (0xC0, 0x45, wValue 0, wIndex 0, 4 bytes): "3:3:3:0" before
 *   the switch, "5:3:3:0" after, as in usbmuxd's debug log;
 * - SET_MODE (0xC0, 0x52, wValue 0, wIndex 3, 1 byte): accepted; the
 *   device then re-enumerates, which the guest script does in configfs
 *   (guest-lib.sh ffs_apple_switch) once this prints "SET_MODE 3".
 * The NCM function itself is a second ffs-ncm (--profile apple) on its own
 * FunctionFS instance, linked into configuration 5 only. SIGUSR1 makes the
 * device answer as before the switch again (guest-lib.sh ffs_apple_unswitch).
 */

#define APPLE_REQ_GET_MODE 0x45
#define APPLE_REQ_SET_MODE 0x52
#define APPLE_MODE_NCM 3

typedef struct {
	uint8_t b[256];
	size_t len;
	unsigned count;
} Descs;

static void
add(Descs *d, const uint8_t *p, size_t n)
{
	if (d->len + n > sizeof(d->b))
		die("Apple descriptors overflow");
	memcpy(d->b + d->len, p, n);
	d->len += n;
	d->count++;
}

static void
speed(Descs *d, uint16_t mps)
{
	const uint8_t ptp[] = { 9, 0x04, 0, 0, 2, 0x06, 0x01, 0x01, 0 };
	const uint8_t mux[] = { 9, 0x04, 1, 0, 2, 0xff, 0xfe, 0x02, 0 };
	const uint8_t ep[4][7] = {
		{ 7, 0x05, 0x81, 0x02, (uint8_t)mps, (uint8_t)(mps >> 8), 0 },
		{ 7, 0x05, 0x02, 0x02, (uint8_t)mps, (uint8_t)(mps >> 8), 0 },
		{ 7, 0x05, 0x83, 0x02, (uint8_t)mps, (uint8_t)(mps >> 8), 0 },
		{ 7, 0x05, 0x04, 0x02, (uint8_t)mps, (uint8_t)(mps >> 8), 0 },
	};

	add(d, ptp, sizeof(ptp));
	add(d, ep[0], 7);
	add(d, ep[1], 7);
	add(d, mux, sizeof(mux));
	add(d, ep[2], 7);
	add(d, ep[3], 7);
}

static void
write_exact(int fd, const uint8_t *b, size_t n, const char *what)
{
	if (write(fd, b, n) != (ssize_t)n)
		die("writing the %s: %s", what, strerror(errno));
}

static void
apple_descriptors(int fd)
{
	Descs fs = { 0 }, hs = { 0 };
	uint8_t head[20], all[600], str[16];
	const uint32_t flags = FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC |
			       FUNCTIONFS_ALL_CTRL_RECIP | FUNCTIONFS_CONFIG0_SETUP;

	speed(&fs, FS_BULK_MPS);
	speed(&hs, HS_BULK_MPS);
	put32(head, sizeof(head), 0, FUNCTIONFS_DESCRIPTORS_MAGIC_V2);
	put32(head, sizeof(head), 4, (uint32_t)(sizeof(head) + fs.len + hs.len));
	put32(head, sizeof(head), 8, flags);
	put32(head, sizeof(head), 12, fs.count);
	put32(head, sizeof(head), 16, hs.count);
	memcpy(all, head, sizeof(head));
	memcpy(all + sizeof(head), fs.b, fs.len);
	memcpy(all + sizeof(head) + fs.len, hs.b, hs.len);
	write_exact(fd, all, sizeof(head) + fs.len + hs.len, "Apple descriptors");
	put32(str, sizeof(str), 0, FUNCTIONFS_STRINGS_MAGIC);
	put32(str, sizeof(str), 4, 16);
	put32(str, sizeof(str), 8, 0);
	put32(str, sizeof(str), 12, 0);
	write_exact(fd, str, sizeof(str), "Apple strings");
}

/* Answers one request; false: STALL it. */
static bool
apple_request(int fd, const struct usb_ctrlrequest *rq, bool *switched)
{
	uint8_t mode[4] = { 3, 3, 3, 0 }, ok = 0;

	if (rq->bRequestType != 0xC0)
		return false;
	if (rq->bRequest == APPLE_REQ_GET_MODE && rq->wLength >= sizeof(mode)) {
		if (*switched)
			mode[0] = 5;
		say("GET_MODE: %u:%u:%u:%u", mode[0], mode[1], mode[2], mode[3]);
		return write(fd, mode, sizeof(mode)) == (ssize_t)sizeof(mode);
	}
	if (rq->bRequest == APPLE_REQ_SET_MODE && rq->wIndex == APPLE_MODE_NCM && rq->wLength >= 1) {
		*switched = true;
		if (write(fd, &ok, 1) != 1)
			return false;
		say("SET_MODE %u: re-enumerating with NCM in configuration 5", rq->wIndex);
		return true;
	}
	return false;
}

static volatile sig_atomic_t reset_requested;

static void
on_reset(int sig)
{
	(void)sig;
	reset_requested = 1;
}

int
apple_main(const char *dir, const char *ready)
{
	char path[4096];
	struct usb_functionfs_event ev[4];
	bool switched = false;
	int fd;

	snprintf(path, sizeof(path), "%s/ep0", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("opening %s: %s", path, strerror(errno));
	apple_descriptors(fd);
	touch_ready(ready);
	say("Apple modes: PTP and usbmux; GET_MODE 0x45, SET_MODE 0x52");
	/* SIGUSR1: back to the mode before the switch, for a second round. */
	signal(SIGUSR1, on_reset);
	for (;;) {
		ssize_t n = read(fd, ev, sizeof(ev));

		if (reset_requested) {
			reset_requested = 0;
			switched = false;
			say("reset: GET_MODE answers 3:3:3:0 again");
		}

		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EIDRM || errno == ESHUTDOWN ||
			    errno == ENODEV) {
				usleep(10000);
				continue;
			}
			die("reading ep0 events: %s", strerror(errno));
		}
		for (size_t i = 0; i < (size_t)n / sizeof(ev[0]); i++) {
			const struct usb_ctrlrequest *rq = &ev[i].u.setup;
			uint8_t none[1];

			if (ev[i].type != FUNCTIONFS_SETUP)
				continue;
			COUNT(st_requests, 1);
			if (apple_request(fd, rq, &switched))
				continue;
			say("stalling request 0x%02x/0x%02x wValue %u wIndex %u wLength %u",
			    rq->bRequestType, rq->bRequest, rq->wValue, rq->wIndex, rq->wLength);
			COUNT(st_stalled_requests, 1);
			/* I/O against the request's direction stalls ep0. */
			if (rq->bRequestType & 0x80) {
				if (read(fd, none, 0) < 0)
					continue;
			} else if (write(fd, none, 0) < 0) {
				continue;
			}
		}
	}
}
