/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-multi.c: multi paths: N devices measured at once, one TCP stream each, and what they add up to. */
#include <unistd.h>

#include "ncm-bench-multi-stats.h"
#include "ncm-bench-throughput.h"

/* The group; the BenchTransport comes first so the ops can cast. */
typedef struct {
	BenchTransport base;
	BenchTransport *owner;  /* ncm-tun's process, or NULL */
	char *env;
} GroupTransport;

static GIOStream *
group_tcp_connect(BenchTransport *t, GError **error)
{
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
		    "path %s has %u devices: its tests connect through each", t->name,
		    t->members->len);
	return NULL;
}

static BenchUdp *
group_udp_open(BenchTransport *t, guint16 port, GError **error)
{
	group_tcp_connect(t, error);
	return NULL;
}

/* The event thread that serves every device: the owner's (ncm-tun's), else the process's. */
static guint64
group_event_ticks(BenchTransport *t)
{
	GroupTransport *g = (GroupTransport *)t;
	BenchTransport *serves = g->owner ? g->owner : t->members->pdata[0];

	return serves->ops->event_thread_ticks ? serves->ops->event_thread_ticks(serves) : 0;
}

/* Built when asked, while the members are open: path_close() asks before it frees. */
static const char *
group_env(BenchTransport *t)
{
	GroupTransport *g = (GroupTransport *)t;
	g_autoptr(GString) members = NULL, o = NULL;

	if (g->env)
		return g->env;
	members = g_string_new(NULL);
	o = g_string_new(NULL);
	for (guint i = 0; i < t->members->len; i++)
		bench_env_path(members, t->members->pdata[i]);
	bench_json_num(o, "devices", t->members->len);
	g_string_append_printf(o, ",\"members\":[%s]", members->str);
	if (g->owner && g->owner->ops->env && g->owner->ops->env(g->owner))
		g_string_append(o, g->owner->ops->env(g->owner));
	g->env = g_string_free(g_steal_pointer(&o), FALSE);
	return g->env;
}

static void
group_abort(BenchTransport *t)
{
	GroupTransport *g = (GroupTransport *)t;

	for (guint i = 0; i < t->members->len; i++) {
		BenchTransport *m = t->members->pdata[i];

		if (m->ops->abort)
			m->ops->abort(m);
	}
	if (g->owner && g->owner->ops->abort)
		g->owner->ops->abort(g->owner);
}

static void
group_describe(BenchTransport *t, FILE *out)
{
	for (guint i = 0; i < t->members->len; i++) {
		BenchTransport *m = t->members->pdata[i];

		if (m->ops->describe)
			m->ops->describe(m, out);
	}
}

static void
group_free(BenchTransport *t)
{
	GroupTransport *g = (GroupTransport *)t;

	/* Members first: ncm-tun's interfaces go with its process. */
	g_ptr_array_unref(t->members);
	bench_transport_free(g->owner);
	g_free(t->name);
	g_free(g->env);
	g_free(g);
}

/* ncm-tun's CPU: the one process serves every device. */
static double
group_child_cpu_seconds(BenchTransport *t)
{
	BenchTransport *owner = ((GroupTransport *)t)->owner;

	return owner->ops->child_cpu_seconds(owner);
}

static const BenchTransportOps group_ops = {
	.tcp_connect = group_tcp_connect,
	.udp_open = group_udp_open,
	.event_thread_ticks = group_event_ticks,
	.abort = group_abort,
	.describe = group_describe,
	.env = group_env,
	.free = group_free,
};

static const BenchTransportOps group_child_ops = {
	.tcp_connect = group_tcp_connect,
	.udp_open = group_udp_open,
	.child_cpu_seconds = group_child_cpu_seconds,
	.event_thread_ticks = group_event_ticks,
	.abort = group_abort,
	.describe = group_describe,
	.env = group_env,
	.free = group_free,
};

BenchTransport *
bench_group_new(const char *name, GPtrArray *members, BenchTransport *owner)
{
	GroupTransport *g = g_new0(GroupTransport, 1);

	g->base.ops = owner && owner->ops->child_cpu_seconds ? &group_child_ops : &group_ops;
	g->base.name = g_strdup(name);
	g->base.port = members->len ? ((BenchTransport *)members->pdata[0])->port : 0;
	g->base.members = members;
	g_ptr_array_set_free_func(members, (GDestroyNotify)bench_transport_free);
	g->owner = owner;
	return &g->base;
}

/* ---- the tests ---------------------------------------------------------------- */

/* One device's stream of one repetition, on its own thread. */
typedef struct {
	BenchCtx ctx;
	BenchRepFunc fn;
	BenchRep rep;
	GError *error;
	gboolean ok;
	GThread *thread;
} Stream;

static gpointer
stream_main(gpointer data)
{
	Stream *s = data;

	s->ok = s->fn(&s->ctx, &s->rep, NULL, &s->error);
	return NULL;
}

/*
 * The interval in which every device was inside its measured interval: from
 * the latest start to the earliest end, and the bytes each device moved in it
 * (its rate over its own interval times the common one's length: a stream is
 * steady past its first second). FALSE when the intervals do not overlap or
 * lack a CPU read.
 */
static gboolean
group_span(const Stream *s, gsize n, const BenchProbe **ret_a, const BenchProbe **ret_b,
	   double *ret_bytes)
{
	const BenchProbe *a = NULL, *b = NULL;
	double bytes = 0;

	for (gsize i = 0; i < n; i++) {
		const BenchSpan *sp = &s[i].rep.span;

		if (!sp->a.taken || !sp->b.taken || !sp->a.cpu_ok || !sp->b.cpu_ok ||
		    sp->b.t_us <= sp->a.t_us || s[i].rep.span_bytes == 0)
			return FALSE;
		if (!a || sp->a.t_us > a->t_us)
			a = &sp->a;
		if (!b || sp->b.t_us < b->t_us)
			b = &sp->b;
	}
	if (!a || b->t_us <= a->t_us)
		return FALSE;
	for (gsize i = 0; i < n; i++) {
		const BenchSpan *sp = &s[i].rep.span;

		bytes += (double)s[i].rep.span_bytes / (double)(sp->b.t_us - sp->a.t_us) *
			 (double)(b->t_us - a->t_us);
	}
	*ret_a = a;
	*ret_b = b;
	*ret_bytes = bytes;
	return TRUE;
}

/* Whole-system CPU per MB and busy share over group_span's interval. */
static gboolean
group_cpu(const BenchTransport *t, const char *test, const Stream *s, gsize n,
	  double *ret_s_per_mb, double *ret_busy_pct)
{
	const BenchProbe *a, *b;
	double bytes;

	if (!group_span(s, n, &a, &b, &bytes))
		return FALSE;
	/* The common interval, as the single-device runs write theirs. */
	bench_span_log(t, test, a, b, (guint64)bytes);
	*ret_s_per_mb = bench_cpu_s_per_mb(&a->cpu, &b->cpu, sysconf(_SC_CLK_TCK), (guint64)bytes);
	*ret_busy_pct = 100 * bench_cpu_busy_share(&a->cpu, &b->cpu);
	return TRUE;
}

/* Runs one repetition on every device at once; FALSE with the first device's error. */
static gboolean
multi_rep(BenchCtx *ctx, BenchRepFunc fn, Stream *s, GError **error)
{
	GPtrArray *m = ctx->transport->members;
	gboolean ok = TRUE;

	for (guint i = 0; i < m->len; i++) {
		s[i].ctx = (BenchCtx){ctx->opt, m->pdata[i], ctx->results};
		s[i].fn = fn;
		s[i].rep.span.t = m->pdata[i];
		s[i].thread = g_thread_new("bench-device", stream_main, &s[i]);
	}
	for (guint i = 0; i < m->len; i++) {
		g_thread_join(s[i].thread);
		if (!s[i].ok && ok) {
			g_propagate_prefixed_error(error, g_steal_pointer(&s[i].error), "device %u (%s): ",
						   i, ((BenchTransport *)m->pdata[i])->name);
			ok = FALSE;
		}
		g_clear_error(&s[i].error);
	}
	return ok;
}

/* Per repetition: the aggregate, each device's Mbit/s, and what the group cost. */
typedef struct {
	double *aggregate;
	double *dev;        /* [device * reps + rep] */
	double *sys_cpu, *busy_pct, *event_pct;
	double *lock_waiting; /* threads waiting for lwIP's core lock, on average */
	gsize n_cpu, n_event, n_lock;
} MultiReps;

static void
multi_json(BenchCtx *ctx, BenchResult *r, MultiReps *v, gsize reps)
{
	gsize n = ctx->transport->members->len;
	g_autofree double *median = g_new0(double, n);
	BenchMultiSummary ms;
	BenchSummary s;

	/* Each device's figure is its median over the repetitions. */
	for (gsize i = 0; i < n; i++) {
		bench_summarize(v->dev + i * reps, reps, &s);
		median[i] = s.median;
	}
	bench_multi_summarize(median, n, &ms);
	bench_summarize(v->aggregate, reps, &r->mbit);
	bench_json_summary(r->json, "mbit_s", &r->mbit, FALSE);
	bench_json_num(r->json, "reps", (double)reps);
	bench_json_num(r->json, "secs", ctx->opt->secs);
	bench_multi_json(r->json, &ms, median, n);
	if (v->n_cpu > 0) {
		bench_summarize(v->sys_cpu, v->n_cpu, &r->sys_cpu);
		bench_json_summary(r->json, "system_cpu_s_per_mb", &r->sys_cpu, FALSE);
		bench_summarize(v->busy_pct, v->n_cpu, &s);
		bench_json_summary(r->json, "system_cpu_busy_pct", &s, FALSE);
	}
	if (v->n_event > 0) {
		bench_summarize(v->event_pct, v->n_event, &s);
		bench_json_summary(r->json, "event_thread_cpu_pct", &s, FALSE);
	}
	if (v->n_lock > 0) {
		bench_summarize(v->lock_waiting, v->n_lock, &s);
		bench_json_summary(r->json, "lwip_core_lock_waiting", &s, FALSE);
	}
	r->cell = g_strdup_printf("%.1f Mbit/s (%.1f-%.1f) over %" G_GSIZE_FORMAT
				  ": min %.1f med %.1f max %.1f, fair %.2f",
				  r->mbit.median, r->mbit.min, r->mbit.max, n, ms.per_device.min,
				  ms.per_device.median, ms.per_device.max, ms.fairness);
}

static void
multi_test(BenchCtx *ctx, const char *test)
{
	BenchTransport *t = ctx->transport;
	gsize n = t->members->len, reps = (gsize)ctx->opt->reps;
	g_autofree double *work = g_new0(double, reps * (n + 5));
	MultiReps v = {work, work + reps, work + reps * (n + 1), work + reps * (n + 2),
		       work + reps * (n + 3), work + reps * (n + 4), 0, 0, 0};
	g_autoptr(GError) error = NULL;
	long hz = sysconf(_SC_CLK_TCK);
	/* lwIP devices share one stack, and so its core lock: the first member's is everyone's. */
	BenchTransport *first = t->members->pdata[0];
	BenchTransport *lock = first->ops->core_lock_wait_us ? first : NULL;
	double mbytes = 0;
	BenchCost cost;
	BenchResult *r;

	if (!bench_test_selected(ctx->opt, test))
		return;
	bench_progress("%s: %s on %" G_GSIZE_FORMAT " devices at once", t->name, test, n);
	r = bench_result_add(ctx, test);
	bench_cost_now(t, &cost);
	for (gsize k = 0; k < reps; k++) {
		g_autofree Stream *s = g_new0(Stream, n);
		guint64 ev0 = t->ops->event_thread_ticks(t), ev1;
		guint64 w0 = lock ? lock->ops->core_lock_wait_us(lock) : 0, w1;
		gint64 t0 = g_get_monotonic_time(), t1;

		if (!multi_rep(ctx, bench_tcp_rep_func(test), s, &error)) {
			bench_result_fail(r, error);
			return;
		}
		ev1 = t->ops->event_thread_ticks(t);
		w1 = lock ? lock->ops->core_lock_wait_us(lock) : 0;
		t1 = g_get_monotonic_time();
		for (gsize i = 0; i < n; i++) {
			v.dev[i * reps + k] = s[i].rep.mbit;
			v.aggregate[k] += s[i].rep.mbit;
		}
		mbytes += v.aggregate[k] / 8 * ctx->opt->secs;
		if (group_cpu(t, test, s, n, &v.sys_cpu[v.n_cpu], &v.busy_pct[v.n_cpu]))
			v.n_cpu++;
		/* No event thread (cdc_ncm) reads 0 ticks both times: no figure. */
		if (ev1 > 0 && t1 > t0)
			v.event_pct[v.n_event++] = 100.0 * (double)(ev1 - ev0) / (double)hz /
						   ((double)(t1 - t0) / 1e6);
		if (lock && t1 > t0)
			v.lock_waiting[v.n_lock++] = (double)(w1 - w0) / (double)(t1 - t0);
	}
	multi_json(ctx, r, &v, reps);
	bench_cost_json(ctx, r, &cost, mbytes);
}

void
bench_run_multi_tests(BenchCtx *ctx)
{
	static const char *const tests[] = {"tcp_down", "tcp_up", "tcp_bidir"};

	for (gsize i = 0; i < G_N_ELEMENTS(tests); i++)
		multi_test(ctx, tests[i]);
}
