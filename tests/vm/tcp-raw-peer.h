/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tcp-raw-peer.h: the byte stream tcp-raw-peer sends and vmtest-lwip's serve mode checks. */
#pragma once

#include <stdint.h>

/* The byte at stream offset @off: not periodic within 64 KiB, so a byte
 * delivered twice, lost or out of place shows. */
static inline uint8_t
tcp_raw_pattern(uint64_t off)
{
	return (uint8_t)((off ^ (off >> 8) ^ (off >> 16)) * 31u + 7u);
}
