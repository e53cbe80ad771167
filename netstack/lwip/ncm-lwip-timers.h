/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-timers.h: what sys_arch and tests ask of our lwIP timeouts (ncm-lwip-timers.c). */
#pragma once

#include <glib.h>

/* Core lock held, on any thread: whether work appeared for a timer before
 * the time the tcpip thread sleeps until, so that it must be woken (once:
 * FALSE again until it has slept anew). FALSE on the tcpip thread. */
gboolean ncm_lwip_timers_moved_earlier(void);

/* Whether this is the thread that runs lwIP's timers (the tcpip thread,
 * once it has looked at them). Any thread, no lock. */
gboolean ncm_lwip_timers_is_thread(void);

/* Core lock held: @func runs after each round of sys_check_timeouts()
 * that ran a timer, on the tcpip thread with the core lock held; at least
 * once a second, since some timers always run. One at a time: a second
 * call replaces the first. */
void ncm_lwip_timers_after_round(void (*func)(void));

/* Core lock held: how many times sys_check_timeouts() has run a timer. */
guint64 ncm_lwip_timers_rounds(void);
