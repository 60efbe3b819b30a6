// SPDX-License-Identifier: MIT
/*
 * A small process tree talking through pipes with data waiting in them:
 *
 *   family (P) --pipe a--> worker (C)      P writes 2 numbers a tick,
 *              <--pipe b--                 C reads 1 a tick and answers
 *                               |          with how many it has seen, so
 *                               +- exiter  both pipes always hold unread
 *                                  (exits  data; C's child exits at once
 *                                   with 7) with status 7 and stays a
 *                                          zombie until C reaps it at the end.
 *
 * Every number C reads and every answer P reads is checked against the
 * sequence ("FAIL ..." and exit 1 on a gap, repeat or loss), P prints
 * "tick N pid P worker C", and at the end C checks its zombie's status
 * and P its worker's; then P prints "DONE pid P".
 *
 *   family [TICKS [MS]]
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int read_all(int fd, void *p, size_t n)
{
	return read(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static void fail(const char *who, const char *what, long got, long want)
{
	printf("FAIL %s: %s: got %ld, want %ld\n", who, what, got, want);
	fflush(stdout);
	exit(1);
}

#define END (-1)

static int worker(int in, int out, long ms)
{
	pid_t exiter = fork();
	int64_t want = 0, v;
	int st;

	if (exiter == 0)
		_exit(7);
	for (;;) {
		if (read_all(in, &v, 8))
			fail("worker", "read", -1, want);
		if (v == END)
			break;
		if (v != want)
			fail("worker", "number", v, want);
		want++;
		if (write(out, &want, 8) != 8)
			fail("worker", "write", -1, want);
		sleep_ms(ms);	/* slower than the parent: data waits in a */
	}
	if (waitpid(exiter, &st, 0) != exiter || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
		fail("worker", "zombie child's status", st, 7 << 8);
	return 0;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 40, ms = argc > 2 ? atol(argv[2]) : 100;
	int a[2], b[2], st;
	int64_t next = 0, seen = 0, v;
	pid_t w;

	if (pipe(a) || pipe(b))
		return 2;
	w = fork();
	if (w == 0) {
		close(a[1]);
		close(b[0]);
		return worker(a[0], b[1], ms);
	}
	close(a[0]);
	close(b[1]);
	for (long n = 0; n < ticks; n++) {
		for (int k = 0; k < 2; k++, next++)
			if (write(a[1], &next, 8) != 8)
				fail("family", "write", -1, next);
		/* one answer a tick: the worker's answers wait in b */
		if (read_all(b[0], &v, 8) || v != seen + 1)
			fail("family", "answer", v, seen + 1);
		seen = v;
		printf("tick %ld pid %d worker %d\n", n, (int)getpid(), (int)w);
		fflush(stdout);
		sleep_ms(ms);
	}
	v = END;
	if (write(a[1], &v, 8) != 8)
		fail("family", "write end", -1, 0);
	while (read_all(b[0], &v, 8) == 0)
		if (v != ++seen)
			fail("family", "late answer", v, seen);
	if (seen != next)
		fail("family", "answers in all", seen, next);
	if (waitpid(w, &st, 0) != w || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("family", "worker's status", st, 0);
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
