// SPDX-License-Identifier: MIT
/* Per-thread state readable from outside: registers, masks, queues. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "capture.h"
#include "procfs.h"
#include "ptrace_util.h"
#include "saver.h"

#ifndef PTRACE_PEEKSIGINFO
#define PTRACE_PEEKSIGINFO 0x4209
#endif
#define PEEKSIGINFO_SHARED 1
#ifndef PTRACE_GET_RSEQ_CONFIGURATION
#define PTRACE_GET_RSEQ_CONFIGURATION 0x420f
#endif

struct peeksiginfo_args {
	uint64_t off;
	uint32_t flags;
	int32_t nr;
};

struct rseq_config {
	uint64_t ptr;
	uint32_t size, sig, flags, pad;
};

/* Reads a pending-signal queue without dequeuing anything. */
static int peek_queue(pid_t tid, int shared, uint8_t **out, uint32_t *n,
		      struct ibcr_err *e)
{
	uint8_t *buf = NULL;
	uint32_t cnt = 0;

	for (;;) {
		struct peeksiginfo_args a = { cnt, shared ? PEEKSIGINFO_SHARED : 0, 32 };
		long got;

		buf = xrealloc(buf, (size_t)(cnt + 32) * IBCR_SIGINFO_SIZE);
		got = ptrace(PTRACE_PEEKSIGINFO, tid, &a, buf + (size_t)cnt * IBCR_SIGINFO_SIZE);
		if (got < 0) {
			free(buf);
			return ibcr_fail_errno(e, errno, "thread %d: reading pending signals", tid);
		}
		cnt += (uint32_t)got;
		if (got < 32)
			break;
	}
	*out = buf;
	*n = cnt;
	return 0;
}

static int read_comm(pid_t pid, pid_t tid, char comm[16], struct ibcr_err *e)
{
	char path[64], *s;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	s[strcspn(s, "\n")] = 0;
	memset(comm, 0, 16);
	strncpy(comm, s, 15);
	free(s);
	return 0;
}

static int capture_rseq(pid_t tid, struct ibcr_thread *rec, struct ibcr_err *e)
{
	struct rseq_config c = { 0 };
	long got = ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, sizeof(c), &c);

	if (got < 0 && errno == EIO)
		return 0;	/* kernel before 5.13: rseq state unreadable */
	if (got < 0)
		return ibcr_fail_errno(e, errno, "thread %d: reading rseq registration", tid);
	rec->rseq_ptr = c.ptr;
	rec->rseq_len = c.size;
	rec->rseq_sig = c.sig;
	return 0;
}

/* arch's per-thread extra registers into the image's record */
_Static_assert(sizeof(((struct arch_thread_extra *)0)->tls) ==
	       sizeof(((struct ibcr_thread *)0)->tls), "arch's TLS and the image's differ");
static int capture_extra(pid_t tid, struct ibcr_thread *rec, struct ibcr_err *e)
{
	struct arch_thread_extra x;
	int regset = 0;

	if (arch_capture_thread(tid, &x, &regset))
		return ibcr_fail_errno(e, errno, "thread %d: reading register set %#x",
				       tid, regset);
	memcpy(rec->tls, x.tls, sizeof(rec->tls));
	return 0;
}

static int capture_one(struct target *t, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_thread_state *ts = &t->ps.threads[i];
	struct ibcr_thread *rec = &ts->rec;
	pid_t tid = t->tids[i];
	uint8_t *shared = NULL, *own = NULL;
	uint32_t nshared = 0, nown = 0;
	size_t len = 65536;

	rec->tid = tid;
	ts->fpregs = xmalloc(len);
	if (pt_getregset(tid, ARCH_NT_FPREGS, ts->fpregs, &len, e))
		return -1;
	rec->fpregs_size = (uint32_t)len;
	if (arch_fp_pkeys_default(ts->fpregs, rec->fpregs_size))
		rec->flags |= IBCR_THREADF_PKEYS_DEFAULT;
	if (pt_getsigmask(tid, &rec->sigmask, e) || read_comm(t->pid, tid, rec->comm, e) ||
	    capture_extra(tid, rec, e))
		return -1;
	if (syscall(SYS_get_robust_list, tid, &rec->robust_list, &rec->robust_len))
		return ibcr_fail_errno(e, errno, "thread %d: reading robust list", tid);
	if (peek_queue(tid, 0, &own, &nown, e))
		return -1;
	if (i == 0 && peek_queue(tid, 1, &shared, &nshared, e)) {
		free(own);
		return -1;
	}
	rec->nsiginfo = nown;
	rec->nsiginfo_shared = nshared;
	ts->siginfo = xmalloc((size_t)(nown + nshared) * IBCR_SIGINFO_SIZE + 1);
	/* own and shared are NULL when empty: memcpy may not be given NULL */
	if (nown)
		memcpy(ts->siginfo, own, (size_t)nown * IBCR_SIGINFO_SIZE);
	if (nshared)
		memcpy(ts->siginfo + (size_t)nown * IBCR_SIGINFO_SIZE, shared,
		       (size_t)nshared * IBCR_SIGINFO_SIZE);
	free(own);
	free(shared);
	return 0;
}

/*
 * Registers, normalised so that an interrupted syscall is re-executed
 * and an rseq critical section is aborted, and written back at once: the live process resumes from the same
 * state the image holds, whatever we inject meanwhile.
 */
int capture_regs(struct target *t, struct ibcr_err *e)
{
	t->ps.rec.nthreads = t->nthreads;
	t->ps.threads = xcalloc(t->nthreads, sizeof(*t->ps.threads));
	for (uint32_t i = 0; i < t->nthreads; i++) {
		struct ibcr_thread_state *ts = &t->ps.threads[i];
		struct arch_gpregs *r = xmalloc(sizeof(*r));

		ts->gpregs = (uint8_t *)r;
		ts->rec.gpregs_size = sizeof(*r);
		if (pt_getregs(t->tids[i], r, e))
			return -1;
		ts->rec.syscall_nr = arch_syscall_nr(r);
		ts->rec.syscall_ret = (int64_t)arch_ret(r);
		/*
		 * -EINTR at the exit of a call that does not restart: ours,
		 * unless a stop signal ended it (it would have returned EINTR
		 * when continued: epoll_wait after SIGSTOP and SIGCONT does).
		 * A signal with a handler leaves the pc in the handler, rax 0;
		 * an ignored one wakes a traced thread only (sig_ignored()).
		 */
		if (!arch_rewind_syscall(r) && (t->stopped || !arch_rewind_eintr(r)))
			ts->rec.syscall_nr = -1;
		else if (pt_setregs(t->tids[i], r, e))
			return -1;
		/*
		 * Before any injected call: its return to user space would make
		 * the kernel drop a critical section the thread is stopped in
		 * (rseq.c), and the thread resume in the middle of it.
		 */
		if (capture_rseq(t->tids[i], &ts->rec, e) || rseq_fixup(t, i, e))
			return -1;
	}
	return 0;
}

int capture_threads(struct target *t, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (capture_one(t, i, e))
			return -1;
	return 0;
}
