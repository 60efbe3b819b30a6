// SPDX-License-Identifier: MIT
/*
 * State that only the process itself can read (signal actions, the
 * alternate signal stack, the clear_child_tid address, interval timers,
 * the program break, securebits, dumpable) is read by running system
 * calls inside it, seccomp suspended for them (creds.c), in threads
 * parked for the time of it (park.h: a saver killed meanwhile does no
 * harm), each writing into scratch bytes below its own stack pointer.
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
#include "park.h"
#include "ptrace_util.h"
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

static int inject(struct target *t, uint32_t thread, long nr, uint64_t a0,
		  uint64_t a1, uint64_t a2, uint64_t a3, long *ret,
		  struct ibcr_err *e)
{
	const uint64_t a[6] = { a0, a1, a2, a3, 0, 0 };
	long r;

	if (!t->parks)
		return ibcr_fail(e, "pid %d: a call injected outside capture_injected", (int)t->pid);
	if (park_call(&t->parks[thread], nr, a, &r, NULL, e))
		return -1;
	if (ret)
		*ret = r;
	else if (r < 0 && r > -4096)
		return ibcr_fail(e, "pid %d thread %d: syscall %ld inside the process: "
				 "%s", (int)t->pid, t->tids[thread], nr, strerror((int)-r));
	return 0;
}

int inject_call(struct target *t, uint32_t thread, long nr, uint64_t a0, uint64_t a1,
		uint64_t a2, uint64_t a3, long *ret, struct ibcr_err *e)
{
	return inject(t, thread, nr, a0, a1, a2, a3, ret, e);
}

static int read_process_bits(struct target *t, uint64_t scratch, struct ibcr_err *e)
{
	long brk, dumpable;

	for (int w = 0; w < 3; w++) {
		int64_t it[4];

		if (inject(t, 0, SYS_getitimer, (uint64_t)w, scratch, 0, 0, NULL, e) ||
		    read_target(t, scratch, it, sizeof(it), e))
			return -1;
		for (int k = 0; k < 4; k++)
			t->ps.rec.itimer[w][k] = (uint64_t)it[k];
	}
	if (inject(t, 0, SYS_brk, 0, 0, 0, 0, &brk, e))
		return -1;
	t->ps.rec.brk = (uint64_t)brk;
	if (inject(t, 0, SYS_prctl, PR_GET_DUMPABLE, 0, 0, 0, &dumpable, e))
		return -1;
	if (dumpable < 0)
		return ibcr_fail(e, "pid %d: PR_GET_DUMPABLE inside the process: %s",
				 (int)t->pid, strerror((int)-dumpable));
	t->ps.priv.hdr.dumpable = (uint32_t)dumpable;
	return 0;
}

/* Every thread parked, or none (a failure puts back those that were). */
static int park_all(struct target *t, struct ibcr_err *e)
{
	t->parks = xcalloc(t->nthreads, sizeof(*t->parks));
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (park_thread(t, t->tids[i], &t->parks[i], e)) {
			struct ibcr_err ignored;

			while (i-- > 0)
				park_release(&t->parks[i], &ignored);
			free(t->parks);
			t->parks = NULL;
			return -1;
		}
	return 0;
}

/* Put back even on failure: the process must not keep our state. */
static int unpark_all(struct target *t, int rc, struct ibcr_err *e)
{
	for (uint32_t i = t->nthreads; i-- > 0; ) {
		struct ibcr_err e2 = { "" };

		if (park_release(&t->parks[i], &e2) && !rc) {
			*e = e2;
			rc = -1;
		}
	}
	free(t->parks);
	t->parks = NULL;
	return rc;
}

int capture_injected(struct target *t, struct ibcr_err *e)
{
	uint64_t scratch;
	int rc;

	if (park_all(t, e))
		return -1;
	scratch = t->parks[0].scratch;	/* thread 0's, for the process-wide calls */
	/* injectall.c: in every thread at once */
	rc = read_sigactions_all(t, e) || read_process_bits(t, scratch, e) ||
	     read_threads_all(t, e) || capture_attrs(t, scratch, e) ||
	     capture_ptimers(t, scratch, e) ? -1 : 0;
	return unpark_all(t, rc, e);
}
