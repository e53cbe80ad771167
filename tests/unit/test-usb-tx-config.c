/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-usb-tx-config.c: the packer's configuration for negotiated NTB parameters, and the ZLPs it asks for. */

#include <glib.h>
#include <string.h>

#include "ncm-usb-tx-config.h"

/*
 * Fills one NTB32 in a @buf_size buffer with frames that end it exactly
 * at the buffer's end, and says whether the NTB wants a ZLP after it.
 */
static bool
full_ntb_wants_zlp(const NcmNtbInfo *n, size_t buf_size, size_t *ret_len)
{
	NcmNtbPackConfig pc = ncm_usb_tx_pack_config(n, 512, FALSE);
	g_autofree guint8 *buf = g_malloc(buf_size);
	guint8 frame[1514];
	NcmNtbPacker pk;
	bool zlp = false;
	size_t room;

	memset(frame, 0x5a, sizeof(frame));
	ncm_ntb_packer_init(&pk, &pc, buf, buf_size, 1);
	/* Full frames, then one that takes what is left, so the NTB ends at
	 * the buffer's last byte. */
	while ((room = ncm_ntb_packer_room(&pk)) > sizeof(frame) * 2)
		g_assert_cmpint(ncm_ntb_packer_add(&pk, frame, sizeof(frame)), ==, NCM_NTB_PACK_OK);
	room = ncm_ntb_packer_room(&pk);
	g_assert_cmpint(ncm_ntb_packer_add(&pk, frame, MIN(room, sizeof(frame))), ==,
			NCM_NTB_PACK_OK);
	if (room > sizeof(frame)) {
		room = ncm_ntb_packer_room(&pk);
		g_assert_cmpint(ncm_ntb_packer_add(&pk, frame, room), ==, NCM_NTB_PACK_OK);
	}
	*ret_len = ncm_ntb_packer_finish(&pk, &zlp);
	return zlp;
}

static void
test_zlp_against_device_size(void)
{
	NcmNtbInfo n = {
		.ntb32 = TRUE,
		.out_max_size = 262144,
		.out_divisor = 4,
		.out_alignment = 4,
		.tx_ntb_size = 65536,
	};
	size_t len;

	/* The device reads up to 256 KiB: a 64 KiB NTB ends short of that,
	 * so only a ZLP tells it the NTB is whole. */
	g_assert_true(full_ntb_wants_zlp(&n, n.tx_ntb_size, &len));
	g_assert_cmpuint(len, ==, 65536);
	/* One of the device's own size ends the transfer by itself. */
	n.out_max_size = 65536;
	g_assert_false(full_ntb_wants_zlp(&n, n.tx_ntb_size, &len));
	g_assert_cmpuint(len, ==, 65536);
}

static void
test_fields(void)
{
	NcmNtbInfo n = {
		.ntb32 = FALSE,
		.out_max_size = 16384,
		.out_divisor = 32,
		.out_remainder = 14,
		.out_alignment = 8,
		.out_max_datagrams = 10,
		.tx_ntb_size = 8192,
	};
	NcmNtbPackConfig pc = ncm_usb_tx_pack_config(&n, 64, TRUE);

	g_assert_cmpint(pc.format, ==, NCM_NTB_FORMAT_16);
	g_assert_cmpuint(pc.max_size, ==, 16384);
	g_assert_cmpuint(pc.divisor, ==, 32);
	g_assert_cmpuint(pc.remainder, ==, 14);
	g_assert_cmpuint(pc.alignment, ==, 8);
	g_assert_cmpuint(pc.max_datagrams, ==, 10);
	g_assert_cmpuint(pc.max_packet, ==, 64);
	g_assert_true(pc.ndp_first);
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/usb/tx-config/zlp-against-device-size", test_zlp_against_device_size);
	g_test_add_func("/usb/tx-config/fields", test_fields);
	return g_test_run();
}
