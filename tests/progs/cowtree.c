// SPDX-License-Identifier: MIT
/*
 * Memory shared copy-on-write by a forked tree: the parent fills MIB MiB
 * of private memory with a pattern and forks WORKERS workers; the first
 * two fork a grandchild each. Every descendant then owns a few pages of
 * the region: one it rewrote (its own mark), one it dropped (reads zero
 * now, MADV_DONTNEED), and keeps the rest shared with the parent; every
 * third worker also grows the region in place by GROW bytes of its own
 * (as a heap grows past what the parent had at the fork). Each
 * checks its view every tick (a sample of the pattern and its own
 * pages) and exits 1 on a difference; the parent prints "tick N pid P"
 * and fails when a descendant did. At the end (TICKS ticks, or SIGUSR1
 * to the parent) the parent closes a pipe whose read end every other
 * process polls (no pids kept: a restore may give new ones), every
 * process checks every word of the region and waits for its children;
 * the parent prints DONE.
 *
 *   cowtree [TICKS [MS [MIB [WORKERS]]]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u
#define WORDS (PAGE / 8)
#define GROW (256u << 10)

static volatile sig_atomic_t stop;
static int stop_fd = -1;	/* descendants: EOF when the parent ends */
static int up;		/* a grandchild: its parent's id, whose pages it inherited */
static uint64_t *mem;
static size_t npages;
static int grown;	/* this process grew the region by GROW */

static int grows(int me) { return me % 3 == 0; }

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

/* Who owns which page: id 0 is the parent, 1.. the descendants. */
static size_t written_page(int id) { return (size_t)id * 7 + 1; }
static size_t dropped_page(int id) { return (size_t)id * 7 + 4; }

/* What word w of page p holds in the view of process `me`. */
static uint64_t own(int me, size_t p, size_t w)
{
	if (me && p == dropped_page(me))
		return 0;
	if (me && p == written_page(me))
		return mix(p * WORDS + w) ^ (uint64_t)me << 56;
	return mix(p * WORDS + w);
}

static uint64_t expect(int me, size_t p, size_t w)
{
	if (up && (p == dropped_page(up) || p == written_page(up)))
		return own(up, p, w);
	return own(me, p, w);
}

static int check_page(int me, size_t p)
{
	for (size_t w = 0; w < WORDS; w++)
		if (mem[p * WORDS + w] != expect(me, p, w)) {
			printf("FAIL process %d (pid %d): page %zu word %zu is %#llx, not %#llx\n",
			       me, (int)getpid(), p, w, (unsigned long long)mem[p * WORDS + w],
			       (unsigned long long)expect(me, p, w));
			fflush(stdout);
			return -1;
		}
	return 0;
}

static int check_tail(int me)
{
	for (size_t w = 0; grown && w < GROW / 8; w++)
		if (mem[npages * WORDS + w] != (mix(npages * WORDS + w) ^ (uint64_t)me << 48)) {
			printf("FAIL process %d (pid %d): grown word %zu is %#llx\n", me,
			       (int)getpid(), w, (unsigned long long)mem[npages * WORDS + w]);
			fflush(stdout);
			return -1;
		}
	return 0;
}

static int check(int me, int all)
{
	if (check_tail(me))
		return -1;
	for (size_t p = 0; p < npages; p += all ? 1 : 61)
		if (check_page(me, p))
			return -1;
	if (me && (check_page(me, written_page(me)) || check_page(me, dropped_page(me))))
		return -1;
	if (up && (check_page(me, written_page(up)) || check_page(me, dropped_page(up))))
		return -1;
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

static int own_pages(int me)
{
	if (me && grows(me)) {
		if (mremap(mem, npages * PAGE, npages * PAGE + GROW, 0) != mem) {
			printf("FAIL process %d: could not grow the region in place\n", me);
			return -1;
		}
		grown = 1;
		for (size_t w = 0; w < GROW / 8; w++)
			mem[npages * WORDS + w] = mix(npages * WORDS + w) ^ (uint64_t)me << 48;
	}
	for (size_t w = 0; w < WORDS; w++)
		mem[written_page(me) * WORDS + w] = expect(me, written_page(me), w);
	madvise(mem + dropped_page(me) * WORDS, PAGE, MADV_DONTNEED);
	return 0;
}

/* Every child ended with status 0 (none left: ECHILD). */
static int children_ok(void)
{
	int st;
	pid_t c;

	while ((c = waitpid(-1, &st, 0)) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("FAIL pid %d's child %d: status %#x\n", (int)getpid(), (int)c, st);
			return -1;
		}
	return errno == ECHILD ? 0 : -1;
}

/* A descendant: its pages, then checks until the parent's pipe ends. */
static int descendant(int me, int grandchild_id)
{
	char b;

	if (own_pages(me))
		return 1;
	if (grandchild_id && fork() == 0) {
		up = me;
		return descendant(grandchild_id, 0);
	}
	while (read(stop_fd, &b, 1) < 0 && errno == EAGAIN) {
		if (check(me, 0))
			return 1;
		sleep_ms(50);
	}
	return check(me, 1) || children_ok() ? 1 : 0;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 100, ms = argc > 2 ? atol(argv[2]) : 100;
	size_t mib = argc > 3 ? (size_t)atol(argv[3]) : 64;
	int workers = argc > 4 ? atoi(argv[4]) : 14, st, p[2];

	npages = mib << 8;
	/* room after it, for the workers that grow it in place */
	mem = mmap(NULL, npages * PAGE + 4 * GROW, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem != MAP_FAILED)
		munmap((uint8_t *)mem + npages * PAGE, 4 * GROW);
	if (mem == MAP_FAILED || pipe(p) || (size_t)(workers + 3) * 7 >= npages) {
		perror("cowtree");
		return 2;
	}
	for (size_t i = 0; i < npages * WORDS; i++)
		mem[i] = mix(i);
	signal(SIGUSR1, on_usr1);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	for (int k = 0; k < workers; k++)
		if (fork() == 0) {
			close(p[1]);
			stop_fd = p[0];
			return descendant(k + 1, k < 2 ? workers + 1 + k : 0);
		}
	close(p[0]);
	for (long n = 0; n < ticks && !stop; n++) {
		pid_t dead = waitpid(-1, &st, WNOHANG);

		if (dead > 0) {
			printf("FAIL descendant %d ended early (status %#x)\n", (int)dead, st);
			return 1;
		}
		if (check(0, 0))
			return 1;
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		sleep_ms(ms);
	}
	close(p[1]);
	if (children_ok() || check(0, 1))
		return 1;
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
