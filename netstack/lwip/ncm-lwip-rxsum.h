/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-rxsum.h: received frames copied into lwIP with their TCP checksum checked on the copy. */
#ifndef NCM_LWIP_RXSUM_H
#define NCM_LWIP_RXSUM_H

#include <glib.h>

/*
 * Copies the Ethernet frame @frame (@len bytes) to @dst and returns TRUE
 * when it holds one whole TCP segment over IPv4 (not a fragment) or IPv6
 * (TCP as the first next header) whose TCP checksum is right. FALSE says
 * nothing about the frame: lwIP then checks it as usual. Any byte of the
 * frame may be hostile; nothing outside @len is read.
 */
gboolean nlw_rx_copy_check(guint8 *dst, const guint8 *frame, gsize len);

#endif /* NCM_LWIP_RXSUM_H */
