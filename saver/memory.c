// SPDX-License-Identifier: MIT
/*
 * Memory: classify every region, then stream the pages that are state
 * into the PAGES section, region by region, with a CRC for each.
 *
 * Which pages are state (docs/design-notes.md, "Memory"):
 * - private anonymous: pages present or swapped (pagemap); all-zero pages
 *   are skipped, since an untouched page reads as zeros too;
 * - private file mappings: only pages that diverged from the file
 *   (anonymous copies: present and not file-backed, or swapped);
 * - shared file mappings: none, the file holds them;
 * - shared anonymous memory: every page with data (SEEK_DATA on the
 *   object when /proc/PID/map_files allows, else the whole range);
 * - mappings of deleted files: as for a file, the file being a file
 *   object of the image (delmap.c);
 * - private mappings of memfds that no descriptor has: every page,
 *   restored as anonymous memory, since the memfd will not be there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/uio.h>
#include <unistd.h>

#include "buf.h"
#include "rt/crc32c.h"
#include "rt/xxh64.h"
#include "procfs.h"
#include "saver.h"
#include "sink.h"

#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_FILE (1ull << 61)
#define CHUNK_PAGES 1024

/* How a region's pages are chosen; kept per region while dumping. */
enum pick { PICK_NONE, PICK_ANON, PICK_COW, PICK_ALL };

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

static int is_special(const char *name)
{
	return !strcmp(name, "[vdso]") || !strcmp(name, "[vvar]") ||
	       !strcmp(name, "[vvar_vclock]") || !strcmp(name, "[sigpage]") ||
	       !strcmp(name, "[vectors]");
}

static uint32_t madv_of(uint32_t vmf)
{
	return ((vmf & VMF_HUGEPAGE) ? IBCR_MADV_HUGEPAGE : 0) |
	       ((vmf & VMF_NOHUGEPAGE) ? IBCR_MADV_NOHUGEPAGE : 0) |
	       ((vmf & VMF_DONTDUMP) ? IBCR_MADV_DONTDUMP : 0) |
	       ((vmf & VMF_DONTFORK) ? IBCR_MADV_DONTFORK : 0) |
	       ((vmf & VMF_WIPEONFORK) ? IBCR_MADV_WIPEONFORK : 0) |
	       ((vmf & VMF_MERGEABLE) ? IBCR_MADV_MERGEABLE : 0) |
	       ((vmf & VMF_LOCKED) ? IBCR_MADV_LOCKED : 0);
}

#define VMAF_FROM_VMFLAGS (IBCR_VMAF_GROWSDOWN | IBCR_VMAF_NORESERVE | IBCR_VMAF_ACCOUNT | \
			   IBCR_VMAF_THP | IBCR_VMAF_DROPPABLE)

void vma_set_vmflags(struct ibcr_vma *v, uint32_t vmf)
{
	v->flags = (v->flags & ~(uint32_t)VMAF_FROM_VMFLAGS) |
		   ((vmf & VMF_GROWSDOWN) ? IBCR_VMAF_GROWSDOWN : 0) |
		   ((vmf & VMF_NORESERVE) ? IBCR_VMAF_NORESERVE : 0) |
		   ((vmf & VMF_ACCOUNT) ? IBCR_VMAF_ACCOUNT : 0) |
		   ((vmf & VMF_THP) ? IBCR_VMAF_THP : 0) |
		   ((vmf & VMF_DROPPABLE) ? IBCR_VMAF_DROPPABLE : 0);
	v->madv = madv_of(vmf);
}

#define REGION_FAIL(what) \
	ibcr_fail(e, "pid %d: region %#llx-%#llx (%s): %s", (int)t->pid, \
		  (unsigned long long)m->start, (unsigned long long)m->end, \
		  m->path[0] ? m->path : "anonymous", what)

/*
 * Shared memory is one object however many processes map it: the
 * device and inode maps shows for it name it (for a SysV segment the
 * inode is its id), so that a restore shares it again.
 */
static void shm_identity(const struct maps_entry *m, struct ibcr_vma *v)
{
	v->file_dev = ((uint64_t)m->dev_major << 32) | m->dev_minor;
	v->file_ino = m->ino;
	if (!strncmp(m->path, "/SYSV", 5))
		v->flags |= IBCR_VMAF_SYSV;
}

static int on_tmpfs(const char *path)
{
	struct statfs fs;

	return !statfs(path, &fs) && fs.f_type == TMPFS_MAGIC;
}

/*
 * A file mapped shared and writable, or on tmpfs (POSIX shm in /dev/shm,
 * job files in a tmpfs /tmp), is memory the processes share: its mapped
 * content is saved and written back into the file at restore, so that
 * the processes find what they left, wherever they are restored.
 */
static void named_shm(const struct maps_entry *m, const struct stat *st,
		      struct ibcr_vma *v)
{
	v->kind = IBCR_VMA_SHMEM;
	v->flags |= IBCR_VMAF_NAMED;
	shm_identity(m, v);
	v->file_size = (uint64_t)st->st_size;
	v->file_mode = st->st_mode & 07777;
}

/* A private (or read-only shared) file mapping: the file's identity. */
static void file_identity(struct ibcr_vma *v, const struct stat *st)
{
	v->kind = IBCR_VMA_FILE;
	v->file_ino = st->st_ino;
	v->file_dev = st->st_dev;
	v->file_size = (uint64_t)st->st_size;
	v->file_mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
			   (uint64_t)st->st_mtim.tv_nsec;
}

/*
 * Whether the mapped file is at its path as the process itself sees it
 * (through /proc/PID/root): maps names a file of a mount the saver cannot
 * reach by the path the process's own mount tree gives it.
 */
static int in_own_view(const struct target *t, const struct maps_entry *m)
{
	char path[PATH_MAX + 32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)t->pid, m->path);
	return !stat(path, &st) && st.st_ino == m->ino;
}

static int classify_file(struct target *t, const struct maps_entry *m,
			 struct ibcr_vma *v, struct ibcr_err *e)
{
	const char *p = m->path;
	int deleted = ends_with(p, " (deleted)");
	struct stat st;

	if (m->shared && (!strncmp(p, "/dev/zero", 9) || !strncmp(p, "/SYSV", 5) ||
			  !strncmp(p, "/memfd:", 7))) {
		v->kind = IBCR_VMA_SHMEM;
		shm_identity(m, v);
		return 0;
	}
	if (m->shared && !strncmp(p, "/[aio]", 6))
		return REGION_FAIL("the ring of an aio context (io_setup): not supported");
	if (deleted || !strncmp(p, "/memfd:", 7)) {
		/* mapped from the file object of the image that is the file; */
		/* a private copy of a memfd that none is (delmap.c decides) */
		v->kind = strncmp(p, "/memfd:", 7) ? IBCR_VMA_FILE : IBCR_VMA_ANON;
		v->flags |= IBCR_VMAF_DELETED;
		v->file_dev = makedev(m->dev_major, m->dev_minor);
		v->file_ino = m->ino;
		return 0;
	}
	if (stat(p, &st) || st.st_ino != m->ino)
		return REGION_FAIL(in_own_view(t, m) ?
				   "the process sees another file at that path than the "
				   "saver (another mount namespace: a container?): not supported" :
				   "its file is no longer at that path");
	if (S_ISCHR(st.st_mode) && !strcmp(p, "/dev/zero") && !m->shared) {
		v->kind = IBCR_VMA_ANON;
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return REGION_FAIL("mapping of a device or special file: not supported");
	if (m->shared && ((m->vmflags & VMF_MAYWRITE) || on_tmpfs(p))) {
		named_shm(m, &st, v);
		return 0;
	}
	file_identity(v, &st);
	return 0;
}

/*
 * libc keeps pointers into the [vdso]: a restore on the same kernel
 * finds the very same one (its CRC goes where files keep their
 * identity, file_ino), one on another kernel needs its bytes to
 * redirect them (the VDSO section, saver/vdso.c).
 */
static int vdso_identity(struct target *t, struct ibcr_vma *v, struct ibcr_err *e)
{
	size_t n = v->end - v->start;
	uint8_t *code = xmalloc(n);
	int rc = read_target(t, v->start, code, n, e);

	if (!rc)
		v->file_ino = crc32c(0, code, n);
	free(t->vdso);
	t->vdso = rc ? NULL : code;
	t->vdso_len = rc ? 0 : n;
	if (rc)
		free(code);
	return rc;
}

/* Returns 1 to skip the region entirely, 0 to keep it, -1 on error. */
static int classify(struct target *t, const struct maps_entry *m,
		    struct ibcr_vma *v, struct ibcr_err *e)
{
	const char *p = m->path;

	memset(v, 0, sizeof(*v));
	v->start = m->start;
	v->end = m->end;
	v->pgoff = m->pgoff;
	v->prot = m->prot;
	v->flags = m->shared ? IBCR_VMAF_SHARED : 0;
	vma_set_vmflags(v, m->vmflags);
	if (!strcmp(p, "[vsyscall]") || !strcmp(p, "[uprobes]"))
		return 1;	/* fixed by the kernel, nothing to restore */
	if (!strncmp(p, "/dev/infiniband/", 16)) {
		v->kind = IBCR_VMA_DEVICE;	/* the verbs stage's */
		return 0;
	}
	if (is_special(p)) {
		v->kind = IBCR_VMA_SPECIAL;
		return strcmp(p, "[vdso]") ? 0 : vdso_identity(t, v, e);
	}
	if (m->vmflags & VMF_PKEY)
		return REGION_FAIL("a memory protection key (pkey_mprotect) is not supported yet");
	if (m->vmflags & VMF_HUGETLB)
		return REGION_FAIL("hugetlbfs memory is not supported yet");
	if (m->vmflags & (VMF_IO | VMF_PFNMAP))
		return REGION_FAIL("device memory (VM_IO/VM_PFNMAP) cannot be saved");
	if (!p[0] || !strncmp(p, "[anon:", 6) || !strcmp(p, "[heap]") ||
	    !strcmp(p, "[stack]")) {
		v->kind = m->shared ? IBCR_VMA_SHMEM : IBCR_VMA_ANON;
		if (m->shared)
			shm_identity(m, v);
		v->flags |= !strcmp(p, "[heap]") ? IBCR_VMAF_HEAP : 0;
		v->flags |= !strcmp(p, "[stack]") ? IBCR_VMAF_STACK : 0;
		return 0;
	}
	if (!strncmp(p, "[anon_shmem:", 12)) {
		v->kind = IBCR_VMA_SHMEM;
		shm_identity(m, v);
		return 0;
	}
	if (p[0] == '/')
		return classify_file(t, m, v, e);
	return REGION_FAIL("unknown kind of mapping: not supported");
}

int capture_memory_map(struct target *t, struct ibcr_err *e)
{
	struct ibcr_process_state *ps = &t->ps;
	struct maps_entry *m;
	size_t n;

	switch (vmflags_layout(t, &m, &n, e)) {
	case 0:		/* no guess to go by: the page walk, in the freeze */
		if (maps_read(t->pid, 1, &m, &n, e))
			return -1;
		break;
	case -1:
		return -1;
	}
	ps->vmas = xcalloc(n, sizeof(*ps->vmas));
	ps->vma_names = xcalloc(n, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		int rc = classify(t, &m[i], &ps->vmas[ps->nvmas], e);

		if (rc < 0) {
			maps_free(m, n);
			return -1;
		}
		if (rc == 0)
			ps->vma_names[ps->nvmas++] = xstrdup(m[i].path);
	}
	maps_free(m, n);
	return 0;
}

/* State of the region being streamed. */
struct dump {
	struct target *t;
	struct sink sink;
	struct ibcr_vma *v;
	uint8_t *buf;
	uint64_t *pm;
	const uint64_t *cow;	/* the region's pages its parent holds (cow.c) */
	const struct shm_copy *copy;	/* shared memory copied in the freeze */
	int pmfd, objfd;
	size_t cap_runs;
	int zero_skip;
	uint32_t crc;
};

static enum pick pick_of(const struct ibcr_vma *v)
{
	switch (v->kind) {
	case IBCR_VMA_ANON:
		return (v->flags & IBCR_VMAF_DELETED) ? PICK_ALL : PICK_ANON;
	case IBCR_VMA_FILE:
		return (v->flags & IBCR_VMAF_SHARED) ? PICK_NONE : PICK_COW;
	case IBCR_VMA_SHMEM:
		return PICK_ALL;
	}
	return PICK_NONE;
}

static int page_is_zero(const uint8_t *p, size_t n)
{
	const uint64_t *q = (const uint64_t *)p;

	for (size_t i = 0; i < n / 8; i++)
		if (q[i])
			return 0;
	return 1;
}

static void add_page(struct dump *d, uint64_t addr, uint64_t pg)
{
	struct ibcr_process_state *ps = &d->t->ps;
	struct ibcr_run *last = ps->nruns > d->v->run0 ? &ps->runs[ps->nruns - 1] : NULL;

	if (last && last->addr + last->npages * pg == addr) {
		last->npages++;
		return;
	}
	if (ps->nruns == d->cap_runs) {
		d->cap_runs = d->cap_runs ? d->cap_runs * 2 : 256;
		ps->runs = xrealloc(ps->runs, sizeof(*ps->runs) * d->cap_runs);
	}
	/* cap_runs is ps->runs' room: both start empty in write_memory */
	ps->runs[ps->nruns].addr = addr;	// NOLINT(clang-analyzer-core.NullDereference)
	ps->runs[ps->nruns].npages = 1;
	ps->nruns++;
	d->v->nruns++;
}

/*
 * The page about to be stored, its term of the region's sum; also of
 * its chunk's in PAGESUMS (pagesums.c) when the data is stored raw.
 */
static void add_sum(struct dump *d, uint32_t term)
{
	d->crc += term;
	if (d->sink.codec == IBCR_CODEC_RAW)
		pagesum_add(d->t, d->v->data_len, term);
}

/* From the freeze's copy (shared memory, DONTFORK) when there is one. */
static int read_pages(struct dump *d, uint64_t addr, uint8_t *dst, size_t len,
		      struct ibcr_err *e)
{
	if (d->copy) {
		memcpy(dst, d->copy->buf + (addr - d->v->start), len);
		return 0;
	}
	return read_target(d->t, addr, dst, len, e);
}

/*
 * Uncompressed, the pages are read straight into the image's write
 * buffer: one copy fewer, ~10% of a large checkpoint's time. Zero pages
 * are squeezed out in place. Chunks of DIRECT_CHUNK stay in the cache
 * between the read and the checksum.
 */
#define DIRECT_CHUNK (1ul << 20)

static int dump_direct(struct dump *d, uint64_t addr, uint64_t npages,
		       struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize();

	while (npages) {
		size_t len = npages * pg < DIRECT_CHUNK ? npages * pg : DIRECT_CHUNK, kept = 0;
		uint8_t *dst = sink_room(&d->sink, pg, &len, e);

		if (!dst)
			return -1;
		len -= len % pg;
		if (read_pages(d, addr, dst, len, e))
			return -1;
		for (size_t i = 0; i < len / pg; i++) {
			uint8_t *p = dst + i * pg;

			if (d->zero_skip && page_is_zero(p, pg))
				continue;
			if (p != dst + kept)
				memmove(dst + kept, p, pg);
			add_sum(d, page_sum(0, dst + kept, pg, pg, d->v->data_len / pg));
			d->v->data_len += pg;
			add_page(d, addr + i * pg, pg);
			kept += pg;
		}
		if (sink_fill(&d->sink, kept, e))
			return -1;
		addr += len;
		npages -= len / pg;
	}
	return 0;
}

/* Copies [addr, addr + n pages) into the image, dropping zero pages. */
static int dump_range(struct dump *d, uint64_t addr, uint64_t npages,
		      struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize();
	size_t len = npages * pg;

	if (d->sink.codec == IBCR_CODEC_RAW)
		return dump_direct(d, addr, npages, e);
	if (read_pages(d, addr, d->buf, len, e))
		return -1;
	for (uint64_t i = 0; i < npages; i++) {
		const uint8_t *p = d->buf + i * pg;

		if (d->zero_skip && page_is_zero(p, pg))
			continue;
		if (sink_put(&d->sink, p, pg, e))
			return -1;
		add_sum(d, page_sum(0, p, pg, pg, d->v->data_len / pg));
		d->v->data_len += pg;
		add_page(d, addr + i * pg, pg);
	}
	return 0;
}

static int wanted(enum pick how, uint64_t pm)
{
	switch (how) {
	case PICK_ANON:
		return (pm & (PM_PRESENT | PM_SWAPPED)) != 0;
	case PICK_COW:
		return ((pm & PM_PRESENT) && !(pm & PM_FILE)) || (pm & PM_SWAPPED);
	default:
		return 1;
	}
}

/* Pages of shared memory that hold data, from the object's holes. */
static int shmem_has_data(struct dump *d, uint64_t off, uint64_t len)
{
	off_t data;

	if (d->objfd < 0)
		return 1;
	data = lseek(d->objfd, (off_t)off, SEEK_DATA);
	return data >= 0 && (uint64_t)data < off + len;
}

static int dump_chunk(struct dump *d, enum pick how, uint64_t addr, uint64_t npages,
		      struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize(), run = 0, run_start = 0;

	if (how != PICK_ALL && !d->copy) {	/* a copy's bits say it */
		ssize_t want = (ssize_t)(npages * 8);

		if (pread(d->pmfd, d->pm, (size_t)want, (off_t)(addr / pg * 8)) != want)
			return ibcr_fail_errno(e, errno, "pid %d: reading pagemap at %#llx",
					       (int)d->t->pid, (unsigned long long)addr);
	}
	for (uint64_t i = 0; i <= npages; i++) {
		uint64_t a = addr + i * pg;
		uint64_t p = (a - d->v->start) / pg;
		int want = i < npages &&
			   (d->copy ? (int)(d->copy->bits[p / 64] >> (p % 64) & 1) :
			    how == PICK_ALL ?
			    shmem_has_data(d, d->v->pgoff + (a - d->v->start), pg) :
			    wanted(how, d->pm[i])) &&
			   !(d->cow && (d->cow[p / 64] & (1ull << (p % 64))));

		if (want && !run++)
			run_start = a;
		if (!want && run) {
			if (dump_range(d, run_start, run, e))
				return -1;
			run = 0;
		}
	}
	return 0;
}

static int open_object(struct target *t, const struct ibcr_vma *v)
{
	char path[96];

	if (v->kind != IBCR_VMA_SHMEM)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx",
		 (int)(t->mem_pid ? t->mem_pid : t->pid),
		 (unsigned long long)v->start, (unsigned long long)v->end);
	return open(path, O_RDONLY | O_CLOEXEC);	/* -1: read the whole range */
}

static int dump_region(struct dump *d, struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize();
	enum pick how = pick_of(d->v);
	uint32_t idx = (uint32_t)(d->v - d->t->ps.vmas);
	int rc = 0;

	if (d->v->kind == IBCR_VMA_SHMEM && (d->v->flags & IBCR_VMAF_SHMREF))
		how = PICK_NONE;
	d->copy = shm_copy_of(d->t, idx);
	d->v->run0 = d->t->ps.nruns;
	d->v->data_off = d->sink.pos;
	d->crc = 0;
	d->zero_skip = d->v->kind != IBCR_VMA_FILE;
	d->objfd = open_object(d->t, d->v);
	d->cow = cow_bits(d->t, idx);
	for (uint64_t a = d->v->start; how != PICK_NONE && a < d->v->end && !rc;
	     a += CHUNK_PAGES * pg) {
		uint64_t n = (d->v->end - a) / pg;

		rc = dump_chunk(d, how, a, n < CHUNK_PAGES ? n : CHUNK_PAGES, e);
	}
	if (d->objfd >= 0)
		close(d->objfd);
	shm_copy_free(d->t, idx);
	d->v->data_crc = d->crc;
	return rc;
}

int write_memory(struct target *t, uint32_t proc, struct img_writer *w,
		 int codec, int level, struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize();
	struct dump d = { .t = t };
	uint32_t flags = IBCR_SECF_CRC_PER_REGION | (codec ? IBCR_SECF_BLOCKS : 0);
	char path[64];
	int rc = 0;

	/* from the snapshot when there is one: the process runs on meanwhile */
	snprintf(path, sizeof(path), "/proc/%d/pagemap",
		 (int)(t->mem_pid ? t->mem_pid : t->pid));
	d.pmfd = open(path, O_RDONLY | O_CLOEXEC);
	if (d.pmfd < 0)
		return ibcr_fail_errno(e, errno, "pid %d: opening %s", (int)t->pid, path);
	d.buf = xmalloc(CHUNK_PAGES * pg);
	d.pm = xmalloc(CHUNK_PAGES * 8);
	t->ps.nsums = 0;	/* PAGESUMS, gathered as the pages are (add_sum) */
	t->ps.sum_chunk = 0;
	/* raw page data starts page-aligned, to be read (or mapped) in place */
	if (imgw_begin(w, IBCR_SEC_PAGES, proc, flags, codec ? 8 : (uint32_t)pg, e) ||
	    sink_init(&d.sink, w, codec, level))
		rc = -1;
	for (uint32_t i = 0; i < t->ps.nvmas && !rc; i++) {
		d.v = &t->ps.vmas[i];
		rc = dump_region(&d, e);
	}
	if (sink_finish(&d.sink, e) && !rc)
		rc = -1;
	if (!rc)
		rc = imgw_end(w, e);
	free(d.buf);
	free(d.pm);
	close(d.pmfd);
	return rc;
}
