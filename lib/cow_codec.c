// SPDX-License-Identifier: MIT
/*
 * The COW section (lib/image.h): which pages of a process's regions are
 * its parent's, shared copy-on-write. Encoded by the saver, decoded with
 * every bound checked against the process's own regions; the parent's
 * side (src) is checked by the loader, which has both processes.
 */
#include <string.h>

#include "buf.h"
#include "image_io.h"

void enc_cow(struct buf *b, const struct ibcr_process_state *ps)
{
	struct ibcr_cow_hdr h = { .nregions = ps->ncow, .nruns = ps->ncow_runs };

	buf_put(b, &h, sizeof(h));
	buf_put(b, ps->cow, sizeof(struct ibcr_cow_region) * ps->ncow);
	buf_put(b, ps->cow_runs, sizeof(struct ibcr_run) * ps->ncow_runs);
}

/* Runs inside the region, in order, apart from each other. */
static int runs_fit(const struct ibcr_vma *v, const struct ibcr_run *run, uint64_t n,
		    uint64_t pg)
{
	uint64_t at = v->start;

	for (uint64_t i = 0; i < n; i++) {
		if (!run[i].npages || run[i].addr < at || run[i].addr % pg ||
		    run[i].npages > (v->end - run[i].addr) / pg)
			return 0;
		at = run[i].addr + run[i].npages * pg;
	}
	return 1;
}

int dec_cow(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
	    uint32_t page_size, struct ibcr_process_state *ps, struct ibcr_err *e)
{
	struct ibcr_cow_hdr h;
	uint64_t runs = 0;

	if (!ps->vmas || ps->cow)
		return ibcr_fail(e, "image %s: process %u: COW section out of place", path, proc);
	if (n < sizeof(h))
		return ibcr_fail(e, "image %s: process %u: COW section too short", path, proc);
	memcpy(&h, p, sizeof(h));
	if (h.nregions > ps->nvmas || h.nruns > 1ull << 32 ||
	    n != sizeof(h) + h.nregions * sizeof(struct ibcr_cow_region) +
		 h.nruns * sizeof(struct ibcr_run))
		return ibcr_fail(e, "image %s: process %u: COW section size does not match "
				 "its contents", path, proc);
	ps->ncow = h.nregions;
	ps->ncow_runs = h.nruns;
	ps->cow = xcalloc(h.nregions + 1, sizeof(*ps->cow));
	ps->cow_runs = xcalloc(h.nruns + 1, sizeof(*ps->cow_runs));
	memcpy(ps->cow, p + sizeof(h), h.nregions * sizeof(*ps->cow));
	memcpy(ps->cow_runs, p + sizeof(h) + h.nregions * sizeof(*ps->cow),
	       h.nruns * sizeof(*ps->cow_runs));
	for (uint32_t i = 0; i < h.nregions; i++) {
		const struct ibcr_cow_region *c = &ps->cow[i];

		if (c->vma >= ps->nvmas || !(ps->vmas[c->vma].flags & IBCR_VMAF_COW) ||
		    ps->vmas[c->vma].kind != IBCR_VMA_ANON || (i && c->vma <= ps->cow[i - 1].vma) ||
		    c->run0 != runs || c->nruns > h.nruns - runs ||
		    !runs_fit(&ps->vmas[c->vma], ps->cow_runs + c->run0, c->nruns, page_size))
			return ibcr_fail(e, "image %s: process %u: COW record %u does not fit "
					 "its region", path, proc, i);
		runs += c->nruns;
	}
	if (runs != h.nruns)
		return ibcr_fail(e, "image %s: process %u: COW runs left over", path, proc);
	for (uint32_t i = 0, k = 0; i < ps->nvmas; i++) {
		int listed = k < h.nregions && ps->cow[k].vma == i;

		if (!!(ps->vmas[i].flags & IBCR_VMAF_COW) != listed)
			return ibcr_fail(e, "image %s: process %u: region %u's COW flag and the "
					 "COW section disagree", path, proc, i);
		k += listed;
	}
	return 0;
}
