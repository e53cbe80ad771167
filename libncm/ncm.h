/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm.h: libncm's public API, a userspace USB CDC-NCM host driver. Include only this. */
#pragma once

#include "ncm-version.h"
#include "ncm-error.h"
#include "ncm-context.h"
#include "ncm-device.h"
