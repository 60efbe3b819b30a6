// SPDX-License-Identifier: MIT
/*
 * Pages a forked child still shares with its parent, copy-on-write.
 * While every process is stopped, a child's private anonymous region is
 * compared with the parent's region where it starts (up to the end of
 * either: a heap grows past what it was at the fork), page by page in
 * /proc/PID/pagemap: a page present in both with the same page
 * frame is one physical page. Such a page is stored once, with the
 * parent, and listed in the child's COW section instead of its data;
 * the loader then builds the parent's region before forking the child,
 * which inherits it copy-on-write as the original did (loader/cow.c).
 * Page frames are shown to CAP_SYS_ADMIN only: without them nothing is
 * shared and every process keeps all its pages, as before. Only real
 * sharing counts: equal contents in two pages are two pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "saver.h"

#define PM_PRESENT (1ull << 63)
#define PM_PFN ((1ull << 55) - 1)
#define CHUNK 4096	/* pages read from each pagemap at a time */

/* Regions the loader can build before a fork and move into place. */
static int eligible(const struct ibcr_vma *v)
{
	return v->kind == IBCR_VMA_ANON &&
	       !(v->flags & (IBCR_VMAF_DELETED | IBCR_VMAF_GROWSDOWN | IBCR_VMAF_SHARED)) &&
	       ((v->flags & IBCR_VMAF_ACCOUNT) || (v->prot & 2 /* PROT_WRITE */));
}

static int open_pagemap(pid_t pid, struct ibcr_err *e)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		ibcr_fail_errno(e, errno, "pid %d: opening %s", (int)pid, path);
	return fd;
}

static int read_pm(int fd, pid_t pid, uint64_t addr, uint64_t n, uint64_t *pm,
		   struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize();
	ssize_t want = (ssize_t)(n * 8);

	if (pread(fd, pm, (size_t)want, (off_t)(addr / pg * 8)) != want)
		return ibcr_fail_errno(e, errno, "pid %d: reading pagemap at %#llx", (int)pid,
				       (unsigned long long)addr);
	return 0;
}

struct pair {
	struct target *c, *p;
	int cfd, pfd;
	uint64_t *cpm, *ppm;
	int no_pfns;		/* the kernel hides page frames from us */
};

/*
 * Marks in *bits the pages of v that are the parent's, up to `upto` (the
 * end of the parent's region: a child's region may have grown past it,
 * a heap after brk); returns how many, or -1.
 */
static int64_t compare(struct pair *x, const struct ibcr_vma *v, uint64_t upto,
		       uint64_t **bits, struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize(), npages = ((upto < v->end ? upto : v->end) -
							 v->start) / pg;
	int64_t shared = 0;

	*bits = xcalloc((v->end - v->start) / pg / 64 + 1, 8);
	for (uint64_t at = 0; at < npages; at += CHUNK) {
		uint64_t k = npages - at < CHUNK ? npages - at : CHUNK;

		if (read_pm(x->cfd, x->c->pid, v->start + at * pg, k, x->cpm, e) ||
		    read_pm(x->pfd, x->p->pid, v->start + at * pg, k, x->ppm, e))
			return -1;
		for (uint64_t i = 0; i < k; i++) {
			uint64_t a = x->cpm[i], b = x->ppm[i];

			if (!(a & PM_PRESENT) || !(b & PM_PRESENT))
				continue;
			if (!(a & PM_PFN)) {
				x->no_pfns = 1;
				return 0;
			}
			if ((a & PM_PFN) == (b & PM_PFN)) {
				(*bits)[(at + i) / 64] |= 1ull << ((at + i) % 64);
				shared++;
			}
		}
	}
	return shared;
}

/* The parent's region where v starts (v may end past it: grown since). */
static const struct ibcr_vma *containing(const struct target *p, const struct ibcr_vma *v,
					 uint32_t *idx)
{
	for (uint32_t i = 0; i < p->ps.nvmas; i++) {
		const struct ibcr_vma *w = &p->ps.vmas[i];

		if (w->start <= v->start && v->start < w->end && eligible(w)) {
			*idx = i;
			return w;
		}
	}
	return NULL;
}

static int child_regions(struct pair *x, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < x->c->ps.nvmas && !x->no_pfns; i++) {
		struct ibcr_vma *v = &x->c->ps.vmas[i];
		uint32_t src = 0;
		const struct ibcr_vma *w = eligible(v) ? containing(x->p, v, &src) : NULL;
		uint64_t *bits;
		int64_t n;

		if (!w)
			continue;
		n = compare(x, v, w->end, &bits, e);
		if (n <= 0 || x->no_pfns) {
			free(bits);
			if (n < 0)
				return -1;
			continue;
		}
		x->c->cow = xrealloc(x->c->cow, sizeof(*x->c->cow) * (x->c->ncow + 1));
		x->c->cow[x->c->ncow++] = (struct cow_map){ i, src, bits };
		v->flags |= IBCR_VMAF_COW;
		x->p->ps.vmas[src].flags |= IBCR_VMAF_COWSRC;
	}
	return 0;
}

static struct target *parent_of(struct target *t, uint32_t n, const struct target *c)
{
	for (uint32_t k = 0; k < n; k++)
		if (&t[k] != c && t[k].pid == c->ps.rec.ppid && !t[k].zombie)
			return &t[k];
	return NULL;
}

/* Forgets what was found: without page frames nobody shares anything. */
static void forget(struct target *t, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		for (uint32_t i = 0; i < t[k].ncow; i++)
			free(t[k].cow[i].bits);
		free(t[k].cow);
		t[k].cow = NULL;
		t[k].ncow = 0;
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++)
			t[k].ps.vmas[i].flags &= ~(uint32_t)(IBCR_VMAF_COW | IBCR_VMAF_COWSRC);
	}
}

int cow_find(struct target *t, uint32_t n, struct ibcr_err *e)
{
	struct pair x = { .cpm = xmalloc(CHUNK * 8), .ppm = xmalloc(CHUNK * 8) };
	int rc = 0;

	for (uint32_t k = 0; k < n && !rc && !x.no_pfns; k++) {
		x.c = &t[k];
		x.p = t[k].zombie ? NULL : parent_of(t, n, &t[k]);
		if (!x.p)
			continue;
		x.cfd = open_pagemap(x.c->pid, e);
		x.pfd = x.cfd < 0 ? -1 : open_pagemap(x.p->pid, e);
		rc = x.pfd < 0 ? -1 : child_regions(&x, e);
		if (x.cfd >= 0)
			close(x.cfd);
		if (x.pfd >= 0)
			close(x.pfd);
	}
	if (rc || x.no_pfns)
		forget(t, n);
	free(x.cpm);
	free(x.ppm);
	return rc;
}

/* The pages of region vma that the parent holds, or NULL. */
const uint64_t *cow_bits(const struct target *t, uint32_t vma)
{
	for (uint32_t i = 0; i < t->ncow; i++)
		if (t->cow[i].vma == vma)
			return t->cow[i].bits;
	return NULL;
}

/* The bitmaps as the COW section's records and runs. */
static void to_runs(struct target *t)
{
	uint64_t pg = (uint64_t)getpagesize(), cap = 0;
	struct ibcr_process_state *ps = &t->ps;

	ps->ncow = t->ncow;
	ps->cow = xcalloc(t->ncow + 1, sizeof(*ps->cow));
	for (uint32_t i = 0; i < t->ncow; i++) {
		const struct ibcr_vma *v = &ps->vmas[t->cow[i].vma];
		uint64_t npages = (v->end - v->start) / pg;

		ps->cow[i] = (struct ibcr_cow_region){ t->cow[i].vma, t->cow[i].src,
						       ps->ncow_runs, 0 };
		for (uint64_t p = 0; p < npages; p++) {
			struct ibcr_run *last = ps->ncow_runs ? &ps->cow_runs[ps->ncow_runs - 1] : NULL;

			if (!(t->cow[i].bits[p / 64] & (1ull << (p % 64))))
				continue;
			if (ps->cow[i].nruns && last &&
			    last->addr + last->npages * pg == v->start + p * pg) {
				last->npages++;
				continue;
			}
			if (ps->ncow_runs == cap) {
				cap = cap ? cap * 2 : 64;
				ps->cow_runs = xrealloc(ps->cow_runs, sizeof(*ps->cow_runs) * cap);
			}
			ps->cow_runs[ps->ncow_runs++] = (struct ibcr_run){ v->start + p * pg, 1 };
			ps->cow[i].nruns++;
		}
	}
}

int cow_write_section(struct target *t, uint32_t proc, struct img_writer *w,
		      struct ibcr_err *e)
{
	struct buf b = { 0 };
	int rc;

	if (!t->ncow)
		return 0;
	to_runs(t);
	enc_cow(&b, &t->ps);
	rc = imgw_section(w, IBCR_SEC_COW, proc, NULL, b.p, b.len, e);
	buf_free(&b);
	return rc;
}
