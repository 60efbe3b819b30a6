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
 * into a buffer made before the freeze: 64 MiB in ~15-25 ms here, where
 * the whole write used to be the freeze (a 64 MiB SysV segment and three
 * 256 MiB children: 2.7 s). Write-protecting shared memory with a
 * userfaultfd instead would need the registration made inside every
 * process that maps it; not done.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

/*
 * Buffers made before the freeze, for the shared memory the layout read
 * then shows (one per object and range): in the freeze, populating 64
 * MiB of fresh memory cost as much as copying into it, and more under
 * memory pressure. What the freeze finds otherwise gets a buffer then.
 */
#define RESERVE_MAX (1ull << 30)

static struct spare {
	uint64_t dev, ino, pgoff, len;
	uint8_t *buf;
} *spares;
static size_t nspares;
static uint64_t reserved;

static int shmem_like(const struct maps_entry *m)
{
	const char *p = m->path;

	return m->shared && (!p[0] || !strncmp(p, "/dev/zero", 9) || !strncmp(p, "/SYSV", 5) ||
			     !strncmp(p, "/memfd:", 7) || !strncmp(p, "[anon_shmem:", 12) ||
			     !strncmp(p, "/dev/shm/", 9));
}

void shm_copy_reserve(const struct maps_entry *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t dev = ((uint64_t)m[i].dev_major << 32) | m[i].dev_minor;
		uint64_t len = m[i].end - m[i].start;
		int dup = 0;
		void *b;

		for (size_t k = 0; k < nspares && !dup; k++)
			dup = spares[k].dev == dev && spares[k].ino == m[i].ino &&
			      spares[k].pgoff == m[i].pgoff && spares[k].len == len;
		if (dup || !shmem_like(&m[i]) || reserved + len > RESERVE_MAX)
			continue;
		b = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (b == MAP_FAILED)
			continue;
		madvise(b, len, MADV_POPULATE_WRITE);
		spares = xrealloc(spares, sizeof(*spares) * (nspares + 1));
		spares[nspares++] = (struct spare){ dev, m[i].ino, m[i].pgoff, len, b };
		reserved += len;
	}
}

static uint8_t *take_spare(const struct ibcr_vma *v)
{
	for (size_t k = 0; k < nspares; k++)
		if (spares[k].buf && spares[k].dev == v->file_dev && spares[k].ino == v->file_ino &&
		    spares[k].pgoff == v->pgoff && spares[k].len == v->end - v->start) {
			uint8_t *b = spares[k].buf;

			spares[k].buf = NULL;
			return b;
		}
	return NULL;
}

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

/*
 * A second thread copies the upper half of each large extent: the copy
 * is the kernel's, per byte, and there are two CPUs (64 MiB here: ~27
 * -> ~15 ms). Only the pread path: the other reads the process through
 * ptrace rights, which belong to the tracing thread's process anyway,
 * but keep it simple.
 */
#define SPLIT_MIN (4ull << 20)

struct half {
	int fd;
	uint8_t *to;
	uint64_t len, off;
	int err;
};

static void *copy_half(void *arg)
{
	struct half *h = arg;

	for (uint64_t done = 0; done < h->len; ) {
		ssize_t got = pread(h->fd, h->to + done, h->len - done, (off_t)(h->off + done));

		if (got <= 0) {
			h->err = got ? errno : EIO;
			break;
		}
		done += (uint64_t)got;
	}
	return NULL;
}

static int copy_extent(struct target *t, const struct ibcr_vma *v, int fd, uint8_t *buf,
		       uint64_t from, uint64_t to, struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize(), mid = from + (to - from) / 2 / pg * pg;
	struct half h = { fd, buf + mid, to - mid, v->pgoff + mid, 0 };
	pthread_t th;
	int rc;

	if (fd < 0 || to - from < SPLIT_MIN)
		return copy_range(t, v, fd, buf, from, to, e);
	madvise(buf + mid, to - mid, MADV_POPULATE_WRITE);
	if (pthread_create(&th, NULL, copy_half, &h))
		return copy_range(t, v, fd, buf, from, to, e);
	rc = copy_range(t, v, fd, buf, from, mid, e);
	pthread_join(th, NULL);
	if (!rc && h.err)
		rc = ibcr_fail_errno(e, h.err, "pid %d: copying shared region %#llx-%#llx",
				     (int)t->pid, (unsigned long long)v->start,
				     (unsigned long long)v->end);
	return rc;
}

/* The data extents of the object in the region's range, copied. */
static int copy_region(struct target *t, const struct ibcr_vma *v, struct shm_copy *c,
		       struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize(), len = v->end - v->start, at = 0;
	int fd = open_object(t, v), rc = 0;

	c->bits = xcalloc(len / pg / 64 + 1, 8);
	c->buf = take_spare(v);
	if (!c->buf)
		c->buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c->buf == MAP_FAILED) {
		c->buf = NULL;
		if (fd >= 0)
			close(fd);
		return 1;	/* no room: no snapshot, the write happens frozen */
	}
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
		rc = copy_extent(t, v, fd, c->buf, from, to, e);
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
