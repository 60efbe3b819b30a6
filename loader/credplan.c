// SPDX-License-Identifier: MIT
/*
 * Each thread's credentials and seccomp filters in the restore plan, for
 * the core (freestanding/core/creds.c). Filters come back as the tree the
 * kernel had: the filters every thread of the process has, oldest first
 * (what TSYNC, or threads created after an install, share), are
 * installed once, by one thread, with SECCOMP_FILTER_FLAG_TSYNC, which
 * gives the very same filters to all; then each thread installs the rest
 * of its own chain. The loader runs that thread first (plan
 * first_thread). TSYNC also gives the caller's no_new_privs to all, so
 * it is a thread without no_new_privs if there is one. A filter shared
 * by some threads but not all comes back as one copy per thread:
 * docs/design-notes.md.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/capability.h>

#include "buf.h"
#include "loader.h"

#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC 1u
#endif

/* A thread's filters, oldest first; *n of them. Caller frees. */
static uint32_t *chain_of(const struct ibcr_priv *pv, uint32_t i, uint32_t *n)
{
	uint32_t len = 0, *out;

	for (uint32_t f = pv->creds[i].filter; f; f = pv->filters[f - 1].prev)
		len++;
	out = xmalloc(sizeof(uint32_t) * (len + 1));
	*n = len;
	for (uint32_t f = pv->creds[i].filter; f; f = pv->filters[f - 1].prev)
		out[--len] = f - 1;
	return out;
}

/* How many filters, from the oldest, every thread has. */
static uint32_t common_filters(const struct ibcr_priv *pv, uint32_t **chains, const uint32_t *len)
{
	uint32_t k = len[0];

	for (uint32_t i = 1; i < pv->hdr.nthreads; i++) {
		uint32_t m = 0;

		while (m < k && m < len[i] && chains[i][m] == chains[0][m])
			m++;
		k = m;
	}
	return k;
}

size_t creds_plan_size(const struct restore *rs)
{
	const struct ibcr_priv *pv = &rs->ps->priv;

	return (size_t)pv->hdr.nthreads * (sizeof(struct plan_creds) + 16 +
					   (pv->nfilters + 1) * sizeof(struct plan_filter)) +
	       4 * (size_t)pv->hdr.ngroups + 8 * (size_t)pv->ninsns + strlen(pv->root) + 64;
}

static void plan_filters(struct plan_creds *pc, struct arena *a, const struct ibcr_priv *pv,
			 const uint64_t *insns, const uint32_t *chain, uint32_t from,
			 uint32_t len, uint32_t tsync)
{
	struct plan_filter *f = arena_take(a, sizeof(*f) * (len - from + 1), 8);

	for (uint32_t k = from; k < len; k++) {
		const struct ibcr_seccomp_filter *x = &pv->filters[chain[k]];

		f[k - from] = (struct plan_filter){ insns + x->insn0, x->ninsns,
						    x->flags | (k < tsync ? SECCOMP_FILTER_FLAG_TSYNC : 0) };
	}
	pc->filters = f;
	pc->nfilters = len - from;
}

/* The thread that installs the shared filters: one without no_new_privs if any. */
static uint32_t installer(const struct ibcr_priv *pv)
{
	for (uint32_t i = 0; i < pv->hdr.nthreads; i++)
		if (!(pv->creds[i].flags & IBCR_CREDF_NO_NEW_PRIVS))
			return i;
	return 0;
}

void plan_creds(struct plan *p, struct arena *a, const struct restore *rs)
{
	const struct ibcr_priv *pv = &rs->ps->priv;
	uint32_t n = pv->hdr.nthreads, shared = 0, first = installer(pv);
	uint32_t **chains = xcalloc(n, sizeof(*chains)), *len = xcalloc(n, sizeof(*len));
	uint32_t *groups = arena_take(a, 4 * (size_t)pv->hdr.ngroups + 4, 8);
	uint64_t *insns = arena_take(a, 8 * (size_t)pv->ninsns + 8, 8);
	int all_filtered = 1;

	memcpy(groups, pv->groups, 4 * (size_t)pv->hdr.ngroups);
	memcpy(insns, pv->insns, 8 * (size_t)pv->ninsns);
	for (uint32_t i = 0; i < n; i++) {
		chains[i] = chain_of(pv, i, &len[i]);
		all_filtered &= pv->creds[i].seccomp == IBCR_SECCOMP_FILTER;
	}
	if (all_filtered)
		shared = common_filters(pv, chains, len);
	for (uint32_t i = 0; i < n; i++) {
		const struct ibcr_creds *c = &pv->creds[i];
		struct plan_creds *pc = arena_take(a, sizeof(*pc), 8);

		*pc = (struct plan_creds){
			.eff = c->cap_eff, .prm = c->cap_prm, .inh = c->cap_inh,
			.bnd = c->cap_bnd, .amb = c->cap_amb, .securebits = c->securebits,
			.flags = rs->cred_flags[i], .seccomp = c->seccomp,
			.ngroups = c->ngroups, .groups = groups + c->group0,
		};
		memcpy(pc->uid, c->uid, sizeof(pc->uid));
		memcpy(pc->gid, c->gid, sizeof(pc->gid));
		/* the installer: the shared ones with TSYNC, then its own */
		plan_filters(pc, a, pv, insns, chains[i], shared && i == first ? 0 : shared,
			     len[i], shared && i == first ? shared : 0);
		p->threads[i].creds = pc;
		free(chains[i]);
	}
	free(chains);
	free(len);
	p->first_thread = shared ? first : 0;
	p->dumpable = pv->hdr.dumpable;
	p->root = NULL;
	if (strcmp(pv->root, "/"))
		p->root = strcpy(arena_take(a, strlen(pv->root) + 1, 1), pv->root);
	if (rs->seccomp)
		p->flags |= PLAN_SECCOMP;
}

/*
 * Whether every thread can share the main thread's credentials, as
 * threads do that never changed them one by one: the kernel compares the
 * very credentials (not their values) of the thread that opened an
 * RDMA device or rdma_cm descriptor with those of each thread that
 * writes to it (ib_safe_file_access), so threads given equal but
 * separate credentials get EACCES there. Shared, the main thread sets
 * them once before it makes the others, who inherit them
 * (freestanding/core/creds.c). Not when the values differ, when capabilities
 * come last (after filters that need CAP_SYS_ADMIN), when they lack
 * what clone3 needs for the saved TIDs, or when a thread's scheduling
 * needs a privilege they lack: it sets that after them. Either way the
 * core changes nothing that is already as saved, so a restore by the
 * program's own user keeps the loader's shared credentials.
 */
static int same_creds(const struct ibcr_priv *pv, const struct restore *rs, uint32_t i)
{
	const struct ibcr_creds *a = &pv->creds[0], *b = &pv->creds[i];

	return !memcmp(a->uid, b->uid, sizeof(a->uid)) && !memcmp(a->gid, b->gid, sizeof(a->gid)) &&
	       a->cap_eff == b->cap_eff && a->cap_prm == b->cap_prm && a->cap_inh == b->cap_inh &&
	       a->cap_bnd == b->cap_bnd && a->cap_amb == b->cap_amb &&
	       a->securebits == b->securebits && a->ngroups == b->ngroups &&
	       !memcmp(pv->groups + a->group0, pv->groups + b->group0, 4 * (size_t)a->ngroups) &&
	       (a->flags & IBCR_CREDF_NO_NEW_PRIVS) == (b->flags & IBCR_CREDF_NO_NEW_PRIVS) &&
	       rs->cred_flags[i] == rs->cred_flags[0];
}

static int sched_needs_privilege(const struct plan_thread *t, int loader_nice)
{
	const struct ibcr_tattrs *a = &t->attrs;

	return t->has_attrs &&
	       (a->sched_nice < loader_nice || (a->flags & IBCR_TATTRF_UCLAMP) ||
		a->sched_policy == SCHED_FIFO || a->sched_policy == SCHED_RR ||
		a->sched_policy == 6 /* SCHED_DEADLINE */);
}

void plan_creds_shared(struct plan *p, const struct restore *rs)
{
	const struct ibcr_priv *pv = &rs->ps->priv;
	int nice;

	const uint64_t eff = pv->creds[0].cap_eff;

	/* clone3 with a chosen TID needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE */
	if (!p->threads[0].creds || pv->hdr.nthreads != p->nthreads ||
	    (rs->cred_flags[0] & PLAN_CRED_LATE_CAPS) ||
	    ((p->flags & PLAN_EXACT_TIDS) &&
	     !(eff >> CAP_SYS_ADMIN & 1) && !(eff >> CAP_CHECKPOINT_RESTORE & 1)))
		return;
	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	if (nice == -1 && errno)
		return;
	for (uint32_t i = 0; i < p->nthreads; i++)
		if ((i && !same_creds(pv, rs, i)) ||
		    (sched_needs_privilege(&p->threads[i], nice) &&
		     !(pv->creds[i].cap_eff >> CAP_SYS_NICE & 1)))
			return;
	p->flags |= PLAN_CREDS_SHARED;
}
