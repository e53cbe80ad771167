/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-link.h: NcmLink, the datagram link a netstack runs over: an NcmDevice or a TAP fd. */
#pragma once

#include <ncm.h>

G_BEGIN_DECLS

/**
 * NcmLink:
 *
 * An opaque source and sink of Ethernet frames that a netstack runs over:
 * an open #NcmDevice, or a TAP file descriptor. Hand it to
 * ncm_lwip_netif_add(), which takes it; free it yourself only when you
 * never handed it over.
 *
 * From another language, ncm_lwip_stack_add_device() does both steps for
 * an #NcmDevice.
 */
typedef struct _NcmLink NcmLink;

/**
 * ncm_link_new_for_device: (skip)
 * @device: an open #NcmDevice, not started yet.
 *
 * A link over @device: the netstack that takes it sets the device's sink
 * and starts it, and closes it when the link stops. Its MAC is the host
 * side's (ncm_device_get_mac()), its largest frame
 * ncm_device_get_max_frame().
 *
 * Thread: any.
 *
 * Returns: (transfer full): the link, holding a reference to @device.
 */
NcmLink *ncm_link_new_for_device(NcmDevice *device);

/**
 * ncm_link_new_for_tap_fd: (skip)
 * @fd: a TAP file descriptor (IFF_TAP | IFF_NO_PI); the link takes it and
 *   closes it when freed.
 * @mac: (array fixed-size=6): the MAC the stack uses as its own.
 * @max_frame: the largest Ethernet frame, without FCS (MTU + 14).
 *
 * A link over a kernel TAP interface, for tests and for running a stack
 * against the host's kernel. A reader thread of the link's own drains
 * @fd, delivering each frame and then the end of each burst.
 *
 * Thread: any.
 *
 * Returns: (transfer full): the link.
 */
NcmLink *ncm_link_new_for_tap_fd(int fd, const guint8 mac[6], guint max_frame);

/**
 * ncm_link_free: (skip)
 * @link: (nullable) (transfer full): a link no netstack took, or %NULL.
 *
 * Stops nothing (a link is started only by the stack that took it) and
 * frees @link: its device reference, or its fd.
 * Thread: any.
 */
void ncm_link_free(NcmLink *link);

G_END_DECLS
