// SPDX-License-Identifier: MIT
/*
 * A thread stopped inside an rseq critical section. Stopping it
 * preempted it, so the kernel aborts the section when the thread next
 * returns to user space: it moves the program counter to the section's
 * abort handler and clears rseq_cs, or kills the thread with SIGSEGV if
 * the descriptor is invalid. A restored thread would not be aborted: its
 * registration is new, the kernel clears rseq_cs as it registers it
 * (from the restore code, outside the section) and the thread resumes in
 * the middle of the section. So the saver does now what the kernel would
 * do at the resume, to the live thread and to its image alike.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "ptrace_util.h"
#include "saver.h"

/* struct rseq and struct rseq_cs (linux/rseq.h), the parts read here */
#define RSEQ_CS_OFF 8
#define RSEQ_FLAGS_OFF 16
#define RSEQ_NO_RESTART_FLAGS 0x7	/* deprecated: the kernel refuses them */

struct rseq_cs_desc {
	uint32_t version, flags;
	uint64_t start_ip, post_commit_offset, abort_ip;
};

static int write_target(struct target *t, uint64_t addr, const void *buf, size_t len,
			struct ibcr_err *e)
{
	if (pwrite(t->memfd, buf, len, (off_t)addr) == (ssize_t)len)
		return 0;
	return ibcr_fail_errno(e, errno, "pid %d: writing memory at %#llx", (int)t->pid,
			       (unsigned long long)addr);
}

/*
 * The checks of the kernel's rseq_get_rseq_cs(), which kills on failure;
 * reads the descriptor into *d.
 */
static const char *desc_invalid(struct target *t, const struct ibcr_thread *rec,
				uint64_t ptr, struct rseq_cs_desc *d)
{
	struct ibcr_err ignored;
	uint32_t sig, tflags;

	if (ptr >= ARCH_TASK_TOP)
		return "out of range";
	if (read_target(t, ptr, d, sizeof(*d), &ignored) ||
	    read_target(t, rec->rseq_ptr + RSEQ_FLAGS_OFF, &tflags, sizeof(tflags), &ignored))
		return "cannot be read";
	if (d->version > 0 || d->start_ip >= ARCH_TASK_TOP ||
	    d->start_ip + d->post_commit_offset >= ARCH_TASK_TOP ||
	    d->start_ip + d->post_commit_offset < d->start_ip ||
	    d->abort_ip >= ARCH_TASK_TOP)
		return "out of range";
	if (d->abort_ip - d->start_ip < d->post_commit_offset)
		return "its abort handler is inside it";
	if ((d->flags | tflags) & RSEQ_NO_RESTART_FLAGS)
		return "it asks not to be restarted";
	if (read_target(t, d->abort_ip - 4, &sig, sizeof(sig), &ignored) ||
	    sig != rec->rseq_sig)
		return "no registered signature before its abort handler";
	return NULL;
}

int rseq_fixup(struct target *t, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_thread_state *ts = &t->ps.threads[i];
	struct arch_gpregs *r = (struct arch_gpregs *)ts->gpregs;
	uint64_t base = ts->rec.rseq_ptr, ptr = 0;
	const uint64_t zero = 0;
	struct rseq_cs_desc d;
	const char *why;

	if (!base)
		return 0;
	if (read_target(t, base + RSEQ_CS_OFF, &ptr, sizeof(ptr), e))
		return -1;
	if (!ptr)
		return 0;
	why = desc_invalid(t, &ts->rec, ptr, &d);
	if (why)
		return ibcr_fail(e, "pid %d thread %d: its rseq critical section at %#llx is "
				 "invalid (%s): the kernel kills it with SIGSEGV when it "
				 "resumes", (int)t->pid, (int)t->tids[i],
				 (unsigned long long)ptr, why);
	/* outside the section the kernel only clears the pointer */
	if (arch_pc(r) - d.start_ip < d.post_commit_offset) {
		/* a system call to restart there is not restarted: the abort wins */
		arch_set_pc(r, d.abort_ip);
		ts->rec.syscall_nr = -1;
		if (pt_setregs(t->tids[i], r, e))
			return -1;
	}
	return write_target(t, base + RSEQ_CS_OFF, &zero, sizeof(zero), e);
}
