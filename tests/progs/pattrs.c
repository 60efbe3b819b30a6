// SPDX-License-Identifier: MIT
/*
 * Process attributes that a restore must bring back: oom_score_adj,
 * PR_SET_CHILD_SUBREAPER, PR_SET_THP_DISABLE (with "except advised"
 * where the kernel has it) and membarrier registrations: the global
 * expedited one, and SYNC_CORE, which (unlike a registration of plain
 * private expedited) leaves the PRIVATE_EXPEDITED command refused.
 * Each tick it checks them all; any difference: "FAIL what" and exit 1.
 *
 *   pattrs [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MB_GLOBAL_EXPEDITED 2
#define MB_REGISTER_GLOBAL_EXPEDITED 4
#define MB_PRIVATE_EXPEDITED 8
#define MB_PRIVATE_EXPEDITED_SYNC_CORE 32
#define MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE 64
#define MB_GET_REGISTRATIONS 512
#define OOM 345

static long membarrier(int cmd)
{
	long r = syscall(SYS_membarrier, cmd, 0, 0);

	return r < 0 ? -errno : r;
}

static int read_oom(void)
{
	FILE *f = fopen("/proc/self/oom_score_adj", "r");
	int v = -9999;

	if (!f || fscanf(f, "%d", &v) != 1)
		v = -9999;
	if (f)
		fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	FILE *f = fopen("/proc/self/oom_score_adj", "w");
	long thp, regs;
	int sub = 0;

	if (!f || fprintf(f, "%d\n", OOM) < 0 || fclose(f)) {
		printf("FAIL setting oom_score_adj\n");
		return 1;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) ||
	    (prctl(PR_SET_THP_DISABLE, 1, 2 /* except advised, 6.18 */, 0, 0) &&
	     prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))) {
		printf("FAIL prctl: %s\n", strerror(errno));
		return 1;
	}
	thp = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (membarrier(MB_REGISTER_GLOBAL_EXPEDITED) ||
	    membarrier(MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE)) {
		printf("FAIL membarrier registration\n");
		return 1;
	}
	regs = membarrier(MB_GET_REGISTRATIONS);	/* -EINVAL before 6.3 */
	printf("set up: thp_disable %ld membarrier %ld\n", thp, regs);
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		const char *bad = NULL;

		if (read_oom() != OOM)
			bad = "oom_score_adj";
		else if (prctl(PR_GET_CHILD_SUBREAPER, &sub, 0, 0, 0) || sub != 1)
			bad = "no longer a child subreaper";
		else if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != thp)
			bad = "PR_GET_THP_DISABLE";
		else if (membarrier(MB_GET_REGISTRATIONS) != regs)
			bad = "membarrier registrations";
		else if (membarrier(MB_PRIVATE_EXPEDITED_SYNC_CORE))
			bad = "membarrier SYNC_CORE refused";
		else if (membarrier(MB_PRIVATE_EXPEDITED) != -EPERM)
			bad = "membarrier PRIVATE_EXPEDITED works: only SYNC_CORE was registered";
		else if (membarrier(MB_GLOBAL_EXPEDITED))
			bad = "membarrier GLOBAL_EXPEDITED refused";
		if (bad) {
			printf("FAIL %s: oom_score_adj %d subreaper %d thp_disable %d registrations "
			       "%ld private expedited %ld\n", bad, read_oom(), sub,
			       prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0),
			       membarrier(MB_GET_REGISTRATIONS), membarrier(MB_PRIVATE_EXPEDITED));
			fflush(stdout);
			return 1;
		}
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
