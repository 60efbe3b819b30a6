// SPDX-License-Identifier: MIT
/*
 * aarch64: the FP/SIMD state (v0-v31, fpsr, fpcr) is the same on every
 * ARMv8 CPU; SVE and SME state is not saved, so nothing to check yet.
 */
#include "cpu.h"

int arch_check_cpu(const uint8_t *fpregs, uint32_t size, char *why, size_t n)
{
	(void)fpregs;
	(void)size;
	(void)why;
	(void)n;
	return 0;
}

int arch_check_cpu_in_use(const uint8_t *fpregs, uint32_t size, int pkeys_default,
			  char *why, size_t n)
{
	(void)pkeys_default;
	return arch_check_cpu(fpregs, size, why, n);
}
