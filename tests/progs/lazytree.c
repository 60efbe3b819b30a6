// SPDX-License-Identifier: MIT
/*
 * A tree for a lazy restore: a parent (index 0) writes an 8 MiB region
 * (S, between guard pages: a region merged with it would share its
 * eager fill), forks three children (1-3), and each process then writes pages
 * of its own into S (every 8th page from its index on: S stays shared
 * copy-on-write elsewhere) and maps a 32 MiB region of its own pattern
 * (R). On SIGUSR1 every process checks every byte of S and R itself,
 * except that child 1 first forks a grandchild that checks them (memory
 * still to come when it forked) and child 2 checks only R's first
 * quarter, then execs itself ("exec" mode, which only ticks), and child 3
 * first runs /bin/true by vfork and exec. Each says
 * "CHECK OK idx I traced T" (T: traced at the time, by the loader during
 * a lazy fill), "GRAND OK traced T", or "FAIL ..." and exits 1.
 *
 *   lazytree [exec]
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

#define SSZ (8ul << 20)
#define RSZ (32ul << 20)
#define PAGE_WORDS (4096 / 8)
#define NCHILD 3

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go++;
}

static uint64_t word(uint64_t tag, size_t i)
{
	return (tag << 56) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0xa5a5;
}

/* What word i of S holds in process idx: its own pages are marked. */
static uint64_t s_word(int idx, size_t i)
{
	size_t page = i / PAGE_WORDS;

	if (page % 8 == (size_t)idx && i % PAGE_WORDS == 0)
		return word(0x40 + (uint64_t)idx, page);
	return word(0x20, i);
}

static int check(const uint64_t *w, size_t words, int idx, int is_s, const char *what)
{
	for (size_t i = 0; i < words; i++) {
		uint64_t want = is_s ? s_word(idx, i) : word((uint64_t)idx, i);

		if (w[i] != want) {
			printf("FAIL idx %d pid %d: %s: word %zu is %#llx, not %#llx\n", idx,
			       (int)getpid(), what, i, (unsigned long long)w[i],
			       (unsigned long long)want);
			fflush(stdout);
			return 1;
		}
	}
	return 0;
}

/* Child 1's child: it forked before its parent read anything. */
static int grandchild(const uint64_t *s, const uint64_t *r, int was_traced)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(check(s, SSZ / 8, 1, 1, "S in the grandchild") ||
		      check(r, RSZ / 8, 1, 0, "R in the grandchild"));
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL idx 1: the grandchild did not exit 0\n");
		fflush(stdout);
		return 1;
	}
	printf("GRAND OK traced %d\n", was_traced);
	fflush(stdout);
	return 0;
}

/* Child 3's vfork and exec (as system() and posix_spawn do): not held, no harm done. */
static int spawn_true(void)
{
	pid_t pid = vfork();
	int st;

	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL idx 3: vfork and exec of /bin/true did not exit 0\n");
		fflush(stdout);
		return 1;
	}
	return 0;
}

static int on_signal(int idx, const uint64_t *s, const uint64_t *r, const char *self)
{
	int was_traced = traced();

	if ((idx == 1 && grandchild(s, r, was_traced)) || (idx == 3 && spawn_true()))
		return 1;
	if (idx == 2) {
		if (check(r, RSZ / 8 / 4, idx, 0, "R's first quarter"))
			return 1;
		printf("CHECK OK idx %d traced %d\n", idx, was_traced);
		fflush(stdout);
		execl(self, self, "exec", (char *)NULL);
		printf("FAIL execl %s\n", self);
		return 1;
	}
	if (check(s, SSZ / 8, idx, 1, "S") || check(r, RSZ / 8, idx, 0, "R"))
		return 1;
	printf("CHECK OK idx %d traced %d\n", idx, was_traced);
	fflush(stdout);
	return 0;
}

static int run(int idx, uint64_t *s, const char *self)
{
	struct timespec ts = { 0, 20 * 1000000 };
	uint64_t *r = mmap(NULL, RSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int seen = 0;

	if (r == MAP_FAILED)
		return 2;
	for (size_t i = 0; i < RSZ / 8; i++)
		r[i] = word((uint64_t)idx, i);
	for (size_t p = (size_t)idx; p < SSZ / 4096; p += 8)
		s[p * PAGE_WORDS] = s_word(idx, p * PAGE_WORDS);
	for (long n = 0;; n++) {
		if (go != seen) {
			seen = go;
			if (on_signal(idx, s, r, self))
				return 1;
		}
		printf("tick %ld idx %d pid %d\n", n, idx, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	uint64_t *s;

	if (argc > 1 && !strcmp(argv[1], "exec"))
		return exec_ticks();
	signal(SIGUSR1, on_usr1);
	/* a guard page each side: R, mapped next to it later, stays a region apart */
	s = mmap(NULL, SSZ + 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED || mprotect((char *)s + 4096, SSZ, PROT_READ | PROT_WRITE))
		return 2;
	s += PAGE_WORDS;
	for (size_t i = 0; i < SSZ / 8; i++)
		s[i] = word(0x20, i);
	for (int c = 1; c <= NCHILD; c++) {
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		if (pid == 0)
			return run(c, s, argv[0]);
		printf("child %d pid %d\n", c, (int)pid);
		fflush(stdout);
	}
	return run(0, s, argv[0]);
}
