/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-cdc-notify.c: placeholder, being written. */
#include "ncm-cdc.h"
