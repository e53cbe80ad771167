/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-device-api.c: NcmDevice's API without a device: ncm_device_open_async's threads, errors and cancellation, calls on an unopened device, the advice a permission error gives. */
#include <glib/gstdio.h>
#include <ncm.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The library's own constructor (linked in from ncm-usb-function.c): a
 * function that no enumeration on this machine could have found. */
#include "ncm-usb-function.h"
#include "ncm-sync.h"

/*
 * GTask hands its data between threads through GLib's thread pool and
 * main context, whose futexes TSan cannot see: vmtest-tsan.h says why
 * accesses made inside uninstrumented libraries are ignored.
 */
#include "vmtest-tsan.h"

typedef struct {
	GMainContext *expected;   /* where the callback must run */
	GThread *thread;
	gboolean done;
	NcmDevice *device;
	GError *error;
} Opening;

/* A function on a usbfs node that cannot exist (addresses stop at 127). */
static NcmFunctionInfo *
missing_function(void)
{
	NcmFunctionInfo *info = ncm_function_info_new(NULL);

	info->bus = 255;
	info->address = 255;
	info->vid = 0x1d6b;
	info->pid = 0x0104;
	info->comm_iface = 0;
	info->data_iface = 1;
	return info;
}

static NcmContext *
context_or_skip(void)
{
	g_autoptr(GError) error = NULL;
	NcmContext *ctx = ncm_context_new(&error);

	if (!ctx)
		g_test_skip(error->message);
	return ctx;
}

static void
opened(GObject *source, GAsyncResult *result, gpointer data)
{
	Opening *o = data;
	g_autoptr(GMainContext) here = g_main_context_ref_thread_default();

	g_assert_true(NCM_IS_CONTEXT(source));
	g_assert_true(here == o->expected);
	g_assert_true(g_thread_self() == o->thread);
	g_assert_false(o->done);
	o->device = ncm_device_open_finish(result, &o->error);
	o->done = TRUE;
}

static void
wait_opened(Opening *o)
{
	while (!o->done)
		g_main_context_iteration(o->expected, TRUE);
}

/* The open fails on the worker; the error comes back on the caller's
 * thread-default context, as the synchronous open reports it. */
static void
test_open_async_error(void)
{
	g_autoptr(NcmContext) ctx = context_or_skip();
	g_autoptr(NcmFunctionInfo) info = missing_function();
	g_autoptr(GMainContext) mine = g_main_context_new();
	g_autoptr(GError) sync_error = NULL;
	Opening o = { .expected = mine, .thread = g_thread_self() };

	if (!ctx)
		return;
	g_assert_null(ncm_device_open(ctx, info, NULL, &sync_error));
	g_assert_error(sync_error, NCM_ERROR, NCM_ERROR_GONE);

	g_main_context_push_thread_default(mine);
	ncm_device_open_async(ctx, info, NULL, NULL, opened, &o);
	g_assert_false(o.done);   /* never in place */
	wait_opened(&o);
	g_main_context_pop_thread_default(mine);
	g_assert_null(o.device);
	g_assert_error(o.error, NCM_ERROR, NCM_ERROR_GONE);
	g_assert_cmpstr(o.error->message, ==, sync_error->message);
	g_clear_error(&o.error);
}

/* Cancelled before the call: no open, G_IO_ERROR_CANCELLED. */
static void
test_open_async_cancelled_before(void)
{
	g_autoptr(NcmContext) ctx = context_or_skip();
	g_autoptr(NcmFunctionInfo) info = missing_function();
	g_autoptr(GCancellable) cancel = g_cancellable_new();
	Opening o = { .expected = g_main_context_default(), .thread = g_thread_self() };
	NcmDeviceOptions options;

	if (!ctx)
		return;
	ncm_device_options_init(&options);
	g_cancellable_cancel(cancel);
	ncm_device_open_async(ctx, info, &options, cancel, opened, &o);
	wait_opened(&o);
	g_assert_null(o.device);
	g_assert_error(o.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_clear_error(&o.error);
}

/* Cancelled while the worker may be anywhere in the open: always
 * CANCELLED, never the open's own result, and nothing leaks or races
 * (ASan, TSan). The options the caller passed are gone by then. */
static void
test_open_async_cancel_races(void)
{
	NcmContext *ctx = context_or_skip();
	g_autoptr(NcmFunctionInfo) info = missing_function();
	gint64 end;

	if (!ctx)
		return;
	g_object_add_weak_pointer(G_OBJECT(ctx), (gpointer *)&ctx);
	for (guint i = 0; i < 200; i++) {
		g_autoptr(GCancellable) cancel = g_cancellable_new();
		Opening o = { .expected = g_main_context_default(), .thread = g_thread_self() };
		NcmDeviceOptions *options = g_new(NcmDeviceOptions, 1);

		ncm_device_options_init(options);
		ncm_device_open_async(ctx, info, options, cancel, opened, &o);
		g_free(options);
		if (i % 4)
			g_usleep(i % 50);
		g_cancellable_cancel(cancel);
		wait_opened(&o);
		g_assert_null(o.device);
		g_assert_error(o.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
		g_clear_error(&o.error);
	}
	/* A worker outlives its cancelled task by the rest of its open; then
	 * it drops its references (the last one finalizes the context). */
	g_object_unref(ctx);
	end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	while (g_atomic_pointer_get(&ctx) && g_get_monotonic_time() < end)
		g_usleep(1000);
	g_assert_null(g_atomic_pointer_get(&ctx));
}

/*
 * A device that was never opened (g_object_new(), as a binding would make
 * one) or was closed: the calls a producer thread or a UI may still make
 * are safe and say so. ncm_device_set_pacing() changes nothing there.
 */
static void
test_unopened_device(void)
{
	g_autoptr(NcmDevice) dev = g_object_new(NCM_TYPE_DEVICE, NULL);
	const guint8 frame[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	NcmStats stats;

	g_assert_false(ncm_device_is_gone(dev));
	ncm_device_set_pacing(dev, 1000000);
	ncm_device_set_pacing(dev, 0);
	g_assert_cmpint(ncm_device_send(dev, frame, sizeof(frame)), !=, NCM_SEND_OK);
	ncm_device_flush(dev);
	ncm_device_close(dev);
	ncm_device_close(dev);
	g_assert_false(ncm_device_is_gone(dev));
	ncm_device_set_pacing(dev, 500000);
	ncm_device_set_pacing(dev, 0);
	ncm_device_get_stats(dev, &stats);
	g_assert_cmpuint(stats.tx_ntbs, ==, 0);
	g_assert_cmpuint(stats.tx_paced_waits, ==, 0);
}

/*
 * A permission error's advice on a usbfs node: the group to join when a
 * rule already made the node group-writable for a group this process is not
 * in (a new rule would not help), somewhere else to look when the file's
 * permissions let the process in, else a rule for the device's VID:PID.
 */
static void
test_access_advice(void)
{
	g_autofree gchar *advice = NULL;
	g_autofree gchar *dir = g_dir_make_tmp("ncm-advice-XXXXXX", NULL);
	g_autofree gchar *node = g_build_filename(dir, "002", NULL);

	/* exists, mode, group is root's, in the node's group, accessible */
	g_assert_cmpint(ncm_usbfs_access_kind(FALSE, 0, FALSE, FALSE, FALSE), ==,
			NCM_ACCESS_ADVICE_RULE);
	g_assert_cmpint(ncm_usbfs_access_kind(TRUE, 0600, TRUE, FALSE, FALSE), ==,
			NCM_ACCESS_ADVICE_RULE);
	g_assert_cmpint(ncm_usbfs_access_kind(TRUE, 0660, FALSE, FALSE, FALSE), ==,
			NCM_ACCESS_ADVICE_JOIN);
	/* Group root's: never advise joining it. */
	g_assert_cmpint(ncm_usbfs_access_kind(TRUE, 0660, TRUE, FALSE, FALSE), ==,
			NCM_ACCESS_ADVICE_RULE);
	/* Readable only by the group: joining it would not do. */
	g_assert_cmpint(ncm_usbfs_access_kind(TRUE, 0640, FALSE, FALSE, FALSE), ==,
			NCM_ACCESS_ADVICE_RULE);
	/* In the group, yet refused: the rule's mode was not the problem. */
	g_assert_cmpint(ncm_usbfs_access_kind(TRUE, 0660, FALSE, TRUE, FALSE), ==,
			NCM_ACCESS_ADVICE_RULE);
	g_assert_cmpint(ncm_usbfs_access_kind(TRUE, 0666, FALSE, TRUE, TRUE), ==,
			NCM_ACCESS_ADVICE_ELSEWHERE);

	/* The texts: a missing node (unplugged meanwhile) gets the rule with
	 * its IDs; a node this process may open, somewhere else to look. */
	advice = ncm_usbfs_access_advice("/nonexistent/001/002", 0x05ac, 0x12a8);
	g_assert_nonnull(strstr(advice, "ATTR{idVendor}==\"05ac\", ATTR{idProduct}==\"12a8\""));
	g_clear_pointer(&advice, g_free);
	g_assert_nonnull(dir);
	g_assert_true(g_file_set_contents(node, "", 0, NULL));
	g_assert_cmpint(chmod(node, 0600), ==, 0);
	advice = ncm_usbfs_access_advice(node, 0x1d6b, 0x0104);
	g_assert_nonnull(strstr(advice, "something else refuses it"));
	g_clear_pointer(&advice, g_free);
	g_assert_cmpint(g_unlink(node), ==, 0);
	g_assert_cmpint(g_rmdir(dir), ==, 0);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/device/open-async/error", test_open_async_error);
	g_test_add_func("/device/open-async/cancelled-before", test_open_async_cancelled_before);
	g_test_add_func("/device/open-async/cancel-races", test_open_async_cancel_races);
	g_test_add_func("/device/unopened", test_unopened_device);
	g_test_add_func("/device/access-advice", test_access_advice);
	return g_test_run();
}
