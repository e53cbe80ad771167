/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-rtnl.h: interface setup over rtnetlink (MTU, MAC, addresses, up), no `ip` needed. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* An address with its prefix length, as "192.168.79.1/24" or "fd79::1/64". */
typedef struct {
	int family;          /* AF_INET or AF_INET6 */
	guint8 addr[16];     /* network byte order; 4 bytes used for AF_INET */
	guint prefix;
} NcmRtnlPrefix;

/* Parses ADDR/PREFIX; a missing /PREFIX means a host address (32 or 128). */
gboolean ncm_rtnl_prefix_parse(NcmRtnlPrefix *ret_prefix, const gchar *text, GError **error);

/*
 * Each call opens its own NETLINK_ROUTE socket, sends one request and waits
 * for the kernel's acknowledgement, so errors come back as G_IO_ERROR with
 * the errno's meaning (G_IO_ERROR_PERMISSION_DENIED without CAP_NET_ADMIN).
 * Thread: any. They act in the calling thread's network namespace.
 */
gboolean ncm_rtnl_set_mtu(int ifindex, guint mtu, GError **error);
gboolean ncm_rtnl_set_mac(int ifindex, const guint8 mac[6], GError **error);
gboolean ncm_rtnl_set_up(int ifindex, gboolean up, GError **error);

/* Adds (or replaces) @prefix on @ifindex. @nodad skips IPv6 duplicate address detection. */
gboolean ncm_rtnl_add_address(int ifindex, const NcmRtnlPrefix *prefix, gboolean nodad,
			      GError **error);

G_END_DECLS
