// SPDX-License-Identifier: MIT
/*
 * Filling a region without zeroing it first. A fresh page is zeroed by
 * the kernel when it is faulted in, and then overwritten with the saved
 * bytes: under emulation (qemu TCG) the zeroing costs as much as the
 * copy. UFFDIO_COPY allocates each page and copies into it, nothing
 * else: the region is registered with a userfaultfd (missing pages) for
 * the time of the fill and the image's page data, mapped read-only from
 * the page cache a window at a time, is copied in. No page fault is ever
 * taken (user-mode-only faults, which unprivileged users may ask for,
 * are enough: nobody touches the region meanwhile). Where userfaultfd is
 * missing or refused, the caller fills the usual way.
 */
#include <linux/ioctl.h>
#include <linux/mman.h>
#include <linux/userfaultfd.h>

#include "core.h"
#include "sys.h"
#include "rt/xxh64.h"

#define WINDOW (4ul << 20)
#define CORE_O_CLOEXEC 02000000
#define CORE_EAGAIN 11
#define CORE_EEXIST 17

static long uffd_ioctl(int fd, unsigned long req, void *arg)
{
	return SYS(__NR_ioctl, fd, req, arg, 0, 0, 0);
}

int uffd_open(struct plan *p, const struct plan_vma *v)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { v->start, v->end - v->start },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	long fd;

	/*
	 * UFFDIO_COPY maps 4 KiB pages only: memory that the program asked
	 * to have in huge pages (MADV_HUGEPAGE) and had in them is faulted
	 * in by the kernel instead (populate, then copy), which gives it
	 * huge pages again. Huge pages that came from THP "always" alone are
	 * left to khugepaged, as for any memory then: the populate path
	 * costs an extra zeroing where the kernel zeroes on allocation
	 * (docs/design-notes.md, "Huge pages come back").
	 */
	if ((p->flags & PLAN_NO_UFFD) ||
	    ((v->flags & IBCR_VMAF_THP) && (v->madv & IBCR_MADV_HUGEPAGE)))
		return -1;
	fd = SYS(__NR_userfaultfd, CORE_O_CLOEXEC | UFFD_USER_MODE_ONLY, 0, 0, 0, 0, 0);
	if (fd < 0)
		return -1;
	if (uffd_ioctl((int)fd, UFFDIO_API, &api) ||
	    uffd_ioctl((int)fd, UFFDIO_REGISTER, &reg) ||
	    !(reg.ioctls & (1ull << _UFFDIO_COPY))) {
		sys_close((int)fd);	/* closing unregisters */
		return -1;
	}
	return (int)fd;
}

void uffd_close(struct plan *p, const struct plan_vma *v, int fd)
{
	struct uffdio_range r = { v->start, v->end - v->start };

	if (uffd_ioctl(fd, UFFDIO_UNREGISTER, &r))
		core_die(p, "region %#lx-%#lx (%s): unregistering its userfaultfd failed",
			 (unsigned long)v->start, (unsigned long)v->end, v->name);
	sys_close(fd);
}

/*
 * UFFDIO_COPY of [dst, dst + len) up to the first page that is there
 * already (EEXIST: the loader, filling from the other end, got there
 * first); returns how many bytes were copied.
 */
static uint64_t copy_in(struct plan *p, const struct plan_vma *v, int fd, uint64_t dst,
			uint64_t src, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		struct uffdio_copy c = { .dst = dst + done, .src = src + done, .len = len - done };
		long rc = uffd_ioctl(fd, UFFDIO_COPY, &c);

		if (c.copy > 0) {
			done += (uint64_t)c.copy;
			continue;
		}
		if (c.copy == -CORE_EEXIST)
			break;
		if (rc && rc != -CORE_EAGAIN)
			core_die(p, "region %#lx-%#lx (%s): copying page data in at %#lx: "
				 "error %ld", (unsigned long)v->start, (unsigned long)v->end,
				 v->name, (unsigned long)(dst + done), -rc);
	}
	return done;
}

/*
 * The region's page data from the start on, a window at a time, until
 * the first page the loader (filling from the end down, pagehelp.c) put
 * there first. Both sides go up within a window and the loader starts
 * each of its windows at the window's first page, so whoever copies that
 * page first does the whole window and the other stops there: every page
 * is copied once, and no page is copied only to be refused (an EEXIST
 * costs UFFDIO_COPY a page allocation and a copy). Returns the sum of
 * what we did; *upto is where that ends (the data from there on is in
 * place once the loader answers).
 */
uint32_t uffd_fill(struct plan *p, const struct plan_vma *v, int fd, uint64_t *upto)
{
	uint64_t r = 0, run_pos = 0, pos = 0;	/* run r starts at stream offset run_pos */
	uint32_t sum = 0;
	int met = 0;
	/*
	 * The region's data mapped once, its page tables filled and dropped
	 * a window at a time: an mmap and a munmap per window took our mm's
	 * lock for writing, stalling the loader's copies into it meanwhile
	 * (1 GiB in the TCG guest: 3.6 -> 3.3 s).
	 */
	long src = sys_mmap(0, v->data_len, PROT_READ, MAP_PRIVATE, p->img_fd, v->data_off);

	if (src < 0 && src > -4096)
		core_die(p, "image %s: mapping the data of region %#lx-%#lx (%s): error %ld",
			 p->image_path, (unsigned long)v->start, (unsigned long)v->end, v->name,
			 -src);
	while (pos < v->data_len && !met) {
		uint64_t len = v->data_len - pos < WINDOW ? v->data_len - pos : WINDOW;
		uint64_t end = pos + len, at = pos;

		/* before 5.14 EINVAL: the copy then faults the window in */
		sys_madvise((uint64_t)src + pos, len, MADV_POPULATE_READ);
		while (at < end && !met) {
			uint64_t run_len, k, done;

			while (run_pos + v->runs[r].npages * p->page_size <= at)
				run_pos += v->runs[r++].npages * p->page_size;
			run_len = v->runs[r].npages * p->page_size;
			k = run_pos + run_len - at < end - at ? run_pos + run_len - at : end - at;
			done = copy_in(p, v, fd, v->runs[r].addr + (at - run_pos),
				       (uint64_t)src + at, k);
			met = done < k;
			at += done;
		}
		sum = page_sum(sum, (const void *)(src + pos), at - pos, p->page_size,
			       pos / p->page_size);
		/* its page tables go too: our RSS grows by a window, not by the region */
		sys_madvise((uint64_t)src + pos, len, MADV_DONTNEED);
		pos = at;
	}
	sys_munmap((uint64_t)src, v->data_len);
	*upto = pos;
	return sum;
}
