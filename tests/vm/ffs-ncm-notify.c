/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ffs-ncm-notify.c: ffs-ncm's interrupt endpoint: the link and speed after each ENABLE, a flood or a halt for good, and once per run a late sequence (a halt, a split or overlong notification, link flaps). */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ffs-ncm.h"

#define NOTIFY_HEADER_LEN 8u
#define OVERLONG_JUNK 0x5a
#define LATE_DELAY_MS 1000u

static const uint8_t link_up[NOTIFY_HEADER_LEN] = { 0xA1, 0x00, 1, 0, 0, 0, 0, 0 };
static const uint8_t link_down[NOTIFY_HEADER_LEN] = { 0xA1, 0x00, 0, 0, 0, 0, 0, 0 };

static bool
notify(const uint8_t *b, size_t n)
{
	if (write(ep_intr, b, n) != (ssize_t)n)
		return false;  /* disabled under us (SET_INTERFACE, unplug): wait for the next ENABLE */
	COUNT(st_notifications, 1);
	return true;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* CONNECTION_SPEED_CHANGE: its 8-byte header and 8 bytes of bit rates. */
static void
speed_change(uint8_t b[16], uint32_t down, uint32_t up)
{
	const uint8_t header[NOTIFY_HEADER_LEN] = { 0xA1, 0x2A, 0, 0, 0, 0, 8, 0 };

	memcpy(b, header, sizeof(header));
	put32(b, 16, 8, down);
	put32(b, 16, 12, up);
}

/* --stall-intr: a wedged status pipe; each time the host clears it, again. */
static void
halt_intr_for_good(void)
{
	uint8_t b[INTR_MPS_MAX];

	say("halting the interrupt endpoint for good");
	for (;;) {
		wait_enabled();
		/* Reading an IN endpoint's file halts it. */
		if (read(ep_intr, b, sizeof(b)) < 0 && errno == EBADMSG)
			COUNT(st_stalls, 1);
		usleep(HALT_REPEAT_US);
	}
}

void *
notify_thread(void *arg)
{
	uint8_t speed[16];
	unsigned seen = 0;

	/* What the bus gives, as TinyUSB reports it: 12 Mbit/s at full speed. */
	if (prof.bulk_mps == FS_BULK_MPS)
		speed_change(speed, 12000000u, 12000000u);
	else
		speed_change(speed, 480000000u, 480000000u);
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!enabled || enable_gen == seen)
			pthread_cond_wait(&changed, &lock);
		/* TinyUSB sends its two once after a bus reset; a host that
		 * closes and opens again (SET_INTERFACE) hears nothing. */
		if (prof.notify_once && seen != 0) {
			seen = enable_gen;
			pthread_mutex_unlock(&lock);
			say("ENABLE again: no notification (--notify-once)");
			continue;
		}
		seen = enable_gen;
		pthread_mutex_unlock(&lock);
		if (prof.speed_first ? !notify(speed, sizeof(speed)) || !notify(link_up, sizeof(link_up))
				     : !notify(link_up, sizeof(link_up)) || !notify(speed, sizeof(speed)))
			continue;
		if (prof.stall_intr)
			halt_intr_for_good();
		if (prof.flood_s) {
			struct timespec t0, t;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			do {
				if (!notify(link_up, sizeof(link_up)))
					break;
				clock_gettime(CLOCK_MONOTONIC, &t);
			} while (t.tv_sec - t0.tv_sec < (time_t)prof.flood_s);
		}
	}
	return arg;
}

/* Reading an IN endpoint's file halts it; the host must clear the halt
 * before it sees another notification. */
static void
halt_intr(void)
{
	uint8_t b[INTR_MPS_MAX];

	if (read(ep_intr, b, sizeof(b)) < 0 && errno == EBADMSG) {
		COUNT(st_stalls, 1);
		say("interrupt endpoint halted");
	} else {
		say("halting the interrupt endpoint failed: %s", strerror(errno));
	}
}

/*
 * A notification with bytes past what its header announces, in one write:
 * with 16-byte packets the host gets the header and 8 extra bytes in one
 * transfer and the rest in the next, which is no notification at all.
 */
static void
overlong(const uint8_t *b, size_t n, size_t total)
{
	uint8_t buf[32];

	memset(buf, OVERLONG_JUNK, sizeof(buf));
	memcpy(buf, b, n);
	if (notify(buf, total))
		say("sent a %zu-byte notification whose header announces %zu", total, n);
}

static void
late_speed(void)
{
	uint8_t b[16];

	speed_change(b, prof.speed_down, prof.speed_up);
	if (prof.speed_split) {
		/* The header alone, then its data: two transfers (NCM 1.0, 7.1). */
		if (notify(b, NOTIFY_HEADER_LEN) && notify(b + NOTIFY_HEADER_LEN, 8))
			say("CONNECTION_SPEED_CHANGE %u/%u sent in two transfers", prof.speed_down,
			    prof.speed_up);
	} else if (prof.notify_overlong) {
		overlong(b, sizeof(b), 24);
	} else {
		notify(b, sizeof(b));
	}
}

/* The late sequence: once per run, 1 s into the host's first session. */
void *
notify_late_thread(void *arg)
{
	wait_host_session();
	sleep_ms(LATE_DELAY_MS);
	if (prof.stall_intr_once)
		halt_intr();
	if (prof.speed_down || prof.speed_up)
		late_speed();
	if (prof.notify_overlong) {
		/* Apart: libncm hands its owner link state, not every edge, so a
		 * down and up within one dispatch would show as no change. */
		overlong(link_down, sizeof(link_down), 32);
		sleep_ms(prof.flap_ms);
		overlong(link_up, sizeof(link_up), 32);
	}
	for (unsigned i = 0; i < prof.link_flaps; i++) {
		if (!notify(link_down, sizeof(link_down)))
			break;
		sleep_ms(prof.flap_ms);
		if (!notify(link_up, sizeof(link_up)))
			break;
		/* Not after the last: the host may be done, and the gadget
		 * stopped, before a sleep here ends and "done" is said. */
		if (i + 1 < prof.link_flaps)
			sleep_ms(prof.flap_ms);
	}
	say("late notifications done");
	return arg;
}
