// SPDX-License-Identifier: MIT
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "ptrace_util.h"

#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif
#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#define SYSINFO_ENTRY 1
#define SYSINFO_EXIT 2

/* The part of struct ptrace_syscall_info read here. */
struct sysinfo_head {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t ip, sp;
	uint64_t nr;	/* entry: syscall number; exit: return value */
};

/* glibc and musl disagree on ptrace's prototype; use the varargs form. */
#define PT(req, tid, addr, data) \
	ptrace((req), (pid_t)(tid), (void *)(uintptr_t)(addr), (void *)(uintptr_t)(data))

int pt_seize(pid_t tid, unsigned long options, struct ibcr_err *e)
{
	if (PT(PTRACE_SEIZE, tid, 0, options))
		return ibcr_fail_errno(e, errno, "thread %d: PTRACE_SEIZE", tid);
	return 0;
}

/* Deaths pt_wait saw (the tracer reaps them): who said why, afterwards. */
static struct { pid_t tid; int status; } deaths[32];
static unsigned ndeaths;

int pt_exit_status(pid_t tid, int *status)
{
	for (unsigned i = 0; i < ndeaths && i < 32; i++)
		if (deaths[i].tid == tid) {
			*status = deaths[i].status;
			return 1;
		}
	return 0;
}

int pt_wait(pid_t tid, int *status, struct ibcr_err *e)
{
	for (;;) {
		pid_t w = waitpid(tid, status, __WALL);

		if (w == tid)
			break;
		if (w < 0 && errno == EINTR)
			continue;
		return ibcr_fail_errno(e, errno, "thread %d: waiting for it to stop", tid);
	}
	if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
		deaths[ndeaths++ % 32].tid = tid;
		deaths[(ndeaths - 1) % 32].status = *status;
		return ibcr_fail(e, "thread %d: exited while being traced", tid);
	}
	return 0;
}

static int is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* The last stop signal a group stop (or a signal on its way in) showed. */
static int group_stop_sig;

int pt_group_stop_signal(void)
{
	int sig = group_stop_sig;

	group_stop_sig = 0;
	return sig;
}

int pt_interrupt(pid_t tid, struct ibcr_err *e)
{
	if (PT(PTRACE_INTERRUPT, tid, 0, 0))
		return ibcr_fail_errno(e, errno, "thread %d: PTRACE_INTERRUPT", tid);
	return pt_interrupt_wait(tid, e);
}

int pt_interrupt_wait(pid_t tid, struct ibcr_err *e)
{
	int st;

	for (;;) {
		if (pt_wait(tid, &st, e))
			return -1;
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			/* in a group stop, the stop reports its signal, else SIGTRAP */
			if (is_stop_signal(WSTOPSIG(st)))
				group_stop_sig = WSTOPSIG(st);
			return 0;
		}
		/*
		 * A signal was on its way in: let it be delivered (its
		 * handler frame is set up, as without us) and take the
		 * interrupt stop that follows.
		 */
		if (PT(PTRACE_CONT, tid, 0, WSTOPSIG(st)))
			return ibcr_fail_errno(e, errno, "thread %d: PTRACE_CONT", tid);
	}
}

int pt_getregset(pid_t tid, int type, void *buf, size_t *len, struct ibcr_err *e)
{
	struct iovec iov = { buf, *len };

	if (PT(PTRACE_GETREGSET, tid, type, &iov))
		return ibcr_fail_errno(e, errno, "thread %d: reading register set %#x",
				       tid, type);
	*len = iov.iov_len;
	return 0;
}

int pt_setregset(pid_t tid, int type, const void *buf, size_t len,
		 struct ibcr_err *e)
{
	struct iovec iov = { (void *)buf, len };

	if (PT(PTRACE_SETREGSET, tid, type, &iov))
		return ibcr_fail_errno(e, errno, "thread %d: writing register set %#x",
				       tid, type);
	return 0;
}

int pt_getregs(pid_t tid, struct arch_gpregs *r, struct ibcr_err *e)
{
	size_t len = sizeof(*r);

	if (pt_getregset(tid, NT_PRSTATUS, r, &len, e))
		return -1;
	if (len != sizeof(*r))
		return ibcr_fail(e, "thread %d: unexpected register set size %zu",
				 tid, len);
	return 0;
}

int pt_setregs(pid_t tid, const struct arch_gpregs *r, struct ibcr_err *e)
{
	return pt_setregset(tid, NT_PRSTATUS, r, sizeof(*r), e);
}

int pt_getsigmask(pid_t tid, uint64_t *mask, struct ibcr_err *e)
{
	if (PT(PTRACE_GETSIGMASK, tid, sizeof(*mask), mask))
		return ibcr_fail_errno(e, errno, "thread %d: reading signal mask", tid);
	return 0;
}

int pt_setsigmask(pid_t tid, uint64_t mask, struct ibcr_err *e)
{
	if (PT(PTRACE_SETSIGMASK, tid, sizeof(mask), &mask))
		return ibcr_fail_errno(e, errno, "thread %d: writing signal mask", tid);
	return 0;
}

static int syscall_info(pid_t tid, struct sysinfo_head *si, struct ibcr_err *e)
{
	memset(si, 0, sizeof(*si));
	if (PT(PTRACE_GET_SYSCALL_INFO, tid, sizeof(*si), si) < 0)
		return ibcr_fail_errno(e, errno, "thread %d: PTRACE_GET_SYSCALL_INFO", tid);
	return 0;
}

/*
 * Resumes with PTRACE_SYSCALL to the next syscall stop (the thread must
 * have been seized with PTRACE_O_TRACESYSGOOD). A PTRACE_EVENT stop on
 * the way (a clone we asked to trace) is passed, its message kept in
 * *event if given. Any other stop means the code we run faulted or a
 * signal that cannot be blocked came: that is reported, and the signal
 * is not delivered.
 */
static int stop_signals_seen;

int pt_stop_signals_seen(void)
{
	int n = stop_signals_seen;

	stop_signals_seen = 0;
	return n;
}

/* The next syscall stop of a thread already resumed with PTRACE_SYSCALL. */
static int wait_syscall_stop(pid_t tid, struct sysinfo_head *si, unsigned long *event,
			     struct ibcr_err *e)
{
	int st;

	for (;;) {
		if (pt_wait(tid, &st, e))
			return -1;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80))
			return syscall_info(tid, si, e);
		/*
		 * A stopped process (Ctrl-Z, SIGSTOP) stops again (group stop)
		 * or takes its stop signal now: go on, and let the caller know
		 * so that it stops it again when it lets go.
		 */
		if (is_stop_signal(WSTOPSIG(st)) &&
		    ((st >> 16) == 0 || (st >> 16) == PTRACE_EVENT_STOP)) {
			stop_signals_seen++;
			group_stop_sig = WSTOPSIG(st);
		} else if (event && WSTOPSIG(st) == SIGTRAP && (st >> 16) &&
			   (st >> 16) != PTRACE_EVENT_STOP) {
			if (PT(PTRACE_GETEVENTMSG, tid, 0, event))
				return ibcr_fail_errno(e, errno, "thread %d: PTRACE_GETEVENTMSG",
						       tid);
		} else {
			return ibcr_fail(e, "thread %d: unexpected stop (signal %d, event %d) "
					 "while running a system call in it", tid,
					 WSTOPSIG(st), st >> 16);
		}
		if (PT(PTRACE_SYSCALL, tid, 0, 0))
			return ibcr_fail_errno(e, errno, "thread %d: PTRACE_SYSCALL", tid);
	}
}

static int next_syscall_stop(pid_t tid, struct sysinfo_head *si, unsigned long *event,
			     struct ibcr_err *e)
{
	if (PT(PTRACE_SYSCALL, tid, 0, 0))
		return ibcr_fail_errno(e, errno, "thread %d: PTRACE_SYSCALL", tid);
	return wait_syscall_stop(tid, si, event, e);
}

int pt_syscall_stop(pid_t tid, int *entry, long *val, unsigned long *event,
		    struct ibcr_err *e)
{
	if (PT(PTRACE_SYSCALL, tid, 0, 0))
		return ibcr_fail_errno(e, errno, "thread %d: PTRACE_SYSCALL", tid);
	return pt_wait_syscall_stop(tid, entry, val, event, e);
}

int pt_wait_syscall_stop(pid_t tid, int *entry, long *val, unsigned long *event,
			 struct ibcr_err *e)
{
	struct sysinfo_head si = { 0 };

	if (wait_syscall_stop(tid, &si, event, e))
		return -1;
	if (si.op != SYSINFO_ENTRY && si.op != SYSINFO_EXIT)
		return ibcr_fail(e, "thread %d: a system call stop of kind %u", tid, si.op);
	*entry = si.op == SYSINFO_ENTRY;
	*val = (long)si.nr;
	return 0;
}

int pt_run_until_syscall_entry(pid_t tid, long nr, struct ibcr_err *e)
{
	struct sysinfo_head si = { 0 };

	do {
		if (next_syscall_stop(tid, &si, NULL, e))
			return -1;
	} while (si.op != SYSINFO_ENTRY || (long)si.nr != nr);
	return 0;
}

int pt_run_to_syscall_exit(pid_t tid, struct ibcr_err *e)
{
	struct sysinfo_head si = { 0 };

	do {
		if (next_syscall_stop(tid, &si, NULL, e))
			return -1;
	} while (si.op != SYSINFO_EXIT);
	return 0;
}

int pt_run_until_syscall_exit(pid_t tid, long nr, struct ibcr_err *e)
{
	return pt_run_until_syscall_entry(tid, nr, e) || pt_run_to_syscall_exit(tid, e) ? -1 : 0;
}

/* Puts the thread back as it was before the injection. */
static int inject_restore(struct pt_injection *in, int rc, struct ibcr_err *e)
{
	if (pt_setregs(in->tid, &in->saved, e) || pt_setsigmask(in->tid, in->mask, e))
		rc = -1;
	return rc;
}

int pt_inject_begin(pid_t tid, uint64_t insn, long nr, const uint64_t a[6],
		    struct pt_injection *in, struct ibcr_err *e)
{
	struct arch_gpregs r;
	struct sysinfo_head si = { 0 };

	in->tid = tid;
	in->nr = nr;
	if (pt_getregs(tid, &in->saved, e) || pt_getsigmask(tid, &in->mask, e) ||
	    pt_setsigmask(tid, ~0ull, e))
		return -1;
	r = in->saved;
	arch_setup_syscall(&r, insn, nr, a);
	if (pt_setregs(tid, &r, e) || next_syscall_stop(tid, &si, NULL, e))
		return inject_restore(in, -1, e);
	if (si.op != SYSINFO_ENTRY || (long)si.nr != nr) {
		ibcr_fail(e, "thread %d: injected syscall %ld did not start (op %u nr %lld)",
			  tid, nr, si.op, (long long)si.nr);
		return inject_restore(in, -1, e);
	}
	if (PT(PTRACE_SYSCALL, tid, 0, 0)) {
		ibcr_fail_errno(e, errno, "thread %d: PTRACE_SYSCALL", tid);
		return inject_restore(in, -1, e);
	}
	return 0;
}

int pt_inject_end(struct pt_injection *in, long *ret, unsigned long *event, struct ibcr_err *e)
{
	struct arch_gpregs r;
	struct sysinfo_head si = { 0 };

	if (wait_syscall_stop(in->tid, &si, event, e))
		return inject_restore(in, -1, e);
	if (si.op != SYSINFO_EXIT) {
		ibcr_fail(e, "thread %d: injected syscall %ld did not finish", in->tid, in->nr);
		return inject_restore(in, -1, e);
	}
	if (pt_getregs(in->tid, &r, e))
		return inject_restore(in, -1, e);
	*ret = (long)arch_ret(&r);
	return inject_restore(in, 0, e);
}

int pt_inject_syscall_ev(pid_t tid, uint64_t insn, long nr, const uint64_t a[6],
			 long *ret, unsigned long *event, struct ibcr_err *e)
{
	struct pt_injection in;

	if (pt_inject_begin(tid, insn, nr, a, &in, e))
		return -1;
	return pt_inject_end(&in, ret, event, e);
}

int pt_inject_syscall(pid_t tid, uint64_t insn, long nr, const uint64_t a[6],
		      long *ret, struct ibcr_err *e)
{
	return pt_inject_syscall_ev(tid, insn, nr, a, ret, NULL, e);
}
