// SPDX-License-Identifier: MIT
/*
 * Memory regions: map each at its saved address, fill it from the image
 * while checking its checksum, then give it its saved advice and protection.
 */
#include <linux/mman.h>

#include "core.h"
#include "rt/xxh64.h"
#include "sys.h"

/* Reads are chunked so that each chunk is still in cache for its checksum. */
#define CHUNK (4ul << 20)

#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE 0x08	/* a mapping type, as MAP_PRIVATE is (6.11) */
#endif

static int map_flags(const struct plan_vma *v)
{
	int f = MAP_FIXED;

	if (v->flags & IBCR_VMAF_DROPPABLE)
		f |= MAP_DROPPABLE;
	else
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

/*
 * A run goes straight from the image into its place when the region is
 * writable now; otherwise (a read-only region that must not become
 * writable, see map_one) through the bounce buffer and /proc/self/mem,
 * which writes past the protection as a debugger does.
 */
/* k bytes at off of the image, whole (a short read is read on), into buf. */
static long read_full(struct plan *p, void *buf, uint64_t k, uint64_t off)
{
	for (uint64_t done = 0; done < k; ) {
		long got = sys_pread(p->img_fd, (uint8_t *)buf + done, k - done, off + done);

		if (got <= 0)
			return got;
		done += (uint64_t)got;
	}
	return (long)k;
}

/* Returns the bytes placed (k, or less in the bounce buffer), <= 0 on error. */
static long fill(struct plan *p, uint64_t addr, uint64_t k, uint64_t off, int memfd,
		 const void **data)
{
	long got, put;

	if (memfd < 0) {
		*data = (const void *)addr;
		return read_full(p, (void *)addr, k, off);
	}
	if (k > p->bounce_len)
		k = p->bounce_len;
	*data = p->bounce;
	got = read_full(p, p->bounce, k, off);
	if (got <= 0)
		return got;
	put = SYS(__NR_pwrite64, memfd, p->bounce, got, addr, 0, 0);
	return put == got ? got : (put < 0 ? put : -5 /* EIO */);
}

static uint32_t read_run(struct plan *p, const struct plan_vma *v,
			 const struct ibcr_run *run, uint64_t *off, uint32_t sum, int memfd)
{
	uint64_t len = run->npages * p->page_size;

	/*
	 * Populating the run in one call is several times faster than
	 * letting pread fault in page by page; kernels before 5.14 say
	 * EINVAL and fall back to faulting.
	 */
	if (memfd < 0)
		sys_madvise(run->addr, len, MADV_POPULATE_WRITE);
	for (uint64_t done = 0; done < len; ) {
		uint64_t k = len - done < CHUNK ? len - done : CHUNK;
		const void *data;
		long got = fill(p, run->addr + done, k, *off, memfd, &data);

		if (got <= 0)
			core_die(p, "image %s: reading region %#lx-%#lx (%s): %s %ld",
				 p->image_path, (unsigned long)v->start,
				 (unsigned long)v->end, v->name,
				 got ? "error" : "unexpected end of file at", got ? -got : (long)*off);
		/* summed where it was read, which a PROT_NONE region is not */
		sum = page_sum(sum, data, (size_t)got, p->page_size,
			       (*off - v->data_off) / p->page_size);
		done += (uint64_t)got;
		*off += (uint64_t)got;
	}
	return sum;
}

/*
 * Sparse memory is mostly runs of a page or a few: consecutive small runs
 * (their data is consecutive in the image) come in with one preadv, and
 * fault in as they are written, instead of a madvise and a pread each.
 */
#define SMALL_RUN (64ul << 10)
#define BATCH 256

struct core_iovec {
	uint64_t base, len;
};

/* Reads runs[0..) while small, at most BATCH; returns how many. */
static uint64_t read_batch(struct plan *p, const struct plan_vma *v,
			   const struct ibcr_run *runs, uint64_t n, uint64_t *off,
			   uint32_t *sum)
{
	struct core_iovec iov[BATCH];
	uint64_t k = 0, total = 0;
	long got;

	while (k < n && k < BATCH && runs[k].npages * p->page_size <= SMALL_RUN &&
	       total < CHUNK) {
		iov[k].base = runs[k].addr;
		iov[k].len = runs[k].npages * p->page_size;
		total += iov[k++].len;
	}
	got = SYS(__NR_preadv, p->img_fd, iov, k, *off, 0, 0);
	if (got != (long)total)
		core_die(p, "image %s: reading region %#lx-%#lx (%s): %s %ld",
			 p->image_path, (unsigned long)v->start, (unsigned long)v->end,
			 v->name, got < 0 ? "error" : "unexpected end of file at",
			 got < 0 ? -got : (long)*off);
	for (uint64_t i = 0; i < k; i++) {
		*sum = page_sum(*sum, (const void *)iov[i].base, iov[i].len, p->page_size,
				(*off - v->data_off) / p->page_size);
		*off += iov[i].len;
	}
	return k;
}

static uint32_t fill_runs(struct plan *p, const struct plan_vma *v,
			  const struct ibcr_run *runs, uint64_t n, uint64_t *off,
			  uint32_t sum, int memfd)
{
	for (uint64_t i = 0; i < n; ) {
		if (memfd < 0 && runs[i].npages * p->page_size <= SMALL_RUN) {
			i += read_batch(p, v, runs + i, n - i, off, &sum);
			continue;
		}
		sum = read_run(p, v, &runs[i], off, sum, memfd);
		i++;
	}
	return sum;
}

/*
 * A large private region is filled by two: the loader takes its data
 * from HELP_SHARE percent on (loader/pagehelp.c), the core the part
 * before. Without a userfaultfd the loader's share is the smaller one:
 * it copies each byte twice (image to buffer, buffer to the region), the
 * core once.
 */
#define HELP_MIN (16ul << 20)
#define HELP_SHARE 55

static int helpable(const struct plan *p, const struct plan_vma *v, int prot)
{
	return (prot & PROT_WRITE) && v->data_len >= HELP_MIN && v->fd < 0 &&
	       !(v->flags & IBCR_VMAF_SHARED) && !v->shm_src &&
	       !(p->flags & PLAN_FILL_BY_LOADER);
}

/*
 * ST_HELP (the loader writes from `from` on) or ST_HELP_UFFD (it copies in
 * through our userfaultfd from the end down, until it meets us: `from` is 0).
 */
static void ask_help(struct plan *p, const struct plan_vma *v, uint64_t from, int uffd)
{
	struct st_help msg = { uffd >= 0 ? ST_HELP_UFFD : ST_HELP, (uint32_t)(v - p->vmas),
			       from, uffd };
	long len = (long)ST_HELP_LEN(msg.kind);

	if (sys_write(p->status_fd, &msg, len) != len)
		sys_exit_group(127);
}

/*
 * CT_DONE and the page_sum of the pages the loader put in, added to *sum;
 * CT_CANNOT: it could not use the userfaultfd, nothing done.
 */
static char wait_help(struct plan *p, uint32_t *sum)
{
	struct ct_help_done reply = { 0, 0 };
	const long rest = sizeof(reply) - 1;

	if (sys_read(p->control_fd, &reply.kind, 1) != 1 ||
	    (reply.kind != CT_DONE && reply.kind != CT_CANNOT) ||
	    (reply.kind == CT_DONE && sys_read(p->control_fd, (uint8_t *)&reply + 1, rest) != rest))
		sys_exit_group(127);	/* the loader said why */
	*sum += reply.sum;
	return (char)reply.kind;
}

/* The core's part, stream bytes [0, lim), the usual way. */
static uint32_t fill_head(struct plan *p, const struct plan_vma *v, uint64_t lim)
{
	uint64_t off = v->data_off, pos = 0, whole = 0;
	uint32_t sum;

	/* the runs wholly before lim, then the part of the one lim cuts */
	while (whole < v->nruns && pos + v->runs[whole].npages * p->page_size <= lim)
		pos += v->runs[whole++].npages * p->page_size;
	sum = fill_runs(p, v, v->runs, whole, &off, 0, -1);
	if (pos < lim) {
		struct ibcr_run part = { v->runs[whole].addr, (lim - pos) / p->page_size };

		sum = read_run(p, v, &part, &off, sum, -1);
	}
	return sum;
}

/*
 * Both parts: with a userfaultfd (uffd.c) if we may have one, by the
 * core's usual fill and process_vm_writev otherwise. Each side sums the
 * pages it put in (page_sum's terms are independent, xxh64.h), and the
 * caller checks the total: a damaged page of the image, or one that
 * nobody put in, leaves the total wrong. Until 2026-11-30 the sum was a
 * chain, and the core summed the loader's part in place after the fill,
 * alone (~6% of a 1 GiB restore in the TCG guest); that also read back
 * what the loader's writes had left, which no sum does now: where each
 * page goes is the run table's, as in the core's own part.
 */
static uint32_t fill_together(struct plan *p, const struct plan_vma *v)
{
	/* uffd_fill maps the image's data: it must start on a page */
	int uffd = (v->data_off % p->page_size) ? -1 : uffd_open(p, v);
	uint64_t lim = v->data_len / 100 * HELP_SHARE;
	uint32_t sum;

	lim -= lim % p->page_size;
	if (uffd < 0) {
		ask_help(p, v, lim, uffd);
		sum = fill_head(p, v, lim);
		wait_help(p, &sum);
		return sum;
	}
	ask_help(p, v, 0, uffd);
	/* CT_CANNOT (the loader could not take it): we meet nobody and do it all */
	sum = uffd_fill(p, v, uffd, &lim);
	if (wait_help(p, &sum) == CT_CANNOT && lim < v->data_len)
		core_die(p, "region %#lx-%#lx (%s): the loader filled part of it, then said "
			 "it could not", (unsigned long)v->start, (unsigned long)v->end,
			 v->name);
	uffd_close(p, v, uffd);
	return sum;
}

/*
 * Would the kernel merge v into the region just below it? Only
 * neighbours with equal flags can merge: adjacent, same kind, protection
 * and sharing, and for files contiguous offsets of the same file.
 */
static int could_merge(const struct plan_vma *prev, const struct plan_vma *v)
{
	return prev && prev->end == v->start && prev->kind == v->kind &&
	       prev->prot == v->prot && prev->flags == v->flags && prev->madv == v->madv &&
	       !(v->flags & IBCR_VMAF_SHARED) &&
	       (v->fd < 0 || (prev->fd == v->fd &&
			      prev->pgoff + (prev->end - prev->start) == v->pgoff));
}

/*
 * Saved regions are separate VMAs, and must stay so: /proc/PID/maps, a
 * later munmap or mprotect, and the next checkpoint see the difference.
 * Neighbours with equal flags were kept apart in the original by their
 * distinct anon_vmas, which the kernel checks on every merge attempt. A
 * region gets an anon_vma of its own only if, at its first write, no
 * neighbour is compatible (same flags but access bits: the kernel would
 * share the neighbour's). So a region is mapped with a protection its
 * lower neighbour lacks (no merge at mmap), its VM_DONTDUMP is flipped
 * while it is written (its data, or one page written and dropped), and
 * only then does it get its saved advice and protection.
 */
static int temp_prot(const struct plan_vma *prev, const struct plan_vma *v)
{
	int rw = PROT_READ | PROT_WRITE;

	if (prev && prev->end == v->start && (int)prev->prot == rw)
		return rw | PROT_EXEC;
	return rw;
}

static void set_dontdump(struct plan *p, const struct plan_vma *v, int on)
{
	if (sys_madvise(v->start, v->end - v->start, on ? MADV_DONTDUMP : MADV_DODUMP))
		core_die(p, "region %#lx-%#lx (%s): madvise DONTDUMP/DODUMP failed",
			 (unsigned long)v->start, (unsigned long)v->end, v->name);
}

static void own_anon_vma(struct plan *p, const struct plan_vma *v)
{
	/* a write, of the byte that is there, makes the kernel give the region an anon_vma */
	// cppcheck-suppress selfAssignment
	*(volatile uint8_t *)v->start = *(volatile uint8_t *)v->start;
	if (sys_madvise(v->start, p->page_size, MADV_DONTNEED))
		core_die(p, "region %#lx-%#lx (%s): madvise DONTNEED failed",
			 (unsigned long)v->start, (unsigned long)v->end, v->name);
}

/*
 * A private mapping that was never writable is not charged to the commit
 * limit (no VM_ACCOUNT); making it writable, even for a moment, would
 * charge it for good, change its flags and let it merge with neighbours
 * it was apart from. Those keep their protection from the start.
 */
static int may_write(const struct plan_vma *v)
{
	return (v->flags & (IBCR_VMAF_SHARED | IBCR_VMAF_ACCOUNT)) || (v->prot & PROT_WRITE);
}

static int open_self_mem(struct plan *p, const struct plan_vma *v)
{
	long fd = SYS(__NR_openat, -100 /* AT_FDCWD */, "/proc/self/mem", 2 /* O_RDWR */,
		      0, 0, 0);

	if (fd < 0)
		core_die(p, "region %#lx-%#lx (%s): opening /proc/self/mem: error %ld",
			 (unsigned long)v->start, (unsigned long)v->end, v->name, -fd);
	return (int)fd;
}

/*
 * A compressed image: the loader decompresses and writes the region's
 * data (loader/pages.c) and checks its checksum. ST_FILL, the region and our
 * userfaultfd's number (or -1); CT_DONE done, CT_CANNOT it could not take it.
 */
static char ask_fill(struct plan *p, const struct plan_vma *v, int uffd)
{
	struct st_fill msg = { ST_FILL, (uint32_t)(v - p->vmas), uffd };
	char reply = 0;

	if (sys_write(p->status_fd, &msg, sizeof(msg)) != sizeof(msg) ||
	    sys_read(p->control_fd, &reply, 1) != 1 || (reply != CT_DONE && reply != CT_CANNOT))
		sys_exit_group(127);	/* the loader said why */
	return reply;
}

/*
 * A writable region goes in through a userfaultfd when we may have one
 * (no page zeroed first, as in uffd.c), else it is populated first, for
 * the same reason as read_run. The loader writes every byte or fails,
 * so nothing is left missing when we unregister.
 */
static void ask_loader(struct plan *p, const struct plan_vma *v, int writable)
{
	int uffd = writable ? uffd_open(p, v) : -1;

	if (uffd >= 0) {
		char reply = ask_fill(p, v, uffd);

		uffd_close(p, v, uffd);
		if (reply == CT_DONE)
			return;
	}
	for (uint64_t i = 0; writable && i < v->nruns; i++)
		sys_madvise(v->runs[i].addr, v->runs[i].npages * p->page_size,
			    MADV_POPULATE_WRITE);
	if (ask_fill(p, v, -1) != CT_DONE)
		sys_exit_group(127);	/* CT_CANNOT without a descriptor: a loader bug */
}

/*
 * Built and filled by the loader before this process forked its children
 * (loader/cow.c), who share its pages copy-on-write, or inherited so from
 * the parent: moved into place, which keeps the pages and their sharing.
 * It gets the protection it would have been mapped with first, as a
 * region just mapped would (temp_prot: kept apart from its neighbour).
 */
static long move_built(struct plan *p, const struct plan_vma *v, int prot)
{
	uint64_t len = v->end - v->start;
	long rc = prot == (PROT_READ | PROT_WRITE) ? 0 : sys_mprotect(v->cow_src, len, prot);

	if (rc)
		core_die(p, "region %#lx-%#lx (%s): protecting its pages at %#lx: error %ld",
			 (unsigned long)v->start, (unsigned long)v->end, v->name,
			 (unsigned long)v->cow_src, -rc);
	return sys_mremap(v->cow_src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, v->start);
}

/* Returns 1 when v was registered for the loader to fill later (lazy.c). */
static int map_one(struct plan *p, const struct plan_vma *prev, const struct plan_vma *v,
		   long lazy_fd)
{
	uint64_t len = v->end - v->start, off = v->data_off;
	int prot = may_write(v) ? temp_prot(prev, v) : (int)v->prot;
	int flags = map_flags(v) | ((v->flags & IBCR_VMAF_NORESERVE) ? MAP_NORESERVE : 0);
	int memfd = -1, apart, lazy = 0;
	uint32_t crc = 0;
	long rc;

	if ((v->flags & IBCR_VMAF_SHARED) && v->fd >= 0)
		prot = (int)v->prot;	/* its file may be open read-only */
	if (v->shm_src) {
		/* the same pages as the loader's object: old size 0 maps them again */
		prot = PROT_READ | PROT_WRITE;
		rc = sys_mremap(v->shm_src, 0, len, MREMAP_MAYMOVE | MREMAP_FIXED, v->start);
	} else if (v->cow_src) {
		rc = move_built(p, v, prot);
	} else {
		rc = sys_mmap(v->start, len, prot, flags, v->fd, v->pgoff);
	}
	if (rc != (long)v->start)
		core_die(p, "mapping region %#lx-%#lx (%s): error %ld",
			 (unsigned long)v->start, (unsigned long)v->end, v->name, -rc);
	advise(p, v, IBCR_MADV_HUGEPAGE, MADV_HUGEPAGE);
	advise(p, v, IBCR_MADV_NOHUGEPAGE, MADV_NOHUGEPAGE);
	/* MADV_DODUMP is refused on droppable memory: its first write is all */
	apart = (prot & PROT_WRITE) && could_merge(prev, v) &&
		!(v->flags & IBCR_VMAF_DROPPABLE);
	if (apart)
		set_dontdump(p, v, !(v->madv & IBCR_MADV_DONTDUMP));
	if (v->lazy && lazy_fd >= 0 && !v->shm_src && !v->cow_src) {
		/* its anon_vma now, while the flags keep it apart: no write of ours comes */
		own_anon_vma(p, v);
		lazy = core_lazy_register(p, lazy_fd, v);
	}
	if (lazy || v->shm_src || v->cow_src) {
		/* filled, and checked, by the loader (lazy: chunk by chunk, later) */
		crc = v->data_crc;
	} else if (v->data_len && (p->flags & PLAN_FILL_BY_LOADER)) {
		ask_loader(p, v, prot & PROT_WRITE);
		crc = v->data_crc;	/* checked by the loader */
	} else if (helpable(p, v, prot)) {
		crc = fill_together(p, v);
	} else if (v->data_len) {
		if (!(prot & PROT_WRITE))
			memfd = open_self_mem(p, v);
		crc = fill_runs(p, v, v->runs, v->nruns, &off, 0, memfd);
		if (memfd >= 0)
			sys_close(memfd);
	}
	if (crc != v->data_crc)
		core_die(p, "image %s: region %#lx-%#lx (%s): page data is corrupt "
			 "(checksum mismatch); nothing was resumed", p->image_path,
			 (unsigned long)v->start, (unsigned long)v->end, v->name);
	/* a built region has its anon_vma, and a write could break its sharing */
	if (apart && !v->data_len && !v->cow_src)
		own_anon_vma(p, v);
	if (apart)
		set_dontdump(p, v, v->madv & IBCR_MADV_DONTDUMP);
	else
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
	if (v->madv & IBCR_MADV_LOCKED) {
		rc = SYS(__NR_mlock, v->start, len, 0, 0, 0, 0);
		if (rc)
			core_die(p, "locking region %#lx-%#lx (%s) in memory: error %ld",
				 (unsigned long)v->start, (unsigned long)v->end, v->name, -rc);
	}
	return lazy;
}

void core_map_regions(struct plan *p)
{
	const struct plan_vma *prev = 0;
	long rc, lazy_fd = core_lazy_open(p);
	uint64_t nlazy = 0;

	for (uint64_t i = 0; i < p->nvmas; i++) {
		const struct plan_vma *v = &p->vmas[i];

		if (v->kind == IBCR_VMA_SPECIAL || v->kind == IBCR_VMA_DEVICE) {
			prev = 0;	/* moved already / owned by a stage */
			continue;
		}
		nlazy += (uint64_t)map_one(p, prev, v, lazy_fd);
		prev = v;
	}
	for (uint64_t i = 0; i < p->nshm; i++) {
		rc = sys_munmap(p->shm[i].start, p->shm[i].end - p->shm[i].start);
		if (rc)
			core_die(p, "unmapping the loader's shared object at %#lx: error %ld",
				 (unsigned long)p->shm[i].start, -rc);
	}
	core_lazy_handover(p, lazy_fd, nlazy);
}
