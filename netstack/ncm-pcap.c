/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-pcap.c: classic pcap records of the datagrams crossing the NTB boundary. */
/* Its log domain while it was built with the TAP backend; kept for those who filter on it. */
#define G_LOG_DOMAIN "ncm-tap"

#include "ncm-pcap.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define PCAP_MAGIC 0xa1b2c3d4u
#define PCAP_SNAPLEN 65535u
#define LINKTYPE_ETHERNET 1u

struct _NcmPcap {
	/*
	 * Guards file, records and lost; taken alone, never with another lock.
	 * A pthread mutex, not a GMutex: ThreadSanitizer sees GLib's futex-based
	 * GMutex as no lock at all.
	 */
	pthread_mutex_t lock;
	FILE *file;
	guint64 records;
	guint64 lost;
	guint64 bytes;       /* written so far, header included */
	guint64 max_bytes;   /* 0 = no cap */
	guint64 over_max;    /* records left out at the cap */
	gint64 flushed_at;   /* monotonic µs */
};

#define PCAP_FLUSH_INTERVAL_US (100 * 1000)

/* The classic global header; naturally aligned, so no padding (24 bytes). */
typedef struct {
	guint32 magic;
	guint16 version_major;
	guint16 version_minor;
	gint32 thiszone;
	guint32 sigfigs;
	guint32 snaplen;
	guint32 network;
} PcapHeader;

G_STATIC_ASSERT(sizeof(PcapHeader) == 24);

/*
 * ncm-tun opens the file as root, before it drops privileges: never follow
 * a symlink or reuse a file someone prepared (in /tmp, say), and keep the
 * capture, which holds the user's traffic, to its owner.
 */
static FILE *
create_exclusive(const gchar *path, GError **error)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f;

	if (fd < 0) {
		int err = errno;

		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err),
			    err == EEXIST ? "cannot write pcap file %s: it already exists (or is a "
					    "link); remove it or name a new file"
					  : "cannot write pcap file %s: %s",
			    path, g_strerror(err));
		return NULL;
	}
	f = fdopen(fd, "wb");
	if (!f)
		close(fd);
	return f;
}

NcmPcap *
ncm_pcap_open(const gchar *path, guint64 max_bytes, GError **error)
{
	/* Host byte order: readers detect it from the magic. */
	const PcapHeader hdr = { PCAP_MAGIC, 2, 4, 0, 0, PCAP_SNAPLEN, LINKTYPE_ETHERNET };
	NcmPcap *pcap;
	FILE *f = create_exclusive(path, error);

	if (!f)
		return NULL;
	if (fwrite(&hdr, sizeof(hdr), 1, f) != 1) {
		int err = errno;

		fclose(f);
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err),
			    "cannot write pcap file %s: %s", path, g_strerror(err));
		return NULL;
	}
	/* stdio's 4 KiB default would cost a write() every few frames under load. */
	setvbuf(f, NULL, _IOFBF, 256 * 1024);
	pcap = g_new0(NcmPcap, 1);
	pthread_mutex_init(&pcap->lock, NULL);
	pcap->file = f;
	pcap->bytes = sizeof(hdr);
	pcap->max_bytes = max_bytes;
	return pcap;
}

void
ncm_pcap_writev(NcmPcap *pcap, const GOutputVector *v, guint n)
{
	gint64 now = g_get_real_time();
	gsize len = 0, left;
	guint32 caplen;
	gboolean ok = TRUE;

	for (guint i = 0; i < n; i++)
		len += v[i].size;
	caplen = (guint32)MIN(len, PCAP_SNAPLEN);
	guint32 rec[4] = { (guint32)(now / G_USEC_PER_SEC), (guint32)(now % G_USEC_PER_SEC),
			   caplen, (guint32)len };

	pthread_mutex_lock(&pcap->lock);
	if (!pcap->file) {
		pcap->lost++;
	} else if (pcap->max_bytes && pcap->bytes + sizeof(rec) + caplen > pcap->max_bytes) {
		if (pcap->over_max++ == 0)
			g_message("pcap: the file reached its size cap (%" G_GUINT64_FORMAT
				  " bytes); later records are left out", pcap->max_bytes);
	} else {
		ok = fwrite(rec, sizeof(rec), 1, pcap->file) == 1;
		left = caplen;
		for (guint i = 0; ok && i < n && left; i++) {
			gsize part = MIN(v[i].size, left);

			ok = fwrite(v[i].buffer, 1, part, pcap->file) == part;
			left -= part;
		}
		if (!ok) {
			/* A torn record would corrupt everything after it: stop here. */
			g_warning("pcap: write failed (%s); capture stopped", g_strerror(errno));
			fclose(pcap->file);
			pcap->file = NULL;
			pcap->lost++;
		} else {
			pcap->records++;
			pcap->bytes += sizeof(rec) + caplen;
		}
	}
	pthread_mutex_unlock(&pcap->lock);
}

void
ncm_pcap_write(NcmPcap *pcap, const guint8 *frame, gsize len)
{
	GOutputVector v = { frame, len };

	ncm_pcap_writev(pcap, &v, 1);
}

static void
flush_locked(NcmPcap *pcap, gint64 now)
{
	if (pcap->file)
		fflush(pcap->file);
	pcap->flushed_at = now;
}

void
ncm_pcap_flush(NcmPcap *pcap)
{
	pthread_mutex_lock(&pcap->lock);
	flush_locked(pcap, g_get_monotonic_time());
	pthread_mutex_unlock(&pcap->lock);
}

void
ncm_pcap_flush_soon(NcmPcap *pcap)
{
	gint64 now = g_get_monotonic_time();

	pthread_mutex_lock(&pcap->lock);
	if (now - pcap->flushed_at >= PCAP_FLUSH_INTERVAL_US)
		flush_locked(pcap, now);
	pthread_mutex_unlock(&pcap->lock);
}

/* The counters change under the lock, with a record. */
static guint64
read_locked_counter(NcmPcap *pcap, const guint64 *counter)
{
	guint64 n;

	pthread_mutex_lock(&pcap->lock);
	n = *counter;
	pthread_mutex_unlock(&pcap->lock);
	return n;
}

guint64
ncm_pcap_get_records(NcmPcap *pcap)
{
	return read_locked_counter(pcap, &pcap->records);
}

guint64
ncm_pcap_get_over_max(NcmPcap *pcap)
{
	return read_locked_counter(pcap, &pcap->over_max);
}

guint64
ncm_pcap_get_lost(NcmPcap *pcap)
{
	return read_locked_counter(pcap, &pcap->lost);
}

void
ncm_pcap_close(NcmPcap *pcap)
{
	if (!pcap)
		return;
	if (pcap->file)
		fclose(pcap->file);
	pthread_mutex_destroy(&pcap->lock);
	g_free(pcap);
}
