/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-cpu.c: whole-system CPU from /proc/stat and its cost per MB, and the CPU of named threads: see ncm-bench-cpu.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "ncm-bench-cpu.h"

/* user nice system idle iowait irq softirq steal (guest guest_nice) */
enum { C_USER, C_NICE, C_SYSTEM, C_IDLE, C_IOWAIT, C_IRQ, C_SOFTIRQ, C_STEAL, C_N };

gboolean
bench_cpu_ticks_parse(const char *text, BenchCpuTicks *ret)
{
	guint64 c[C_N];
	const char *p = text;
	char *end;

	memset(ret, 0, sizeof(*ret));
	/* The all-CPU line comes first, but do not rely on it. */
	while (p && !g_str_has_prefix(p, "cpu ")) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	if (!p)
		return FALSE;
	p += 4;
	for (int i = 0; i < C_N; i++) {
		while (*p == ' ')
			p++;
		if (!g_ascii_isdigit(*p))
			return FALSE;
		c[i] = g_ascii_strtoull(p, &end, 10);
		p = end;
	}
	ret->busy = c[C_USER] + c[C_NICE] + c[C_SYSTEM] + c[C_IRQ] + c[C_SOFTIRQ] + c[C_STEAL];
	ret->total = ret->busy + c[C_IDLE] + c[C_IOWAIT];
	return TRUE;
}

gboolean
bench_cpu_ticks_read(BenchCpuTicks *ret)
{
	/* The "cpu" line is the first, well under 512 bytes; the rest (per-CPU
	 * lines, every interrupt's count) is not needed. */
	char buf[512];
	ssize_t n;
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);

	memset(ret, 0, sizeof(*ret));
	if (fd < 0)
		return FALSE;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return FALSE;
	buf[n] = '\0';
	return bench_cpu_ticks_parse(buf, ret);
}

double
bench_cpu_busy_seconds(const BenchCpuTicks *a, const BenchCpuTicks *b, long ticks_per_s)
{
	if (b->busy <= a->busy || ticks_per_s <= 0)
		return 0;
	return (double)(b->busy - a->busy) / (double)ticks_per_s;
}

double
bench_cpu_busy_share(const BenchCpuTicks *a, const BenchCpuTicks *b)
{
	if (b->total <= a->total || b->busy < a->busy)
		return 0;
	return (double)(b->busy - a->busy) / (double)(b->total - a->total);
}

double
bench_cpu_s_per_mb(const BenchCpuTicks *a, const BenchCpuTicks *b, long ticks_per_s,
		   guint64 bytes)
{
	if (bytes == 0)
		return NAN;
	return bench_cpu_busy_seconds(a, b, ticks_per_s) / ((double)bytes / 1e6);
}

guint64
bench_thread_ticks(int pid, const char *comm)
{
	g_autofree char *task = pid ? g_strdup_printf("/proc/%d/task", pid) : g_strdup("/proc/self/task");
	g_autoptr(GDir) dir = g_dir_open(task, 0, NULL);
	const gchar *tid;
	guint64 sum = 0;

	while (dir != NULL && (tid = g_dir_read_name(dir)) != NULL) {
		g_autofree gchar *cpath = g_strdup_printf("%s/%s/comm", task, tid);
		g_autofree gchar *spath = g_strdup_printf("%s/%s/stat", task, tid);
		g_autofree gchar *name = NULL, *stat = NULL;
		g_auto(GStrv) f = NULL;
		const gchar *p;

		if (!g_file_get_contents(cpath, &name, NULL, NULL) ||
		    !g_str_equal(g_strstrip(name), comm) ||
		    !g_file_get_contents(spath, &stat, NULL, NULL) ||
		    (p = strrchr(stat, ')')) == NULL)
			continue;
		/* After "pid (comm)": state is field 3; utime and stime are 14, 15. */
		f = g_strsplit(p + 2, " ", 0);
		if (g_strv_length(f) > 12)
			sum += g_ascii_strtoull(f[11], NULL, 10) + g_ascii_strtoull(f[12], NULL, 10);
	}
	return sum;
}
