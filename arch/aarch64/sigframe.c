// SPDX-License-Identifier: MIT
/*
 * The aarch64 rt_sigframe that resumes a thread: rt_sigreturn restores
 * x0-x30, sp, pc, pstate, the signal mask, the alternate stack, and from
 * the fpsimd record v0-v31, fpsr and fpcr. The layouts are the kernel's
 * (arch/arm64/include/uapi/asm/{ucontext,sigcontext}.h and
 * arch/arm64/kernel/signal.c), spelled out so no libc header is involved.
 */
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "sigframe.h"

#define FPSIMD_MAGIC 0x46508001u

struct k_sigcontext {
	uint64_t fault_address;
	uint64_t regs[31];
	uint64_t sp, pc, pstate;
	uint8_t reserved[4096] __attribute__((aligned(16)));
};

struct k_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	uint64_t ss_sp;
	int32_t ss_flags, ss_pad;
	uint64_t ss_size;
	uint64_t sigmask;
	uint8_t unused[1024 / 8 - 8];
	struct k_sigcontext mc;		/* 16-byte aligned: offset 176 */
};

struct k_rt_sigframe {
	uint8_t info[128];
	struct k_ucontext uc;
};

/* struct fpsimd_context: the record the kernel requires in reserved[]. */
struct k_fpsimd {
	uint32_t magic, size;
	uint32_t fpsr, fpcr;
	uint8_t vregs[32 * 16];
};

int arch_frame_needs_touch(const uint8_t *fpregs, uint32_t size)
{
	(void)fpregs;
	(void)size;
	return 0;	/* v0-v31: always room */
}

size_t arch_frame_size(uint32_t fpregs_size)
{
	(void)fpregs_size;
	return sizeof(struct k_rt_sigframe) + 16;
}

void *arch_build_frame(void *area, const struct arch_thread_regs *t)
{
	uintptr_t base = ((uintptr_t)area + 15) & ~(uintptr_t)15;
	struct k_rt_sigframe *f = (struct k_rt_sigframe *)base;
	const struct arch_gpregs *r = (const struct arch_gpregs *)t->gpregs;
	struct k_fpsimd fp = { FPSIMD_MAGIC, sizeof(struct k_fpsimd), 0, 0, { 0 } };

	memset(f, 0, sizeof(*f));
	f->uc.ss_sp = t->altstack_sp;
	f->uc.ss_flags = (int32_t)(t->altstack_flags & ~1u);	/* not SS_ONSTACK */
	f->uc.ss_size = t->altstack_size;
	/* a mode sigaltstack refuses (EINVAL), which rt_sigreturn ignores */
	if (t->keep_altstack)
		f->uc.ss_flags = 3;
	f->uc.sigmask = t->sigmask;
	memcpy(f->uc.mc.regs, r->regs, sizeof(r->regs));
	f->uc.mc.sp = r->sp;
	f->uc.mc.pc = r->pc;
	f->uc.mc.pstate = r->pstate;
	/* NT_PRFPREG: vregs[32] (16 bytes each), fpsr, fpcr */
	if (t->fpregs_size >= 32 * 16 + 8) {
		memcpy(fp.vregs, t->fpregs, 32 * 16);
		memcpy(&fp.fpsr, t->fpregs + 32 * 16, 4);
		memcpy(&fp.fpcr, t->fpregs + 32 * 16 + 4, 4);
	}
	/* the fpsimd record, then an empty header ends the list */
	memcpy(f->uc.mc.reserved, &fp, sizeof(fp));
	return f;
}

void *arch_build_frame_at(void *area, uint64_t at, const struct arch_thread_regs *t)
{
	(void)at;	/* no pointer in the frame */
	return arch_build_frame(area, t);
}
