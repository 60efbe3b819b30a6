// SPDX-License-Identifier: MIT
/*
 * The aarch64 counterpart of avx.c: threads whose whole state lives in
 * FP/SIMD registers, for the length of the program, so that a checkpoint
 * always lands while they run.
 *
 *   simd0, simd1  v0-v30 accumulate v31 = {inc0, inc1} per iteration
 *                 (all 32 vector registers live, both 64-bit lanes of
 *                 each), x9 counts iterations, x10 = 3*x9, x11 = -x9,
 *                 x12 = 7*x9; fpcr holds a non-default rounding mode and
 *                 flush/default-NaN/AHP bits, fpsr sticky exception flags
 *                 that no instruction of the loop touches.
 *
 * The two threads run the same code on different data (seeds,
 * increments, fpcr and fpsr values), so a restore that gave one thread
 * the other's registers fails too.
 *
 * Lane j of accumulator i must equal base[i][j] + x9 * inc[j] (mod 2^64).
 * Every 2^16 iterations the loop checks every accumulator, v31, the
 * general registers, fpcr and fpsr against x9, publishes x9 to memory and
 * looks at a stop flag; nothing is ever reloaded from memory into the
 * vector registers. A mismatch prints "FAIL ..." and exits 1. The main
 * thread prints "tick N pid P simd0 I simd1 J" and checks that neither
 * loop stood still for STALL_TICKS ticks.
 *
 *   simd [TICKS [MS]]
 *
 * Built for aarch64 only (GNUmakefile); elsewhere a stub says so.
 */
#include <stdio.h>

#ifndef __aarch64__
int main(void)
{
	printf("simd: aarch64 only\n");
	return 0;
}
#else
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * A loop that made no progress for this many ticks in a row is stuck. A
 * few ticks are too strict on a loaded two-CPU machine, where a runnable
 * thread was seen to wait half a second for a CPU, without any checkpoint
 * (see avx.c).
 */
#define STALL_TICKS 20
#define NLOOPS 2

struct loop {
	uint64_t iters;		/*    0: published x9 */
	uint64_t stop;		/*    8: set by main: return */
	uint64_t bad;		/*   16: what mismatched, see what_bad() */
	uint64_t fpcr;		/*   24: set at start; then what the cpu kept */
	uint64_t fpsr;		/*   32: the same */
	uint64_t fpcr_got;	/*   40: when a check failed */
	uint64_t fpsr_got;	/*   48 */
	uint64_t fpcr_orig;	/*   56: the thread's fpcr before the loop */
	uint64_t inc[2];	/*   64: v31 */
	uint64_t base[31][2];	/*   80: starting value of v0-v30 */
	uint64_t dump[32][2];	/*  576: v0-v31 when a check failed */
	uint64_t gp[3];		/* 1088: x10-x12 when a check failed */
} __attribute__((aligned(16)));
_Static_assert(offsetof(struct loop, fpcr) == 24, "asm offsets");
_Static_assert(offsetof(struct loop, fpcr_orig) == 56, "asm offsets");
_Static_assert(offsetof(struct loop, inc) == 64, "asm offsets");
_Static_assert(offsetof(struct loop, base) == 80, "asm offsets");
_Static_assert(offsetof(struct loop, dump) == 576, "asm offsets");
_Static_assert(offsetof(struct loop, gp) == 1088, "asm offsets");

/* uint64_t simd_loop(struct loop *l): 0 when stopped, else what
 * mismatched (also in l->bad). */
uint64_t simd_loop(struct loop *l);
extern const char simd_loop_end[];

__asm__(
	".text\n"
	".globl simd_loop, simd_loop_end\n"
	".type simd_loop, %function\n"
	".p2align 4\n"
	"simd_loop:\n"
	/* d8-d15 are callee-saved, and so is fpcr's mode */
	"	stp d8, d9, [sp, #-64]!\n"
	"	stp d10, d11, [sp, #16]\n"
	"	stp d12, d13, [sp, #32]\n"
	"	stp d14, d15, [sp, #48]\n"
	"	mrs x1, fpcr\n"
	"	str x1, [x0, #56]\n"
	"	ldr x1, [x0, #24]\n"
	"	msr fpcr, x1\n"
	"	mrs x1, fpcr\n"
	"	str x1, [x0, #24]\n"
	"	ldr x1, [x0, #32]\n"
	"	msr fpsr, x1\n"
	"	mrs x1, fpsr\n"
	"	str x1, [x0, #32]\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30\n"
	"	ldr q\\i, [x0, #(80+16*\\i)]\n"
	".endr\n"
	"	ldr q31, [x0, #64]\n"
	"	mov x9, #0\n"
	"	mov x10, #0\n"
	"	mov x11, #0\n"
	"	mov x12, #0\n"
	"1:\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30\n"
	"	add v\\i\\().2d, v\\i\\().2d, v31.2d\n"
	".endr\n"
	"	add x10, x10, #3\n"
	"	sub x11, x11, #1\n"
	"	add x12, x12, #7\n"
	"	add x9, x9, #1\n"
	"	tst x9, #0xffff\n"
	"	b.ne 1b\n"
	/* check: x1, x2 = x9 * inc; accumulator i == base[i] + (x1, x2);
	 * x6 = base, x7 says which check is running */
	"	ldp x1, x2, [x0, #64]\n"
	"	mul x1, x9, x1\n"
	"	mul x2, x9, x2\n"
	"	add x6, x0, #80\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30\n"
	"	mov x7, #(\\i+1)\n"
	"	ldp x3, x4, [x6, #(16*\\i)]\n"
	"	add x3, x3, x1\n"
	"	add x4, x4, x2\n"
	"	mov x5, v\\i\\().d[0]\n"
	"	cmp x5, x3\n"
	"	b.ne 8f\n"
	"	mov x5, v\\i\\().d[1]\n"
	"	cmp x5, x4\n"
	"	b.ne 8f\n"
	".endr\n"
	"	mov x7, #32\n"
	"	ldp x3, x4, [x0, #64]\n"
	"	mov x5, v31.d[0]\n"
	"	cmp x5, x3\n"
	"	b.ne 8f\n"
	"	mov x5, v31.d[1]\n"
	"	cmp x5, x4\n"
	"	b.ne 8f\n"
	"	mov x7, #100\n"
	"	add x3, x9, x9, lsl #1\n"
	"	cmp x10, x3\n"
	"	b.ne 8f\n"
	"	mov x7, #101\n"
	"	adds x3, x11, x9\n"
	"	b.ne 8f\n"
	"	mov x7, #102\n"
	"	lsl x3, x9, #3\n"
	"	sub x3, x3, x9\n"
	"	cmp x12, x3\n"
	"	b.ne 8f\n"
	"	mov x7, #103\n"
	"	mrs x3, fpcr\n"
	"	ldr x4, [x0, #24]\n"
	"	cmp x3, x4\n"
	"	b.ne 8f\n"
	"	mov x7, #104\n"
	"	mrs x3, fpsr\n"
	"	ldr x4, [x0, #32]\n"
	"	cmp x3, x4\n"
	"	b.ne 8f\n"
	"	str x9, [x0]\n"
	"	ldr x3, [x0, #8]\n"
	"	cbz x3, 1b\n"
	"	mov x7, #0\n"
	"	b 9f\n"
	"8:\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	"	str q\\i, [x0, #(576+16*\\i)]\n"
	".endr\n"
	"	str x9, [x0]\n"
	"	str x7, [x0, #16]\n"
	"	mrs x3, fpcr\n"
	"	str x3, [x0, #40]\n"
	"	mrs x3, fpsr\n"
	"	str x3, [x0, #48]\n"
	"	str x10, [x0, #1088]\n"
	"	str x11, [x0, #1096]\n"
	"	str x12, [x0, #1104]\n"
	"9:\n"
	"	ldr x1, [x0, #56]\n"
	"	msr fpcr, x1\n"
	"	ldp d10, d11, [sp, #16]\n"
	"	ldp d12, d13, [sp, #32]\n"
	"	ldp d14, d15, [sp, #48]\n"
	"	ldp d8, d9, [sp], #64\n"
	"	mov x0, x7\n"
	"	ret\n"
	"simd_loop_end:\n"
	".size simd_loop, .-simd_loop\n");

static struct loop loops[NLOOPS];
static const char *const names[NLOOPS] = { "simd0", "simd1" };

/* fpcr: RMode toward minus infinity, FZ, DN; RMode toward plus infinity, AHP.
 * fpsr: QC, IXC, IOC; IDC, UFC, DZC. */
static const uint64_t fpcr_set[NLOOPS] = { 0x2800000, 0x4400000 };
static const uint64_t fpsr_set[NLOOPS] = { 0x8000011, 0x8a };

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Distinct values with every bit in play; odd increments that move many
 * bits of each lane at every step. */
static void init(struct loop *l, uint64_t seed, int k)
{
	l->inc[0] = mix(seed) | 1;
	l->inc[1] = mix(seed + 1) | 1;
	for (int i = 0; i < 31; i++)
		for (int j = 0; j < 2; j++)
			l->base[i][j] = mix(seed + 2 + (uint64_t)(i * 2 + j));
	l->fpcr = fpcr_set[k];
	l->fpsr = fpsr_set[k];
}

static const char *what_bad(uint64_t bad, char *buf, size_t size)
{
	if (bad >= 1 && bad <= 31)
		snprintf(buf, size, "v%d lanes", (int)bad - 1);
	else if (bad == 32)
		snprintf(buf, size, "v31 (the increment)");
	else if (bad == 100)
		snprintf(buf, size, "x10 (3 * x9)");
	else if (bad == 101)
		snprintf(buf, size, "x11 (-x9)");
	else if (bad == 102)
		snprintf(buf, size, "x12 (7 * x9)");
	else if (bad == 103)
		snprintf(buf, size, "fpcr");
	else if (bad == 104)
		snprintf(buf, size, "fpsr");
	else
		snprintf(buf, size, "code %llu", (unsigned long long)bad);
	return buf;
}

static void *run(void *arg)
{
	int k = (int)(intptr_t)arg;
	struct loop *l = &loops[k];
	uint64_t bad = simd_loop(l);
	char what[64];

	if (bad) {
		printf("FAIL %s: %s wrong after %llu iterations", names[k],
		       what_bad(bad, what, sizeof(what)), (unsigned long long)l->iters);
		/* found and expected, to tell a stale value from garbage */
		if (bad <= 32) {
			for (int j = 0; j < 2; j++) {
				uint64_t want = bad == 32 ? l->inc[j]
							  : l->base[bad - 1][j] + l->iters * l->inc[j];

				printf(" [%d] %#llx want %#llx", j,
				       (unsigned long long)l->dump[bad - 1][j],
				       (unsigned long long)want);
			}
		} else if (bad >= 100 && bad <= 102) {
			printf(" x10 %#llx x11 %#llx x12 %#llx", (unsigned long long)l->gp[0],
			       (unsigned long long)l->gp[1], (unsigned long long)l->gp[2]);
		} else if (bad == 103 || bad == 104) {
			printf(" fpcr %#llx want %#llx fpsr %#llx want %#llx",
			       (unsigned long long)l->fpcr_got, (unsigned long long)l->fpcr,
			       (unsigned long long)l->fpsr_got, (unsigned long long)l->fpsr);
		}
		printf("\n");
		fflush(stdout);
		_exit(1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	uint64_t last[NLOOPS] = { 0 };
	int stall[NLOOPS] = { 0 }, said[NLOOPS] = { 0 };
	pthread_t th[NLOOPS];

	for (int k = 0; k < NLOOPS; k++) {
		init(&loops[k], 1000 + 1000 * (uint64_t)k, k);
		printf("%s loop %p-%p\n", names[k], (void *)simd_loop, (void *)simd_loop_end);
	}
	fflush(stdout);
	for (int k = 0; k < NLOOPS; k++) {
		if (pthread_create(&th[k], NULL, run, (void *)(intptr_t)k))
			return 2;
		pthread_setname_np(th[k], names[k]);
	}
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		uint64_t now[NLOOPS];

		nanosleep(&ts, NULL);
		for (int k = 0; k < NLOOPS; k++) {
			now[k] = __atomic_load_n(&loops[k].iters, __ATOMIC_ACQUIRE);
			stall[k] = now[k] > last[k] ? 0 : stall[k] + 1;
			if (stall[k] >= STALL_TICKS) {
				printf("FAIL %s loop did not advance in %d ticks (%llu)\n", names[k],
				       STALL_TICKS, (unsigned long long)now[k]);
				return 1;
			}
			/* once running: the modes the cpu kept, for the log */
			if (now[k] && !said[k]) {
				printf("%s fpcr %#llx fpsr %#llx\n", names[k],
				       (unsigned long long)loops[k].fpcr,
				       (unsigned long long)loops[k].fpsr);
				said[k] = 1;
			}
		}
		printf("tick %ld pid %d", n, (int)getpid());
		for (int k = 0; k < NLOOPS; k++)
			printf(" %s %llu", names[k], (unsigned long long)now[k]);
		printf("\n");
		fflush(stdout);
		memcpy(last, now, sizeof(last));
	}
	for (int k = 0; k < NLOOPS; k++)
		__atomic_store_n(&loops[k].stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < NLOOPS; k++)
		pthread_join(th[k], NULL);
	printf("DONE pid %d", (int)getpid());
	for (int k = 0; k < NLOOPS; k++)
		printf(" %s %llu", names[k], (unsigned long long)loops[k].iters);
	printf("\n");
	return 0;
}
#endif
