/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-device.h: the device side of ncm-proxy: one NCM function (or a test TAP) as an lwIP netif, kept across replugs. */
#pragma once

#include <ncm.h>
#include <stdio.h>

#include "ncm-lwip.h"

typedef struct {
	NcmMatch match;
	int usb_fd;                  /* an open usbfs node to wrap, or -1 */
	const gchar *tap;            /* testing: a new TAP interface instead of USB */
	gboolean persist;            /* reopen the function when it comes back */
	NcmDeviceOptions options;
	NcmLwipNetifConfig netif;    /* addresses borrowed for the device's life */
} ProxyDeviceConfig;

typedef struct _ProxyDevice ProxyDevice;

/* The device went away (or failed) and will not be reopened: @why says how. */
typedef void (*ProxyDeviceGoneFunc)(const gchar *why, gpointer user_data);

/*
 * Opens the one function @config selects (an error lists them when several
 * match), starts its netif, and with @config->persist watches for it to come
 * back after an unplug. Thread: the main context's, where the signals come.
 */
ProxyDevice *proxy_device_open(NcmLwipStack *stack, const ProxyDeviceConfig *config,
			       ProxyDeviceGoneFunc gone, gpointer user_data, GError **error);
/* "usb 0525:a4a1 at 1-1, MTU 1500" or "tap NAME". */
const gchar *proxy_device_describe(ProxyDevice *self);
/* Device sessions so far, the netif's addresses and DNS servers, the device's counters. */
void proxy_device_print_stats(ProxyDevice *self, FILE *out);
void proxy_device_free(ProxyDevice *self);
