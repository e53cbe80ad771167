/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vmtest-tsan.h: ThreadSanitizer options for the VM test programs, with their reason. */
#pragma once

#include "ncm-sync.h"

#ifdef NCM_TSAN
/*
 * Debian's libusb and GLib are not instrumented. TSan still sees what
 * their calls to calloc() and to atomics do, but not the futexes and
 * eventfds they order them with, so it reports libusb's zeroing of a
 * transfer in libusb_alloc_transfer() racing with libusb's own read of it
 * on the event thread. ignore_noninstrumented_modules drops accesses made
 * on behalf of those libraries only; every access made by our code is
 * still checked, and the hand-overs of ours that pass through GLib are
 * annotated (ncm-sync.h, ncm_context_post()).
 */
const char *__tsan_default_options(void);
const char *
__tsan_default_options(void)
{
	return "ignore_noninstrumented_modules=1";
}
#endif
