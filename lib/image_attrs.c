// SPDX-License-Identifier: MIT
/*
 * The PATTRS and TATTRS sections (process and per-thread attributes):
 * encoding for the saver, decoding with every field that the restore
 * acts on checked against what the kernel accepts, so that a damaged
 * or hostile image is refused before anything changes.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "image_io.h"

_Static_assert(sizeof(struct ibcr_pattrs) == 64, "docs/image-format.md says 64 bytes");
_Static_assert(sizeof(struct ibcr_tattrs) == 240, "docs/image-format.md says 240 bytes");

#define SCHED_POLICY_MAX 7	/* SCHED_EXT */

void enc_pattrs(struct buf *b, const struct ibcr_process_state *ps)
{
	struct ibcr_pattrs rec = ps->pattrs;
	const char *cg = ps->cgroup ? ps->cgroup : "";

	rec.cgroup_len = *cg ? (uint32_t)strlen(cg) + 1 : 0;
	buf_put(b, &rec, sizeof(rec));
	buf_put(b, cg, rec.cgroup_len);
}

void enc_tattrs(struct buf *b, const struct ibcr_process_state *ps)
{
	buf_put(b, ps->tattrs, sizeof(struct ibcr_tattrs) * ps->rec.nthreads);
}

/*
 * A cgroup path is written into /sys/fs/cgroup/PATH/cgroup.procs by the
 * restore: absolute, and no component that leads anywhere else.
 */
static int cgroup_path_ok(const char *p)
{
	if (p[0] != '/')
		return 0;
	for (const char *c = p; *c; c++)
		if (c[0] == '/' && c[1] == '.' && c[2] == '.' && (c[3] == '/' || !c[3]))
			return 0;
	return !strstr(p, "//");
}

int dec_pattrs(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
	       struct ibcr_process_state *ps, struct ibcr_err *e)
{
	struct ibcr_pattrs *a = &ps->pattrs;
	const char *cg = (const char *)p + sizeof(*a);

	if (n < sizeof(*a) || ps->cgroup)
		return ibcr_fail(e, "image %s: process %u: PATTRS section too short or "
				 "repeated", path, proc);
	memcpy(a, p, sizeof(*a));
	if (a->cgroup_len != n - sizeof(*a) || a->oom_score_adj < -1000 ||
	    a->oom_score_adj > 1000 || a->stop_sig > 64 || a->thp_disable > 3 ||
	    (a->membarrier & ~(uint32_t)(IBCR_MEMBARRIER_GLOBAL_EXPEDITED |
					 IBCR_MEMBARRIER_PRIVATE_EXPEDITED |
					 IBCR_MEMBARRIER_SYNC_CORE | IBCR_MEMBARRIER_RSEQ)))
		return ibcr_fail(e, "image %s: process %u: PATTRS values out of range",
				 path, proc);
	if (a->cgroup_len && (cg[a->cgroup_len - 1] || strlen(cg) + 1 != a->cgroup_len ||
			      !cgroup_path_ok(cg)))
		return ibcr_fail(e, "image %s: process %u: PATTRS cgroup path is malformed",
				 path, proc);
	ps->cgroup = xstrdup(a->cgroup_len ? cg : "");
	return 0;
}

static int tattrs_ok(const struct ibcr_tattrs *t, const struct ibcr_thread *th)
{
	int rt = t->sched_policy == 1 || t->sched_policy == 2;

	return t->tid == th->tid && t->sched_policy <= SCHED_POLICY_MAX &&
	       t->sched_policy != 4 && t->sched_priority <= 99 &&
	       (t->sched_priority != 0) == rt && t->sched_nice >= -20 &&
	       t->sched_nice <= 19 && t->pdeath_sig <= 64 && t->util_min <= 1024 &&
	       t->util_max <= 1024;
}

int dec_tattrs(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
	       struct ibcr_process_state *ps, struct ibcr_err *e)
{
	uint32_t nt = ps->rec.nthreads;

	/* after every THREAD section: the records name their threads */
	if (!ps->threads || ps->tattrs || n != (uint64_t)nt * sizeof(struct ibcr_tattrs))
		return ibcr_fail(e, "image %s: process %u: TATTRS section out of place or "
				 "of the wrong size", path, proc);
	ps->tattrs = xcalloc(nt, sizeof(struct ibcr_tattrs));
	memcpy(ps->tattrs, p, n);
	for (uint32_t i = 0; i < nt; i++)
		if (!tattrs_ok(&ps->tattrs[i], &ps->threads[i].rec))
			return ibcr_fail(e, "image %s: process %u: thread %d: TATTRS record "
					 "malformed", path, proc, ps->tattrs[i].tid);
	return 0;
}
