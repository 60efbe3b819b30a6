// SPDX-License-Identifier: MIT
/*
 * An rseq critical section caught by a checkpoint must be aborted when
 * the thread resumes, as the kernel aborts one whose thread was stopped
 * or preempted: it would otherwise commit on data it read before the
 * pause, maybe on another CPU. The program spends nearly all its time
 * in a long critical section (x86_64 assembly, on glibc's own rseq
 * registration) that reads the TSC in a loop, stores it, and keeps the
 * longest step between two reads; its commit stores that longest step.
 *
 *   committed, longest step > PAUSE_MS    FAIL: a pause inside the
 *                                         section, and no abort
 *   aborted, TSC now - last stored        "aborted after a pause of N ms"
 *     > PAUSE_MS
 *   a pause between two sections          "paused outside the critical
 *                                         section" (the checkpoint missed it)
 *
 * It prints "tick N pid P aborts A" about every 100 ms.
 *
 *   rseq_cs [TICKS]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/rseq.h>
#include <time.h>
#include <unistd.h>

#define PAUSE_MS 800	/* the test waits longer than this before a restart */
#define TURNS 200000	/* per section: a few ms */

static uint64_t last_tsc;	/* stored inside the section at every turn */

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 1: committed, *longest the longest step in TSC ticks; 0: aborted. */
static int section(struct rseq *rs, uint64_t turns, uint64_t *longest)
{
	int committed = 0;
	uint64_t gap = 0;

	__asm__ __volatile__(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".popsection\n\t"
		"leaq 3b(%%rip), %%rax\n\t"
		"movq %%rax, %[cs]\n\t"
		"1:\n\t"
		"rdtsc\n\t"
		"shlq $32, %%rdx\n\t"
		"orq %%rdx, %%rax\n\t"
		"movq %%rax, %%r8\n\t"
		"5:\n\t"
		"rdtsc\n\t"
		"shlq $32, %%rdx\n\t"
		"orq %%rdx, %%rax\n\t"
		"movq %%rax, %[last]\n\t"
		"movq %%rax, %%r9\n\t"
		"subq %%r8, %%r9\n\t"
		"movq %%rax, %%r8\n\t"
		"cmpq %[gap], %%r9\n\t"
		"jbe 6f\n\t"
		"movq %%r9, %[gap]\n\t"
		"6:\n\t"
		"decq %[n]\n\t"
		"jnz 5b\n\t"
		"movl $1, %[done]\n\t"	/* the commit */
		"2:\n\t"
		"jmp 7f\n\t"
		".long 0x53053053\n\t"	/* glibc's RSEQ_SIG, before the abort handler */
		"4:\n\t"
		"movl $0, %[done]\n\t"
		"7:\n\t"
		: [done] "+m"(committed), [gap] "+r"(gap), [n] "+r"(turns),
		  [last] "=m"(last_tsc), [cs] "=m"(rs->rseq_cs)
		:
		: "rax", "rdx", "r8", "r9", "memory", "cc");
	*longest = gap;
	return committed;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	struct rseq *rs = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
	uint64_t t0 = now_ns(), c0 = rdtsc(), per_ms, prev_end, next_tick;
	long n = 0, aborts = 0;
	struct timespec cal = { 0, 50000000 };

	if (__rseq_size == 0) {
		printf("FAIL glibc did not register rseq\n");
		return 1;
	}
	nanosleep(&cal, NULL);
	per_ms = (rdtsc() - c0) * 1000000 / (now_ns() - t0);
	prev_end = rdtsc();
	next_tick = prev_end;
	while (ticks < 0 || n < ticks) {
		uint64_t start = rdtsc(), longest, end;
		int ok = section(rs, TURNS, &longest);

		end = rdtsc();
		if (start - prev_end > PAUSE_MS * per_ms)
			printf("paused outside the critical section\n");
		if (ok && longest > PAUSE_MS * per_ms) {
			printf("FAIL committed across a pause of %llu ms inside the critical "
			       "section: not aborted\n", (unsigned long long)(longest / per_ms));
			return 1;
		}
		if (!ok) {
			aborts++;
			if (end - last_tsc > PAUSE_MS * per_ms)
				printf("aborted after a pause of %llu ms\n",
				       (unsigned long long)((end - last_tsc) / per_ms));
		}
		prev_end = rdtsc();
		if (prev_end >= next_tick) {
			printf("tick %ld pid %d aborts %ld\n", n++, (int)getpid(), aborts);
			fflush(stdout);
			next_tick = prev_end + 100 * per_ms;
		}
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
