// SPDX-License-Identifier: MIT
/*
 * Injected system calls that the saver's death cannot turn into harm
 * (park.h). When a tracer dies the kernel detaches its tracees and they
 * run on from the registers they have: a thread set up to execute an
 * injected call would run into garbage (10 of 45 targets died so, with
 * a saver killed in its first 50 ms). A parked thread instead resumes
 * through rt_sigreturn into its own state, whatever moment it is let go:
 *
 *   stopped, parked:     pc = gadget, sp = frame    -> rt_sigreturn(frame)
 *   entry stop, swapped: orig_rax = nr, pc = gadget -> nr, then the gadget
 *   exit stop:           pc = gadget                -> rt_sigreturn(frame)
 *
 * The frame holds every register (XSAVE state too), the signal mask and
 * an alternate-stack field that rt_sigreturn is made to ignore. It lives
 * below the red zone under the thread's stack pointer, where the kernel
 * itself would write a signal frame, and the bytes there are put back
 * afterwards (and into a snapshot forked meanwhile).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "park.h"
#include "procfs.h"
#include "ptrace_util.h"
#include "saver.h"
#include "sigframe.h"

#define SCRATCH 256
#define SCAN_MAX (64u << 20)	/* bytes of code searched for a gadget at most */

static int mem_io(pid_t pid, uint64_t addr, void *buf, size_t len, int write)
{
	char path[64];
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -1;
	k = write ? pwrite(fd, buf, len, (off_t)addr) : pread(fd, buf, len, (off_t)addr);
	close(fd);
	return k == (ssize_t)len ? 0 : -1;
}

/* Searches m for a gadget (find == 1) or a syscall instruction (0). */
static uint64_t search(pid_t pid, const struct maps_entry *m, int find, size_t *budget)
{
	const size_t chunk = 1u << 20, overlap = 16;
	uint8_t *buf = xmalloc(chunk + overlap);
	uint64_t found = 0;

	for (uint64_t a = m->start; a < m->end && !found && *budget; a += chunk) {
		size_t n = m->end - a < chunk + overlap ? (size_t)(m->end - a) : chunk + overlap;
		unsigned len;
		long off;

		if (mem_io(pid, a, buf, n, 0))
			break;
		*budget = *budget > n ? *budget - n : 0;
		off = find ? arch_find_sigreturn(buf, n, &len) : arch_find_syscall_insn(buf, n);
		if (off >= 0)
			found = a + (uint64_t)off;
	}
	free(buf);
	return found;
}

static int is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && !strncmp(base + 1, "libc", 4);
}

/* [vdso] first (aarch64 has one there), libc, then any other code. */
static uint64_t find_gadget(pid_t pid, const struct maps_entry *m, size_t n)
{
	size_t budget = SCAN_MAX;
	uint64_t g = 0;

	for (int pass = 0; pass < 3 && !g; pass++)
		for (size_t i = 0; i < n && !g; i++) {
			int vdso = !strcmp(m[i].path, "[vdso]");

			if (!(m[i].prot & PROT_EXEC) || (pass == 0) != vdso ||
			    (pass == 1) != (!vdso && is_libc(m[i].path)))
				continue;
			g = search(pid, &m[i], 1, &budget);
		}
	return g;
}

int park_prepare(struct target *t, struct ibcr_err *e)
{
	struct maps_entry *m;
	size_t n, budget = SCAN_MAX;

	if (t->park_ready)
		return 0;
	if (maps_read(t->pid, 0, &m, &n, e))
		return -1;
	t->syscall_insn = 0;
	for (size_t i = 0; i < n && !t->syscall_insn; i++)
		if (!strcmp(m[i].path, "[vdso]"))
			t->syscall_insn = search(t->pid, &m[i], 0, &budget);
	t->sigreturn_gadget = ARCH_HAS_PARK ? find_gadget(t->pid, m, n) : 0;
	maps_free(m, n);
	if (!t->syscall_insn)
		return ibcr_fail(e, "pid %d: no [vdso] with a system call instruction: "
				 "cannot inject (booted with vdso=0?)", (int)t->pid);
	t->park_ready = 1;
	return 0;
}

#if ARCH_HAS_PARK
/*
 * The number of the syscall a thread is stopped in, where it is not in
 * the registers (aarch64); -1: none, so that no restart rewinds the pc.
 */
static int set_syscall_nr(pid_t tid, long nr, struct ibcr_err *e)
{
	int32_t v = (int32_t)nr;

	if (!ARCH_NT_SYSCALL)
		return 0;
	return pt_setregset(tid, ARCH_NT_SYSCALL, &v, sizeof(v), e);
}

/* The gadget is still what it was (the program's code can change). */
static int gadget_ok(const struct park *p)
{
	uint8_t code[16];
	unsigned len;

	return p->gadget && !mem_io(p->pid, p->gadget, code, sizeof(code), 0) &&
	       arch_find_sigreturn(code, sizeof(code), &len) == 0;
}

/*
 * Writes scratch, exit frame and the thread's frame below its stack
 * pointer: 1 when done, 0 when there is no room (nothing changed).
 */
static int write_frames(struct park *p, const uint8_t *fp, uint32_t fplen, uint64_t *frame)
{
	struct arch_gpregs x = p->regs;
	struct arch_thread_regs own = { (const uint8_t *)&p->regs, fp, fplen, p->mask,
					0, 0, 0, 1 };
	struct arch_thread_regs dead = { (const uint8_t *)&x, NULL, 0, ~0ull, 0, 0, 0, 1 };
	size_t fsz = (arch_frame_size(fplen) + 127) & ~(size_t)63;
	size_t xsz = (arch_frame_size(0) + 127) & ~(size_t)63;
	uint64_t top = (arch_sp(&p->regs) - ARCH_RED_ZONE) & ~63ull;
	uint8_t *area, *f;

	p->len = SCRATCH + xsz + fsz;
	p->lo = top - p->len;
	p->saved = xmalloc(p->len);
	if (top < p->len || mem_io(p->pid, p->lo, p->saved, p->len, 0))
		goto none;
	/* aligned as lo: the frame's XSAVE area must be 64-byte aligned there */
	area = xmalloc_aligned(64, p->len);
	memset(area, 0, p->len);
	arch_exit_regs(&x, p->insn);
	f = arch_build_frame_at(area + SCRATCH, p->lo + SCRATCH, &dead);
	p->exit_frame = p->lo + SCRATCH + (uint64_t)(f - (area + SCRATCH));
	f = arch_build_frame_at(area + SCRATCH + xsz, p->lo + SCRATCH + xsz, &own);
	*frame = p->lo + SCRATCH + xsz + (uint64_t)(f - (area + SCRATCH + xsz));
	p->scratch = p->lo;
	if (mem_io(p->pid, p->lo, area, p->len, 1)) {
		mem_io(p->pid, p->lo, p->saved, p->len, 1);	/* a part may be written */
		free(area);
		goto none;
	}
	free(area);
	return 1;
none:
	free(p->saved);
	p->saved = NULL;
	return 0;
}

static int park_safe(struct park *p, struct ibcr_err *e)
{
	size_t fplen = 65536;
	uint8_t *fp = xmalloc(fplen);
	struct arch_gpregs r = p->regs;
	uint64_t frame;

	if (!gadget_ok(p) || pt_getregset(p->tid, ARCH_NT_FPREGS, fp, &fplen, e) ||
	    !write_frames(p, fp, (uint32_t)fplen, &frame)) {
		free(fp);
		e->msg[0] = 0;
		return 0;
	}
	free(fp);
	arch_park_regs(&r, p->gadget, frame);
	/* registers first: from here on a detach returns through the frame */
	if (pt_setregs(p->tid, &r, e)) {
		mem_io(p->pid, p->lo, p->saved, p->len, 1);
		free(p->saved);
		p->saved = NULL;
		return -1;
	}
	p->safe = 1;
	if (set_syscall_nr(p->tid, -1, e) || pt_setsigmask(p->tid, ~0ull, e)) {
		struct ibcr_err ignored;

		park_release(p, &ignored);
		return -1;
	}
	return 1;
}
#else
static int park_safe(struct park *p, struct ibcr_err *e)
{
	(void)p;
	(void)e;
	return 0;
}
#endif

int park_thread(struct target *t, pid_t tid, struct park *p, struct ibcr_err *e)
{
	const uint64_t a[6] = { 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				(uint64_t)-1, 0 };
	long scratch;
	int rc;

	memset(p, 0, sizeof(*p));
	if (park_prepare(t, e))
		return -1;
	p->pid = t->pid;
	p->tid = tid;
	p->gadget = t->sigreturn_gadget;
#if ARCH_HAS_PARK
	if (p->gadget && !gadget_ok(p)) {	/* found before the freeze; code moved since */
		t->park_ready = 0;
		if (park_prepare(t, e))
			return -1;
		p->gadget = t->sigreturn_gadget;
	}
#endif
	p->insn = t->syscall_insn;
	if (pt_getregs(tid, &p->regs, e) || pt_getsigmask(tid, &p->mask, e))
		return -1;
	rc = park_safe(p, e);
	if (rc)
		return rc < 0 ? -1 : 0;
	/* the old way: a scratch page of its own, mapped and removed by injection */
	if (pt_inject_syscall(tid, p->insn, SYS_mmap, a, &scratch, e))
		return -1;
	if (scratch < 0 && scratch > -4096)
		return ibcr_fail(e, "pid %d: mapping a scratch page inside it: %s",
				 (int)t->pid, strerror((int)-scratch));
	p->scratch = (uint64_t)scratch;
	return 0;
}

/*
 * IBCR_SAVER_DIE=N (tests only, t_saverkill): the saver kills itself
 * with SIGKILL at the N-th of the three moments of every parked call
 * (parked, call swapped in, call done), so that each can be shown
 * harmless without relying on timing.
 */
static __attribute__((unused)) void die_point(void)
{
	static long left = -1;

	if (left == -1) {
		const char *v = getenv("IBCR_SAVER_DIE");

		left = v && *v ? atol(v) : 0;
		if (!left)
			left = -2;	/* off */
	}
	if (left > 0 && !--left)
		kill(getpid(), SIGKILL);
}

#if ARCH_HAS_PARK
/* At the entry stop of its rt_sigreturn, with nr swapped in: not resumed. */
static int park_swap(struct park *p, long nr, const uint64_t a[6], struct ibcr_err *e)
{
	struct arch_gpregs r;
	int entry;
	long v;

	die_point();
	if (pt_syscall_stop(p->tid, &entry, &v, NULL, e))
		return -1;
	if (!entry || v != ARCH_NR_SIGRETURN)
		return ibcr_fail(e, "thread %d: the parked thread did not enter its "
				 "rt_sigreturn (%s %ld)", p->tid, entry ? "entered" : "left", v);
	if (pt_getregs(p->tid, &r, e))
		return -1;
	arch_park_syscall(&r, p->gadget, nr, a);
	if (pt_setregs(p->tid, &r, e) || set_syscall_nr(p->tid, nr, e))
		return -1;
	die_point();
	return 0;
}
#endif

int park_begin(struct park *p, long nr, const uint64_t a[6], struct ibcr_err *e)
{
	p->nr = nr;
	if (!p->safe)
		return pt_inject_begin(p->tid, p->insn, nr, a, &p->in, e);
#if ARCH_HAS_PARK
	if (park_swap(p, nr, a, e))
		return -1;
	if (ptrace(PTRACE_SYSCALL, p->tid, NULL, NULL))
		return ibcr_fail_errno(e, errno, "thread %d: PTRACE_SYSCALL", p->tid);
	return 0;
#else
	return ibcr_fail(e, "thread %d: parked on an architecture without parking", p->tid);
#endif
}

/*
 * A held thread waits at the entry stop of its rt_sigreturn with a
 * timed wait for no signal swapped in: while the saver lives it stays
 * stopped there, the wait not begun; the saver's death lets it go into
 * that wait first (all its signals blocked, nothing restarts it), then
 * through the gadget into its own state. Its own code runs ms later.
 */
int park_hold(struct park *p, unsigned ms, struct ibcr_err *e)
{
#if ARCH_HAS_PARK
	/* the timeout, then an empty signal set */
	int64_t w[3] = { ms / 1000, (int64_t)(ms % 1000) * 1000000, 0 };
	const uint64_t a[6] = { p->scratch + 16, 0, p->scratch, 8, 0, 0 };

	if (!p->safe)
		return 0;	/* the old way holds nothing */
	if (mem_io(p->pid, p->scratch, w, sizeof(w), 1))
		return ibcr_fail_errno(e, errno, "thread %d: writing its wait's timeout at %#llx",
				       p->tid, (unsigned long long)p->scratch);
	p->nr = SYS_rt_sigtimedwait;
	return park_swap(p, SYS_rt_sigtimedwait, a, e);
#else
	(void)p;
	(void)ms;
	(void)e;
	return 0;
#endif
}

/* The held wait swapped for a getpid; the thread parked again after it. */
int park_unhold(struct park *p, struct ibcr_err *e)
{
#if ARCH_HAS_PARK
	const uint64_t a[6] = { 0 };
	struct arch_gpregs r;
	long ret;

	if (!p->safe)
		return 0;
	if (pt_getregs(p->tid, &r, e))
		return -1;
	arch_park_syscall(&r, p->gadget, SYS_getpid, a);
	p->nr = SYS_getpid;
	if (pt_setregs(p->tid, &r, e) || set_syscall_nr(p->tid, SYS_getpid, e))
		return -1;
	if (ptrace(PTRACE_SYSCALL, p->tid, NULL, NULL))
		return ibcr_fail_errno(e, errno, "thread %d: PTRACE_SYSCALL", p->tid);
	return park_end(p, &ret, NULL, e);
#else
	(void)p;
	(void)e;
	return 0;
#endif
}

int park_end(struct park *p, long *ret, unsigned long *event, struct ibcr_err *e)
{
	int entry;
	long v;

	if (!p->safe)
		return pt_inject_end(&p->in, ret, event, e);
	if (pt_wait_syscall_stop(p->tid, &entry, &v, event, e))
		return -1;
	die_point();
	if (entry)
		return ibcr_fail(e, "thread %d: injected syscall %ld did not finish", p->tid,
				 p->nr);
	*ret = v;
	return 0;
}

int park_call(struct park *p, long nr, const uint64_t a[6], long *ret,
	      unsigned long *event, struct ibcr_err *e)
{
	if (park_begin(p, nr, a, e))
		return -1;
	return park_end(p, ret, event, e);
}

int park_release(struct park *p, struct ibcr_err *e)
{
	const uint64_t a[6] = { p->scratch, 4096, 0, 0, 0, 0 };
	int rc = 0;
	long r;

	if (!p->safe) {
		if (p->scratch && pt_inject_syscall(p->tid, p->insn, SYS_munmap, a, &r, e))
			rc = -1;
		p->scratch = 0;
		return rc;
	}
	/* the mask first: until the registers are back, the frame has it too */
	if (pt_setsigmask(p->tid, p->mask, e) || pt_setregs(p->tid, &p->regs, e))
		rc = -1;
	if (!rc && mem_io(p->pid, p->lo, p->saved, p->len, 1))
		rc = ibcr_fail_errno(e, errno, "thread %d: putting back %zu bytes of its "
				     "stack at %#llx", p->tid, p->len,
				     (unsigned long long)p->lo);
	free(p->saved);
	p->saved = NULL;
	p->safe = 0;
	return rc;
}

uint64_t park_copy_sp(const struct park *p)
{
#if ARCH_HAS_PARK
	if (p->safe)
		return arch_frame_sp(p->exit_frame);
#endif
	(void)p;
	return 0;
}

int park_restore_copy(const struct park *p, pid_t pid, struct ibcr_err *e)
{
	if (!p->safe || !p->saved)
		return 0;
	if (mem_io(pid, p->lo, p->saved, p->len, 1))
		return ibcr_fail_errno(e, errno, "pid %d: putting back %zu bytes of the stack "
				       "at %#llx in its copy %d", (int)p->pid, p->len,
				       (unsigned long long)p->lo, (int)pid);
	return 0;
}
