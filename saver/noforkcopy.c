// SPDX-License-Identifier: MIT
/*
 * Private memory that a fork does not copy faithfully (MADV_DONTFORK:
 * absent from the snapshot; MADV_WIPEONFORK: zero there) is copied in
 * the freeze, as shared memory is (shmsnap.c), instead of keeping the
 * process frozen for the whole write. V8 (node) marks its whole heap
 * DONTFORK: ~500 MiB reserved, a few MiB resident. Only the pages
 * present or swapped out are copied, the pages the image stores of an
 * anonymous region (memory.c, PICK_ANON); the copy's bits say which.
 * A file-backed or deleted-file region of that kind still writes while
 * frozen, and so does more than NOFORK_MAX of such pages.
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

#define NOFORK_MAX (1ull << 30)
#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_BATCH 4096

static int nofork(const struct ibcr_vma *v)
{
	return (v->madv & (IBCR_MADV_DONTFORK | IBCR_MADV_WIPEONFORK)) != 0;
}

static int copyable(const struct ibcr_vma *v)
{
	return v->kind == IBCR_VMA_ANON && !(v->flags & (IBCR_VMAF_SHARED | IBCR_VMAF_DELETED));
}

/* Copies the run [from, to) (page indices in the region) and marks it. */
static int copy_run(struct target *t, const struct ibcr_vma *v, struct shm_copy *c,
		    uint64_t from, uint64_t to, struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize();

	for (uint64_t p = from; p < to; p++)
		c->bits[p / 64] |= 1ull << (p % 64);
	return read_target(t, v->start + from * pg, c->buf + from * pg, (to - from) * pg, e);
}

/* The region's present pages from the process's pagemap; *budget shrinks. */
static int copy_region(struct target *t, const struct ibcr_vma *v, struct shm_copy *c,
		       int pmfd, uint64_t *budget, struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize(), n = (v->end - v->start) / pg, run = 0;
	uint64_t pm[PM_BATCH];

	for (uint64_t at = 0; at < n; at += PM_BATCH) {
		uint64_t k = n - at < PM_BATCH ? n - at : PM_BATCH;
		ssize_t want = (ssize_t)(k * 8);

		if (pread(pmfd, pm, (size_t)want, (off_t)((v->start / pg + at) * 8)) != want)
			return ibcr_fail_errno(e, errno, "pid %d: reading pagemap of region "
					       "%#llx-%#llx", (int)t->pid,
					       (unsigned long long)v->start,
					       (unsigned long long)v->end);
		for (uint64_t i = 0; i <= k; i++) {
			int here = i < k && (pm[i] & (PM_PRESENT | PM_SWAPPED));

			if (here && !run++ && *budget < pg)
				return 1;	/* too much to copy in the freeze */
			if (here)
				*budget -= pg;
			if (!here && run) {
				if (copy_run(t, v, c, at + i - run, at + i, e))
					return -1;
				run = 0;
			}
		}
	}
	return 0;
}

int nofork_copy_all(struct target *t, struct ibcr_err *e)
{
	uint64_t budget = NOFORK_MAX;
	char path[64];
	int pmfd = -1, rc = 0;

	for (uint32_t i = 0; i < t->ps.nvmas && !rc; i++) {
		const struct ibcr_vma *v = &t->ps.vmas[i];
		struct shm_copy *c;

		if (!nofork(v))
			continue;
		if (!copyable(v)) {
			rc = 1;
			break;
		}
		if (pmfd < 0) {
			snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)t->pid);
			pmfd = open(path, O_RDONLY | O_CLOEXEC);
			if (pmfd < 0) {
				rc = ibcr_fail_errno(e, errno, "pid %d: opening %s", (int)t->pid, path);
				break;
			}
		}
		t->shmcopy = xrealloc(t->shmcopy, sizeof(*t->shmcopy) * (t->nshmcopy + 1));
		c = &t->shmcopy[t->nshmcopy++];
		memset(c, 0, sizeof(*c));
		c->vma = i;
		c->bits = xcalloc((v->end - v->start) / (uint64_t)getpagesize() / 64 + 1, 8);
		c->buf = mmap(NULL, v->end - v->start, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (c->buf == MAP_FAILED) {
			c->buf = NULL;
			rc = 1;		/* no room: no snapshot, the write happens frozen */
			break;
		}
		rc = copy_region(t, v, c, pmfd, &budget, e);
	}
	if (pmfd >= 0)
		close(pmfd);
	return rc;
}
