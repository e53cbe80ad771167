/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tests/bench/multi-diag-preload.c: LD_PRELOAD for ncm-bench and ncm-tun (issue 20 diagnosis): logs each device's NcmStats and lwIP's NcmLwipStats whenever the program reads them. */
/*
 * ncm-bench reads every device's counters where a measured interval starts
 * and ends (its usb_mark), and lwIP's for the core lock figure; this shim
 * passes those calls on and appends the whole structs to
 * $MULTI_DIAG_LOG.PID, so a run's per-device drops, errors and nudges can
 * be read without changing the programs. It never calls into the libraries
 * on its own: a sampler thread could read a device that was just freed.
 * Devices are numbered in the order they were opened (ncm-bench opens a
 * multi path's devices in the order of its spec).
 * $MULTI_DIAG_RX_TRANSFERS, when set, replaces NcmDeviceOptions.rx_transfers
 * at open (neither ncm-bench nor ncm-tun has an option for it): how much
 * receive buffer memory the devices cycle through is one suspect of
 * issue 20's cost per MB at 8 devices.
 * Build: tests/bench/multi-diag.sh does it (gcc -shared -fPIC ... -ldl).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ncm.h>

#include "ncm-lwip.h"

#define MD_MAX_DEVICES 64

static NcmDevice *md_devices[MD_MAX_DEVICES];
static int md_ndevices;
static int md_fd = -2;

static void
md_log(const char *fmt, ...)
{
	char buf[2048];
	struct timespec ts;
	va_list ap;
	int n, m;

	if (md_fd == -2) {
		const char *base = getenv("MULTI_DIAG_LOG");
		char path[512];

		md_fd = -1;
		if (base && snprintf(path, sizeof(path), "%s.%d", base, (int)getpid()) < (int)sizeof(path))
			md_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	}
	if (md_fd < 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(buf, sizeof(buf), "%ld.%03ld ", (long)ts.tv_sec, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m < (int)(sizeof(buf) - (size_t)n - 1) ? m : (int)(sizeof(buf) - (size_t)n - 2);
	buf[n++] = '\n';
	/* One write per line with O_APPEND: threads' lines do not interleave. */
	if (write(md_fd, buf, (size_t)n) < 0)
		return;
}

static int
md_index(NcmDevice *dev)
{
	for (int i = 0; i < md_ndevices; i++)
		if (md_devices[i] == dev)
			return i;
	return -1;
}

NcmDevice *
ncm_device_open(NcmContext *context, const NcmFunctionInfo *info, const NcmDeviceOptions *options,
		GError **error)
{
	NcmDevice *(*real)(NcmContext *, const NcmFunctionInfo *, const NcmDeviceOptions *, GError **) =
		(NcmDevice * (*)(NcmContext *, const NcmFunctionInfo *, const NcmDeviceOptions *, GError **))
			dlsym(RTLD_NEXT, "ncm_device_open");
	const char *rx = getenv("MULTI_DIAG_RX_TRANSFERS");
	NcmDeviceOptions o;
	NcmDevice *dev;

	if (rx && *rx) {
		if (options)
			o = *options;
		else
			ncm_device_options_init(&o);
		o.rx_transfers = (guint)strtoul(rx, NULL, 10);
		options = &o;
	}
	dev = real ? real(context, info, options, error) : NULL;

	if (dev && md_ndevices < MD_MAX_DEVICES) {
		md_devices[md_ndevices] = dev;
		md_log("open %d serial=%s rx_transfers=%u", md_ndevices, info && info->serial ? info->serial : "?",
		       options ? options->rx_transfers : 0);
		md_ndevices++;
	}
	return dev;
}

void
ncm_device_get_stats(NcmDevice *self, NcmStats *s)
{
	void (*real)(NcmDevice *, NcmStats *) =
		(void (*)(NcmDevice *, NcmStats *))dlsym(RTLD_NEXT, "ncm_device_get_stats");
	guint64 rejects = 0;

	if (!real)
		return;
	real(self, s);
	for (size_t i = 0; i < G_N_ELEMENTS(s->rx_rejects); i++)
		rejects += s->rx_rejects[i];
	md_log("dev %d rx_ntbs %" G_GUINT64_FORMAT " rx_datagrams %" G_GUINT64_FORMAT
	       " rx_bytes %" G_GUINT64_FORMAT " rx_bad_ntbs %" G_GUINT64_FORMAT " rx_rejects %" G_GUINT64_FORMAT
	       " rx_overflows %" G_GUINT64_FORMAT " rx_stalls %" G_GUINT64_FORMAT " rx_errors %" G_GUINT64_FORMAT
	       " rx_sink_drops %" G_GUINT64_FORMAT " rx_batches %" G_GUINT64_FORMAT
	       " rx_nudges %" G_GUINT64_FORMAT " rx_nudge_freed %" G_GUINT64_FORMAT
	       " rx_acks_thinned %" G_GUINT64_FORMAT " tx_ntbs %" G_GUINT64_FORMAT
	       " tx_datagrams %" G_GUINT64_FORMAT " tx_would_block %" G_GUINT64_FORMAT
	       " tx_errors %" G_GUINT64_FORMAT " tx_acks_merged %" G_GUINT64_FORMAT
	       " tx_flush_timer %" G_GUINT64_FORMAT " intr_events %" G_GUINT64_FORMAT,
	       md_index(self), s->rx_ntbs, s->rx_datagrams, s->rx_bytes, s->rx_bad_ntbs, rejects,
	       s->rx_overflows, s->rx_stalls, s->rx_errors, s->rx_sink_drops, s->rx_batches, s->rx_nudges,
	       s->rx_nudge_freed, s->rx_acks_thinned, s->tx_ntbs, s->tx_datagrams, s->tx_would_block,
	       s->tx_errors, s->tx_acks_merged, s->tx_flush_timer, s->intr_events);
}

void
ncm_lwip_stack_get_stats(NcmLwipStack *self, NcmLwipStats *s)
{
	void (*real)(NcmLwipStack *, NcmLwipStats *) =
		(void (*)(NcmLwipStack *, NcmLwipStats *))dlsym(RTLD_NEXT, "ncm_lwip_stack_get_stats");

	if (!real)
		return;
	real(self, s);
	md_log("lwip rx_frames %" G_GUINT64_FORMAT " rx_drops %" G_GUINT64_FORMAT " tx_frames %" G_GUINT64_FORMAT
	       " tx_queued %" G_GUINT64_FORMAT " tx_drops %" G_GUINT64_FORMAT " window_posts %" G_GUINT64_FORMAT
	       " rx_compacted %" G_GUINT64_FORMAT " rx_merged %" G_GUINT64_FORMAT " core_lock_waits %" G_GUINT64_FORMAT
	       " core_lock_wait_us %" G_GUINT64_FORMAT,
	       s->rx_frames, s->rx_drops, s->tx_frames, s->tx_queued, s->tx_drops, s->window_posts,
	       s->rx_compacted, s->rx_merged, s->core_lock_waits, s->core_lock_wait_us);
}
