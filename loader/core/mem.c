// SPDX-License-Identifier: MIT
/*
 * Memory regions: map each at its saved address, fill it from the image
 * while checking its CRC, then give it its saved advice and protection.
 */
#include <linux/mman.h>

#include "core.h"
#include "crc32c.h"
#include "sys.h"

/* Reads are chunked so that each chunk is still in cache for its CRC. */
#define CHUNK (4ul << 20)

static int map_flags(const struct plan_vma *v)
{
	int f = MAP_FIXED;

	f |= (v->flags & IBCR_VMAF_SHARED) ? MAP_SHARED : MAP_PRIVATE;
	if (v->fd < 0)
		f |= MAP_ANONYMOUS;
	if (v->flags & IBCR_VMAF_GROWSDOWN)
		f |= MAP_GROWSDOWN;
	return f;
}

static void advise(struct plan *p, const struct plan_vma *v, int bit, int advice)
{
	long rc;

	if (!(v->madv & bit))
		return;
	rc = sys_madvise(v->start, v->end - v->start, advice);
	if (rc)
		core_die(p, "region %#lx-%#lx (%s): madvise %d: error %ld",
			 (unsigned long)v->start, (unsigned long)v->end, v->name,
			 advice, -rc);
}

static uint32_t read_run(struct plan *p, const struct plan_vma *v,
			 const struct ibcr_run *run, uint64_t *off, uint32_t crc)
{
	uint64_t len = run->npages * p->page_size;

	/*
	 * Populating the run in one call is several times faster than
	 * letting pread fault in page by page; kernels before 5.14 say
	 * EINVAL and fall back to faulting.
	 */
	sys_madvise(run->addr, len, MADV_POPULATE_WRITE);
	for (uint64_t done = 0; done < len; ) {
		uint64_t k = len - done < CHUNK ? len - done : CHUNK;
		long got = sys_pread(p->img_fd, (void *)(run->addr + done), k, *off);

		if (got <= 0)
			core_die(p, "image %s: reading region %#lx-%#lx (%s): %s %ld",
				 p->image_path, (unsigned long)v->start,
				 (unsigned long)v->end, v->name,
				 got ? "error" : "unexpected end of file at", got ? -got : (long)*off);
		crc = crc32c(crc, (void *)(run->addr + done), (size_t)got);
		done += (uint64_t)got;
		*off += (uint64_t)got;
	}
	return crc;
}

static void map_one(struct plan *p, const struct plan_vma *v)
{
	uint64_t len = v->end - v->start, off = v->data_off;
	int prot = (int)v->prot;
	uint32_t crc = 0;
	long rc;

	/* Writable while filled; the saved protection comes last. */
	if (v->data_len)
		prot |= PROT_READ | PROT_WRITE;
	rc = sys_mmap(v->start, len, prot, map_flags(v), v->fd, v->pgoff);
	if (rc != (long)v->start)
		core_die(p, "mapping region %#lx-%#lx (%s): error %ld",
			 (unsigned long)v->start, (unsigned long)v->end, v->name, -rc);
	advise(p, v, IBCR_MADV_HUGEPAGE, MADV_HUGEPAGE);
	advise(p, v, IBCR_MADV_NOHUGEPAGE, MADV_NOHUGEPAGE);
	for (uint64_t i = 0; i < v->nruns; i++)
		crc = read_run(p, v, &v->runs[i], &off, crc);
	if (crc != v->data_crc)
		core_die(p, "image %s: region %#lx-%#lx (%s): page data is corrupt "
			 "(CRC mismatch); nothing was resumed", p->image_path,
			 (unsigned long)v->start, (unsigned long)v->end, v->name);
	advise(p, v, IBCR_MADV_DONTDUMP, MADV_DONTDUMP);
	advise(p, v, IBCR_MADV_DONTFORK, MADV_DONTFORK);
	advise(p, v, IBCR_MADV_WIPEONFORK, MADV_WIPEONFORK);
	advise(p, v, IBCR_MADV_MERGEABLE, MADV_MERGEABLE);
	if (prot != (int)v->prot) {
		rc = sys_mprotect(v->start, len, (int)v->prot);
		if (rc)
			core_die(p, "protecting region %#lx-%#lx (%s): error %ld",
				 (unsigned long)v->start, (unsigned long)v->end,
				 v->name, -rc);
	}
}

void core_map_regions(struct plan *p)
{
	for (uint64_t i = 0; i < p->nvmas; i++) {
		const struct plan_vma *v = &p->vmas[i];

		if (v->kind == IBCR_VMA_SPECIAL || v->kind == IBCR_VMA_DEVICE)
			continue;	/* moved already / owned by a stage */
		map_one(p, v);
	}
}
