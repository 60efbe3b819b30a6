// SPDX-License-Identifier: MIT
/*
 * AMX for t_amx: asks the kernel for AMX (ARCH_REQ_XCOMP_PERM), loads
 * tile 0 with a pattern and prints "tick N pid P" while the tile keeps it
 * (the tile is stored back and checked every tick; "FAIL ..." when it
 * changed). With LATE, the tile is loaded only from tick LATE on: till
 * then the process holds the permission and no tile data.
 *
 *   amx [TICKS [MS [LATE]]]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

struct tilecfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

static uint8_t pattern[16][64], back[16][64];

int main(int argc, char **argv)
{
	int ticks = argc > 1 ? atoi(argv[1]) : 0;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	int late = argc > 3 ? atoi(argv[3]) : 0;
	struct tilecfg cfg = { .palette = 1 };
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) {
		printf("no amx\n");
		return 2;
	}
	cfg.colsb[0] = 64;
	cfg.rows[0] = 16;
	for (int r = 0; r < 16; r++)
		for (int c = 0; c < 64; c++)
			pattern[r][c] = (uint8_t)(r * 64 + c + 1);
	for (int i = 0; ticks <= 0 || i < ticks; i++) {
		printf("tick %d pid %d\n", i, (int)getpid());
		nanosleep(&ts, NULL);
		if (i < late)
			continue;
		if (i == late) {
			__asm__ volatile("ldtilecfg %0" ::"m"(cfg));
			__asm__ volatile("tileloadd (%0,%1,1), %%tmm0" ::"r"(pattern), "r"(64L)
					 : "memory");
		}
		__asm__ volatile("tilestored %%tmm0, (%0,%1,1)" ::"r"(back), "r"(64L) : "memory");
		if (memcmp(back, pattern, sizeof(back))) {
			printf("FAIL tile 0 changed\n");
			return 1;
		}
	}
	printf("DONE\n");
	return 0;
}
