/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-gro.h: in-order TCP segments of one receive batch merged before they enter lwIP. */
#ifndef NCM_LWIP_GRO_H
#define NCM_LWIP_GRO_H

#include <glib.h>

#include "lwip/pbuf.h"

/*
 * Merges runs of consecutive frames in @batch (@n single-pbuf Ethernet
 * frames) that continue one TCP flow in sequence into one pbuf chain each:
 * the first frame's headers, then every frame's data. Only frames whose
 * TCP checksum was checked on the copy (@summed) are merged, and the
 * merged frame keeps that mark: its TCP checksum field is stale, its IP
 * header checksum and lengths are right. Compacts @batch and @summed and
 * returns the new count; @merged_out adds the frames that were folded
 * into an earlier one.
 */
guint nlw_gro_merge(struct pbuf **batch, gboolean *summed, guint n, guint64 *merged_out);

#endif /* NCM_LWIP_GRO_H */
