/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-multi-stats.h: a multi path's figures over its devices: aggregate, per-device min, median and max, fairness; and their JSON. */
#pragma once

#include <glib.h>

#include "ncm-bench-stats.h"

G_BEGIN_DECLS

/*
 * What N devices streaming at once delivered. Each device has one figure
 * (its Mbit/s, for several repetitions its median); the aggregate is their
 * sum, the per-device summary is over the devices (nearest-rank median, as
 * everywhere in ncm-bench), and fairness is min / max: 1 when every device
 * got the same, 0 when one got nothing (or no device moved anything).
 */
typedef struct {
	gsize devices;
	double aggregate;
	BenchSummary per_device;
	double fairness;
} BenchMultiSummary;

/* Summarises @n per-device Mbit/s; @per_device is left as it was. All zero when @n is 0. */
void bench_multi_summarize(const double *per_device, gsize n, BenchMultiSummary *ret);

/*
 * Appends ,"devices":N,"per_device_mbit_s":{median,min,max,n},"fairness":F
 * and ,"device_mbit_s":[...] (each device's figure in the order given).
 */
void bench_multi_json(GString *s, const BenchMultiSummary *m, const double *per_device, gsize n);

G_END_DECLS
