/* SPDX-License-Identifier: MIT */
/*
 * x86_64 register layout and the rules that depend on it. Plain C with
 * only <stdint.h>: included by hosted code and by the restore core.
 */
#ifndef IBCR_ARCH_X86_64_H
#define IBCR_ARCH_X86_64_H

#include <stdint.h>

#define ARCH_ID 1		/* IBCR_ARCH_X86_64 */
#define ARCH_NAME "x86_64"
#define ARCH_NT_FPREGS 0x202	/* NT_X86_XSTATE: the full XSAVE area */
#define ARCH_SYSCALL_INSN_LEN 2
/* Lowest address above every user mapping (47-bit: DEFAULT_MAP_WINDOW). */
#define ARCH_TASK_TOP 0x7ffffffff000ull

/* NT_PRSTATUS, as struct user_regs_struct. */
struct arch_gpregs {
	uint64_t r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8;
	uint64_t rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags, rsp, ss;
	uint64_t fs_base, gs_base, ds, es, fs, gs;
};

static inline uint64_t arch_pc(const struct arch_gpregs *r) { return r->rip; }
static inline void arch_set_pc(struct arch_gpregs *r, uint64_t pc) { r->rip = pc; }
static inline uint64_t arch_sp(const struct arch_gpregs *r) { return r->rsp; }
static inline uint64_t arch_ret(const struct arch_gpregs *r) { return r->rax; }

/* TLS bases to set before rt_sigreturn, which does not restore them. */
static inline void arch_thread_tls(const void *gpregs, const uint64_t rec_tls[2],
				   uint64_t out[2])
{
	const struct arch_gpregs *r = (const struct arch_gpregs *)gpregs;

	(void)rec_tls;
	out[0] = r->fs_base;
	out[1] = r->gs_base;
}

/* The syscall the thread is in (orig_rax), or -1. */
static inline int64_t arch_syscall_nr(const struct arch_gpregs *r)
{
	return (int64_t)r->orig_rax;
}

/* The syscall runs again on resume, with its original arguments. */
static inline int arch_rewind(struct arch_gpregs *r)
{
	r->rax = r->orig_rax;
	r->rip -= ARCH_SYSCALL_INSN_LEN;
	r->orig_rax = (uint64_t)-1;
	return 1;
}

/*
 * A thread stopped by PTRACE_INTERRUPT inside a syscall the kernel would
 * restart shows -ERESTART* in rax with orig_rax >= 0; the kernel rewinds
 * only after the stop. Rewind here so the state resumes anywhere (restored
 * or after detach) by re-executing the syscall. RESTART_RESTARTBLOCK is
 * rewound too: the original syscall runs again with its original
 * arguments (a relative timeout starts over) instead of restart_syscall,
 * whose kernel-side state does not survive a restart.
 * Returns 1 when it rewound.
 */
static inline int arch_rewind_syscall(struct arch_gpregs *r)
{
	int64_t ret = (int64_t)r->rax;

	if ((int64_t)r->orig_rax < 0)
		return 0;
	if (ret != -512 && ret != -513 && ret != -514 && ret != -516)
		return 0;	/* ERESTARTSYS, NOINTR, NOHAND, RESTARTBLOCK */
	return arch_rewind(r);
}

/*
 * The syscalls the kernel ends with -EINTR instead of restarting, even
 * when woken by nothing but ptrace's interrupt (which sets the thread's
 * signal-pending flag): epoll_wait, epoll_pwait, epoll_pwait2,
 * rt_sigtimedwait, semop, semtimedop. A thread stopped at the exit of one
 * with -EINTR and no signal delivered (the saver's caller checks that)
 * was ended by the saver: rewound like a restartable one, the program
 * never sees that EINTR. Returns 1 when it rewound.
 */
static inline int arch_rewind_eintr(struct arch_gpregs *r)
{
	int64_t nr = (int64_t)r->orig_rax;

	if ((int64_t)r->rax != -4 /* EINTR */ ||
	    (nr != 232 && nr != 281 && nr != 441 && nr != 128 && nr != 65 && nr != 220))
		return 0;
	return arch_rewind(r);
}

/* A system call's six arguments, in their registers. */
static inline void arch_syscall_args(struct arch_gpregs *r, const uint64_t a[6])
{
	r->rdi = a[0];
	r->rsi = a[1];
	r->rdx = a[2];
	r->r10 = a[3];
	r->r8 = a[4];
	r->r9 = a[5];
}

/* Sets up a syscall to run at `insn` (a syscall instruction). */
static inline void arch_setup_syscall(struct arch_gpregs *r, uint64_t insn,
				      long nr, const uint64_t a[6])
{
	r->rip = insn;
	r->rax = (uint64_t)nr;
	r->orig_rax = (uint64_t)-1;	/* no restart logic on resume */
	arch_syscall_args(r, a);
}

/* Finds a syscall instruction (0f 05) in code; returns its offset or -1. */
static inline long arch_find_syscall_insn(const uint8_t *code, unsigned long n)
{
	for (unsigned long i = 0; i + 1 < n; i++)
		if (code[i] == 0x0f && code[i + 1] == 0x05)
			return (long)i;
	return -1;
}

/*
 * Parking (saver/park.c): a thread carrying injected state sits on a
 * sigreturn gadget ("mov $15, %rax; syscall", found in the program's own
 * code: libc's __restore_rt) with its stack pointer on a signal frame of
 * its real state, so that, should the saver die, the thread resumes by
 * rt_sigreturn into exactly that state. Each injected call is swapped in
 * at the entry stop of that rt_sigreturn, and returns to the gadget.
 */
#define ARCH_HAS_PARK 1
#define ARCH_NR_SIGRETURN 15
#define ARCH_NT_SYSCALL 0	/* none: orig_rax, in the registers, is the number */

/* Offset of a sigreturn gadget in code, or -1; *len: its length. */
static inline long arch_find_sigreturn(const uint8_t *code, unsigned long n, unsigned *len)
{
	static const uint8_t movq[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	static const uint8_t movl[] = { 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05 };

	for (unsigned long i = 0; i + sizeof(movq) <= n; i++) {
		unsigned k = 0;

		while (k < sizeof(movq) && code[i + k] == movq[k])
			k++;
		if (k == sizeof(movq)) {
			*len = sizeof(movq);
			return (long)i;
		}
		for (k = 0; k < sizeof(movl) && code[i + k] == movl[k]; k++)
			;
		if (k == sizeof(movl)) {
			*len = sizeof(movl);
			return (long)i;
		}
	}
	return -1;
}

/* The stack pointer rt_sigreturn takes `frame` from: 8 below it. */
static inline uint64_t arch_frame_sp(uint64_t frame)
{
	return frame + 8;
}

/* The parked state: on the gadget, the frame at `frame` (remote address). */
static inline void arch_park_regs(struct arch_gpregs *r, uint64_t gadget, uint64_t frame)
{
	r->rip = gadget;
	r->rsp = arch_frame_sp(frame);
	r->orig_rax = (uint64_t)-1;
}

/* At the entry stop of the gadget's rt_sigreturn: run nr instead, then the gadget. */
static inline void arch_park_syscall(struct arch_gpregs *r, uint64_t gadget, long nr,
				     const uint64_t a[6])
{
	r->orig_rax = (uint64_t)nr;
	arch_syscall_args(r, a);
	r->rip = gadget;
}

/* A state that runs exit_group(0) at insn (a syscall instruction). */
static inline void arch_exit_regs(struct arch_gpregs *r, uint64_t insn)
{
	r->rip = insn;
	r->rax = 231;	/* exit_group */
	r->rdi = 0;
	r->orig_rax = (uint64_t)-1;
}

/* The red zone below the stack pointer that a signal frame skips. */
#define ARCH_RED_ZONE 128

#endif
