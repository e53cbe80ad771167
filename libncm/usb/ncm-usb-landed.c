/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-landed.c: test builds only (-Dtest_hooks): aborts when a completion touches its device after dropping its transfer from the in-flight count (issue 16, item 10). */
#include "ncm-usb-device.h"

/*
 * close() may free the device, its transfers and the sink's user_data as
 * soon as the count drops (libncm/THREADING.md, "The in-flight count is
 * the last touch"). libusb's event lock hides a violation from any race a
 * test could provoke, so the rule is checked by order instead: each
 * completion callback opens a scope on its thread, the drop marks the
 * device in it, and every checked call (submit, the sink, the posts to
 * the owner, the stats) aborts when it finds its device marked.
 */

static __thread NcmDevice *landed_device;  /* dropped by this thread's completion */
static __thread gboolean in_completion;

int
ncm_device_completion_begin(void)
{
	in_completion = TRUE;
	landed_device = NULL;
	return 0;
}

void
ncm_device_completion_end(int *scope)
{
	(void)scope;
	in_completion = FALSE;
	landed_device = NULL;
}

gboolean
ncm_device_in_completion(void)
{
	return in_completion;
}

void
ncm_device_landed_mark(NcmDevice *self)
{
	ncm_device_touch_at(self, G_STRLOC, "a second drop of the same completion");
	if (in_completion)
		landed_device = self;
}

void
ncm_device_touch_at(NcmDevice *self, const char *where, const char *what)
{
	if (G_UNLIKELY(landed_device == self))
		g_error("test hook: %s (%s) ran after this completion dropped its transfer from the "
			"in-flight count; close() may have freed the device by then (issue 16, "
			"item 10: the drop must be the completion's last act; libncm/THREADING.md)",
			where, what);
}
