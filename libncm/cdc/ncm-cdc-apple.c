/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cdc-apple.c: the vendor request sequence that makes Apple devices expose NCM. */
#include "ncm-cdc.h"

#include <string.h>

#include "ncm-le.h"

/*
 * What is publicly known about this, from usbmuxd (libimobiledevice), its
 * Python ports and go-ios's ncm package:
 * - both requests are vendor, device-to-host, device recipient (0xC0);
 * - GET_MODE (0x45) has wValue 0, wIndex 0 and returns 4 bytes;
 * - SET_MODE (0x52) has wValue 0, wIndex = the wanted mode (3 = "CDC NCM":
 *   an extra configuration 5 with NCM beside usbmux) and a 1-byte data stage;
 *   the device then re-enumerates.
 * None of those tools documents the GET_MODE bytes: they decide from the
 * number of configurations. The one public trace (usbmuxd's debug log) shows
 * 3:3:3:0 before the switch and 5:3:3:0 on a device already showing the NCM
 * configuration, so a first byte of 5 is taken as "already NCM". Anything
 * else asks for the switch: a needless one costs a re-enumeration, a missed
 * one leaves no NCM function to find.
 */
enum {
	APPLE_REQUEST_TYPE = 0xC0,
	APPLE_MODE_LEN = 4,
	APPLE_SET_MODE_LEN = 1,
	APPLE_MODE_BYTE_NCM = 5,
};

static bool
get_mode(NcmControlFunc control, void *user_data, uint8_t mode[APPLE_MODE_LEN])
{
	const NcmControlSetup setup = {
		.request_type = APPLE_REQUEST_TYPE,
		.request = NCM_APPLE_REQ_GET_MODE,
		.value = 0,
		.index = 0,
		.length = APPLE_MODE_LEN,
	};

	memset(mode, 0, APPLE_MODE_LEN);
	return control(user_data, &setup, mode) == APPLE_MODE_LEN;
}

static bool
set_mode_ncm(NcmControlFunc control, void *user_data)
{
	const NcmControlSetup setup = {
		.request_type = APPLE_REQUEST_TYPE,
		.request = NCM_APPLE_REQ_SET_MODE,
		.value = 0,
		.index = NCM_APPLE_MODE_NCM_INDEX,
		.length = APPLE_SET_MODE_LEN,
	};
	uint8_t reply[APPLE_SET_MODE_LEN] = { 0 };

	/* the reply byte's meaning is unknown; only the transfer's success counts */
	return control(user_data, &setup, reply) >= 0;
}

NcmAppleSwitchResult
ncm_apple_mode_switch(NcmControlFunc control, void *user_data, uint32_t *ret_mode)
{
	uint8_t mode[APPLE_MODE_LEN];

	if (!control || !get_mode(control, user_data, mode))
		return NCM_APPLE_SWITCH_FAILED;
	if (ret_mode)
		*ret_mode = ncm_le32_at(mode, APPLE_MODE_LEN, 0);
	if (ncm_le8_at(mode, APPLE_MODE_LEN, 0) == APPLE_MODE_BYTE_NCM)
		return NCM_APPLE_SWITCH_ALREADY;
	if (!set_mode_ncm(control, user_data))
		return NCM_APPLE_SWITCH_FAILED;
	return NCM_APPLE_SWITCH_REQUESTED;
}
