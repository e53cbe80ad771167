/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-pcap.h: a classic pcap writer (LINKTYPE_ETHERNET) safe to call from several data threads. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _NcmPcap NcmPcap;

/*
 * Creates @path, which must not exist yet (a symlink counts as existing),
 * mode 0600, and writes the global header. Records that would take the file
 * past @max_bytes (0 = no cap) are left out and counted. Thread: any.
 */
NcmPcap *ncm_pcap_open(const gchar *path, guint64 max_bytes, GError **error);

/*
 * Appends one frame with the current time. Records never interleave: a
 * mutex serialises writers. Write errors stop the capture (counted) rather
 * than failing the data path. Thread: any.
 */
void ncm_pcap_write(NcmPcap *pcap, const guint8 *frame, gsize len);
/* The same for a frame in pieces (a segment's headers and its payload). */
void ncm_pcap_writev(NcmPcap *pcap, const GOutputVector *v, guint n);

/* Pushes buffered records to the file now. Thread: any. */
void ncm_pcap_flush(NcmPcap *pcap);

/*
 * The data path's flush, at the end of a burst or NTB: at most every
 * 100 ms, so that a capture costs no write() per NTB yet a crash loses
 * little. Thread: any.
 */
void ncm_pcap_flush_soon(NcmPcap *pcap);

/* Records written so far, records lost to write errors, and records left
 * out at the size cap. Thread: any. */
guint64 ncm_pcap_get_records(NcmPcap *pcap);
guint64 ncm_pcap_get_lost(NcmPcap *pcap);
guint64 ncm_pcap_get_over_max(NcmPcap *pcap);

/* Flushes and closes. Accepts NULL. No writer may still be running. */
void ncm_pcap_close(NcmPcap *pcap);

G_END_DECLS
