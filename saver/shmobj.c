// SPDX-License-Identifier: MIT
/*
 * Shared memory objects across the image's processes: which regions are
 * one object (a file's read-only mappings join the object its writers
 * make of it) and which region holds each part of an object's data, the
 * others referring to it (SHMREF), so that it is saved once.
 */
#include <sys/sysmacros.h>

#include "buf.h"
#include "saver.h"

static const struct ibcr_vma *named(const struct target *t, uint32_t n, uint64_t dev,
				    uint64_t ino)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++)
			if ((t[k].ps.vmas[i].flags & IBCR_VMAF_NAMED) &&
			    t[k].ps.vmas[i].file_dev == dev && t[k].ps.vmas[i].file_ino == ino)
				return &t[k].ps.vmas[i];
	return NULL;
}

/*
 * A reader that maps a file read-only sees the content a writer in the
 * image changed: its mapping must come back on the restored content too,
 * without the size and mtime check that the writing invalidates.
 */
void shm_join_named(struct target *t, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++) {
			struct ibcr_vma *v = &t[k].ps.vmas[i];
			uint64_t dev = ((uint64_t)major((dev_t)v->file_dev) << 32) |
				       minor((dev_t)v->file_dev);
			const struct ibcr_vma *w;

			if (v->kind != IBCR_VMA_FILE || !(v->flags & IBCR_VMAF_SHARED) ||
			    !(w = named(t, n, dev, v->file_ino)))
				continue;
			v->kind = IBCR_VMA_SHMEM;
			v->flags |= IBCR_VMAF_NAMED;
			v->file_dev = dev;
			v->file_size = w->file_size;
			v->file_mode = w->file_mode;
		}
}

/*
 * The parts of shared objects saved so far, in this image: a region of an
 * object whose range is saved already saves nothing (IBCR_VMAF_SHMREF).
 * A static list: one saver run writes one image.
 */
static struct saved_shm {
	uint64_t dev, ino, from, to;	/* object and byte range in it */
} *saved_shm;
static size_t nsaved_shm;

static int shm_saved_already(const struct ibcr_vma *v)
{
	uint64_t from = v->pgoff, to = v->pgoff + (v->end - v->start);

	for (size_t i = 0; i < nsaved_shm; i++)
		if (saved_shm[i].dev == v->file_dev && saved_shm[i].ino == v->file_ino &&
		    saved_shm[i].from <= from && saved_shm[i].to >= to)
			return 1;
	saved_shm = xrealloc(saved_shm, sizeof(*saved_shm) * (nsaved_shm + 1));
	saved_shm[nsaved_shm++] = (struct saved_shm){ v->file_dev, v->file_ino, from, to };
	return 0;
}

/*
 * Which regions of shared objects hold their data (the first that maps
 * each range) and which refer to it (SHMREF): decided once, before the
 * freeze ends, since the freeze copies the data of the former (shmsnap.c).
 */
void shm_decide_refs(struct target *t, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++)
			if (t[k].ps.vmas[i].kind == IBCR_VMA_SHMEM &&
			    shm_saved_already(&t[k].ps.vmas[i]))
				t[k].ps.vmas[i].flags |= IBCR_VMAF_SHMREF;
}

