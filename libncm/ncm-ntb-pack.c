/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-pack.c: placeholder, being written. */
#include "ncm-ntb.h"
