// SPDX-License-Identifier: MIT
/*
 * Pages a child shares copy-on-write with its parent (the image's COW
 * sections, saver/cow.c) are shared again the only way there is: by
 * fork. Each region that gives pages to children (COWSRC) or takes
 * some from its parent (COW) is built by its process's musl part at a
 * temporary place before that process forks its children, and its core
 * moves it into place with mremap, which keeps pages and their sharing:
 * - a giving region is mapped there and filled with its pages;
 * - a taking region is its parent's temporary copy of the region where
 *   it starts, moved over (the child inherited it with the fork) and
 *   grown to its own length if it grew past it (a heap): its own
 *   pages are dropped where it had none or other ones (MADV_DONTNEED),
 *   then its stored pages written, which breaks the sharing exactly
 *   where the original had broken it. A region that both takes and
 *   gives (a child with children of its own) is built that way first,
 *   then its children inherit it in turn.
 * Temporary places are chosen by the top loader, free in every saved
 * layout and reserved (PROT_NONE) until used, so nothing else lands
 * there; a process drops the ones that are neither its own nor its
 * descendants'. Its core keeps its own, moves them, and unmaps the rest.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"

#define COW_FLAGS (IBCR_VMAF_COW | IBCR_VMAF_COWSRC)

static const struct ibcr_cow_region *record_of(const struct ibcr_process_state *ps,
					       uint32_t vma)
{
	for (uint32_t i = 0; i < ps->ncow; i++)
		if (ps->cow[i].vma == vma)
			return &ps->cow[i];
	return NULL;
}

static uint64_t last_end(const struct ibcr_process_state *ps, const struct ibcr_cow_region *c)
{
	const struct ibcr_run *r = &ps->cow_runs[c->run0 + c->nruns - 1];

	return r->addr + r->npages * (uint64_t)getpagesize();
}

/* The image's COW records agree with the regions of both processes. */
static int check_job(const struct job *j, uint32_t k, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = &j[k].ps;

	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i], *w;
		const struct ibcr_cow_region *c;
		const struct ibcr_process_state *pp;

		if (!(v->flags & IBCR_VMAF_COW))
			continue;
		c = record_of(ps, i);
		pp = j[k].parent >= 0 ? &j[j[k].parent].ps : NULL;
		w = c && pp && c->src < pp->nvmas ? &pp->vmas[c->src] : NULL;
		if (!w || !(w->flags & IBCR_VMAF_COWSRC) || w->kind != IBCR_VMA_ANON ||
		    w->start > v->start || w->end <= v->start ||
		    (c->nruns && last_end(ps, c) > w->end))
			return ibcr_fail(e, "image %s: pid %d: region %#llx-%#llx shares pages "
					 "with a region its parent does not have",
					 j[k].rs.r->path, (int)ps->rec.pid,
					 (unsigned long long)v->start, (unsigned long long)v->end);
	}
	return 0;
}

int cow_prepare(struct job *j, uint32_t n, struct ibcr_err *e)
{
	const struct ibcr_process_state **all =
		xmalloc(sizeof(*all) * (n + 1));	// NOLINT(bugprone-sizeof-expression): of pointers
	int rc = 0;

	for (uint32_t k = 0; k < n; k++)
		all[k] = &j[k].ps;
	for (uint32_t k = 0; k < n && !rc; k++) {
		const struct ibcr_process_state *ps = &j[k].ps;
		uint64_t *at = xcalloc(ps->nvmas + 1, sizeof(*at));

		j[k].rs.cow_at = at;
		rc = check_job(j, k, e);
		for (uint32_t i = 0; i < ps->nvmas && !rc; i++) {
			uint64_t len = ps->vmas[i].end - ps->vmas[i].start;

			if (!(ps->vmas[i].flags & COW_FLAGS))
				continue;
			if (find_free(all, n, len, &at[i], e))
				rc = -1;
			else if (mmap((void *)(uintptr_t)at[i], len, PROT_NONE,
				      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				      MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED)
				rc = ibcr_fail_errno(e, errno, "reserving %llu bytes at %#llx to "
						     "rebuild shared pages",
						     (unsigned long long)len,
						     (unsigned long long)at[i]);
		}
	}
	free(all);
	return rc;
}

/* Drops the pages of the taking region at `to` that are not its parent's. */
static int keep_inherited(const struct ibcr_process_state *ps, const struct ibcr_vma *v,
			  const struct ibcr_cow_region *c, uint64_t to)
{
	uint64_t from = v->start;

	for (uint64_t r = c->run0; r <= c->run0 + c->nruns; r++) {
		uint64_t pg = (uint64_t)getpagesize();
		uint64_t upto = r < c->run0 + c->nruns ? ps->cow_runs[r].addr : v->end;

		if (upto > from &&
		    madvise((void *)(uintptr_t)(to + (from - v->start)), upto - from, MADV_DONTNEED))
			return -1;
		if (r < c->run0 + c->nruns)
			from = ps->cow_runs[r].addr + ps->cow_runs[r].npages * pg;
	}
	return 0;
}

static int build_one(const struct job *j, uint32_t k, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = &j[k].ps;
	const struct ibcr_vma *v = &ps->vmas[i];
	uint64_t to = j[k].rs.cow_at[i], len = v->end - v->start;
	void *got;

	if (v->flags & IBCR_VMAF_COW) {
		const struct ibcr_cow_region *c = record_of(ps, i);
		const struct job *p = &j[j[k].parent];
		const struct ibcr_vma *w = &p->ps.vmas[c->src];
		uint64_t from = p->rs.cow_at[c->src] + (v->start - w->start);
		/* grown past the parent's region (a heap): the rest is new, zero */
		uint64_t have = (w->end < v->end ? w->end : v->end) - v->start;

		got = mremap((void *)(uintptr_t)from, have, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			     (void *)(uintptr_t)to);
		if (got != MAP_FAILED && keep_inherited(ps, v, c, to))
			return ibcr_fail_errno(e, errno, "pid %d: region %#llx-%#llx: dropping "
					       "the pages it did not share", (int)ps->rec.pid,
					       (unsigned long long)v->start,
					       (unsigned long long)v->end);
	} else {
		got = mmap((void *)(uintptr_t)to, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
			   ((v->flags & IBCR_VMAF_NORESERVE) ? MAP_NORESERVE : 0), -1, 0);
	}
	if (got != (void *)(uintptr_t)to)
		return ibcr_fail_errno(e, errno, "pid %d: region %#llx-%#llx: %s at %#llx",
				       (int)ps->rec.pid, (unsigned long long)v->start,
				       (unsigned long long)v->end,
				       (v->flags & IBCR_VMAF_COW) ? "taking over its parent's pages"
								  : "building it",
				       (unsigned long long)to);
	/* huge pages where the program asked for them, as the core would */
	if (v->madv & IBCR_MADV_HUGEPAGE)
		madvise((void *)(uintptr_t)to, len, MADV_HUGEPAGE);
	return v->data_len ? region_fill_at(&j[k], i, to, e) : 0;
}

static int is_descendant(const struct job *j, uint32_t x, uint32_t of)
{
	for (int p = (int)x; p >= 0; p = j[p].parent)
		if ((uint32_t)p == of)
			return 1;
	return 0;
}

int cow_build(const struct job *j, uint32_t n, uint32_t k, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < j[k].ps.nvmas; i++)
		if (j[k].rs.cow_at[i] && build_one(j, k, i, e))
			return -1;
	/* what ancestors built, and others' places: not ours to keep */
	for (uint32_t x = 0; x < n; x++)
		for (uint32_t i = 0; !is_descendant(j, x, k) && i < j[x].ps.nvmas; i++)
			if (j[x].rs.cow_at && j[x].rs.cow_at[i])
				munmap((void *)(uintptr_t)j[x].rs.cow_at[i],
				       j[x].ps.vmas[i].end - j[x].ps.vmas[i].start);
	return 0;
}

void cow_build_or_fail(const struct job *j, uint32_t n, uint32_t k)
{
	struct ibcr_err e = { "" };

	if (j[k].rs.cow_at && cow_build(j, n, k, &e))
		child_fail(j[k].rs.status_fd, &e);
}

uint64_t cow_source(const struct restore *rs, uint32_t vma)
{
	return rs->cow_at ? rs->cow_at[vma] : 0;
}
