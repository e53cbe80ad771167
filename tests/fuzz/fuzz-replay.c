/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-replay.c: feeds files (or every file of directories) to a fuzz target, no libFuzzer. */

/*
 * Linked with a target in builds without libFuzzer (gcc), so the committed
 * corpus, regressions included, runs under that build's sanitizers. Each
 * input gets a heap buffer of exactly its size, so an overread is caught.
 */

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int
replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long size;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	data = malloc(size ? (size_t)size : 1);
	if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "%s: short read\n", path);
		free(data);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(data, (size_t)size);
	free(data);
	return 0;
}

static int
skip_hidden(const struct dirent *entry)
{
	return entry->d_name[0] != '.';
}

/* Replays @path, a file or a directory; returns the inputs run, -1 on error. */
static long
replay_path(const char *path)
{
	struct dirent **entries;
	struct stat st;
	long count = 0;
	int n;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path) == 0 ? 1 : -1;
	n = scandir(path, &entries, skip_hidden, alphasort);
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char file[4096];

		snprintf(file, sizeof(file), "%s/%s", path, entries[i]->d_name);
		if (count >= 0 && stat(file, &st) == 0 && S_ISREG(st.st_mode))
			count = replay_file(file) == 0 ? count + 1 : -1;
		free(entries[i]);
	}
	free(entries);
	return count;
}

int
main(int argc, char **argv)
{
	long total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE-OR-DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		long count = replay_path(argv[i]);

		if (count < 0)
			return 1;
		printf("%s: %ld inputs\n", argv[i], count);
		total += count;
	}
	/* An empty corpus would make this test pass while testing nothing. */
	if (total == 0) {
		fprintf(stderr, "no inputs: commit seeds in the corpus directory\n");
		return 1;
	}
	return 0;
}
