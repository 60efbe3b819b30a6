// SPDX-License-Identifier: MIT
/*
 * treeload: the tree workload of `make bench` (docs/benchmarks.md,
 * "Freeze of trees").
 *
 *   treeload [-y SYSV_SIZE] [-c CHILDREN] [-s SIZE] [-t THREADS] [-g GAP_MS]
 *
 * The parent attaches a SysV shared memory segment of SYSV_SIZE bytes
 * (default 64M, 0: none) and fills it, then forks CHILDREN children
 * (default 3); each maps SIZE bytes (default 256M) of its own, fills them
 * with pseudo-random data and starts THREADS - 1 more threads (default
 * 8 in all) that sleep. The children also write into the segment now and
 * then. The parent's main thread wakes every millisecond and says when
 * it did not run for GAP_MS (default 50) or more, as bench/workload does:
 *
 *   ready children=C pid=P       every child is ready
 *   gap ms=X rt_ms=Y end_rt_ns=T pid=P
 *   stall max_ms=X pid=P         SIGUSR2: longest gap since the last one
 *
 * SIGTERM: the children are killed, the segment removed, exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t want_stall, want_exit;

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	uint64_t m = 1;

	switch (*end) {
	case 'k': case 'K': m = 1ull << 10; break;
	case 'm': case 'M': m = 1ull << 20; break;
	case 'g': case 'G': m = 1ull << 30; break;
	}
	return (uint64_t)(v * (double)m) / 4096 * 4096;
}

static void fill(uint64_t *p, uint64_t len, uint64_t st)
{
	for (uint64_t i = 0; i < len / 8; i++) {
		st += 0x9e3779b97f4a7c15ull;
		p[i] = st ^ (st >> 29);
	}
}

static void *sleeper(void *arg)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	(void)arg;
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}

static void child(uint64_t size, unsigned threads, volatile uint64_t *seg, uint64_t seg_len,
		  int k, int ready_fd)
{
	uint64_t *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	pthread_t th;

	if (mem == MAP_FAILED)
		_exit(2);
	fill(mem, size, (uint64_t)k + 1);
	for (unsigned i = 1; i < threads; i++)
		if (pthread_create(&th, NULL, sleeper, NULL))
			_exit(2);
	if (write(ready_fd, "r", 1) != 1)
		_exit(2);
	close(ready_fd);
	for (uint64_t n = 0;; n++) {
		if (seg_len)
			seg[(n * 512 + (uint64_t)k) % (seg_len / 8)] = n;
		nanosleep(&ts, NULL);
	}
}

static void on_signal(int sig)
{
	if (sig == SIGUSR2)
		want_stall = 1;
	else
		want_exit = 1;
}

int main(int argc, char **argv)
{
	uint64_t seg_len = 64ull << 20, size = 256ull << 20;
	unsigned children = 3, threads = 8, gap_ms = 50;
	struct sigaction sa = { .sa_handler = on_signal };
	volatile uint64_t *seg = NULL;
	int c, id = -1, ready[2];
	pid_t *kids;
	char b;

	while ((c = getopt(argc, argv, "y:c:s:t:g:")) != -1) {
		switch (c) {
		case 'y': seg_len = parse_size(optarg); break;
		case 'c': children = (unsigned)atoi(optarg); break;
		case 's': size = parse_size(optarg); break;
		case 't': threads = (unsigned)atoi(optarg); break;
		case 'g': gap_ms = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: treeload [-y SYSV_SIZE] [-c CHILDREN] [-s SIZE] "
				"[-t THREADS] [-g GAP_MS]\n");
			return 2;
		}
	}
	if (seg_len) {
		id = shmget(IPC_PRIVATE, seg_len, IPC_CREAT | 0600);
		seg = id < 0 ? NULL : shmat(id, NULL, 0);
		if (!seg || seg == (void *)-1) {
			perror("treeload: SysV segment");
			return 2;
		}
		fill((uint64_t *)seg, seg_len, 99);
	}
	kids = calloc(children + 1, sizeof(*kids));
	if (!kids || pipe(ready))
		return 2;
	for (unsigned k = 0; k < children; k++)
		if ((kids[k] = fork()) == 0) {
			close(ready[0]);
			child(size, threads, seg, seg_len, (int)k, ready[1]);
		}
	close(ready[1]);
	for (unsigned k = 0; k < children; k++)
		if (read(ready[0], &b, 1) != 1)
			return 2;
	close(ready[0]);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("ready children=%u pid=%d\n", children, (int)getpid());
	fflush(stdout);
	const struct timespec tick = { 0, 1000 * 1000 };
	int64_t last = clock_ns(CLOCK_MONOTONIC), last_rt = clock_ns(CLOCK_REALTIME), max_gap = 0;
	while (!want_exit) {
		nanosleep(&tick, NULL);
		int64_t t = clock_ns(CLOCK_MONOTONIC), rt = clock_ns(CLOCK_REALTIME);
		int64_t gap = t - last, rt_gap = rt - last_rt;

		if (gap > max_gap)
			max_gap = gap;
		if (gap >= (int64_t)gap_ms * 1000000 || rt_gap >= (int64_t)gap_ms * 1000000) {
			printf("gap ms=%.3f rt_ms=%.3f end_rt_ns=%" PRId64 " pid=%d\n",
			       (double)gap / 1e6, (double)rt_gap / 1e6, rt, (int)getpid());
			fflush(stdout);
		}
		if (want_stall) {
			want_stall = 0;
			printf("stall max_ms=%.3f pid=%d\n", (double)max_gap / 1e6, (int)getpid());
			fflush(stdout);
			max_gap = 0;
		}
		last = clock_ns(CLOCK_MONOTONIC);
		last_rt = clock_ns(CLOCK_REALTIME);
	}
	for (unsigned k = 0; k < children; k++) {
		kill(kids[k], SIGKILL);
		waitpid(kids[k], NULL, 0);
	}
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	return 0;
}
