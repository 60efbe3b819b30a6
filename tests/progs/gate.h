/* SPDX-License-Identifier: MIT */
/*
 * For test programs that set up one kind of state, are checkpointed and
 * restarted, and then check that state themselves: gate_wait() says
 * "ready" and waits for the file "go" in the working directory, which
 * the test makes only once the restored process runs, so the checks run
 * after the restore (or, in a run without one, as a proof that the
 * checks themselves pass). check() prints "FAIL ..." and exits 1.
 */
#ifndef IBCR_TEST_GATE_H
#define IBCR_TEST_GATE_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline void __attribute__((format(printf, 2, 3))) check(int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	printf("FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %s)\n", strerror(errno));
	fflush(stdout);
	exit(1);
}

/* where "go" is looked for: the working directory, unless the program moves */
static int gate_dir = AT_FDCWD;

static inline void gate_wait(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	printf("ready pid %d\n", (int)getpid());
	fflush(stdout);
	while (faccessat(gate_dir, "go", F_OK, 0))
		nanosleep(&ts, NULL);
	printf("checking pid %d\n", (int)getpid());
	fflush(stdout);
}

static inline void gate_done(void)
{
	printf("DONE pid %d\n", (int)getpid());
	fflush(stdout);
}

/* Programs of several modes: runs the one argv[1] names, then says DONE. */
struct gate_mode {
	const char *name;
	void (*fn)(void);
};

static inline int gate_main(int argc, char **argv, const struct gate_mode *m, size_t n)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; argc == 2 && i < n; i++)
		if (!strcmp(argv[1], m[i].name)) {
			m[i].fn();
			gate_done();
			return 0;
		}
	fprintf(stderr, "usage: %s MODE\n", argv[0]);
	return 2;
}

#endif
