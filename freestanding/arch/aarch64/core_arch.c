// SPDX-License-Identifier: MIT
/* aarch64 parts of the restore core that are easier in C. */
#include <stdint.h>

long arch_set_tls(const uint64_t tls[2]);
void arch_touch_xstate(void);

/* rt_sigreturn does not restore tpidr_el0; userspace may write it. */
long arch_set_tls(const uint64_t tls[2])
{
	__asm__ volatile("msr tpidr_el0, %0" : : "r"(tls[0]));
	return 0;
}

/* FP/SIMD state is always there: nothing to make room for. */
void arch_touch_xstate(void)
{
}
