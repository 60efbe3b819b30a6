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
 * Parking (saver/park.c): a thread carrying injected state sits on a
 * sigreturn gadget ("mov x8, #139; svc #0": the vdso's
 * __kernel_rt_sigreturn, or libc's __restore_rt) with its stack pointer
 * on a signal frame of its real state. Each injected call is swapped in
 * at the entry stop of that rt_sigreturn: the arguments in x0-x5, the
 * number through NT_ARM_SYSTEM_CALL (the kernel has read x8 already).
 */
#define ARCH_HAS_PARK 1
#define ARCH_NR_SIGRETURN 139
#define ARCH_NT_SYSCALL 0x404	/* NT_ARM_SYSTEM_CALL: the number at a syscall stop */

/* Offset of a sigreturn gadget in code, or -1; *len: its length. */
static inline long arch_find_sigreturn(const uint8_t *code, unsigned long n, unsigned *len)
{
	/* mov x8, #139 (0xd2801168); svc #0 (0xd4000001), little-endian */
	static const uint8_t g[] = { 0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4 };

	for (unsigned long i = 0; i + sizeof(g) <= n; i += 4) {
		unsigned k = 0;

		while (k < sizeof(g) && code[i + k] == g[k])
			k++;
		if (k == sizeof(g)) {
			*len = sizeof(g);
			return (long)i;
		}
	}
	return -1;
}

/* rt_sigreturn takes the frame at the stack pointer itself. */
static inline uint64_t arch_frame_sp(uint64_t frame)
{
	return frame;
}

/* The parked state: on the gadget, the frame at `frame` (remote address). */
static inline void arch_park_regs(struct arch_gpregs *r, uint64_t gadget, uint64_t frame)
{
	r->pc = gadget;
	r->sp = arch_frame_sp(frame);
}

/* At the entry stop of the gadget's rt_sigreturn: nr's arguments, then the gadget. */
static inline void arch_park_syscall(struct arch_gpregs *r, uint64_t gadget, long nr,
				     const uint64_t a[6])
{
	(void)nr;	/* NT_ARM_SYSTEM_CALL carries it */
	for (int i = 0; i < 6; i++)
		r->regs[i] = a[i];
	r->pc = gadget;
}

/* A state that runs exit_group(0) at insn (an svc #0 instruction). */
static inline void arch_exit_regs(struct arch_gpregs *r, uint64_t insn)
{
	r->pc = insn;
	r->regs[8] = 94;	/* exit_group */
	r->regs[0] = 0;
}

/* No red zone in the AAPCS64: a signal frame goes right below sp. */
#define ARCH_RED_ZONE 0

#endif
