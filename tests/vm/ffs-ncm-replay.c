/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ffs-ncm-replay.c: --replay, IN transfers read from files (a captured NTB, a fuzzer's find) instead of the generated classes. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ffs-ncm.h"

/*
 * A file's bytes are one IN transfer, sent as they are. What a conforming
 * host must count for it is what libncm's parser finds under the host's
 * negotiated format and input size: unlike the generated classes, nobody
 * wrote the answer down, so the VM test proves the USB path and the host
 * around the parser (every byte arrives, in one transfer, and is counted
 * once; nothing crashes; valid traffic goes on), and the fuzz target the
 * parser itself.
 */

typedef struct {
	char *path;
	uint8_t *b;
	size_t len;
	unsigned long sent, too_big;
} Replay;

static Replay replays[MAX_REPLAYS];
static unsigned n_replays;
static const char *paths[MAX_REPLAYS];
static unsigned n_paths;

void
replay_add(const char *path)
{
	if (n_paths == MAX_REPLAYS)
		die("--replay: at most %u paths", MAX_REPLAYS);
	paths[n_paths++] = path;
}

static void
load_file(const char *path, size_t skip)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = malloc(REPLAY_MAX_BYTES + 1);
	size_t n;

	if (!f)
		die("--replay %s: %s", path, strerror(errno));
	if (!b)
		die("--replay: out of memory");
	n = fread(b, 1, REPLAY_MAX_BYTES + 1, f);
	fclose(f);
	if (n > REPLAY_MAX_BYTES)
		die("--replay %s: over %u bytes, more than any IN transfer ffs-ncm sends", path,
		    REPLAY_MAX_BYTES);
	/* Nothing left: a ZLP, which --zlp-after-ntb already covers. */
	if (n <= skip) {
		say("replay %s: no bytes after the %zu skipped; not sent", path, skip);
		free(b);
		return;
	}
	if (n_replays == MAX_REPLAYS)
		die("--replay: more than %u files", MAX_REPLAYS);
	memmove(b, b + skip, n - skip);
	replays[n_replays++] = (Replay){ .path = strdup(path), .b = b, .len = n - skip };
}

static int
regular_only(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/* A directory: its files in name order (a fuzz corpus, say). */
static void
load_dir(const char *dir, size_t skip)
{
	struct dirent **names;
	int n = scandir(dir, &names, regular_only, alphasort);

	if (n < 0)
		die("--replay %s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			load_file(path, skip);
		free(names[i]);
	}
	free(names);
}

void
replay_load(size_t skip)
{
	for (unsigned i = 0; i < n_paths; i++) {
		struct stat st;

		if (stat(paths[i], &st) != 0)
			die("--replay %s: %s", paths[i], strerror(errno));
		if (S_ISDIR(st.st_mode))
			load_dir(paths[i], skip);
		else
			load_file(paths[i], skip);
	}
	if (n_paths && !n_replays)
		die("--replay: no file with bytes to send");
	if (n_replays)
		say("replay: %u transfers loaded", n_replays);
}

unsigned
replay_count(void)
{
	return n_replays;
}

bool
replay_next(unsigned i, bool n32, uint32_t isize, const uint8_t **b, size_t *len,
	    NcmNtbParseResult *want)
{
	Replay *r = &replays[i % n_replays];
	NcmNtbParseConfig pc = {
		.formats = n32 ? NCM_NTB_FORMAT_BIT_32 : NCM_NTB_FORMAT_BIT_16,
		.max_block = isize,
		.max_datagram = HOST_RX_MAX,
		.max_packet = HS_BULK_MPS,
	};

	/* The host's transfer would overflow: a babble, not an NTB to count. */
	if (r->len > isize) {
		if (r->too_big++ == 0)
			say("replay %s: %zu bytes, over the host's %u-byte IN transfers; skipped",
			    r->path, r->len, isize);
		return false;
	}
	ncm_ntb_parse(&pc, r->b, r->len, NULL, NULL, want);
	*b = r->b;
	*len = r->len;
	return true;
}

void
replay_sent(unsigned i)
{
	replays[i % n_replays].sent++;
}

void
replay_summary(void)
{
	unsigned unsent = 0;

	for (unsigned i = 0; i < n_replays; i++)
		unsent += replays[i].sent == 0;
	say("replay: %u files, %u never sent", n_replays, unsent);
	for (unsigned i = 0; i < n_replays; i++)
		if (!replays[i].sent)
			say("replay %s: never sent%s", replays[i].path,
			    replays[i].too_big ? " (over the host's input size)" : "");
}
