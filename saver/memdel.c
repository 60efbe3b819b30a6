// SPDX-License-Identifier: MIT
/*
 * Shared mappings of deleted files. python's multiprocessing (glibc's
 * sem_open, then sem_unlink) leaves a page of /dev/shm mapped shared in
 * every worker with no name and no descriptor. It is memory the
 * processes share like any named shared memory (memory.c): saved once,
 * and made again by the loader as a file of that name, mapped, then
 * unlinked (loader/shm.c), so that it is one object again and still
 * shows as "PATH (deleted)". Only the mapped ranges can be saved (the
 * file has no name to read the rest through that a restore could rely
 * on), so the mappings must cover the whole file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "saver.h"

int deleted_shared(struct target *t, const struct maps_entry *m, struct ibcr_vma *v,
		   struct ibcr_err *e)
{
	char path[96];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)t->pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return ibcr_fail_errno(e, err, "pid %d: region %#llx-%#llx (%s): shared "
				       "mapping of a deleted file, which only %s shows",
				       (int)t->pid, (unsigned long long)m->start,
				       (unsigned long long)m->end, m->path, path);
	}
	close(fd);
	if (st.st_ino != m->ino || !S_ISREG(st.st_mode))
		return ibcr_fail(e, "pid %d: region %#llx-%#llx (%s): %s is not the file "
				 "it maps", (int)t->pid, (unsigned long long)m->start,
				 (unsigned long long)m->end, m->path, path);
	if (st.st_nlink)
		return ibcr_fail(e, "pid %d: region %#llx-%#llx (%s): the file is deleted "
				 "here but has another name (%lu links): a copy would not "
				 "share with it", (int)t->pid, (unsigned long long)m->start,
				 (unsigned long long)m->end, m->path,
				 (unsigned long)st.st_nlink);
	vma_named_shm(m, &st, v);
	v->flags |= IBCR_VMAF_DELETED;
	return 0;
}

/* Bytes [0, to) of object (dev, ino) that the image's regions map, from `from`. */
static uint64_t covered(const struct target *t, uint32_t n, const struct ibcr_vma *o,
			uint64_t from)
{
	int grew = 1;

	while (grew) {
		grew = 0;
		for (uint32_t k = 0; k < n; k++)
			for (uint32_t i = 0; i < t[k].ps.nvmas; i++) {
				const struct ibcr_vma *v = &t[k].ps.vmas[i];
				uint64_t end = v->pgoff + (v->end - v->start);

				if (v->kind == IBCR_VMA_SHMEM && v->file_dev == o->file_dev &&
				    v->file_ino == o->file_ino && v->pgoff <= from && end > from) {
					from = end;
					grew = 1;
				}
			}
	}
	return from;
}

int shm_check_deleted(const struct target *t, uint32_t n, struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize();

	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++) {
			const struct ibcr_vma *v = &t[k].ps.vmas[i];
			uint64_t want, got;

			if (v->kind != IBCR_VMA_SHMEM || !(v->flags & IBCR_VMAF_DELETED))
				continue;
			want = (v->file_size + pg - 1) / pg * pg;
			got = covered(t, n, v, 0);
			if (got < want)
				return ibcr_fail(e, "pid %d: region %#llx-%#llx (%s): the deleted "
						 "file has %llu bytes, the image's processes map "
						 "only its first %llu: the rest cannot be saved",
						 (int)t[k].pid, (unsigned long long)v->start,
						 (unsigned long long)v->end, t[k].ps.vma_names[i],
						 (unsigned long long)v->file_size,
						 (unsigned long long)got);
		}
	return 0;
}
