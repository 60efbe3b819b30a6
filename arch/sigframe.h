/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SIGFRAME_H
#define IBCR_SIGFRAME_H

#include <stddef.h>
#include <stdint.h>

/* What a frame is built from: one thread's saved state. */
struct arch_thread_regs {
	const uint8_t *gpregs;	/* struct arch_gpregs */
	const uint8_t *fpregs;
	uint32_t fpregs_size;
	uint64_t sigmask;
	uint64_t altstack_sp, altstack_size;
	uint32_t altstack_flags;
	int keep_altstack;	/* leave the thread's alternate stack as it is */
};

/*
 * 1 when the thread's saved FP state holds a component whose room the
 * kernel makes only at the thread's first use of it (x86 AMX tile
 * data): the core touches it before the sigreturn (plan_thread).
 */
int arch_frame_needs_touch(const uint8_t *fpregs, uint32_t size);

/* Bytes an area must have for arch_build_frame. */
size_t arch_frame_size(uint32_t fpregs_size);
/* Builds the rt_sigframe in `area`; returns the frame's address. */
void *arch_build_frame(void *area, const struct arch_thread_regs *t);

/*
 * The same built in `area` for use at address `at` in another process
 * (area and at equally aligned modulo 64); returns the frame in area.
 */
void *arch_build_frame_at(void *area, uint64_t at, const struct arch_thread_regs *t);

#endif
