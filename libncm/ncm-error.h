/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-error.h: the NCM_ERROR GError domain and its codes. */
#pragma once

#include <glib.h>

#include "ncm-version.h"

G_BEGIN_DECLS

/**
 * NCM_ERROR:
 *
 * The #GError domain of libncm's errors; the codes are #NcmError.
 */
#define NCM_ERROR (ncm_error_quark())

/**
 * NcmError:
 * @NCM_ERROR_FAILED: anything not listed below.
 * @NCM_ERROR_NOT_FOUND: no NCM function matched.
 * @NCM_ERROR_PERMISSION: the usbfs node is not accessible to this user.
 * @NCM_ERROR_BUSY: another process or driver holds an interface.
 * @NCM_ERROR_KERNEL_DRIVER: a kernel driver is bound and may not be detached.
 * @NCM_ERROR_GONE: the device went away.
 * @NCM_ERROR_CONFIG_INACTIVE: the function lives in a configuration that is
 *   not active, and switching was not allowed.
 * @NCM_ERROR_PROTOCOL: the device answered a request with something invalid.
 * @NCM_ERROR_UNSUPPORTED: the platform or libusb lacks what is needed.
 * @NCM_ERROR_CLOSED: the device was closed.
 *
 * The codes of the %NCM_ERROR domain. Every message also says what to do.
 */
typedef enum {
	NCM_ERROR_FAILED,
	NCM_ERROR_NOT_FOUND,
	NCM_ERROR_PERMISSION,
	NCM_ERROR_BUSY,
	NCM_ERROR_KERNEL_DRIVER,
	NCM_ERROR_GONE,
	NCM_ERROR_CONFIG_INACTIVE,
	NCM_ERROR_PROTOCOL,
	NCM_ERROR_UNSUPPORTED,
	NCM_ERROR_CLOSED,
} NcmError;

/**
 * ncm_error_quark:
 *
 * The error domain of libncm's #GErrors.
 *
 * Thread: any.
 *
 * Returns: the #GQuark of the %NCM_ERROR domain.
 */
NCM_EXPORT GQuark ncm_error_quark(void);

G_END_DECLS
