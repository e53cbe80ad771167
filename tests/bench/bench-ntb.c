/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-ntb.c: a fixed NTB workload for callgrind: instructions per datagram to pack and to parse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncm-ntb.h"

/*
 * Run under `valgrind --tool=callgrind --toggle-collect=FUNC` (see
 * bench-ntb.sh): callgrind counts instructions, which do not depend on
 * machine load, so the figure is repeatable where a timing would not be.
 */

static size_t sink_bytes;

static bool
count(void *user_data, const uint8_t *datagram, size_t len)
{
	(void)user_data;
	sink_bytes += len + datagram[0];
	return true;
}

int
main(int argc, char **argv)
{
	size_t dlen = argc > 1 ? strtoul(argv[1], NULL, 10) : 1514;
	unsigned ntbs = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1000;
	int ntb32 = argc > 3 && strcmp(argv[3], "32") == 0;
	static uint8_t frame[1514], buf[16384];
	NcmNtbPackConfig pc = { .format = ntb32 ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16,
				.max_size = sizeof(buf), .divisor = 4, .alignment = 4,
				.max_packet = 512, .short_mode = NCM_NTB_SHORT_ZLP };
	NcmNtbParseConfig cfg = { .max_block = sizeof(buf), .max_datagram = 1514 };
	NcmNtbPacker packer;
	NcmNtbParseResult res;
	unsigned long datagrams = 0;

	if (dlen < 14 || dlen > sizeof(frame))
		return 2;
	memset(frame, 0x5a, sizeof(frame));
	for (unsigned n = 0; n < ntbs; n++) {
		ncm_ntb_packer_init(&packer, &pc, buf, sizeof(buf), (uint16_t)n);
		while (ncm_ntb_packer_add(&packer, frame, dlen) == NCM_NTB_PACK_OK)
			;
		size_t len = ncm_ntb_packer_finish(&packer, NULL);
		ncm_ntb_parse(&cfg, buf, len, count, NULL, &res);
		datagrams += res.datagrams;
	}
	printf("datagrams=%lu ntbs=%u size=%zu format=NTB%d bytes=%zu\n", datagrams, ntbs, dlen,
	       ntb32 ? 32 : 16, sink_bytes);
	return datagrams ? 0 : 1;
}
