// SPDX-License-Identifier: MIT
/*
 * The x86_64 rt_sigframe that resumes a thread: rt_sigreturn restores
 * every general register, flags, the signal mask, the alternate stack
 * and (through the XSAVE area, in the same format PTRACE_GETREGSET
 * NT_X86_XSTATE returned it) every FP/SSE/AVX/AVX-512 register at once.
 * The layouts are the kernel's (arch/x86/include/asm/sigframe.h and
 * uapi/asm/sigcontext.h), spelled out so no libc header is involved.
 */
#include <cpuid.h>
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "sigframe.h"

#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u
#define SW_BYTES_OFFSET 464	/* struct _fpx_sw_bytes in the FXSAVE area */
#define USER_CS 0x33
#define USER_DS 0x2b

struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2, fpstate;
	uint64_t reserved1[8];
};

struct k_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	uint64_t ss_sp;
	int32_t ss_flags, ss_pad;
	uint64_t ss_size;
	struct k_sigcontext mc;
	uint64_t sigmask;
};

struct k_rt_sigframe {
	uint64_t pretcode;
	struct k_ucontext uc;
	uint8_t info[128];
};

size_t arch_frame_size(uint32_t fpregs_size)
{
	return sizeof(struct k_rt_sigframe) + 64 + fpregs_size + 4 + 64;
}

static void copy_gpregs(struct k_sigcontext *mc, const struct arch_gpregs *r)
{
	mc->r8 = r->r8;
	mc->r9 = r->r9;
	mc->r10 = r->r10;
	mc->r11 = r->r11;
	mc->r12 = r->r12;
	mc->r13 = r->r13;
	mc->r14 = r->r14;
	mc->r15 = r->r15;
	mc->rdi = r->rdi;
	mc->rsi = r->rsi;
	mc->rbp = r->rbp;
	mc->rbx = r->rbx;
	mc->rdx = r->rdx;
	mc->rax = r->rax;
	mc->rcx = r->rcx;
	mc->rsp = r->rsp;
	mc->rip = r->rip;
	mc->eflags = r->eflags;
	mc->cs = USER_CS;
	mc->ss = USER_DS;
}

/*
 * Past the 512-byte legacy area, NT_X86_XSTATE is an XSAVE area, but its
 * software-reserved bytes hold only the saving kernel's XCR0 (ptrace's
 * convention), not the _fpx_sw_bytes a signal frame needs: write those,
 * and MAGIC2 after the area, or the kernel restores x87/SSE state only.
 */
/*
 * AMX tile data (component 18) is the kernel's one dynamic component: a
 * process has room for it only once it asked (ARCH_REQ_XCOMP_PERM), and a
 * frame larger than the process's room makes the kernel restore x87/SSE
 * state only. So the frame carries it only when the thread holds it.
 */
#define XFEATURE_MASK_DYNAMIC (1ULL << 18)

/* This CPU's enabled components (XCR0); x87 and SSE without XSAVE. */
static uint64_t here_xcr0(void)
{
	unsigned int a, b, c, d;
	uint32_t lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return 0x3;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/*
 * The standard-format size of an XSAVE area holding the components in
 * mask (x87 and SSE always): the end of the highest one, from CPUID 0xD.
 * Offsets in that format are fixed per component, so this CPU's layout
 * is the saved one up to there.
 */
static uint32_t xsave_size(uint64_t mask)
{
	unsigned int a, b, c, d;
	uint32_t size = 512 + 64;

	for (unsigned int i = 2; i < 63; i++)
		if ((mask >> i & 1) && __get_cpuid_count(0xd, i, &a, &b, &c, &d) &&
		    a && b + a > size)
			size = b + a;
	return size;
}

static int make_xsave_frame(uint8_t *fp, uint32_t size)
{
	struct {
		uint32_t magic1, extended_size;
		uint64_t xfeatures;
		uint32_t xstate_size, padding[7];
	} sw = { FP_XSTATE_MAGIC1, 0, 0, 0, { 0 } };
	uint32_t magic2 = FP_XSTATE_MAGIC2, want;
	uint64_t bv, mask;

	if (size < 512 + 64)
		return 0;	/* FXSAVE only */
	memcpy(&mask, fp + SW_BYTES_OFFSET, 8);	/* the saved XCR0 */
	memcpy(&bv, fp + 512, 8);	/* XSTATE_BV: what is not in its initial state */
	mask &= here_xcr0();
	if (!(bv & XFEATURE_MASK_DYNAMIC))
		mask &= ~XFEATURE_MASK_DYNAMIC;
	want = xsave_size(mask);
	if (want < size)
		size = want;
	bv &= mask;
	sw.xfeatures = mask;
	sw.xstate_size = size;
	sw.extended_size = size + 4;
	memcpy(fp + 512, &bv, 8);
	memcpy(fp + SW_BYTES_OFFSET, &sw, sizeof(sw));
	memcpy(fp + size, &magic2, 4);
	return 1;
}

int arch_frame_needs_touch(const uint8_t *fpregs, uint32_t size)
{
	uint64_t bv;

	if (size < 512 + 64)
		return 0;
	memcpy(&bv, fpregs + 512, 8);
	return !!(bv & XFEATURE_MASK_DYNAMIC);
}

void *arch_build_frame(void *area, const struct arch_thread_regs *t)
{
	uintptr_t base = ((uintptr_t)area + 15) & ~(uintptr_t)15;
	struct k_rt_sigframe *f = (struct k_rt_sigframe *)base;
	uintptr_t fp = (base + sizeof(*f) + 63) & ~(uintptr_t)63;

	memset(f, 0, sizeof(*f));
	f->uc.uc_flags = UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	f->uc.ss_sp = t->altstack_sp;
	f->uc.ss_flags = (int32_t)(t->altstack_flags & ~1u);	/* not SS_ONSTACK */
	f->uc.ss_size = t->altstack_size;
	/* a mode sigaltstack refuses (EINVAL), which rt_sigreturn ignores */
	if (t->keep_altstack)
		f->uc.ss_flags = 3;
	copy_gpregs(&f->uc.mc, (const struct arch_gpregs *)t->gpregs);
	f->uc.sigmask = t->sigmask;
	if (t->fpregs_size) {
		memcpy((void *)fp, t->fpregs, t->fpregs_size);
		if (make_xsave_frame((uint8_t *)fp, t->fpregs_size))
			f->uc.uc_flags |= UC_FP_XSTATE;
		f->uc.mc.fpstate = fp;
	}
	return f;
}

void *arch_build_frame_at(void *area, uint64_t at, const struct arch_thread_regs *t)
{
	struct k_rt_sigframe *f = arch_build_frame(area, t);

	if (f->uc.mc.fpstate)	/* the one pointer in the frame */
		f->uc.mc.fpstate = f->uc.mc.fpstate - (uintptr_t)area + at;
	return f;
}
