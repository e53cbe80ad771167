/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-bench-autorate.c: ncm-bench's auto-rate controller against a simulated receiver. */
#include <glib.h>

#include "ncm-bench-stats.h"

#define INTERVAL_US 250000

/*
 * A link that serves @capacity_pps from a FIFO of @queue_max packets
 * (tail drop), then loses each served packet with probability @loss.
 * Its feedback is what ncm-bench's receiver reports: how far the highest
 * sequence number advanced (served + dropped before them), the unique
 * packets that arrived, and what is still queued (in flight).
 */
typedef struct {
	double capacity_pps;
	guint64 queue_max;
	double loss;
	guint64 queued;
	GRand *rand;
} SimLink;

static BenchRateFeedback
sim_interval(SimLink *l, double rate_pps)
{
	BenchRateFeedback fb = {INTERVAL_US, 0, 0, 0, 0};
	guint64 sent = (guint64)(rate_pps * INTERVAL_US / 1e6 + 0.5);
	guint64 dropped = 0, served;

	/* Fluid model: the link serves while packets arrive; what stays
	 * beyond the queue's room is dropped. */
	l->queued += sent;
	served = MIN(l->queued, (guint64)(l->capacity_pps * INTERVAL_US / 1e6));
	l->queued -= served;
	if (l->queued > l->queue_max) {
		dropped = l->queued - l->queue_max;
		l->queued = l->queue_max;
	}
	fb.sent = sent;
	fb.expected = served + dropped;
	for (guint64 i = 0; i < served; i++)
		fb.delivered += g_rand_double(l->rand) >= l->loss;
	fb.in_flight = l->queued;
	return fb;
}

typedef struct {
	double max_rate;
	double tail_mean; /* mean rate over the second half */
	double final_rate;
	guint backoffs;
} SimResult;

static SimResult
simulate(SimLink *l, double min_pps, double max_pps, guint intervals)
{
	BenchRateCtl c;
	SimResult r = {0, 0, 0, 0};

	l->rand = g_rand_new_with_seed(8);
	bench_rate_init(&c, min_pps, max_pps);
	for (guint i = 0; i < intervals; i++) {
		BenchRateFeedback fb = sim_interval(l, c.rate_pps);
		double rate = bench_rate_update(&c, &fb);

		r.max_rate = MAX(r.max_rate, rate);
		if (i >= intervals / 2)
			r.tail_mean += rate / (intervals - intervals / 2);
	}
	r.final_rate = c.rate_pps;
	r.backoffs = c.backoffs;
	g_rand_free(l->rand);
	return r;
}

static void
test_converges_near_capacity(void)
{
	SimLink l = {4000, 400, 0.002, 0, NULL};
	SimResult r = simulate(&l, 100, 1e6, 240);

	g_test_message("tail mean %.0f pps, max %.0f, backoffs %u", r.tail_mean, r.max_rate, r.backoffs);
	g_assert_cmpfloat(r.tail_mean, >, 0.7 * 4000);
	g_assert_cmpfloat(r.tail_mean, <, 1.15 * 4000);
	g_assert_cmpuint(r.backoffs, >, 0);
}

static void
test_never_exceeds_cap(void)
{
	SimLink l = {1e6, 100000, 0, 0, NULL};
	SimResult r = simulate(&l, 100, 2000, 100);

	g_assert_cmpfloat(r.max_rate, <=, 2000);
	g_assert_cmpfloat(r.final_rate, ==, 2000);
	g_assert_cmpuint(r.backoffs, ==, 0);
}

/* 30% random loss: no rate is clean, so the probe must back off to its floor. */
static void
test_backs_off_under_loss(void)
{
	SimLink l = {1e6, 100000, 0.3, 0, NULL};
	SimResult r = simulate(&l, 100, 1e6, 80);

	g_assert_cmpuint(r.backoffs, >, 10);
	g_assert_cmpfloat(r.final_rate, ==, 100);
	g_assert_cmpfloat(r.max_rate, <, 1000);
}

/* A deep queue loses nothing but delays everything: the rate must not keep climbing. */
static void
test_backs_off_on_queueing(void)
{
	SimLink l = {2000, 10000000, 0, 0, NULL};
	SimResult r = simulate(&l, 100, 1e6, 240);

	g_test_message("tail mean %.0f pps, max %.0f", r.tail_mean, r.max_rate);
	g_assert_cmpuint(r.backoffs, >, 0);
	g_assert_cmpfloat(r.tail_mean, <, 1.5 * 2000);
	g_assert_cmpfloat(r.tail_mean, >, 0.5 * 2000);
}

/* A link that delivers nothing at all (the highest number never moves). */
static void
test_dead_link(void)
{
	BenchRateCtl c;
	BenchRateFeedback fb = {INTERVAL_US, 0, 0, 0, 0};

	bench_rate_init(&c, 100, 1e6);
	fb.sent = 25;
	fb.in_flight = 25;
	bench_rate_update(&c, &fb);
	g_assert_cmpfloat(c.rate_pps, ==, 100);
	g_assert_cmpuint(c.backoffs, ==, 1);
	g_assert_cmpint(c.phase, ==, BENCH_RATE_PROBE);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/bench-autorate/converges", test_converges_near_capacity);
	g_test_add_func("/bench-autorate/cap", test_never_exceeds_cap);
	g_test_add_func("/bench-autorate/loss", test_backs_off_under_loss);
	g_test_add_func("/bench-autorate/queueing", test_backs_off_on_queueing);
	g_test_add_func("/bench-autorate/dead-link", test_dead_link);
	return g_test_run();
}
