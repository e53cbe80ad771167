/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-ntb-parse.c: placeholder, being written. */
#include "ncm-ntb.h"
const char *
ncm_ntb_error_name(NcmNtbError err)
{
	(void)err;
	return "unknown";
}
