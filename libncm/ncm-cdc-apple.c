/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cdc-apple.c: placeholder, being written. */
#include "ncm-cdc.h"
