/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-enumerate-fd.c: ncm_context_enumerate_fd() refuses what is not a usbfs device, says what to pass, and keeps no fd (issue 19). */
#include <fcntl.h>
#include <unistd.h>

#include <ncm.h>

/*
 * A passed device itself is tested in the VM (vm-proxy-fd: ncm-proxy
 * --usb-fd 3, the node hidden); here the errors, which need no USB.
 */

static NcmContext *
context_or_skip(void)
{
	g_autoptr(GError) error = NULL;
	NcmContext *ctx = ncm_context_new(&error);

	if (!ctx)
		g_test_skip(error->message);
	return ctx;
}

static guint
open_fds(void)
{
	g_autoptr(GDir) dir = g_dir_open("/proc/self/fd", 0, NULL);
	guint n = 0;

	while (dir && g_dir_read_name(dir))
		n++;
	return n;
}

static void
test_closed_fd(void)
{
	g_autoptr(NcmContext) ctx = context_or_skip();
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) found = NULL;
	int fd;

	if (!ctx)
		return;
	/* A number that is surely not open: a closed descriptor. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	g_assert_cmpint(fd, >=, 0);
	close(fd);
	found = ncm_context_enumerate_fd(ctx, fd, NULL, &error);
	g_assert_null(found);
	g_assert_error(error, NCM_ERROR, NCM_ERROR_FAILED);
	g_assert_nonnull(g_strstr_len(error->message, -1, "not an open file"));
	g_assert_nonnull(g_strstr_len(error->message, -1, "/dev/bus/usb"));
}

static void
test_not_usb(void)
{
	g_autoptr(NcmContext) ctx = context_or_skip();
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) found = NULL;
	guint before;
	int fd;

	if (!ctx)
		return;
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	g_assert_cmpint(fd, >=, 0);
	before = open_fds();
	found = ncm_context_enumerate_fd(ctx, fd, NULL, &error);
	g_assert_null(found);
	g_assert_true(g_error_matches(error, NCM_ERROR, NCM_ERROR_FAILED) ||
		      g_error_matches(error, NCM_ERROR, NCM_ERROR_UNSUPPORTED));
	g_assert_nonnull(g_strstr_len(error->message, -1, "not a USB device"));
	/* Its duplicate is closed again, and ours stays open. */
	g_assert_cmpuint(open_fds(), ==, before);
	g_assert_cmpint(fcntl(fd, F_GETFD), >=, 0);
	close(fd);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/enumerate-fd/closed", test_closed_fd);
	g_test_add_func("/enumerate-fd/not-usb", test_not_usb);
	return g_test_run();
}
