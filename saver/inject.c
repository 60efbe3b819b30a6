// SPDX-License-Identifier: MIT
/*
 * State that only the process itself can read (signal actions, the
 * alternate signal stack, the clear_child_tid address, interval timers,
 * the program break) is read by running system calls inside it, in each
 * thread parked for the purpose (park.h: a saver killed meanwhile does
 * no harm), writing into scratch bytes below its stack pointer.
 */
#include <errno.h>
#include <linux/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "buf.h"
#include "procfs.h"
#include "ptrace_util.h"
#include "park.h"
#include "saver.h"

int read_target(struct target *t, uint64_t addr, void *buf, size_t len,
		struct ibcr_err *e)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	pid_t from = t->mem_pid ? t->mem_pid : t->pid;
	ssize_t got;

	/*
	 * A snapshot shares its pages copy-on-write with the running
	 * process: process_vm_readv pins them, and the kernel copies every
	 * page it pins that way (no pinned page may be shared with a
	 * writer). /proc/PID/mem reads without pinning.
	 */
	if (t->mem_pid && pread(t->memfd, buf, len, (off_t)addr) == (ssize_t)len)
		return 0;
	got = process_vm_readv(from, &local, 1, &remote, 1, 0);
	if (got == (ssize_t)len)
		return 0;
	/* /proc/PID/mem also reads pages the process cannot (PROT_NONE). */
	got = pread(t->memfd, buf, len, (off_t)addr);
	if (got == (ssize_t)len)
		return 0;
	return ibcr_fail_errno(e, got < 0 ? errno : EIO,
			       "pid %d: reading memory at %#llx (%zu bytes)",
			       (int)t->pid, (unsigned long long)addr, len);
}

static int inject(struct park *p, long nr, uint64_t a0, uint64_t a1, uint64_t a2,
		  uint64_t a3, long *ret, struct ibcr_err *e)
{
	const uint64_t a[6] = { a0, a1, a2, a3, 0, 0 };
	long r;

	if (park_call(p, nr, a, &r, NULL, e))
		return -1;
	if (ret)
		*ret = r;
	else if (r < 0 && r > -4096)
		return ibcr_fail(e, "pid %d thread %d: syscall %ld inside the process: "
				 "%s", (int)p->pid, p->tid, nr, strerror((int)-r));
	return 0;
}

static int read_sigactions(struct target *t, struct park *p, struct ibcr_err *e)
{
	for (int sig = 1; sig <= IBCR_NSIG; sig++) {
		struct ibcr_sigaction *sa = &t->ps.sigact[sig - 1];

		if (sig == 9 || sig == 19)	/* SIGKILL, SIGSTOP: always default */
			continue;
		if (inject(p, SYS_rt_sigaction, (uint64_t)sig, 0, p->scratch, 8, NULL, e) ||
		    read_target(t, p->scratch, sa, sizeof(*sa), e))
			return -1;
	}
	return 0;
}

static int read_thread_bits(struct target *t, uint32_t i, struct park *p,
			    struct ibcr_err *e)
{
	struct ibcr_thread *rec = &t->ps.threads[i].rec;
	struct {
		uint64_t sp;
		int32_t flags, pad;
		uint64_t size;
	} ss;
	uint64_t ctid = 0;
	int32_t cached = 0;

	if (inject(p, SYS_sigaltstack, 0, p->scratch, 0, 0, NULL, e) ||
	    read_target(t, p->scratch, &ss, sizeof(ss), e))
		return -1;
	rec->altstack_sp = ss.sp;
	rec->altstack_flags = (uint32_t)ss.flags;
	rec->altstack_size = ss.size;
	if (inject(p, SYS_prctl, PR_GET_TID_ADDRESS, p->scratch, 0, 0, NULL, e) ||
	    read_target(t, p->scratch, &ctid, sizeof(ctid), e))
		return -1;
	rec->clear_child_tid = ctid;
	/* glibc keeps the TID there, musl a lock word: write it back only if cached. */
	if (ctid && !read_target(t, ctid, &cached, sizeof(cached), e) &&
	    cached == t->tids[i])
		rec->ctid_mode = IBCR_CTID_CACHE;
	return 0;
}

static int read_process_bits(struct target *t, struct park *p, struct ibcr_err *e)
{
	long brk;

	for (int w = 0; w < 3; w++) {
		int64_t it[4];

		if (inject(p, SYS_getitimer, (uint64_t)w, p->scratch, 0, 0, NULL, e) ||
		    read_target(t, p->scratch, it, sizeof(it), e))
			return -1;
		for (int k = 0; k < 4; k++)
			t->ps.rec.itimer[w][k] = (uint64_t)it[k];
	}
	if (inject(p, SYS_brk, 0, 0, 0, 0, &brk, e))
		return -1;
	t->ps.rec.brk = (uint64_t)brk;
	return 0;
}

/* Thread i parked, what it alone can tell read, and let go. */
static int read_through(struct target *t, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_err e2 = { "" };
	struct park p;
	int rc;

	if (park_thread(t, t->tids[i], &p, e))
		return -1;
	rc = (i == 0 && (read_sigactions(t, &p, e) || read_process_bits(t, &p, e))) ||
	     read_thread_bits(t, i, &p, e) ? -1 : 0;
	/* put back even on failure: the process must not keep our state */
	if (park_release(&p, &e2) && !rc) {
		*e = e2;
		rc = -1;
	}
	return rc;
}

int capture_injected(struct target *t, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (read_through(t, i, e))
			return -1;
	return 0;
}
