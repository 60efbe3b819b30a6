// SPDX-License-Identifier: MIT
/*
 * Can this CPU run the saved threads? A program that found AVX-512 when
 * it started keeps using it; resuming it on a CPU (or kernel) without
 * that state component would make it die of SIGILL later, far from the
 * cause. The saved XSAVE area says which components the saving kernel
 * had enabled (its XCR0, kept by ptrace in the software-reserved bytes);
 * each must be enabled here.
 */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu.h"

#define SW_BYTES_OFFSET 464
#define XFEATURE_MASK_PKRU (1ULL << 9)

static uint64_t enabled_xfeatures(void)
{
	unsigned int a, b, c, d;
	uint32_t lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return 0x3;	/* x87 and SSE only */
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/* the restore core checks page data with the SSE4.2 crc32 instruction */
static int check_sse42(char *why, size_t n)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_2)) {
		snprintf(why, n, "this CPU lacks SSE4.2 (x86-64-v2), which restart-loader needs");
		return -1;
	}
	return 0;
}

/*
 * restart-loader --cpu-check=in-use: only the components the thread
 * holds (XSTATE_BV, byte 512: those not in their initial state) must be
 * enabled here. The registers then come back exactly; that the program
 * will not use what it found at start (glibc chooses its string functions
 * once) is what the user vouches for. PKRU at the kernel's default is not
 * held: where PKU is off it can neither be read nor matter, and the signal
 * frame drops components this CPU lacks (sigframe.c).
 */
int arch_check_cpu_in_use(const uint8_t *fpregs, uint32_t size, int pkeys_default,
			  char *why, size_t n)
{
	uint64_t used, here;

	if (check_sse42(why, n))
		return -1;
	if (size < 512 + 64)
		return 0;
	memcpy(&used, fpregs + 512, 8);
	if (pkeys_default)	/* no PKU here: nothing can read or need PKRU */
		used &= ~XFEATURE_MASK_PKRU;
	here = enabled_xfeatures();
	if (!(used & ~here))
		return 0;
	snprintf(why, n, "it holds CPU state components %#llx; here only %#llx are enabled",
		 (unsigned long long)used, (unsigned long long)here);
	return -1;
}

int arch_check_cpu(const uint8_t *fpregs, uint32_t size, char *why, size_t n)
{
	uint64_t saved, here;

	if (check_sse42(why, n))
		return -1;
	if (size < 512 + 64)
		return 0;	/* legacy FXSAVE only: every x86_64 has it */
	/* ptrace's NT_X86_XSTATE keeps the saving kernel's XCR0 at byte 464 */
	memcpy(&saved, fpregs + SW_BYTES_OFFSET, 8);
	here = enabled_xfeatures();
	if (!(saved & ~here))
		return 0;
	snprintf(why, n, "the image was saved where the CPU state components %#llx "
		 "were enabled; here only %#llx are (a CPU without e.g. AVX-512; see "
		 "--cpu-check=in-use)",
		 (unsigned long long)saved, (unsigned long long)here);
	return -1;
}
