// SPDX-License-Identifier: MIT
/*
 * Shared memory in the freeze. The copy-on-write snapshot (snapshot.c)
 * cannot hold MAP_SHARED memory: the running processes write on into
 * the very pages the snapshot maps. So, while every process is still
 * stopped, each shared object's saved ranges are copied into the
 * saver's memory (the pages that hold data only, as the image stores
 * them), and the image's shared memory is written from those copies
 * while the processes run on. Copying is the kernel's page-cache copy
 * (pread of the object through /proc/PID/map_files, holes skipped),
 * into a buffer populated in one call: 64 MiB in ~15-25 ms here, where
 * the whole write used to be the freeze (a 64 MiB SysV segment and three
 * 256 MiB children: 2.7 s). Write-protecting shared memory with a
 * userfaultfd instead would need the registration made inside every
 * process that maps it; not done.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "saver.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static int open_object(const struct target *t, const struct ibcr_vma *v)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)t->pid,
		 (unsigned long long)v->start, (unsigned long long)v->end);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static void mark(uint64_t *bits, uint64_t from, uint64_t to)
{
	for (uint64_t p = from; p < to; p++)
		bits[p / 64] |= 1ull << (p % 64);
}

/* Pages [from, to) of the region, at `at` in the copy; read as they are. */
static int copy_range(struct target *t, const struct ibcr_vma *v, int fd, uint8_t *buf,
		      uint64_t from, uint64_t to, struct ibcr_err *e)
{
	uint64_t len = to - from;

	madvise(buf + from, len, MADV_POPULATE_WRITE);	/* EINVAL before 5.14: faults */
	if (fd < 0)
		return read_target(t, v->start + from, buf + from, len, e);
	for (uint64_t done = 0; done < len; ) {
		ssize_t got = pread(fd, buf + from + done, len - done,
				    (off_t)(v->pgoff + from + done));

		if (got <= 0)
			return ibcr_fail_errno(e, got ? errno : EIO, "pid %d: copying shared "
					       "region %#llx-%#llx", (int)t->pid,
					       (unsigned long long)v->start,
					       (unsigned long long)v->end);
		done += (uint64_t)got;
	}
	return 0;
}

/* The data extents of the object in the region's range, copied. */
static int copy_region(struct target *t, const struct ibcr_vma *v, struct shm_copy *c,
		       struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize(), len = v->end - v->start, at = 0;
	int fd = open_object(t, v), rc = 0;

	c->bits = xcalloc(len / pg / 64 + 1, 8);
	c->buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c->buf == MAP_FAILED) {
		c->buf = NULL;
		if (fd >= 0)
			close(fd);
		return 1;	/* no room: no snapshot, the write happens frozen */
	}
	madvise(c->buf, len, MADV_HUGEPAGE);	/* fewer faults; advice only */
	while (at < len && !rc) {
		off_t d = fd < 0 ? (off_t)(v->pgoff + at) :
			  lseek(fd, (off_t)(v->pgoff + at), SEEK_DATA);
		off_t h = d < 0 ? d : (fd < 0 ? (off_t)(v->pgoff + len) : lseek(fd, d, SEEK_HOLE));
		uint64_t from, to;

		if (d < 0 || h < 0)
			break;	/* ENXIO: no data after `at` */
		from = ((uint64_t)d - v->pgoff) / pg * pg;
		to = (uint64_t)h - v->pgoff < len ? ((uint64_t)h - v->pgoff + pg - 1) / pg * pg : len;
		if (from >= len)
			break;
		rc = copy_range(t, v, fd, c->buf, from, to, e);
		mark(c->bits, from / pg, to / pg);
		at = to;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int shm_copy_all(struct target *t, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < t->ps.nvmas; i++) {
		const struct ibcr_vma *v = &t->ps.vmas[i];
		struct shm_copy *c;
		int rc;

		if (v->kind != IBCR_VMA_SHMEM || (v->flags & IBCR_VMAF_SHMREF))
			continue;
		t->shmcopy = xrealloc(t->shmcopy, sizeof(*t->shmcopy) * (t->nshmcopy + 1));
		c = &t->shmcopy[t->nshmcopy++];
		memset(c, 0, sizeof(*c));
		c->vma = i;
		rc = copy_region(t, v, c, e);
		if (rc)
			return rc;
	}
	return 0;
}

const struct shm_copy *shm_copy_of(const struct target *t, uint32_t vma)
{
	for (uint32_t i = 0; i < t->nshmcopy; i++)
		if (t->shmcopy[i].vma == vma && t->shmcopy[i].buf)
			return &t->shmcopy[i];
	return NULL;
}

void shm_copy_free(struct target *t, uint32_t vma)
{
	for (uint32_t i = 0; i < t->nshmcopy; i++) {
		struct shm_copy *c = &t->shmcopy[i];

		if (c->vma != vma)
			continue;
		if (c->buf)
			munmap(c->buf, t->ps.vmas[vma].end - t->ps.vmas[vma].start);
		free(c->bits);
		c->buf = NULL;
		c->bits = NULL;
	}
}
