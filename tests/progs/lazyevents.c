// SPDX-License-Identifier: MIT
/*
 * Changes its memory while a lazy restore fills it. Four 16 MiB regions
 * of a pattern (A, B, C, D); on SIGUSR1 it moves A (mremap), drops half
 * of B (MADV_DONTNEED), unmaps C and maps fresh memory there, forks a
 * child that checks A, B and D in full, forks one that execs
 * /bin/true, then execs itself ("exec" mode, which only ticks). Every
 * check is its own: "FAIL ..." and exit 1 when one does not hold;
 * "EVENTS OK traced N" says whether it was traced (by the loader during
 * a lazy fill) at the time.
 *
 *   lazyevents [exec]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lazyprog.h"

#define SZ (16ul << 20)
#define WORDS (SZ / 8)

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static uint64_t word(int region, size_t i)
{
	return ((uint64_t)region << 56) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x5a5a;
}

static void fill(uint64_t *w, int region)
{
	for (size_t i = 0; i < WORDS; i++)
		w[i] = word(region, i);
}

/* Words [from, to) of region `region` at w hold the pattern (or zero). */
static int check(const uint64_t *w, int region, size_t from, size_t to, int zero,
		 const char *what)
{
	for (size_t i = from; i < to; i++)
		if (w[i] != (zero ? 0 : word(region, i))) {
			printf("FAIL %s: word %zu is %#llx\n", what, i, (unsigned long long)w[i]);
			fflush(stdout);
			return 1;
		}
	return 0;
}

static int wait_ok(pid_t pid, const char *what)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL %s: child did not exit 0\n", what);
		fflush(stdout);
		return 1;
	}
	return 0;
}

static int events(uint64_t *r[4], char *self)
{
	int was_traced = traced();
	void *to = mmap(NULL, SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *a;
	pid_t pid;

	a = mremap(r[0], SZ, SZ, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (a == MAP_FAILED || check(a, 0, 0, WORDS, 0, "A after mremap"))
		return 1;
	if (madvise(r[1], SZ / 2, MADV_DONTNEED) ||
	    check(r[1], 1, 0, WORDS / 2, 1, "B's dropped half") ||
	    check(r[1], 1, WORDS / 2, WORDS, 0, "B's kept half"))
		return 1;
	if (munmap(r[2], SZ) ||
	    mmap(r[2], SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) != r[2] || check(r[2], 2, 0, WORDS, 1, "C mapped again"))
		return 1;
	pid = fork();
	if (pid == 0)
		_exit(check(a, 0, 0, WORDS, 0, "A in the child") ||
		      check(r[1], 1, WORDS / 2, WORDS, 0, "B in the child") ||
		      check(r[3], 3, 0, WORDS, 0, "D in the child"));
	if (wait_ok(pid, "the forked child"))
		return 1;
	pid = fork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(1);
	}
	if (wait_ok(pid, "the child that execs"))
		return 1;
	if (check(r[3], 3, 0, WORDS, 0, "D"))
		return 1;
	printf("EVENTS OK traced %d\n", was_traced);
	fflush(stdout);
	execl(self, self, "exec", (char *)NULL);
	printf("FAIL execl %s\n", self);
	return 1;
}

int main(int argc, char **argv)
{
	struct timespec ts = { 0, 20 * 1000000 };
	uint64_t *r[4];

	if (argc > 1 && !strcmp(argv[1], "exec"))
		return exec_ticks();
	signal(SIGUSR1, on_usr1);
	for (int k = 0; k < 4; k++) {
		r[k] = mmap(NULL, SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r[k] == MAP_FAILED)
			return 2;
		fill(r[k], k);
	}
	for (long n = 0;; n++) {
		if (go)
			return events(r, argv[0]);
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
}
