/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-cpu.h: whole-system CPU from /proc/stat, what it cost per MB moved, and the CPU of named threads (the libusb event thread). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * The "cpu" line of /proc/stat (all CPUs added), in USER_HZ ticks. Busy is
 * user + nice + system + irq + softirq + steal; guest and guest_nice are
 * already inside user and nice, so they are not added again. Total adds
 * idle and iowait. Per-process CPU cannot compare a userspace path with
 * cdc_ncm: the kernel's work lands in softirq, on the gadget side, or in
 * whichever task it interrupted, so only the whole system counts it all.
 */
typedef struct {
	guint64 busy;
	guint64 total;
} BenchCpuTicks;

/* Parses the text of /proc/stat; FALSE when it has no "cpu " line with at least 8 columns. */
gboolean bench_cpu_ticks_parse(const char *text, BenchCpuTicks *ret);

/* Reads /proc/stat now; FALSE (and @ret all zero) when it cannot. */
gboolean bench_cpu_ticks_read(BenchCpuTicks *ret);

/* Busy CPU seconds (all CPUs added) from @a to @b; 0 when @b is not after @a. */
double bench_cpu_busy_seconds(const BenchCpuTicks *a, const BenchCpuTicks *b, long ticks_per_s);

/* The busy share of all CPUs' time from @a to @b, 0..1 (0 when no time passed). */
double bench_cpu_busy_share(const BenchCpuTicks *a, const BenchCpuTicks *b);

/*
 * Busy CPU seconds from @a to @b per MB (10^6 bytes) of @bytes, the
 * receiver's count over the same interval; NAN when @bytes is 0.
 */
double bench_cpu_s_per_mb(const BenchCpuTicks *a, const BenchCpuTicks *b, long ticks_per_s,
			  guint64 bytes);

/*
 * CPU ticks (user + system, USER_HZ) that the threads named @comm of
 * process @pid (0: this one) used so far, added; 0 when none. libncm's
 * libusb event thread is "ncm-usb-events", one per NcmContext: its share
 * of one CPU says whether it is what limits many devices.
 */
guint64 bench_thread_ticks(int pid, const char *comm);
#define NCM_BENCH_EVENT_THREAD "ncm-usb-events"


G_END_DECLS
