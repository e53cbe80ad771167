/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-ceiling.h: each throughput test against the usbfs ceiling (the raw path's tests), and the netdev counters its uplink is counted with. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * The raw test that bounds @test: tcp_down -> raw_down, tcp_up -> raw_up,
 * tcp_bidir -> raw_bidir (both ways at once, added, as tcp_bidir counts
 * them); NULL for every other test.
 */
const char *bench_ceiling_test(const char *test);

/*
 * Sets each result's ceiling (GPtrArray of BenchResult): for a test with a
 * ceiling test and Mbit/s, its Mbit/s median, min and max over the median
 * of the first result of the ceiling test that has Mbit/s (the raw path's),
 * with that median in ceiling_mbit; n = 0 when there is none. Starts from
 * scratch each time, so it may run again on the same results.
 */
void bench_ceiling_apply(GPtrArray *results);

/*
 * The receive counters of interface @ifname in the text of /proc/net/dev;
 * FALSE when no line names it or its first two columns are not numbers.
 */
gboolean bench_netdev_rx_parse(const char *text, const char *ifname, guint64 *ret_bytes,
			       guint64 *ret_packets);

G_END_DECLS
