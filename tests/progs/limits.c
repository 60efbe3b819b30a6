// SPDX-License-Identifier: MIT
/*
 * Resource limits that a restore must bring back exactly: at start it
 * lowers every limit it can, soft and hard, to values of its own (what a
 * daemon that sandboxes itself does), prints them and then checks each
 * tick that getrlimit still answers the same for all sixteen. Any
 * difference: "FAIL limit N soft S hard H, set S0 H0" and exit 1.
 *
 *   limits [TICKS [MS]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NLIM 16

/* Lower than any default, each soft below its hard; 0: left as it is. */
static const struct { int r; rlim_t soft, hard; } lowered[] = {
	{ RLIMIT_CPU, 3600, 7200 },
	{ RLIMIT_FSIZE, 1ull << 36, 1ull << 37 },
	{ RLIMIT_DATA, 1ull << 38, 1ull << 39 },
	{ RLIMIT_STACK, 4u << 20, 6u << 20 },
	{ RLIMIT_CORE, 0, 12345678 },
	{ RLIMIT_RSS, 1ull << 40, 1ull << 41 },
	{ RLIMIT_NOFILE, 200, 300 },
	{ RLIMIT_MEMLOCK, 65536, 131072 },
	{ RLIMIT_AS, 1ull << 42, 1ull << 43 },
	{ RLIMIT_LOCKS, 1000, 2000 },
	{ RLIMIT_SIGPENDING, 100, 200 },
	{ RLIMIT_MSGQUEUE, 8192, 16384 },
	{ RLIMIT_NICE, 0, 0 },
	{ RLIMIT_RTPRIO, 0, 0 },
	{ RLIMIT_RTTIME, 1000000, 2000000 },
};

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	struct rlimit want[NLIM];

	for (size_t i = 0; i < sizeof(lowered) / sizeof(lowered[0]); i++) {
		struct rlimit cur, l = { lowered[i].soft, lowered[i].hard };

		getrlimit(lowered[i].r, &cur);
		if (l.rlim_max > cur.rlim_max)	/* only ever lower */
			l.rlim_max = cur.rlim_max;
		if (l.rlim_cur > l.rlim_max)
			l.rlim_cur = l.rlim_max;
		if (setrlimit(lowered[i].r, &l)) {
			printf("FAIL setrlimit %d\n", lowered[i].r);
			return 1;
		}
	}
	/* RLIMIT_NPROC: one below its hard limit, which stays */
	{
		struct rlimit l;

		getrlimit(RLIMIT_NPROC, &l);
		if (l.rlim_cur > 1000 && l.rlim_cur != RLIM_INFINITY)
			l.rlim_cur -= 1;
		setrlimit(RLIMIT_NPROC, &l);
	}
	for (int r = 0; r < NLIM; r++) {
		getrlimit(r, &want[r]);
		printf("limit %d %llu %llu\n", r, (unsigned long long)want[r].rlim_cur,
		       (unsigned long long)want[r].rlim_max);
	}
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		for (int r = 0; r < NLIM; r++) {
			struct rlimit l;

			if (getrlimit(r, &l) || l.rlim_cur != want[r].rlim_cur ||
			    l.rlim_max != want[r].rlim_max) {
				printf("FAIL limit %d soft %llu hard %llu, set %llu %llu\n", r,
				       (unsigned long long)l.rlim_cur, (unsigned long long)l.rlim_max,
				       (unsigned long long)want[r].rlim_cur,
				       (unsigned long long)want[r].rlim_max);
				fflush(stdout);
				return 1;
			}
		}
		printf("tick %ld pid %d uid %d\n", n, (int)getpid(), (int)getuid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
