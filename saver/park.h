/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_PARK_H
#define IBCR_SAVER_PARK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "err.h"
#include "ptrace_util.h"

struct target;

/*
 * park.c: system calls injected into a stopped thread such that a saver
 * killed at any instant leaves no harm. While parked, the thread's
 * registers point at a sigreturn gadget of its own code and its stack
 * pointer at a signal frame of its real state, borrowed below its stack
 * pointer where the kernel would put a signal frame: if the tracer dies,
 * the kernel lets the thread go and it returns by rt_sigreturn into
 * exactly that state, signal mask included. Every injected call is
 * swapped in at the entry stop of that rt_sigreturn and returns to the
 * gadget (docs/design-notes.md, "A saver killed at any moment").
 *
 * Where that cannot be done (no gadget in the program's code, no room on
 * the thread's stack, an architecture without it), the thread is set up
 * the old way: a call directly at a syscall instruction of its [vdso],
 * harmless only while the saver lives; `safe` is 0 then.
 */
struct park {
	pid_t pid, tid;
	int safe;		/* parked on a frame; else the old way */
	uint64_t gadget;	/* sigreturn gadget, in the target */
	uint64_t insn;		/* a syscall instruction, in the target */
	struct arch_gpregs regs;	/* the thread's own, put back at release */
	uint64_t mask;
	uint64_t lo;		/* borrowed stack bytes [lo, lo + len) */
	size_t len;
	uint8_t *saved;		/* their contents before */
	uint64_t scratch;	/* 256 bytes for the calls' results */
	uint64_t exit_frame;	/* a frame that exits: a copy's stack (clone) */
	long nr;		/* the call begun */
	struct pt_injection in;	/* not safe: the old way's state */
};

/* Finds the gadget and a syscall instruction of t (while it runs, if it may). */
int park_prepare(struct target *t, struct ibcr_err *e);
/* Parks thread tid of t, stopped by us; then park_call, then park_release. */
int park_thread(struct target *t, pid_t tid, struct park *p, struct ibcr_err *e);
/*
 * The same in two halves, so that many threads (of many processes) run
 * their calls at once: begin leaves the thread inside the call, end
 * waits for its return. Every begin that succeeded must be ended.
 */
int park_begin(struct park *p, long nr, const uint64_t a[6], struct ibcr_err *e);
int park_end(struct park *p, long *ret, unsigned long *event, struct ibcr_err *e);
/* Runs system call nr in the parked thread; the message of an event stop in *event. */
int park_call(struct park *p, long nr, const uint64_t a[6], long *ret,
	      unsigned long *event, struct ibcr_err *e);
/*
 * Holds a parked thread for the saver's death: the thread stays stopped,
 * but a detach lets it run ms of a harmless wait before its own code
 * (park.c), time the guardian takes to undo what the saver changed on its
 * sockets. park_unhold makes it a parked thread again. Threads parked
 * the old way are not held.
 */
int park_hold(struct park *p, unsigned ms, struct ibcr_err *e);
int park_unhold(struct park *p, struct ibcr_err *e);
/* Puts the thread's registers, mask and stack bytes back. */
int park_release(struct park *p, struct ibcr_err *e);
/*
 * The stack pointer to give a fork made by park_call (clone's newsp), or
 * 0: a copy let go by a dying saver exits at once, never runs on.
 */
uint64_t park_copy_sp(const struct park *p);
/* The borrowed stack bytes as they were, into the memory of pid (a fork of it). */
int park_restore_copy(const struct park *p, pid_t pid, struct ibcr_err *e);

#endif
