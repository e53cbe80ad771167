/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-context-ticks.c: the event thread runs its devices' timeouts starting one further on each round, so no device is always served last (issue 20). */
#include <ncm.h>

/* Linked in from the library's sources: the timeouts are private. */
#include "ncm-usb-context.h"

#include "vmtest-tsan.h"  /* GLib and libusb are not instrumented */

#define N_TICKS 3

typedef struct {
	gint index;
	gint *firsts;          /* [N_TICKS]: rounds in which this one ran first */
	gint *ran;             /* atomic: timeouts run in the current round */
} Tick;

static gint64
tick(gpointer data, gint64 now)
{
	Tick *t = data;

	/* The context's lock is held: rounds do not overlap. */
	if (g_atomic_int_add(t->ran, 1) % N_TICKS == 0)
		g_atomic_int_inc(&t->firsts[t->index]);
	return now + G_TIME_SPAN_MILLISECOND;
}

static void
test_rotates(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = ncm_context_new(&error);
	gint firsts[N_TICKS] = { 0 }, ran = 0;
	Tick t[N_TICKS];
	gint64 end;
	gboolean all;

	if (!ctx) {
		g_test_skip(error->message);
		return;
	}
	for (gint i = 0; i < N_TICKS; i++) {
		t[i] = (Tick){ i, firsts, &ran };
		ncm_context_add_timeout(ctx, tick, &t[i]);
	}
	end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
	do {
		g_usleep(10 * G_TIME_SPAN_MILLISECOND);
		all = TRUE;
		for (gint i = 0; i < N_TICKS; i++)
			all = all && g_atomic_int_get(&firsts[i]) >= 3;
	} while (!all && g_get_monotonic_time() < end);
	for (gint i = 0; i < N_TICKS; i++)
		g_assert_true(ncm_context_remove_timeout(ctx, tick, &t[i]));
	for (gint i = 0; i < N_TICKS; i++)
		g_assert_cmpint(g_atomic_int_get(&firsts[i]), >=, 3);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/context-ticks/rotates", test_rotates);
	return g_test_run();
}
