// SPDX-License-Identifier: MIT
/* x86_64: fs_base and gs_base are part of NT_PRSTATUS; nothing else. */
#include <cpuid.h>
#include <string.h>

#include "capture.h"

int arch_capture_thread(pid_t tid, struct arch_thread_extra *x, int *regset)
{
	(void)tid;
	(void)regset;
	memset(x, 0, sizeof(*x));
	return 0;
}

#define XFEATURE_PKRU 9

/*
 * Linux gives each new process PKRU with access disabled for every key
 * but 0 (its init_pkru), so component 9 is never in its initial state
 * and an image from a CPU with PKU always "holds" it. The saver's own
 * PKRU is that default; the thread's sits at this CPU's standard-format
 * offset of component 9 (CPUID 0xD.9), the layout ptrace gives.
 */
int arch_fp_pkeys_default(const uint8_t *fpregs, uint32_t size)
{
	unsigned int a, b, c, d;
	uint32_t mine, theirs;
	uint64_t bv;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(c & bit_OSPKE) ||
	    !__get_cpuid_count(0xd, XFEATURE_PKRU, &a, &b, &c, &d) || a < 4 ||
	    size < 512 + 64 || b > size - 4)
		return 0;
	memcpy(&bv, fpregs + 512, 8);
	if (!(bv & (1ULL << XFEATURE_PKRU)))
		return 0;	/* init state, 0: every key allowed, not the default */
	memcpy(&theirs, fpregs + b, 4);
	__asm__ volatile("rdpkru" : "=a"(mine) : "c"(0) : "rdx");
	return theirs == mine;
}
