/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-ceiling.c: throughput as a fraction of the raw path's usbfs ceiling; the netdev receive counters of /proc/net/dev. */
#include <stdio.h>
#include <string.h>

#include "ncm-bench-ceiling.h"
#include "ncm-bench-json.h"

const char *
bench_ceiling_test(const char *test)
{
	static const char *const pairs[][2] = {
		{"tcp_down", "raw_down"}, {"tcp_up", "raw_up"}, {"tcp_bidir", "raw_bidir"},
	};

	for (gsize i = 0; i < G_N_ELEMENTS(pairs); i++) {
		if (g_str_equal(test, pairs[i][0]))
			return pairs[i][1];
	}
	return NULL;
}

static const BenchResult *
first_with_mbit(GPtrArray *results, const char *test)
{
	for (guint i = 0; i < results->len; i++) {
		const BenchResult *r = results->pdata[i];

		if (r->mbit.n > 0 && g_str_equal(r->test, test))
			return r;
	}
	return NULL;
}

void
bench_ceiling_apply(GPtrArray *results)
{
	for (guint i = 0; i < results->len; i++) {
		BenchResult *r = results->pdata[i];
		const char *test = bench_ceiling_test(r->test);
		const BenchResult *c = test ? first_with_mbit(results, test) : NULL;
		double m;

		memset(&r->ceiling, 0, sizeof(r->ceiling));
		r->ceiling_mbit = 0;
		if (!c || r->mbit.n == 0 || c->mbit.median <= 0)
			continue;
		m = c->mbit.median;
		r->ceiling.n = r->mbit.n;
		r->ceiling.min = r->mbit.min / m;
		r->ceiling.median = r->mbit.median / m;
		r->ceiling.p99 = r->mbit.p99 / m;
		r->ceiling.max = r->mbit.max / m;
		r->ceiling.mean = r->mbit.mean / m;
		r->ceiling_mbit = m;
	}
}

gboolean
bench_netdev_rx_parse(const char *text, const char *ifname, guint64 *ret_bytes, guint64 *ret_packets)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

	for (gchar **l = lines; *l; l++) {
		char *colon = strchr(*l, ':');

		if (!colon)
			continue;
		*colon = '\0';
		if (!g_str_equal(g_strstrip(*l), ifname))
			continue;
		/* Wide counters can follow the colon without a space. */
		return sscanf(colon + 1, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, ret_bytes,
			      ret_packets) == 2;
	}
	return FALSE;
}
