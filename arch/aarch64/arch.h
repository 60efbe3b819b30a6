/* SPDX-License-Identifier: MIT */
/*
 * aarch64 register layout and the rules that depend on it. Plain C with
 * only <stdint.h>: included by hosted code and by the restore core.
 */
#ifndef IBCR_ARCH_AARCH64_H
#define IBCR_ARCH_AARCH64_H

#include <stdint.h>

#define ARCH_ID 2		/* IBCR_ARCH_AARCH64 */
#define ARCH_NAME "aarch64"
#define ARCH_NT_FPREGS 2	/* NT_PRFPREG: v0-v31, fpsr, fpcr */
#define ARCH_NT_TLS 0x401	/* NT_ARM_TLS: tpidr_el0 (and tpidr2_el0) */
#define ARCH_SYSCALL_INSN_LEN 4
/* Lowest address above every user mapping (48-bit VA, 4K pages). */
#define ARCH_TASK_TOP 0x1000000000000ull

/* NT_PRSTATUS, as struct user_pt_regs. */
struct arch_gpregs {
	uint64_t regs[31];
	uint64_t sp, pc, pstate;
};

static inline uint64_t arch_pc(const struct arch_gpregs *r) { return r->pc; }
static inline void arch_set_pc(struct arch_gpregs *r, uint64_t pc) { r->pc = pc; }
static inline uint64_t arch_sp(const struct arch_gpregs *r) { return r->sp; }
static inline uint64_t arch_ret(const struct arch_gpregs *r) { return r->regs[0]; }

/* tpidr_el0 is not in the general registers: the saver reads NT_ARM_TLS. */
static inline void arch_thread_tls(const void *gpregs, const uint64_t rec_tls[2],
				   uint64_t out[2])
{
	(void)gpregs;
	out[0] = rec_tls[0];
	out[1] = rec_tls[1];
}

/* Not visible once stopped (the kernel forgets it while rewinding). */
static inline int64_t arch_syscall_nr(const struct arch_gpregs *r)
{
	(void)r;
	return -1;
}

/*
 * arm64 rewinds a restartable syscall (pc back onto the svc, x0 =
 * orig_x0) before the ptrace stop, so the registers as read already
 * re-execute it; x8 still holds the original number, so a
 * RESTART_RESTARTBLOCK syscall runs again with its original arguments,
 * as on x86_64 (docs/design-notes.md).
 */
static inline int arch_rewind_syscall(struct arch_gpregs *r)
{
	(void)r;
	return 0;
}

/*
 * An EINTR the saver's interrupt caused (x86_64's arch_rewind_eintr) is
 * not rewound here: x0, the first argument, holds the result by then and
 * the regset does not keep orig_x0.
 */
static inline int arch_rewind_eintr(struct arch_gpregs *r)
{
	(void)r;
	return 0;
}

/* Sets up a syscall to run at `insn` (an svc #0 instruction). */
static inline void arch_setup_syscall(struct arch_gpregs *r, uint64_t insn,
				      long nr, const uint64_t a[6])
{
	r->pc = insn;
	r->regs[8] = (uint64_t)nr;
	for (int i = 0; i < 6; i++)
		r->regs[i] = a[i];
}

/* Finds "svc #0" (0xd4000001) in code; returns its offset or -1. */
static inline long arch_find_syscall_insn(const uint8_t *code, unsigned long n)
{
	for (unsigned long i = 0; i + 3 < n; i += 4)
		if (code[i] == 0x01 && code[i + 1] == 0x00 && code[i + 2] == 0x00 &&
		    code[i + 3] == 0xd4)
			return (long)i;
	return -1;
}

/*
 * Parking (saver/park.c) is not done here yet: plain injection. (The
 * vdso's __kernel_rt_sigreturn is the gadget; the call is swapped in at
 * its entry stop through NT_ARM_SYSTEM_CALL.)
 */
#define ARCH_HAS_PARK 0

static inline long arch_find_sigreturn(const uint8_t *code, unsigned long n, unsigned *len)
{
	(void)code;
	(void)n;
	*len = 0;
	return -1;
}

#endif
