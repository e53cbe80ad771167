/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-multi-stats.c: a multi path's figures over its devices: aggregate, per-device min, median and max, fairness; and their JSON. */
#include <string.h>

#include "ncm-bench-json.h"
#include "ncm-bench-multi-stats.h"

void
bench_multi_summarize(const double *per_device, gsize n, BenchMultiSummary *ret)
{
	/* bench_summarize sorts: the caller's order is the devices' order, kept for the JSON. */
	g_autofree double *sorted = g_memdup2(per_device, n * sizeof(double));

	memset(ret, 0, sizeof(*ret));
	if (n == 0)
		return;
	ret->devices = n;
	for (gsize i = 0; i < n; i++)
		ret->aggregate += per_device[i];
	bench_summarize(sorted, n, &ret->per_device);
	ret->fairness = ret->per_device.max > 0 ? ret->per_device.min / ret->per_device.max : 0;
}

void
bench_multi_json(GString *s, const BenchMultiSummary *m, const double *per_device, gsize n)
{
	bench_json_num(s, "devices", (double)m->devices);
	bench_json_summary(s, "per_device_mbit_s", &m->per_device, FALSE);
	bench_json_num(s, "fairness", m->fairness);
	g_string_append(s, ",\"device_mbit_s\":[");
	for (gsize i = 0; i < n; i++) {
		if (i)
			g_string_append_c(s, ',');
		bench_json_double(s, per_device[i]);
	}
	g_string_append_c(s, ']');
}
