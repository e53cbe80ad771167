/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ntb-rx.c: which received NTBs are parsed before their bulk-IN transfer goes back. */
#include <glib.h>

#include "ncm-ntb-rx.h"

/* Short NTBs first, at high speed's 512-byte packets and at SuperSpeed's 1024. */
static void
test_parse_first(void)
{
	g_assert_true(ncm_ntb_rx_parse_first(16, 120, 512));     /* a lone 64-byte datagram */
	g_assert_true(ncm_ntb_rx_parse_first(16, 0, 512));       /* a ZLP: nothing to parse */
	g_assert_true(ncm_ntb_rx_parse_first(16, 511, 512));
	g_assert_false(ncm_ntb_rx_parse_first(16, 512, 512));    /* a full packet: more may follow */
	g_assert_false(ncm_ntb_rx_parse_first(16, 16384, 512));
	g_assert_true(ncm_ntb_rx_parse_first(32, 1000, 1024));
	g_assert_false(ncm_ntb_rx_parse_first(32, 1024, 1024));
	/* A shallow depth (full speed's 4): the one read back comes first, however short. */
	g_assert_true(ncm_ntb_rx_parse_first(NCM_NTB_RX_PARSE_FIRST_DEPTH, 120, 512));
	g_assert_false(ncm_ntb_rx_parse_first(NCM_NTB_RX_PARSE_FIRST_DEPTH - 1, 120, 512));
	g_assert_false(ncm_ntb_rx_parse_first(4, 60, 64));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/ntb-rx/parse-first", test_parse_first);
	return g_test_run();
}
