/* SPDX-License-Identifier: MIT */
/*
 * For test programs of a lazy restore (lazyevents, lazytree): whether
 * this process is traced, as it is by the loader while its fill runs,
 * and the "exec" mode they exec themselves into during the fill.
 */
#ifndef IBCR_TEST_LAZYPROG_H
#define IBCR_TEST_LAZYPROG_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int traced(void)
{
	char line[256];
	int pid = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &pid) == 1)
			break;
	if (f)
		fclose(f);
	return pid != 0;
}

/* "exec tick N pid P" every 20 ms */
static int exec_ticks(void)
{
	struct timespec ts = { 0, 20 * 1000000 };

	for (int n = 0; n < 100000; n++) {
		printf("exec tick %d pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	return 0;
}

#endif
