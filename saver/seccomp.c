// SPDX-License-Identifier: MIT
/*
 * Seccomp filters of every thread, read with PTRACE_SECCOMP_GET_FILTER
 * (index 0 is the oldest) and PTRACE_GET_SECCOMP_METADATA (its LOG
 * flag), into the filter tree the image keeps (lib/image.h): a thread's
 * filters are a chain, newest to oldest, and the kernel shares chains
 * between threads (TSYNC, clone) and processes (fork). Nothing tells a
 * shared filter from an equal one installed twice, so equal filters on
 * equal chains become one record; docs/design-notes.md says what the restore
 * makes of it.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>

#include "buf.h"
#include "saver.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif
#ifndef PTRACE_SECCOMP_GET_METADATA
#define PTRACE_SECCOMP_GET_METADATA 0x420d
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif

struct seccomp_md {
	uint64_t filter_off;
	uint64_t flags;
};

/*
 * A filter that can answer SECCOMP_RET_USER_NOTIF hands system calls to
 * a listener, a descriptor of some supervisor: that cannot be made again.
 */
static int notifies(const struct sock_filter *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (f[i].code == (BPF_RET | BPF_K) &&
		    (f[i].k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF)
			return 1;
	return 0;
}

/* The record for (prev, flags, program): an equal one, or a new one. */
static uint32_t node_of(struct ibcr_priv *pv, uint32_t prev, uint32_t flags,
			const struct sock_filter *f, uint32_t n)
{
	for (uint32_t i = 0; i < pv->nfilters; i++) {
		const struct ibcr_seccomp_filter *x = &pv->filters[i];

		if (x->prev == prev && x->flags == flags && x->ninsns == n &&
		    !memcmp(pv->insns + x->insn0, f, (size_t)n * 8))
			return i + 1;
	}
	pv->filters = xrealloc(pv->filters, sizeof(*pv->filters) * (pv->nfilters + 1));
	pv->insns = xrealloc(pv->insns, 8 * ((size_t)pv->ninsns + n));
	memcpy(pv->insns + pv->ninsns, f, (size_t)n * 8);
	pv->filters[pv->nfilters] = (struct ibcr_seccomp_filter){ prev, flags, pv->ninsns, n };
	pv->ninsns += n;
	return ++pv->nfilters;
}

/* Filter k of thread tid, or 0 when it has no more; -1 on error. */
static int read_filter(struct target *t, pid_t tid, uint32_t k, uint32_t *node,
		       struct ibcr_err *e)
{
	struct seccomp_md md = { k, 0 };
	struct sock_filter *f;
	long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)(uintptr_t)k, NULL);

	if (n < 0 && errno == ENOENT)
		return 0;
	if (n <= 0 || n > 4096)
		return ibcr_fail_errno(e, n < 0 ? errno : EINVAL, "pid %d thread %d: reading "
				       "seccomp filter %u", (int)t->pid, (int)tid, k);
	f = xmalloc((size_t)n * sizeof(*f));
	if (ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)(uintptr_t)k, f) != n ||
	    ptrace(PTRACE_SECCOMP_GET_METADATA, tid, (void *)sizeof(md), &md) < 0) {
		free(f);
		return ibcr_fail_errno(e, errno, "pid %d thread %d: reading seccomp filter %u",
				       (int)t->pid, (int)tid, k);
	}
	if (notifies(f, (uint32_t)n)) {
		free(f);
		return ibcr_fail(e, "pid %d thread %d: its seccomp filter %u can hand system "
				 "calls to a listener (SECCOMP_RET_USER_NOTIF): not supported",
				 (int)t->pid, (int)tid, k);
	}
	*node = node_of(&t->ps.priv, *node, (uint32_t)(md.flags & SECCOMP_FILTER_FLAG_LOG),
			f, (uint32_t)n);
	free(f);
	return 1;
}

int capture_seccomp(struct target *t, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < t->nthreads; i++) {
		struct ibcr_creds *c = &t->ps.priv.creds[i];
		uint32_t node = 0, k = 0;
		int rc;

		if (c->seccomp != IBCR_SECCOMP_FILTER)
			continue;
		while ((rc = read_filter(t, t->tids[i], k, &node, e)) > 0)
			k++;
		if (rc < 0)
			return -1;
		if (!node)
			return ibcr_fail(e, "pid %d thread %d: in seccomp filter mode without "
					 "a filter", (int)t->pid, (int)t->tids[i]);
		c->filter = node;
	}
	return 0;
}
