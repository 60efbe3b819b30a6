// SPDX-License-Identifier: MIT
/*
 * State that only the process itself can read (signal actions, the
 * alternate signal stack, the clear_child_tid address, interval timers,
 * the program break, securebits, dumpable) is read by running system
 * calls inside it, seccomp suspended for them (creds.c): each
 * thread is made to execute a syscall instruction found in its [vdso],
 * writing into a scratch page mapped for the purpose and removed after.
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

static int find_syscall_insn(struct target *t, struct ibcr_err *e)
{
	struct maps_entry *m;
	size_t n;
	int rc = -1;

	if (maps_read(t->pid, 0, &m, &n, e))
		return -1;
	for (size_t i = 0; i < n && rc; i++) {
		uint8_t *code;
		long off;

		if (strcmp(m[i].path, "[vdso]"))
			continue;
		code = xmalloc(m[i].end - m[i].start);
		if (read_target(t, m[i].start, code, m[i].end - m[i].start, e)) {
			free(code);
			break;
		}
		off = arch_find_syscall_insn(code, m[i].end - m[i].start);
		free(code);
		if (off >= 0) {
			t->syscall_insn = m[i].start + (uint64_t)off;
			rc = 0;
		}
	}
	maps_free(m, n);
	if (rc && !e->msg[0])
		ibcr_fail(e, "pid %d: no [vdso] with a system call instruction: "
			  "cannot inject (booted with vdso=0?)", (int)t->pid);
	return rc;
}

static int inject(struct target *t, uint32_t thread, long nr, uint64_t a0,
		  uint64_t a1, uint64_t a2, uint64_t a3, long *ret,
		  struct ibcr_err *e)
{
	const uint64_t a[6] = { a0, a1, a2, a3, 0, 0 };
	long r;

	if (pt_inject_syscall(t->tids[thread], t->syscall_insn, nr, a, &r, e))
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

int capture_injected(struct target *t, struct ibcr_err *e)
{
	long scratch;
	int rc = -1;

	if (find_syscall_insn(t, e))
		return -1;
	if (inject(t, 0, SYS_mmap, 0, SCRATCH_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, &scratch, e))
		return -1;
	if (scratch < 0 && scratch > -4096)
		return ibcr_fail(e, "pid %d: mapping a scratch page inside it: %s",
				 (int)t->pid, strerror((int)-scratch));
	/* injectall.c: in every thread at once */
	if (read_sigactions_all(t, (uint64_t)scratch, e) ||
	    read_process_bits(t, (uint64_t)scratch, e) ||
	    read_threads_all(t, (uint64_t)scratch, e))
		goto out;
	if (capture_attrs(t, (uint64_t)scratch, e))
		goto out;
	rc = 0;
out:
	/* Removed even on failure: the process must not keep our page. */
	{
		struct ibcr_err e2;

		if (inject(t, 0, SYS_munmap, (uint64_t)scratch, SCRATCH_SIZE, 0, 0, NULL, &e2) &&
		    !rc)
			rc = -1, *e = e2;
	}
	return rc;
}
