/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-version.h: version and symbol-export macros. */
#pragma once

/**
 * NCM_MAJOR_VERSION:
 *
 * The major version of the libncm headers in use.
 */
#define NCM_MAJOR_VERSION 0
/**
 * NCM_MINOR_VERSION:
 *
 * The minor version of the libncm headers in use.
 */
#define NCM_MINOR_VERSION 2
/**
 * NCM_MICRO_VERSION:
 *
 * The micro version of the libncm headers in use.
 */
#define NCM_MICRO_VERSION 0

/* The library is built with -fvisibility=hidden; only these symbols are API. */
#if defined(NCM_COMPILATION)
#define NCM_EXPORT __attribute__((visibility("default")))
#else
#define NCM_EXPORT
#endif
