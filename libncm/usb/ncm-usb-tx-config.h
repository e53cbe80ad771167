/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-tx-config.h: the packer's configuration for a device's negotiated NTB parameters. */
#pragma once

#include "ncm-device.h"
#include "ncm-ntb.h"

/*
 * max_size is the device's dwNtbOutMaxSize and the buffer (tx_ntb_size, at
 * most 64 KiB) bounds the NTB: the short-packet rule spares the ZLP only
 * for an NTB of the device's size. Given the buffer size there, an NTB32
 * device that takes more than 64 KiB got a full 64 KiB NTB with no ZLP
 * after it, and waited on for the rest, running the next NTB into it.
 */
static inline NcmNtbPackConfig
ncm_usb_tx_pack_config(const NcmNtbInfo *n, guint16 max_packet, gboolean ndp_first)
{
	return (NcmNtbPackConfig){
		.format = n->ntb32 ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16,
		.max_size = n->out_max_size,
		.divisor = n->out_divisor,
		.remainder = n->out_remainder,
		.alignment = n->out_alignment,
		.max_datagrams = n->out_max_datagrams,
		.max_packet = max_packet,
		/* usbfs sends a ZLP on request; elsewhere the spec's pad byte is safer. */
#ifdef __linux__
		.short_mode = NCM_NTB_SHORT_ZLP,
#else
		.short_mode = NCM_NTB_SHORT_PAD,
#endif
		.ndp_first = ndp_first,
	};
}
