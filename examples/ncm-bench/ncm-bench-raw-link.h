/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-raw-link.h: the raw path's link: BenchRaw frames bypass the stack both ways. */
#pragma once

#include "ncm-bench-transport.h"
#include "ncm-link-private.h" /* a link of its own: NcmLinkOps */

G_BEGIN_DECLS

/*
 * Wraps @inner (taken): the stack on top sees every frame but those of
 * BENCH_RAW_ETHERTYPE, which are only counted, and sends as before. The
 * BenchRaw in @ret_raw lives as long as the link.
 */
NcmLink *bench_raw_link_new(NcmLink *inner, BenchRaw **ret_raw);

G_END_DECLS
