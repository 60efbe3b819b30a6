// SPDX-License-Identifier: MIT
/*
 * Two threads that move themselves between two CPUs: each pins itself
 * to one (sched_setaffinity), then checks over and over, a millisecond
 * apart, that it runs there: sched_getcpu() (which glibc answers from
 * the rseq area's cpu_id), the getcpu system call and its affinity mask
 * must all agree with where it pinned itself. After a restore a thread
 * must still be pinned, and cpu_id must say where it really runs.
 *
 *   "FAIL thread T: sched_getcpu says A, getcpu B, pinned to C (mask M)"
 *   and exit 1 on any difference; "tick N pid P" every MS.
 *
 *   movecpu [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int cpus[2];	/* the first two CPUs we may use */
static atomic_long turns[2];

static void *mover(void *arg)
{
	long self = (long)arg;
	struct timespec ms = { 0, 1000000 };

	for (long k = self;; k++) {
		int want = cpus[k % 2];
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(want, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			printf("FAIL thread %ld: sched_setaffinity\n", self);
			exit(1);
		}
		for (int i = 0; i < 40; i++) {
			unsigned cpu = ~0u;
			int fast = sched_getcpu();
			cpu_set_t now;

			syscall(SYS_getcpu, &cpu, NULL, NULL);
			sched_getaffinity(0, sizeof(now), &now);
			if (fast != want || (int)cpu != want || !CPU_EQUAL(&now, &set)) {
				printf("FAIL thread %ld: sched_getcpu says %d, getcpu %u, pinned to "
				       "%d (%d CPUs in its mask, cpu %d %s)\n", self, fast, cpu, want,
				       CPU_COUNT(&now), want, CPU_ISSET(want, &now) ? "in it" : "not in it");
				fflush(stdout);
				exit(1);
			}
			turns[self]++;
			nanosleep(&ms, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long msec = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { msec / 1000, (msec % 1000) * 1000000 };
	cpu_set_t all;
	pthread_t th[2];
	int n = 0;

	sched_getaffinity(0, sizeof(all), &all);
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &all))
			cpus[n++] = c;
	if (n < 2) {
		printf("FAIL needs two CPUs, has %d\n", n);
		return 1;
	}
	for (long i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, mover, (void *)i);
	for (long t = 0; ticks < 0 || t < ticks; t++) {
		printf("tick %ld pid %d turns %ld %ld\n", t, (int)getpid(), (long)turns[0],
		       (long)turns[1]);
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
