/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz.h: the entry point every fuzz target defines, and its check macro. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Defined by each fuzz-*.c; called by libFuzzer or by fuzz-replay.c. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Targets check the contract, not only memory safety. A failed check aborts,
 * which libFuzzer and the replayer both report as a crash with this line.
 */
#define FUZZ_CHECK(cond)                                                           \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,     \
				__LINE__, #cond);                                  \
			abort();                                                   \
		}                                                                  \
	} while (0)
