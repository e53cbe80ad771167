/*
 * ffs-ncm's ep0 trace: the last requests and what became of them.
 *
 * gadgetfs drops and strands requests when the host's next one comes
 * while ffs-ncm still answers the last (ffs-ncm-gadgetfs.c). The log says
 * what ffs-ncm decided, not what ep0 returned or in which order, and a
 * hang that a CI run shows once cannot be rerun. So each ep0 call is kept,
 * timed, in a ring; SIGHUP prints it (guest-lib.sh's fail() does), and a
 * passing run prints nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "ffs-ncm.h"

#define TRACE_LINES 96
#define TRACE_WIDTH 112

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static char ring[TRACE_LINES][TRACE_WIDTH];
static unsigned long written;

static void trace_line(const char *fmt, va_list ap, const char *result)
	__attribute__((format(printf, 1, 0)));

/* errno is kept: the callers go on to look at their call's. */
static void
trace_line(const char *fmt, va_list ap, const char *result)
{
	int saved = errno;
	struct timespec t;
	char *line;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t);
	pthread_mutex_lock(&trace_lock);
	line = ring[written++ % TRACE_LINES];
	n = snprintf(line, TRACE_WIDTH, "%ld.%03ld ", (long)t.tv_sec, t.tv_nsec / 1000000);
	if (n < 0 || n >= TRACE_WIDTH)
		n = 0;
	vsnprintf(line + n, TRACE_WIDTH - (size_t)n, fmt, ap);
	if (result) {
		size_t len = strlen(line);

		snprintf(line + len, TRACE_WIDTH - len, ": %s", result);
	}
	pthread_mutex_unlock(&trace_lock);
	errno = saved;
}

void
trace_ep0(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	trace_line(fmt, ap, NULL);
	va_end(ap);
}

void
trace_ep0_call(ssize_t r, const char *fmt, ...)
{
	char result[64];
	va_list ap;

	snprintf(result, sizeof(result), "%zd %s", r, r < 0 ? strerror(errno) : "");
	va_start(ap, fmt);
	trace_line(fmt, ap, result);
	va_end(ap);
}

void
trace_setup(const struct usb_ctrlrequest *rq)
{
	trace_ep0("setup %02x/%02x wValue %u wIndex %u wLength %u", rq->bRequestType, rq->bRequest,
		  rq->wValue, rq->wIndex, rq->wLength);
}

void
trace_ep0_print(void)
{
	unsigned long first;

	pthread_mutex_lock(&trace_lock);
	first = written > TRACE_LINES ? written - TRACE_LINES : 0;
	say("ep0 trace: %lu calls, the last %lu follow", written, written - first);
	for (unsigned long i = first; i < written; i++)
		say("ep0 trace: %s", ring[i % TRACE_LINES]);
	pthread_mutex_unlock(&trace_lock);
}
