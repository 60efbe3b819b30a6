/* SPDX-License-Identifier: MIT */
#ifndef IBCR_PTRACE_UTIL_H
#define IBCR_PTRACE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "err.h"

/*
 * ptrace helpers shared by the saver (capture, syscall injection) and
 * the loader (final hand-over of restored threads). Every function
 * names the thread and the operation in its error.
 */
int pt_seize(pid_t tid, unsigned long options, struct ibcr_err *e);
/* PTRACE_INTERRUPT and wait for the resulting stop. */
int pt_interrupt(pid_t tid, struct ibcr_err *e);
/*
 * The wait half of pt_interrupt, for a thread already sent PTRACE_INTERRUPT:
 * many threads interrupted first and then waited for stop together, not
 * each after the one before (a busy thread may wait long for a CPU).
 */
int pt_interrupt_wait(pid_t tid, struct ibcr_err *e);
/* Waits for tid's next stop; *status as waitpid gives it. */
int pt_wait(pid_t tid, int *status, struct ibcr_err *e);
/* 1 and its wait status when pt_wait saw tid die (and so reaped it). */
int pt_exit_status(pid_t tid, int *status);
int pt_getregs(pid_t tid, struct arch_gpregs *r, struct ibcr_err *e);
int pt_setregs(pid_t tid, const struct arch_gpregs *r, struct ibcr_err *e);
/* Reads a regset into buf (up to *len bytes); *len is set to its size. */
int pt_getregset(pid_t tid, int type, void *buf, size_t *len,
		 struct ibcr_err *e);
int pt_setregset(pid_t tid, int type, const void *buf, size_t len,
		 struct ibcr_err *e);
int pt_getsigmask(pid_t tid, uint64_t *mask, struct ibcr_err *e);
int pt_setsigmask(pid_t tid, uint64_t mask, struct ibcr_err *e);

/*
 * Runs one system call in a stopped thread, at `insn` (the address of a
 * syscall instruction in its address space), and puts its registers and
 * signal mask back. Signals are blocked meanwhile so that none is
 * delivered (or lost) during the call. *ret gets the raw result.
 */
int pt_inject_syscall(pid_t tid, uint64_t insn, long nr, const uint64_t a[6],
		      long *ret, struct ibcr_err *e);

/*
 * How many job-control stops (a stopped process stopping again) injected
 * syscalls went through since the last call; resets the count.
 */
int pt_stop_signals_seen(void);
/*
 * The stop signal (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) last shown by an
 * interrupt stop in a group stop or by an injected call, 0 if none since
 * the last call; resets it.
 */
int pt_group_stop_signal(void);

/* The same, keeping the message of a PTRACE_EVENT stop (a traced clone's pid). */
int pt_inject_syscall_ev(pid_t tid, uint64_t insn, long nr, const uint64_t a[6],
			 long *ret, unsigned long *event, struct ibcr_err *e);

/*
 * The same in two halves, so that several threads (of several processes)
 * run their injected calls at once: begin leaves the thread inside the
 * call, running; end waits for it to return and puts the thread back.
 * Every begin that succeeded must be ended.
 */
struct pt_injection {
	pid_t tid;
	long nr;
	struct arch_gpregs saved;
	uint64_t mask;
};
int pt_inject_begin(pid_t tid, uint64_t insn, long nr, const uint64_t a[6],
		    struct pt_injection *in, struct ibcr_err *e);
int pt_inject_end(struct pt_injection *in, long *ret, unsigned long *event,
		  struct ibcr_err *e);

/*
 * Resumes a stopped thread under PTRACE_SYSCALL to its next system call
 * stop (passing job-control and event stops as the injection does):
 * *entry 1 at an entry (*val: the number), 0 at an exit (*val: the result).
 * pt_wait_syscall_stop: the same for a thread resumed already.
 */
int pt_syscall_stop(pid_t tid, int *entry, long *val, unsigned long *event,
		    struct ibcr_err *e);
int pt_wait_syscall_stop(pid_t tid, int *entry, long *val, unsigned long *event,
			 struct ibcr_err *e);

/*
 * Resumes a stopped thread under PTRACE_SYSCALL until it has completed
 * system call `nr` (stopped at its exit). Other syscalls pass.
 */
int pt_run_until_syscall_exit(pid_t tid, long nr, struct ibcr_err *e);
/* The two halves: to the entry of system call nr, then on to its exit. */
int pt_run_until_syscall_entry(pid_t tid, long nr, struct ibcr_err *e);
int pt_run_to_syscall_exit(pid_t tid, struct ibcr_err *e);

#endif
