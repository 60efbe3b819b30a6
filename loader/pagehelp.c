// SPDX-License-Identifier: MIT
/*
 * The loader's share of filling a large region of an uncompressed image.
 * Filling memory is mostly the kernel's work per page (fault, zero,
 * copy), and the core is one thread: so for a large region it asks (ST_HELP,
 * the region's index and a byte offset into its page data) the loader,
 * idle meanwhile on another CPU, to put the data from that offset to the
 * end in place with process_vm_writev, while it fills the part before
 * the offset itself. We answer CT_DONE with the page_sum of what we put in,
 * summed from our buffer or mapping while it is in cache; the core adds
 * it to its own part's and checks the region's checksum before any
 * thread resumes.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "loader.h"
#include "rt/xxh64.h"

#define HELP_BUF (4u << 20)
#define HELP_IOV 1024	/* IOV_MAX */

/*
 * process_vm_writev copies once; /proc/PID/mem copies through a kernel
 * page but also writes read-only regions without making them writable.
 */
int pages_write(struct pages *pg, uint64_t addr, const uint8_t *p, size_t k)
{
	struct iovec local = { (void *)p, k }, remote = { (void *)(uintptr_t)addr, k };

	if (process_vm_writev(pg->child, &local, 1, &remote, 1, 0) != (ssize_t)k &&
	    pwrite(pg->memfd, p, k, (off_t)addr) != (ssize_t)k)
		return -1;
	__atomic_add_fetch(&pg->written, k, __ATOMIC_RELAXED);	/* stream.c: by several */
	return 0;
}

/*
 * Pieces of runs, consecutive in the image, up to a buffer's worth: one
 * pread and one process_vm_writev for many single-page runs of sparse
 * memory (piece by piece through pages_write if that fails).
 */
struct piece_list {
	struct iovec remote[HELP_IOV];
	int n;
	size_t len;
	uint64_t file_off;
	uint64_t data_off;	/* where the region's data starts in the file */
	uint32_t sum;		/* of the pages flushed so far */
};

static int flush_pieces(struct pages *pg, struct piece_list *l)
{
	struct iovec local = { pg->help_buf, l->len };
	const uint8_t *p = pg->help_buf;

	if (!l->n)
		return 0;
	if (pread_full(pg->img_fd, pg->help_buf, l->len, l->file_off))
		return -1;
	l->sum = page_sum(l->sum, pg->help_buf, l->len, (size_t)getpagesize(),
			  (l->file_off - l->data_off) / (uint64_t)getpagesize());
	if (process_vm_writev(pg->child, &local, 1, l->remote, (unsigned long)l->n, 0) !=
	    (ssize_t)l->len) {
		for (int i = 0; i < l->n; i++) {
			if (pages_write(pg, (uintptr_t)l->remote[i].iov_base, p,
					l->remote[i].iov_len))
				return -1;
			p += l->remote[i].iov_len;
		}
	} else {
		pg->written += l->len;
	}
	l->file_off += l->len;
	l->n = 0;
	l->len = 0;
	return 0;
}

int pages_help(struct pages *pg, uint32_t idx, uint64_t from, uint32_t *sum,
	       struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = pg->ps;
	const struct ibcr_vma *v;
	uint64_t size = (uint64_t)getpagesize(), pos = 0;
	struct piece_list *l;
	int rc = 0;

	if (idx >= ps->nvmas || from > ps->vmas[idx].data_len)
		return ibcr_fail(e, "the core asked for help with region %u at %llu", idx,
				 (unsigned long long)from);
	v = &ps->vmas[idx];
	if (!pg->help_buf)
		pg->help_buf = xmalloc(HELP_BUF);
	l = xcalloc(1, sizeof(*l));
	l->data_off = ps->pages_off + v->data_off;
	l->file_off = l->data_off + from;
	for (uint64_t r = v->run0; r < v->run0 + v->nruns && !rc; r++) {
		uint64_t len = ps->runs[r].npages * size;

		for (uint64_t at = from > pos ? from - pos : 0; at < len && !rc; ) {
			size_t k = len - at < HELP_BUF - l->len ? (size_t)(len - at) :
								   HELP_BUF - l->len;

			l->remote[l->n].iov_base = (void *)(uintptr_t)(ps->runs[r].addr + at);
			l->remote[l->n++].iov_len = k;
			l->len += k;
			at += k;
			if (l->len == HELP_BUF || l->n == HELP_IOV)
				rc = flush_pieces(pg, l);
		}
		pos += len;
	}
	if (!rc)
		rc = flush_pieces(pg, l);
	*sum = l->sum;
	free(l);
	if (rc)
		return ibcr_fail_errno(e, errno, "image %s: region %#llx-%#llx (%s): "
				       "reading it or writing it into the restored process",
				       pg->path, (unsigned long long)v->start,
				       (unsigned long long)v->end, ibcr_vma_label(ps, idx));
	return 0;
}

/*
 * With the core's userfaultfd (freestanding/core/uffd.c): the image's data
 * mapped from the page cache a window at a time and copied in with
 * UFFDIO_COPY, no page zeroed first. The descriptor is taken from the
 * child with pidfd_getfd (Linux 5.6): the ioctls act on the child's
 * memory whoever calls them.
 */
#define UFFD_WINDOW (4ul << 20)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22	/* Linux 5.14; musl's headers lack it */
#endif

int64_t uffd_copy(int ufd, uint64_t dst, uint64_t src, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		struct uffdio_copy c = { .dst = dst + done, .src = src + done, .len = len - done };
		int rc = ioctl(ufd, UFFDIO_COPY, &c);

		if (c.copy > 0) {
			done += (uint64_t)c.copy;
			continue;
		}
		if (c.copy == -EEXIST)
			break;
		if (rc && errno != EAGAIN)
			return -1;
	}
	return (int64_t)done;
}

/*
 * The data of window [pos, end) in place, from its first page up, until
 * a page the core had put there; 1: met one, 0: not, -1: error. `data`
 * maps the region's data; the window's page tables are filled first and
 * dropped after, so our RSS grows by a window, not by the region. What
 * we put in is added to *sum.
 */
static int uffd_window(struct pages *pg, const uint8_t *data, uint64_t pos, uint64_t end,
		       uint64_t r, uint64_t run_pos, int ufd, uint32_t *sum)
{
	const struct ibcr_process_state *ps = pg->ps;
	uint64_t size = (uint64_t)getpagesize(), at = pos;
	int met = 0;

	madvise((void *)(data + pos), end - pos, MADV_POPULATE_READ);	/* < 5.14: faults */
	while (at < end && !met) {
		uint64_t run_len, k;
		int64_t done;

		while (run_pos + ps->runs[r].npages * size <= at)
			run_pos += ps->runs[r++].npages * size;
		run_len = ps->runs[r].npages * size;
		k = run_pos + run_len - at < end - at ? run_pos + run_len - at : end - at;
		done = uffd_copy(ufd, ps->runs[r].addr + (at - run_pos),
			       (uint64_t)(uintptr_t)(data + at), k);
		met = done < 0 ? -1 : (uint64_t)done < k;
		done = done > 0 ? done : 0;
		pg->copied += (uint64_t)done;
		at += (uint64_t)done;
	}
	*sum = page_sum(*sum, data + pos, at - pos, size, pos / size);
	madvise((void *)(data + pos), end - pos, MADV_DONTNEED);
	return met;
}

/*
 * The core fills the region from the start up, a window at a time
 * (core/uffd.c), we from the end down, with the same windows, each
 * going up within a window, until one finds a page the other put there
 * and stops: whoever copies a window's first page first does that whole
 * window, so every page is copied once and the work is shared by speed,
 * not by a fixed split.
 */
static int uffd_windows(struct pages *pg, const struct ibcr_vma *v, uint64_t from, int ufd,
			uint32_t *sum)
{
	const struct ibcr_process_state *ps = pg->ps;
	uint64_t size = (uint64_t)getpagesize(), nwin, r = v->run0, run_pos = 0;
	uint64_t *first_run, *first_pos;
	uint8_t *data;
	int met = 0;

	if (v->data_len <= from)
		return 0;
	data = mmap(NULL, v->data_len, PROT_READ, MAP_PRIVATE, pg->img_fd,
		    (off_t)(ps->pages_off + v->data_off));
	if (data == MAP_FAILED)
		return -1;
	nwin = (v->data_len - 1) / UFFD_WINDOW + 1;
	first_run = xmalloc(nwin * sizeof(*first_run));
	first_pos = xmalloc(nwin * sizeof(*first_pos));
	/* the run each window starts in, found in one pass */
	for (uint64_t w = 0; w < nwin; w++) {
		while (run_pos + ps->runs[r].npages * size <= w * UFFD_WINDOW)
			run_pos += ps->runs[r++].npages * size;
		first_run[w] = r;
		first_pos[w] = run_pos;
	}
	for (uint64_t w = nwin; w-- > from / UFFD_WINDOW && !met; ) {
		uint64_t pos = w * UFFD_WINDOW, end = pos + UFFD_WINDOW;

		if (pos < from)
			pos = from;
		if (end > v->data_len)
			end = v->data_len;
		met = uffd_window(pg, data, pos, end, first_run[w], first_pos[w], ufd, sum);
	}
	munmap(data, v->data_len);
	free(first_run);
	free(first_pos);
	return met < 0 ? -1 : 0;
}

int pages_take_fd(struct pages *pg, int fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pg->child, 0), ufd;

	if (pidfd < 0)
		return -1;
	ufd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	close(pidfd);
	return ufd;
}

int pages_help_uffd(struct pages *pg, uint32_t idx, uint64_t from, int fd, uint32_t *sum,
		    struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = pg->ps;
	const struct ibcr_vma *v;
	int ufd, rc;

	if (idx >= ps->nvmas || from > ps->vmas[idx].data_len ||
	    (ps->pages_off + ps->vmas[idx].data_off) % (uint64_t)getpagesize())
		return ibcr_fail(e, "the core asked for help with region %u at %llu", idx,
				 (unsigned long long)from);
	v = &ps->vmas[idx];
	ufd = pages_take_fd(pg, fd);
	if (ufd < 0)
		return 1;
	rc = uffd_windows(pg, v, from, ufd, sum);
	close(ufd);
	if (rc)
		return ibcr_fail_errno(e, errno, "image %s: region %#llx-%#llx (%s): copying "
				       "its data into the restored process", pg->path,
				       (unsigned long long)v->start, (unsigned long long)v->end,
				       ibcr_vma_label(ps, idx));
	return 0;
}
