/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-le.h: bounds-checked field access for every byte a device or peer sends (little- and big-endian). */
#pragma once

/*
 * Device input is parsed through these readers only. Callers still check
 * their bounds first (to count the right error), so the readers are a
 * second line of defence: a field that does not lie wholly inside the
 * buffer reads as 0 instead of reading past it. Byte loads also keep us
 * clear of unaligned access and host byte order.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when @size bytes at @off lie inside @len; the form cannot overflow. */
static inline bool
ncm_le_fits(size_t len, size_t off, size_t size)
{
	return off <= len && size <= len - off;
}

static inline uint8_t
ncm_le8_at(const uint8_t *buf, size_t len, size_t off)
{
	return ncm_le_fits(len, off, 1) ? buf[off] : 0;
}

static inline uint16_t
ncm_le16_at(const uint8_t *buf, size_t len, size_t off)
{
	if (!ncm_le_fits(len, off, 2))
		return 0;
	return (uint16_t)(buf[off] | (unsigned)buf[off + 1] << 8);
}

static inline uint32_t
ncm_le32_at(const uint8_t *buf, size_t len, size_t off)
{
	if (!ncm_le_fits(len, off, 4))
		return 0;
	return (uint32_t)buf[off] | (uint32_t)buf[off + 1] << 8 |
	       (uint32_t)buf[off + 2] << 16 | (uint32_t)buf[off + 3] << 24;
}

/* Network byte order, for the Ethernet/ARP/IPv6 headers inside datagrams. */
static inline uint16_t
ncm_be16_at(const uint8_t *buf, size_t len, size_t off)
{
	if (!ncm_le_fits(len, off, 2))
		return 0;
	return (uint16_t)((unsigned)buf[off] << 8 | buf[off + 1]);
}

static inline uint32_t
ncm_be32_at(const uint8_t *buf, size_t len, size_t off)
{
	if (!ncm_le_fits(len, off, 4))
		return 0;
	return (uint32_t)buf[off] << 24 | (uint32_t)buf[off + 1] << 16 |
	       (uint32_t)buf[off + 2] << 8 | buf[off + 3];
}

/* A pointer to @size bytes at @off, or NULL when they do not lie inside @len. */
static inline const uint8_t *
ncm_bytes_at(const uint8_t *buf, size_t len, size_t off, size_t size)
{
	return ncm_le_fits(len, off, size) ? buf + off : NULL;
}

/* Writers return false (writing nothing) when the field would not fit. */
static inline bool
ncm_le16_put(uint8_t *buf, size_t len, size_t off, uint16_t value)
{
	if (!ncm_le_fits(len, off, 2))
		return false;
	buf[off] = (uint8_t)value;
	buf[off + 1] = (uint8_t)(value >> 8);
	return true;
}

static inline bool
ncm_le32_put(uint8_t *buf, size_t len, size_t off, uint32_t value)
{
	if (!ncm_le_fits(len, off, 4))
		return false;
	buf[off] = (uint8_t)value;
	buf[off + 1] = (uint8_t)(value >> 8);
	buf[off + 2] = (uint8_t)(value >> 16);
	buf[off + 3] = (uint8_t)(value >> 24);
	return true;
}
