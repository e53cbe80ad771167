/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-syscall.c: what one system call's entry and exit cost, the most a batching interface saves per call. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <glib.h>

/*
 * Why: io_uring (or any batched submission) takes work out of a data path
 * only where that work is a call's way into the kernel and back; the
 * kernel's own work for a TAP read or write (the copy, the host's TCP) is
 * the same either way. These calls do next to nothing inside, so their
 * time is that fixed cost. Run under QEMU's TCG by tests/bench/csum-vm.sh
 * beside bench-csum, since the VM's cost is what the benchmarks measure.
 */

static int efd;

static void
call_getppid(void)
{
	syscall(SYS_getppid);
}

/* A reader's look at a descriptor that has nothing: poll that returns 0. */
static void
call_poll_idle(void)
{
	struct pollfd p = {.fd = efd, .events = POLLIN};

	if (poll(&p, 1, 0) != 0)
		abort();
}

/* A non-blocking read that finds nothing (libusb's empty reap is one). */
static void
call_read_empty(void)
{
	guint64 v;

	if (read(efd, &v, sizeof v) != -1 || errno != EAGAIN)
		abort();
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} runs[] = {
		{"getppid", call_getppid},
		{"poll, nothing ready", call_poll_idle},
		{"read, EAGAIN", call_read_empty},
	};
	guint n = argc > 1 ? (guint)atoi(argv[1]) : 200000;

	efd = eventfd(0, EFD_NONBLOCK);
	if (efd < 0 || n == 0)
		return 1;
	for (guint r = 0; r < G_N_ELEMENTS(runs); r++) {
		gint64 t0 = g_get_monotonic_time();

		for (guint i = 0; i < n; i++)
			runs[r].fn();
		printf("%-30s %.3f us per call\n", runs[r].name,
		       (gdouble)(g_get_monotonic_time() - t0) / n);
	}
	close(efd);
	return 0;
}
