/* SPDX-License-Identifier: MIT */
#ifndef IBCR_CPU_H
#define IBCR_CPU_H

#include <stddef.h>
#include <stdint.h>

/*
 * 0 when this CPU can resume a thread with the saved FP/SIMD state
 * (arch/<arch>/cpu.c); otherwise -1 and the reason in `why`.
 */
int arch_check_cpu(const uint8_t *fpregs, uint32_t size, char *why, size_t n);
/*
 * The same, requiring only the state the thread holds (--cpu-check=in-use);
 * with pkeys_default, x86 PKRU holding the saving kernel's default for new
 * processes is not required (arch_fp_pkeys_default, capture.h).
 */
int arch_check_cpu_in_use(const uint8_t *fpregs, uint32_t size, int pkeys_default,
			  char *why, size_t n);

#endif
