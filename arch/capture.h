/* SPDX-License-Identifier: MIT */
#ifndef IBCR_CAPTURE_H
#define IBCR_CAPTURE_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Per-thread register state outside the general and FP register sets, in
 * arch's own terms: the saver copies it into the image's thread record.
 */
struct arch_thread_extra {
	uint64_t tls[2];	/* aarch64: tpidr_el0, tpidr2_el0; x86_64: unused */
};

/*
 * Reads it from the stopped thread tid: 0, or -1 with errno set and
 * *regset the register set (NT_*) that could not be read.
 */
int arch_capture_thread(pid_t tid, struct arch_thread_extra *x, int *regset);

/*
 * 1 when the saved FP state's memory-protection-key rights (x86 PKRU)
 * are what every new process here starts with, which a CPU without
 * protection keys can stand in for: nothing else can read them there.
 * 0 otherwise, and on an arch without them.
 */
int arch_fp_pkeys_default(const uint8_t *fpregs, uint32_t size);

#endif
