// SPDX-License-Identifier: MIT
/*
 * Shared memory between restored processes (MAP_SHARED anonymous memory
 * that several processes of the image map, e.g. made before a fork, and
 * SysV segments, with their ids, and files mapped shared, at their
 * paths) is one object again: the loader creates it once, before it
 * forks, at an address free in every saved layout, fills it from the
 * regions that hold its data, and every process inherits the mapping. Each process's
 * core then maps its regions of the object with mremap(old size 0),
 * which maps the same pages again, and drops the inherited mapping.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/falloc.h>

#include "procfs.h"

#include "buf.h"
#include "rt/xxh64.h"
#include "fdkinds.h"
#include "loader.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23	/* Linux 5.14; older kernels say EINVAL, ignored */
#endif

static int is_shared_obj(const struct ibcr_vma *v)
{
	return v->kind == IBCR_VMA_SHMEM;
}

static const struct ibcr_sysv_shm *sysv_rec(const struct ibcr_sysv *sv, uint64_t id)
{
	for (uint32_t i = 0; i < sv->nshm; i++)
		if ((uint64_t)sv->shm[i].id == id)
			return &sv->shm[i];
	return NULL;
}

/*
 * A SysV segment with its saved id (shm_next_id, which needs privilege
 * in the IPC namespace), key, owner and mode, attached at `addr`.
 */
/*
 * The segment is still there (the checkpointed processes were killed,
 * SysV memory outlives them): it is the same object, unused; it gets its
 * saved contents again.
 */
static int sysv_reuse(const struct ibcr_sysv_shm *s, const struct shmid_ds *ds,
		      struct ibcr_err *e)
{
	if (ds->shm_perm.__key != s->key || ds->shm_segsz != s->size)
		return ibcr_fail(e, "SysV segment %d exists already, with another key or "
				 "size", s->id);
	if (ds->shm_nattch)
		return ibcr_fail(e, "SysV segment %d exists already and %lu processes "
				 "use it", s->id, (unsigned long)ds->shm_nattch);
	return 0;
}

static int sysv_create(const struct ibcr_sysv_shm *s, uint64_t addr, struct ibcr_err *e)
{
	struct shmid_ds ds;
	char id[16];
	int fd, got;
	size_t len = (size_t)snprintf(id, sizeof(id), "%d", s->id);

	if (shmctl(s->id, IPC_STAT, &ds) == 0) {
		if (sysv_reuse(s, &ds, e))
			return -1;
		got = s->id;
		goto attach;
	}
	fd = open("/proc/sys/kernel/shm_next_id", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, id, len) != (ssize_t)len) {
		if (fd >= 0)
			close(fd);
		return ibcr_fail_errno(e, errno, "SysV segment %d: choosing its id "
				       "(kernel.shm_next_id)", s->id);
	}
	close(fd);
	got = shmget(s->key, s->size, IPC_CREAT | IPC_EXCL | (int)s->mode);
	if (got < 0)
		return ibcr_fail_errno(e, errno, "SysV segment %d (key %#x)", s->id, s->key);
	if (got != s->id) {
		shmctl(got, IPC_RMID, NULL);
		return ibcr_fail(e, "SysV segment %d came back as %d", s->id, got);
	}
attach:
	if (shmat(got, (void *)(uintptr_t)addr, 0) != (void *)(uintptr_t)addr)
		return ibcr_fail_errno(e, errno, "SysV segment %d: attaching it", s->id);
	if (shmctl(got, IPC_STAT, &ds) == 0) {
		ds.shm_perm.uid = s->uid;
		ds.shm_perm.gid = s->gid;
		ds.shm_perm.mode = s->mode;
		if (shmctl(got, IPC_SET, &ds))
			return ibcr_fail_errno(e, errno, "SysV segment %d: its owner", s->id);
	}
	return 0;
}

/* For file systems that cannot punch holes. */
static int zero_fill(int fd, uint64_t off, uint64_t len)
{
	static const uint8_t zeros[65536];

	while (len) {
		size_t k = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);
		ssize_t w = pwrite(fd, zeros, k, (off_t)off);

		if (w <= 0)
			return -1;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/* The file is in use by a process outside the restore (the checkpointed
 * job still runs?): writing the saved content would change its memory. */
static int named_in_use(const struct shm_obj *o, struct ibcr_err *e)
{
	pid_t pid = maps_users(o->dev >> 32, o->dev & 0xffffffffu, o->ino);

	if (pid > 0)
		return ibcr_fail(e, "%s: mapped by running pid %d, outside this restore (does "
				 "the checkpointed job still run?)", o->path, (int)pid);
	return 0;
}

/*
 * The parts of the file that the regions map get exactly their saved
 * content: zeros first (the image leaves out zero pages), the data when
 * the regions are filled. What no region maps is left as the file has it.
 */
static int named_zero(int fd, struct job *j, uint32_t n, const struct shm_obj *o,
		      struct ibcr_err *e)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < j[k].ps.nvmas; i++) {
			const struct ibcr_vma *v = &j[k].ps.vmas[i];
			uint64_t from = v->pgoff, to = v->pgoff + (v->end - v->start);

			if (v->kind != IBCR_VMA_SHMEM || v->file_dev != o->dev ||
			    v->file_ino != o->ino)
				continue;
			if (to > o->named->file_size)
				to = o->named->file_size;
			if (from < to && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						   (off_t)from, (off_t)(to - from)) &&
			    zero_fill(fd, from, to - from))
				return ibcr_fail_errno(e, errno, "%s: clearing bytes %llu-%llu",
						       o->path, (unsigned long long)from,
						       (unsigned long long)to);
		}
	return 0;
}

/* A file mapped shared (IBCR_VMAF_NAMED): made again at its path, with
 * its saved size, and mapped where the processes will find it. */
static int named_open(struct job *j, uint32_t n, struct shm_obj *o, struct ibcr_err *e)
{
	int fd;
	void *p;

	if (named_in_use(o, e))
		return -1;
	fd = open(o->path, O_RDWR | O_CREAT | O_CLOEXEC, (mode_t)(o->named->file_mode & 07777));
	if (fd < 0)
		return ibcr_fail_errno(e, errno, "%s (a file the processes mapped shared)",
				       o->path);
	if (ftruncate(fd, (off_t)o->named->file_size)) {
		ibcr_fail_errno(e, errno, "%s: setting its size to %llu", o->path,
				(unsigned long long)o->named->file_size);
		close(fd);
		return -1;
	}
	if (named_zero(fd, j, n, o, e)) {
		close(fd);
		return -1;
	}
	p = mmap((void *)(uintptr_t)o->addr, o->size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return ibcr_fail_errno(e, errno, "%s: mapping it", o->path);
	return 0;
}

/* memfds made for shared objects, until memfd_open takes them */
static struct made_memfd {
	uint32_t obj;
	int fd;
} *made;
static uint32_t nmade;

int shm_memfd(uint32_t i)
{
	for (uint32_t k = 0; k < nmade; k++)
		if (made[k].obj == i && made[k].fd >= 0) {
			int fd = made[k].fd;

			made[k].fd = -1;
			return fd;
		}
	return -1;
}

/* The memfd file object the shared object is (its fd is open too), or -1. */
static long memfd_object(const struct ibcr_files *f, const struct shm_obj *o)
{
	if (o->sysv || o->named || strncmp(o->path, "/memfd:", 7))
		return -1;
	for (uint32_t i = 0; i < f->nobjs; i++)
		if (f->objs[i].kind == IBCR_FD_MEMFD && f->objs[i].ino == o->ino &&
		    major((dev_t)f->objs[i].dev) == o->dev >> 32 &&
		    minor((dev_t)f->objs[i].dev) == (uint32_t)o->dev)
			return i;
	return -1;
}

/* A memfd that is open and mapped shared: one object, made here. */
static int memfd_map(const struct ibcr_files *f, uint32_t i, const struct shm_obj *o,
		     struct ibcr_err *e)
{
	int fd = memfd_make(f, i, e);
	void *p;

	if (fd < 0)
		return -1;
	p = mmap((void *)(uintptr_t)o->addr, o->size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return ibcr_fail_errno(e, errno, "memfd %s: mapping it", f->paths[i]);
	}
	made = xrealloc(made, sizeof(*made) * (nmade + 1));
	made[nmade++] = (struct made_memfd){ i, fd };
	return 0;
}

static struct shm_obj *find(struct shm_obj *o, uint32_t n, const struct ibcr_vma *v)
{
	for (uint32_t i = 0; i < n; i++)
		if (o[i].dev == v->file_dev && o[i].ino == v->file_ino)
			return &o[i];
	return NULL;
}

/* Reads one region's data from an uncompressed image, v->start at `at`. */
static int fill_raw(int img_fd, const struct ibcr_process_state *ps, uint32_t i,
		    uint8_t *at, const char *path, struct ibcr_err *e)
{
	const struct ibcr_vma *v = &ps->vmas[i];
	uint64_t off = ps->pages_off + v->data_off, pg = (uint64_t)getpagesize();
	uint32_t crc = 0;

	for (uint64_t r = v->run0; r < v->run0 + v->nruns; r++) {
		uint8_t *to = at + (ps->runs[r].addr - v->start);
		uint64_t len = ps->runs[r].npages * pg;

		/* populated in one call: much faster than faulting page by page */
		madvise(to, len, MADV_POPULATE_WRITE);
		if (pread(img_fd, to, len, (off_t)off) != (ssize_t)len)
			return ibcr_fail_errno(e, errno, "image %s: reading region "
					       "%#llx-%#llx", path,
					       (unsigned long long)v->start,
					       (unsigned long long)v->end);
		crc = page_sum(crc, to, len, pg, (off - ps->pages_off - v->data_off) / pg);
		off += len;
	}
	if (crc != v->data_crc)
		return ibcr_fail(e, "image %s: region %#llx-%#llx (%s): page data "
				 "is corrupt (checksum mismatch)", path,
				 (unsigned long long)v->start, (unsigned long long)v->end,
				 ibcr_vma_label(ps, i));
	return 0;
}

int region_fill_at(const struct job *x, uint32_t i, uint64_t at, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = &x->ps;
	struct pages pg;
	int rc;

	if (!ps->nblocks)
		return fill_raw(x->rs.r->fd, ps, i, (uint8_t *)(uintptr_t)at, x->rs.r->path, e);
	/* compressed: the filler writes our own memory, shifted to `at` */
	if (pages_open(&pg, ps, x->rs.r->fd, x->rs.r->path, getpid(), e))
		return -1;
	pg.delta = (int64_t)at - (int64_t)ps->vmas[i].start;
	rc = pages_fill(&pg, i, -1, e);
	pages_close(&pg);
	return rc;
}

static int fill(struct job *j, uint32_t k, uint32_t i, const struct shm_obj *o,
		struct ibcr_err *e)
{
	return region_fill_at(&j[k], i, o->addr + j[k].ps.vmas[i].pgoff, e);
}

static void object_sizes(struct job *j, uint32_t n, const struct ibcr_sysv *sv,
			 struct shm_obj **out, uint32_t *cnt)
{
	struct shm_obj *o = NULL;
	uint32_t m = 0;

	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < j[k].ps.nvmas; i++) {
			const struct ibcr_vma *v = &j[k].ps.vmas[i];
			uint64_t end = v->pgoff + (v->end - v->start);
			struct shm_obj *x;

			if (!is_shared_obj(v))
				continue;
			x = find(o, m, v);
			if (!x) {
				o = xrealloc(o, sizeof(*o) * (m + 1));
				x = &o[m++];
				*x = (struct shm_obj){ v->file_dev, v->file_ino, 0, 0, NULL, NULL,
						       j[k].ps.vma_names[i] };
			}
			if (v->flags & IBCR_VMAF_NAMED)
				x->named = v;
			if (end > x->size)
				x->size = end;
			if (v->flags & IBCR_VMAF_SYSV) {
				const struct ibcr_sysv_shm *r = sysv_rec(sv, v->file_ino);
				uint64_t pg = (uint64_t)getpagesize();

				x->sysv = r;
				if (r && (r->size + pg - 1) / pg * pg > x->size)
					x->size = (r->size + pg - 1) / pg * pg;
			}
		}
	*out = o;
	*cnt = m;
}

int shm_prepare(struct job *j, uint32_t n, const struct ibcr_sysv *sv, struct ibcr_err *e)
{
	const struct ibcr_process_state **all =
		xmalloc(sizeof(*all) * (n + 1));	// NOLINT(bugprone-sizeof-expression): of pointers
	struct shm_obj *o;
	uint32_t m;
	int rc = 0;

	object_sizes(j, n, sv, &o, &m);
	for (uint32_t k = 0; k < n; k++)
		all[k] = &j[k].ps;
	for (uint32_t x = 0; x < m && !rc; x++) {
		long mfd;

		if (find_free(all, n, o[x].size, &o[x].addr, e))
			rc = -1;
		else if (o[x].sysv)
			rc = sysv_create(o[x].sysv, o[x].addr, e);
		else if (o[x].named)
			rc = named_open(j, n, &o[x], e);
		else if ((mfd = memfd_object(j[0].rs.files, &o[x])) >= 0)
			rc = memfd_map(j[0].rs.files, (uint32_t)mfd, &o[x], e);
		else if (mmap((void *)(uintptr_t)o[x].addr, o[x].size, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED)
			rc = ibcr_fail_errno(e, errno, "creating a shared memory object of "
					     "%llu bytes", (unsigned long long)o[x].size);
	}
	for (uint32_t k = 0; k < n && !rc; k++)
		for (uint32_t i = 0; i < j[k].ps.nvmas && !rc; i++)
			if (is_shared_obj(&j[k].ps.vmas[i]) && j[k].ps.vmas[i].data_len)
				rc = fill(j, k, i, find(o, m, &j[k].ps.vmas[i]), e);
	for (uint32_t k = 0; k < n; k++) {
		j[k].rs.shm = o;
		j[k].rs.nshm = m;
	}
	free(all);
	return rc;
}

/* Segments removed while attached are removed again, now all are attached. */
void shm_remove_dead(const struct ibcr_sysv *sv)
{
	for (uint32_t i = 0; i < sv->nshm; i++)
		if (sv->shm[i].flags & IBCR_SHM_DEST)
			shmctl(sv->shm[i].id, IPC_RMID, NULL);
}

/* Where region v finds its pages in the object, or 0 when it has none. */
uint64_t shm_source(const struct restore *rs, const struct ibcr_vma *v)
{
	for (uint32_t i = 0; is_shared_obj(v) && i < rs->nshm; i++)
		if (rs->shm[i].dev == v->file_dev && rs->shm[i].ino == v->file_ino)
			return rs->shm[i].addr + v->pgoff;
	return 0;
}
