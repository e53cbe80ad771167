/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-fresh-usb.c: a short-lived scan context is made only while no NcmContext's event thread can handle events (libusb 1.0.26 leaks a device that leaves meanwhile). */
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
	GThread *t;
	gint64 end;

	if (!ctx) {
		g_test_skip(error->message);
		return;
	}
	/* Stands in for the event thread inside libusb_handle_events(). */
	libusb_lock_events(ncm_context_get_usb(ctx));
	t = g_thread_new("fresh-init", fresh_init_thread, &f);
	g_usleep(200 * G_TIME_SPAN_MILLISECOND);
	g_assert_false(g_atomic_int_get(&f.done));
	libusb_unlock_events(ncm_context_get_usb(ctx));

	end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
	while (!g_atomic_int_get(&f.done) && g_get_monotonic_time() < end)
		g_usleep(10 * G_TIME_SPAN_MILLISECOND);
	g_thread_join(t);
	g_assert_cmpint(f.result, ==, 0);
	libusb_exit(f.fresh);
}

/* The event thread itself lets go promptly: the init interrupts it. */
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
	for (int i = 0; i < 20; i++) {
		start = g_get_monotonic_time();
		g_assert_cmpint(ncm_context_init_fresh_usb(&fresh), ==, 0);
		/* Well under the event thread's 100 ms idle wait, even under ASan. */
		g_assert_cmpint(g_get_monotonic_time() - start, <, 80 * G_TIME_SPAN_MILLISECOND);
		libusb_exit(fresh);
	}
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

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/fresh-usb/waits-for-event-lock", test_waits_for_event_lock);
	g_test_add_func("/fresh-usb/interrupts-event-thread", test_interrupts_event_thread);
	g_test_add_func("/fresh-usb/after-context-gone", test_after_context_gone);
	return g_test_run();
}
