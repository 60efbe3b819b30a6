// SPDX-License-Identifier: MIT
/*
 * A wqueue (wqueue.h) whose file is on tmpfs: the caller fills the file's
 * own pages, through one shared mapping of the file, instead of a buffer
 * that a write() then copies into them. On tmpfs the page cache is the
 * file, so a write is nothing but that copy plus the allocation and
 * zeroing of its pages; reading the process's memory straight into the
 * mapping leaves one kernel copy per page, as CRIU's splice has. The
 * pages are made a few MiB at a time with MADV_POPULATE_WRITE (no page
 * faults), by the caller's thread: in the TCG guest every hand-over
 * between threads waits for the other vCPU to be scheduled, which cost
 * more than the zeroing it moved off. docs/design-notes.md, "Writing the
 * image to tmpfs", has the numbers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "buf.h"
#include "wqmap.h"
#include "wqueue.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Pages are made this much at a time, and dropped from the mapping so. */
#define STEP (4ull << 20)
#define DROP (16ull << 20)

struct wqmap {
	int fd;
	uint8_t *base;		/* the file, mapped from offset 0 */
	uint64_t reserve;	/* bytes of address space mapped */
	uint64_t prepared;	/* [0, prepared) exists and is mapped */
	uint64_t dropped;	/* [0, dropped) is mapped no more */
	int no_madvise;		/* an old kernel: touch the pages instead */
};

/* Extends the file to `to` and puts its pages in: 0 or an errno. */
static int make_pages(struct wqmap *m, uint64_t from, uint64_t to)
{
	uint64_t pg = (uint64_t)getpagesize();

	if (to > m->reserve)
		return ENOSPC;
	if (ftruncate(m->fd, (off_t)to))
		return errno;
	if (!m->no_madvise) {
		if (!madvise(m->base + from, to - from, MADV_POPULATE_WRITE))
			return 0;
		if (errno != EINVAL)	/* EFAULT: the tmpfs is full */
			return errno == EFAULT ? ENOSPC : errno;
		m->no_madvise = 1;
	}
	/* a store to a page of a full tmpfs would be SIGBUS: allocate first */
	if (fallocate(m->fd, 0, (off_t)from, (off_t)(to - from)))
		return errno;
	for (uint64_t o = from; o < to; o += pg)
		((volatile uint8_t *)m->base)[o] = 0;
	return 0;
}

/*
 * The pages the caller is done with leave the mapping (not the file):
 * the saver's RSS stays at the window's, not the image's size.
 */
static void drop_behind(struct wqmap *m, uint64_t done)
{
	uint64_t to = done & ~((uint64_t)getpagesize() - 1);

	if (to < m->dropped + DROP)
		return;
	(void)madvise(m->base + m->dropped, to - m->dropped, MADV_DONTNEED);
	m->dropped = to;
}

/* What the file system can hold at most: the mapping's size. */
static uint64_t reserve_of(const struct statfs *fs)
{
	uint64_t size = (uint64_t)fs->f_blocks * (uint64_t)fs->f_bsize;

	if (!size || size > (1ull << 40))	/* a tmpfs without a limit */
		size = 1ull << 40;
	return size + STEP + WQ_BUF_SIZE;
}

struct wqmap *wqm_open(int fd)
{
	struct statfs fs;
	struct wqmap *m;
	void *p;

	if (fstatfs(fd, &fs) || fs.f_type != TMPFS_MAGIC)
		return NULL;
	m = xcalloc(1, sizeof(*m));
	m->fd = fd;
	m->reserve = reserve_of(&fs);
	/* an fd opened write-only cannot be mapped: the write()s then */
	p = mmap(NULL, m->reserve, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED) {
		free(m);
		return NULL;
	}
	m->base = p;
	return m;
}

uint8_t *wqm_buf(struct wqmap *m, uint64_t end)
{
	uint64_t need = end + WQ_BUF_SIZE;

	drop_behind(m, end);
	if (m->prepared < need) {
		uint64_t to = (need + STEP - 1) / STEP * STEP;
		int err = make_pages(m, m->prepared, to);

		if (err) {
			errno = err;
			return NULL;
		}
		m->prepared = to;
	}
	return m->base + end;
}

int wqm_finish(struct wqmap *m, uint64_t end)
{
	/* the pages made ahead go; a later wqm_buf makes them again */
	if (ftruncate(m->fd, (off_t)end))
		return -1;
	if (m->prepared > end)
		m->prepared = end & ~((uint64_t)getpagesize() - 1);
	return 0;
}

void wqm_close(struct wqmap *m)
{
	if (!m)
		return;
	munmap(m->base, m->reserve);
	free(m);
}
