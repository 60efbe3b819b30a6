// SPDX-License-Identifier: MIT
/*
 * Threads whose whole state lives in vector registers, for the length of
 * the program, so that a checkpoint always lands while they run:
 *
 *   avx2    ymm0-ymm12 accumulate ymm13 = {1,2,4,8} per iteration
 *           (13 live ymm registers and their upper halves), rcx counts
 *           iterations, r8 = 3*rcx, r9 = -rcx.
 *   avx512  zmm0-zmm28 accumulate zmm29 = {1,2,...,128} under write masks
 *           k1-k7 (each a distinct 16-bit pattern whose low byte enables
 *           all 8 lanes), zmm30 holds the lane shifts; the same counters.
 *           Only when the CPU and kernel support AVX-512F.
 *
 * Lane j of accumulator i must equal base[i][j] + (rcx << j). Every 2^20
 * (avx2) or 2^16 (avx512) iterations the loop checks every accumulator,
 * the general registers and the masks against rcx, publishes rcx to
 * memory and looks at a stop flag; nothing is ever reloaded from memory.
 * A mismatch prints "FAIL ..." and exits 1. The main thread prints
 * "tick N pid P avx2 I avx512 J" and checks that neither loop stood still
 * for STALL_TICKS ticks.
 *
 *   avx [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * A loop that made no progress for this many ticks in a row is stuck. A
 * few ticks are too strict on a loaded two-CPU machine, where a runnable
 * thread was seen to wait half a second for a CPU, without any checkpoint.
 */
#define STALL_TICKS 20

struct loop {
	uint64_t iters;		/*    0: published rcx */
	uint64_t stop;		/*    8: set by main: return */
	uint64_t bad;		/*   16: what mismatched, see what_bad() */
	uint64_t pad;		/*   24 */
	uint64_t shift[8];	/*   32: lane j: j */
	uint64_t inc[8];	/*   96: lane j: 1 << j */
	uint64_t scratch[8];	/*  160: rcx << j, recomputed at each check */
	uint64_t base[32][8];	/*  224: starting value of each accumulator */
	uint16_t kpat[8];	/* 2272: k1..k7 at [1..7] */
	uint64_t pad2[2];	/* 2288 */
	uint64_t dump[32][8];	/* 2304: the accumulators when a check failed */
};
_Static_assert(offsetof(struct loop, shift) == 32, "asm offsets");
_Static_assert(offsetof(struct loop, inc) == 96, "asm offsets");
_Static_assert(offsetof(struct loop, scratch) == 160, "asm offsets");
_Static_assert(offsetof(struct loop, base) == 224, "asm offsets");
_Static_assert(offsetof(struct loop, kpat) == 2272, "asm offsets");
_Static_assert(offsetof(struct loop, dump) == 2304, "asm offsets");

/* uint64_t avx2_loop(struct loop *l), uint64_t avx512_loop(struct loop *l):
 * return 0 when stopped, else what mismatched (also in l->bad). */
uint64_t avx2_loop(struct loop *l);
uint64_t avx512_loop(struct loop *l);
extern const char avx2_loop_end[], avx512_loop_end[];

__asm__(
	".text\n"
	".globl avx2_loop, avx2_loop_end\n"
	".type avx2_loop, @function\n"
	"avx2_loop:\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12\n"
	"	vmovdqu (224+64*\\i)(%rdi), %ymm\\i\n"
	".endr\n"
	"	vmovdqu 96(%rdi), %ymm13\n"
	"	xor %ecx, %ecx\n"
	"	xor %r8d, %r8d\n"
	"	xor %r9d, %r9d\n"
	"1:\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12\n"
	"	vpaddq %ymm13, %ymm\\i, %ymm\\i\n"
	".endr\n"
	"	add $3, %r8\n"
	"	sub $1, %r9\n"
	"	add $1, %rcx\n"
	"	test $0xfffff, %ecx\n"
	"	jnz 1b\n"
	/* check: ymm14 = rcx << lane; accumulator i == base[i] + ymm14 */
	"	vmovq %rcx, %xmm14\n"
	"	vpbroadcastq %xmm14, %ymm14\n"
	"	vmovdqu 32(%rdi), %ymm15\n"
	"	vpsllvq %ymm15, %ymm14, %ymm14\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12\n"
	"	mov $(\\i+1), %edx\n"
	"	vpaddq (224+64*\\i)(%rdi), %ymm14, %ymm15\n"
	"	vpcmpeqq %ymm15, %ymm\\i, %ymm15\n"
	"	vpmovmskb %ymm15, %eax\n"
	"	cmp $-1, %eax\n"
	"	jne 8f\n"
	".endr\n"
	"	mov $100, %edx\n"
	"	lea (%rcx,%rcx,2), %rax\n"
	"	cmp %rax, %r8\n"
	"	jne 8f\n"
	"	mov $101, %edx\n"
	"	mov %r9, %rax\n"
	"	add %rcx, %rax\n"
	"	jnz 8f\n"
	"	mov %rcx, (%rdi)\n"
	"	cmpq $0, 8(%rdi)\n"
	"	je 1b\n"
	"	xor %eax, %eax\n"
	"	vzeroupper\n"
	"	ret\n"
	"8:\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12\n"
	"	vmovdqu %ymm\\i, (2304+64*\\i)(%rdi)\n"
	".endr\n"
	"	mov %rcx, (%rdi)\n"
	"	mov %rdx, 16(%rdi)\n"
	"	mov %rdx, %rax\n"
	"	vzeroupper\n"
	"	ret\n"
	"avx2_loop_end:\n"
	".size avx2_loop, .-avx2_loop\n"

	".globl avx512_loop, avx512_loop_end\n"
	".type avx512_loop, @function\n"
	"avx512_loop:\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28\n"
	"	vmovdqu64 (224+64*\\i)(%rdi), %zmm\\i\n"
	".endr\n"
	"	vmovdqu64 96(%rdi), %zmm29\n"
	"	vmovdqu64 32(%rdi), %zmm30\n"
	".irp k,1,2,3,4,5,6,7\n"
	"	kmovw (2272+2*\\k)(%rdi), %k\\k\n"
	".endr\n"
	"	xor %ecx, %ecx\n"
	"	xor %r8d, %r8d\n"
	"	xor %r9d, %r9d\n"
	"1:\n"
	/* accumulator i is written under mask k(1 + i % 7) */
	".irp i,0,7,14,21,28\n"
	"	vpaddq %zmm29, %zmm\\i, %zmm\\i{%k1}\n"
	".endr\n"
	".irp i,1,8,15,22\n"
	"	vpaddq %zmm29, %zmm\\i, %zmm\\i{%k2}\n"
	".endr\n"
	".irp i,2,9,16,23\n"
	"	vpaddq %zmm29, %zmm\\i, %zmm\\i{%k3}\n"
	".endr\n"
	".irp i,3,10,17,24\n"
	"	vpaddq %zmm29, %zmm\\i, %zmm\\i{%k4}\n"
	".endr\n"
	".irp i,4,11,18,25\n"
	"	vpaddq %zmm29, %zmm\\i, %zmm\\i{%k5}\n"
	".endr\n"
	".irp i,5,12,19,26\n"
	"	vpaddq %zmm29, %zmm\\i, %zmm\\i{%k6}\n"
	".endr\n"
	".irp i,6,13,20,27\n"
	"	vpaddq %zmm29, %zmm\\i, %zmm\\i{%k7}\n"
	".endr\n"
	"	add $3, %r8\n"
	"	sub $1, %r9\n"
	"	add $1, %rcx\n"
	"	test $0xffff, %ecx\n"
	"	jnz 1b\n"
	/* check: scratch = rcx << lane (shifts from zmm30); zmm31 is the
	 * only scratch register; acc i - base[i] == scratch */
	"	vpbroadcastq %rcx, %zmm31\n"
	"	vpsllvq %zmm30, %zmm31, %zmm31\n"
	"	vmovdqu64 %zmm31, 160(%rdi)\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28\n"
	"	mov $(\\i+1), %edx\n"
	"	vpsubq (224+64*\\i)(%rdi), %zmm\\i, %zmm31\n"
	"	vpcmpeqq 160(%rdi), %zmm31, %k0\n"
	"	kmovw %k0, %eax\n"
	"	cmp $0xff, %eax\n"
	"	jne 8f\n"
	".endr\n"
	".irp k,1,2,3,4,5,6,7\n"
	"	mov $(200+\\k), %edx\n"
	"	kmovw %k\\k, %eax\n"
	"	cmpw (2272+2*\\k)(%rdi), %ax\n"
	"	jne 8f\n"
	".endr\n"
	"	mov $100, %edx\n"
	"	lea (%rcx,%rcx,2), %rax\n"
	"	cmp %rax, %r8\n"
	"	jne 8f\n"
	"	mov $101, %edx\n"
	"	mov %r9, %rax\n"
	"	add %rcx, %rax\n"
	"	jnz 8f\n"
	"	mov %rcx, (%rdi)\n"
	"	cmpq $0, 8(%rdi)\n"
	"	je 1b\n"
	"	xor %eax, %eax\n"
	"	vzeroupper\n"
	"	ret\n"
	"8:\n"
	".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28\n"
	"	vmovdqu64 %zmm\\i, (2304+64*\\i)(%rdi)\n"
	".endr\n"
	"	mov %rcx, (%rdi)\n"
	"	mov %rdx, 16(%rdi)\n"
	"	mov %rdx, %rax\n"
	"	vzeroupper\n"
	"	ret\n"
	"avx512_loop_end:\n"
	".size avx512_loop, .-avx512_loop\n");

static struct loop l2, l512;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* Large distinct starting values: every bit of every lane matters. */
static void init(struct loop *l, uint64_t seed)
{
	for (int j = 0; j < 8; j++) {
		l->shift[j] = (uint64_t)j;
		l->inc[j] = 1ull << j;
	}
	for (int i = 0; i < 32; i++)
		for (int j = 0; j < 8; j++)
			l->base[i][j] = mix(seed + (uint64_t)(i * 8 + j)) >> 8;
	for (int k = 1; k < 8; k++)
		l->kpat[k] = (uint16_t)(0x00ff | (0x1100 * (unsigned)k));
}

static const char *what_bad(uint64_t bad, const char *reg, char *buf, size_t size)
{
	if (bad >= 1 && bad <= 32)
		snprintf(buf, size, "%s%d lanes", reg, (int)bad - 1);
	else if (bad == 100)
		snprintf(buf, size, "r8 (3 * rcx)");
	else if (bad == 101)
		snprintf(buf, size, "r9 (-rcx)");
	else if (bad > 200 && bad < 208)
		snprintf(buf, size, "mask register k%d", (int)bad - 200);
	else
		snprintf(buf, size, "code %llu", (unsigned long long)bad);
	return buf;
}

static void *run(void *arg)
{
	int wide = arg != NULL;
	struct loop *l = wide ? &l512 : &l2;
	uint64_t bad = wide ? avx512_loop(l) : avx2_loop(l);
	char what[64];

	if (bad) {
		printf("FAIL %s: %s wrong after %llu iterations", wide ? "avx512" : "avx2",
		       what_bad(bad, wide ? "zmm" : "ymm", what, sizeof(what)),
		       (unsigned long long)l->iters);
		/* lanes found vs expected, to tell a stale value from garbage */
		for (int j = 0; bad <= 32 && j < (wide ? 8 : 4); j++)
			printf(" [%d] %#llx want %#llx", j,
			       (unsigned long long)l->dump[bad - 1][j],
			       (unsigned long long)(l->base[bad - 1][j] + (l->iters << j)));
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
	int has2, has512;
	uint64_t last2 = 0, last512 = 0;
	int stall2 = 0, stall512 = 0;
	pthread_t t2, t512;

	__builtin_cpu_init();
	has2 = __builtin_cpu_supports("avx2");
	has512 = __builtin_cpu_supports("avx512f");
	if (!has2) {
		printf("avx2 not supported by this cpu\n");
		return 3;
	}
	init(&l2, 1000);
	init(&l512, 2000);
	printf("avx2 loop %p-%p\n", (void *)avx2_loop, (void *)avx2_loop_end);
	if (has512)
		printf("avx512 loop %p-%p\n", (void *)avx512_loop, (void *)avx512_loop_end);
	else
		printf("avx512 not supported by this cpu\n");
	fflush(stdout);
	if (pthread_create(&t2, NULL, run, NULL))
		return 2;
	pthread_setname_np(t2, "avx2");
	if (has512) {
		if (pthread_create(&t512, NULL, run, &l512))
			return 2;
		pthread_setname_np(t512, "avx512");
	}
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		uint64_t i2, i512 = 0;

		nanosleep(&ts, NULL);
		i2 = __atomic_load_n(&l2.iters, __ATOMIC_RELAXED);
		stall2 = i2 > last2 ? 0 : stall2 + 1;
		if (stall2 >= STALL_TICKS) {
			printf("FAIL avx2 loop did not advance in %d ticks (%llu)\n",
			       STALL_TICKS, (unsigned long long)i2);
			return 1;
		}
		if (has512) {
			i512 = __atomic_load_n(&l512.iters, __ATOMIC_RELAXED);
			stall512 = i512 > last512 ? 0 : stall512 + 1;
			if (stall512 >= STALL_TICKS) {
				printf("FAIL avx512 loop did not advance in %d ticks (%llu)\n",
				       STALL_TICKS, (unsigned long long)i512);
				return 1;
			}
		}
		printf("tick %ld pid %d avx2 %llu avx512 %llu\n", n, (int)getpid(),
		       (unsigned long long)i2, (unsigned long long)i512);
		fflush(stdout);
		last2 = i2;
		last512 = i512;
	}
	__atomic_store_n(&l2.stop, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&l512.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t2, NULL);
	if (has512)
		pthread_join(t512, NULL);
	printf("DONE pid %d avx2 %llu avx512 %llu\n", (int)getpid(),
	       (unsigned long long)l2.iters, (unsigned long long)l512.iters);
	return 0;
}
