/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-fresh-usb.c: every libusb_init() of ours (a short-lived scan context, an NcmContext's own) runs only while no NcmContext's event thread can handle events (libusb 1.0.26 leaks a device that leaves meanwhile), also when called from inside event handling. */
#include <ncm.h>

/* Linked in from the library's sources: the helper is private. */
#include "ncm-usb-context.h"

#include "vmtest-tsan.h"  /* GLib and libusb are not instrumented */

/*
 * The leak itself needs a device unplugged in a window of a few
 * instructions (vm-multi-tun met it under load); what closes the window is
 * testable without USB: while anyone holds a context's event lock, as its
 * event thread does while handling events, the fresh init waits.
 */

/*
 * Runs @func (a libusb_init() of ours, which sets *@done when it returns)
 * on a thread while the test holds @ctx's event lock, as @ctx's event
 * thread does inside libusb_handle_events(): it must not finish before the
 * lock is let go, and must finish after.
 */
static void
assert_waits_for_event_lock(NcmContext *ctx, GThreadFunc func, gpointer data, gint *done)
{
	GThread *t;

	libusb_lock_events(ncm_context_get_usb(ctx));
	t = g_thread_new("starting", func, data);
	g_usleep(200 * G_TIME_SPAN_MILLISECOND);
	g_assert_false(g_atomic_int_get(done));
	libusb_unlock_events(ncm_context_get_usb(ctx));
	g_thread_join(t);
	g_assert_true(g_atomic_int_get(done));
}

typedef struct {
	gint done;             /* atomic */
	int result;
	libusb_context *fresh;
} FreshInit;

static gpointer
fresh_init_thread(gpointer data)
{
	FreshInit *f = data;

	f->result = ncm_context_init_fresh_usb(&f->fresh);
	g_atomic_int_set(&f->done, 1);
	return NULL;
}

static void
test_waits_for_event_lock(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = ncm_context_new(&error);
	FreshInit f = { 0 };

	if (!ctx) {
		g_test_skip(error->message);
		return;
	}
	assert_waits_for_event_lock(ctx, fresh_init_thread, &f, &f.done);
	g_assert_cmpint(f.result, ==, 0);
	libusb_exit(f.fresh);
}

/*
 * The event thread itself lets go promptly: the init interrupts it. Its
 * idle wait raised to a minute, an init that had to wait it out would take
 * that long; interrupted, each takes milliseconds, so 10 s for all 20 is a
 * margin no load undoes.
 */
static void
test_interrupts_event_thread(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = ncm_context_new(&error);
	libusb_context *fresh = NULL;
	gint64 start;

	if (!ctx) {
		g_test_skip(error->message);
		return;
	}
	ncm_context_set_idle_ms(ctx, 60 * 1000);
	/* Let the event thread begin a round with the new ceiling. */
	g_usleep(200 * G_TIME_SPAN_MILLISECOND);
	start = g_get_monotonic_time();
	for (int i = 0; i < 20; i++) {
		g_assert_cmpint(ncm_context_init_fresh_usb(&fresh), ==, 0);
		libusb_exit(fresh);
	}
	g_assert_cmpint(g_get_monotonic_time() - start, <, 10 * G_TIME_SPAN_SECOND);
}

/* A finalized context is no longer locked (ASan would see the use after free). */
static void
test_after_context_gone(void)
{
	g_autoptr(GError) error = NULL;
	NcmContext *ctx = ncm_context_new(&error);
	libusb_context *fresh = NULL;

	if (!ctx) {
		g_test_skip(error->message);
		return;
	}
	g_object_unref(ctx);
	g_assert_cmpint(ncm_context_init_fresh_usb(&fresh), ==, 0);
	libusb_exit(fresh);
}

/*
 * An NcmContext's own libusb_init() is a starting context like a scan's:
 * it waits too (before, two contexts made from two threads could meet the
 * window: one scanning, the other's event thread seeing an unplug).
 */
typedef struct {
	gint done;             /* atomic */
	NcmContext *ctx;
} NewContext;

static gpointer
new_context_thread(gpointer data)
{
	NewContext *n = data;

	n->ctx = ncm_context_new(NULL);
	g_atomic_int_set(&n->done, 1);
	return NULL;
}

static void
test_new_context_waits(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = ncm_context_new(&error);
	NewContext n = { 0 };

	if (!ctx) {
		g_test_skip(error->message);
		return;
	}
	assert_waits_for_event_lock(ctx, new_context_thread, &n, &n.done);
	g_assert_nonnull(n.ctx);
	g_object_unref(n.ctx);
}

/*
 * From inside event handling: a timeout runs on the event thread holding
 * its context's event lock, as a sink callback does. Each armed timeout
 * meets the others first (all inside their event handling at once: each
 * gate must not wait for an event lock whose holder waits for the gate),
 * then scans, makes a context and drops it.
 */
#define N_CALLERS 3

typedef struct {
	gint armed;            /* atomic: the test set it going */
	gint arrived;          /* atomic: timeouts inside event handling */
	gint finished;         /* atomic */
	gint failed;           /* atomic */
} Callers;

typedef struct {
	Callers *all;
	gint fired;            /* event thread only */
} Caller;

static gint64
caller_timeout(gpointer data, gint64 now)
{
	Caller *c = data;
	libusb_context *fresh = NULL;
	NcmContext *made;
	gint64 end;

	if (c->fired || !g_atomic_int_get(&c->all->armed))
		return now + 10 * G_TIME_SPAN_MILLISECOND;
	c->fired = TRUE;
	g_atomic_int_inc(&c->all->arrived);
	end = g_get_monotonic_time() + 2 * G_TIME_SPAN_SECOND;
	while (g_atomic_int_get(&c->all->arrived) < N_CALLERS && g_get_monotonic_time() < end)
		g_usleep(G_TIME_SPAN_MILLISECOND);
	if (ncm_context_init_fresh_usb(&fresh) == 0)
		libusb_exit(fresh);
	else
		g_atomic_int_set(&c->all->failed, 1);
	made = ncm_context_new(NULL);
	if (made)
		g_object_unref(made);
	else
		g_atomic_int_set(&c->all->failed, 1);
	g_atomic_int_inc(&c->all->finished);
	return G_MAXINT64;
}

static void
test_from_event_handling(void)
{
	g_autoptr(GError) error = NULL;
	NcmContext *ctx[N_CALLERS] = { 0 };
	Caller c[N_CALLERS] = { 0 };
	Callers all = { 0 };
	gint64 end;

	for (int i = 0; i < N_CALLERS; i++) {
		ctx[i] = ncm_context_new(&error);
		if (!ctx[i]) {
			g_test_skip(error->message);
			for (int j = 0; j < i; j++)
				g_object_unref(ctx[j]);
			return;
		}
		c[i].all = &all;
		ncm_context_add_timeout(ctx[i], caller_timeout, &c[i]);
	}
	g_atomic_int_set(&all.armed, 1);
	for (int i = 0; i < N_CALLERS; i++)
		ncm_context_wake(ctx[i], 0);
	end = g_get_monotonic_time() + 20 * G_TIME_SPAN_SECOND;
	while (g_atomic_int_get(&all.finished) < N_CALLERS && g_get_monotonic_time() < end)
		g_usleep(10 * G_TIME_SPAN_MILLISECOND);
	/* A deadlock leaves the event threads stuck: fail, do not hang in the joins. */
	if (g_atomic_int_get(&all.finished) < N_CALLERS)
		g_error("%d of %d scans from inside event handling still wait after 20 s: a gate "
			"waits for an event lock its own thread or another waiting one holds",
			N_CALLERS - g_atomic_int_get(&all.finished), N_CALLERS);
	g_assert_false(g_atomic_int_get(&all.failed));
	for (int i = 0; i < N_CALLERS; i++) {
		g_assert_true(ncm_context_remove_timeout(ctx[i], caller_timeout, &c[i]));
		g_object_unref(ctx[i]);
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/fresh-usb/waits-for-event-lock", test_waits_for_event_lock);
	g_test_add_func("/fresh-usb/interrupts-event-thread", test_interrupts_event_thread);
	g_test_add_func("/fresh-usb/after-context-gone", test_after_context_gone);
	g_test_add_func("/fresh-usb/new-context-waits", test_new_context_waits);
	g_test_add_func("/fresh-usb/from-event-handling", test_from_event_handling);
	return g_test_run();
}
