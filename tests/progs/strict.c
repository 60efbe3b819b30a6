// SPDX-License-Identifier: MIT
/*
 * A worker thread in seccomp strict mode (only read, write, _exit and
 * rt_sigreturn allowed), computing and writing "strict N" lines with
 * write(2) alone, next to a main thread that is not in strict mode and
 * prints "tick N pid P", checks that the worker advances and that the
 * kernel shows it in strict mode (/proc/self/task/TID/status
 * "Seccomp: 1") and itself not.
 *
 * After the last tick the worker makes a system call strict mode
 * forbids (getppid): the kernel must kill it there. The main thread
 * waits for it to end and prints "DONE pid P strict held" if it died at
 * that call, or "FAIL strict mode lost" if the call returned.
 *
 *   strict TICKS [MS]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t progress, sink;
static volatile int worker_tid, worker_go, finish, survived;

static void fail(const char *what)
{
	printf("FAIL %s\n", what);
	fflush(stdout);
	_exit(1);
}

/* Mode of a thread as the kernel shows it: "Seccomp:\tN". */
static int seccomp_mode(int tid)
{
	char path[64], buf[4096], *p;
	int fd, n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	fd = open(path, O_RDONLY);
	n = fd < 0 ? -1 : (int)read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "\nSeccomp:");
	return p ? atoi(p + 9) : -1;
}

/* Only write(2) from here on: no printf (it may allocate), no clock syscall. */
static void say(uint64_t n)
{
	char line[32] = "strict ", digits[20];
	int k = 0, len = 7;

	do
		digits[k++] = (char)('0' + n % 10);
	while ((n /= 10));
	while (k)
		line[len++] = digits[--k];
	line[len++] = '\n';
	if (syscall(SYS_write, 1, line, len) != len)
		syscall(SYS_exit, 3);
}

static void *worker(void *arg __attribute__((unused)))
{
	uint64_t x = 1;

	worker_tid = (int)syscall(SYS_gettid);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0))
		fail("PR_SET_SECCOMP strict");
	worker_go = 1;
	for (uint64_t n = 0; !finish; n++) {
		/* some work between lines: the checkpoint catches it computing */
		for (int i = 0; i < 2000000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		progress = n;
		sink = x;
		if (n % 16 == 0)
			say(n);
	}
	syscall(SYS_getppid);	/* strict mode kills the thread here */
	survived = 1;
	syscall(SYS_exit, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 100;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	uint64_t last = 0;
	int stalled = 0;
	char task[64];
	pthread_t th;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_create(&th, NULL, worker, NULL))
		fail("pthread_create");
	while (!worker_go)
		nanosleep(&ts, NULL);
	for (long n = 0; n < ticks; n++) {
		if (seccomp_mode(worker_tid) != 1)
			fail("the worker is not in strict mode");
		if (seccomp_mode((int)syscall(SYS_gettid)) != 0)
			fail("the main thread is under seccomp");
		stalled = progress == last ? stalled + 1 : 0;
		if (stalled > 20)
			fail("the worker stopped advancing");
		last = progress;
		printf("tick %ld pid %d\n", n, (int)getpid());
		nanosleep(&ts, NULL);
	}
	finish = 1;
	/* not pthread_join: musl's waits for the thread's own exit code, */
	/* which a thread the kernel kills never runs */
	snprintf(task, sizeof(task), "/proc/self/task/%d", worker_tid);
	for (int i = 0; !access(task, F_OK); i++) {
		if (i > 200)
			fail("the worker did not end at its forbidden call");
		nanosleep(&ts, NULL);
	}
	if (survived)
		fail("strict mode lost: getppid returned in the worker");
	printf("DONE pid %d strict held\n", (int)getpid());
	return 0;
}
