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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "saver.h"

/*
 * The deleted file a region maps, as /proc/PID/map_files shows it (root):
 * a regular file with no name left, or the checkpoint is refused (one
 * with another name would not be that file once copied).
 */
static int deleted_stat(const struct target *t, const struct maps_entry *m, struct stat *st,
			struct ibcr_err *e)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)t->pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, st)) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return ibcr_fail_errno(e, err, "pid %d: region %#llx-%#llx (%s): mapping of a "
				       "deleted file, which only %s shows", (int)t->pid,
				       (unsigned long long)m->start, (unsigned long long)m->end,
				       m->path, path);
	}
	close(fd);
	if (st->st_ino != m->ino || !S_ISREG(st->st_mode))
		return ibcr_fail(e, "pid %d: region %#llx-%#llx (%s): %s is not the file "
				 "it maps", (int)t->pid, (unsigned long long)m->start,
				 (unsigned long long)m->end, m->path, path);
	if (st->st_nlink)
		return ibcr_fail(e, "pid %d: region %#llx-%#llx (%s): the file is deleted "
				 "here but has another name (%lu links): a copy would not "
				 "be that file", (int)t->pid, (unsigned long long)m->start,
				 (unsigned long long)m->end, m->path,
				 (unsigned long)st->st_nlink);
	return 0;
}

int deleted_shared(struct target *t, const struct maps_entry *m, struct ibcr_vma *v,
		   struct ibcr_err *e)
{
	struct stat st;

	if (deleted_stat(t, m, &st, e))
		return -1;
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

/*
 * Private mappings of deleted files (a library replaced by an upgrade, a
 * program's own unlinked temporary file) come back as mappings of a
 * deleted file again, with their name, offset and flags, not as
 * anonymous memory: the file is saved once (the bytes of the ranges the
 * image maps, DELFILES) and made again by the loader (loader/delfile.c);
 * the pages the processes changed are saved as for any private file
 * mapping. At most DELFILE_MAX bytes of one file.
 */
#define DELFILE_MAX (64ull << 20)

static struct ibcr_delfiles saved;
static struct delsrc {
	pid_t pid;		/* a process and region that maps it */
	uint64_t start, end;
} *srcs;

int deleted_private(struct target *t, const struct maps_entry *m, struct ibcr_vma *v,
		    struct ibcr_err *e)
{
	struct stat st;

	if (deleted_stat(t, m, &st, e))
		return -1;
	vma_file_identity(v, &st);
	v->flags |= IBCR_VMAF_DELETED;
	return 0;
}

static uint32_t record_of(const struct target *t, const struct ibcr_vma *v, const char *name,
			  uint32_t mode)
{
	size_t n = strlen(name), k = strlen(" (deleted)");

	for (uint32_t i = 0; i < saved.nfiles; i++)
		if (saved.files[i].dev == v->file_dev && saved.files[i].ino == v->file_ino)
			return i;
	saved.files = xrealloc(saved.files, sizeof(*saved.files) * (saved.nfiles + 1));
	saved.paths = xrealloc(saved.paths, sizeof(char *) * (saved.nfiles + 1));
	srcs = xrealloc(srcs, sizeof(*srcs) * (saved.nfiles + 1));
	saved.files[saved.nfiles] = (struct ibcr_delfile){ v->file_dev, v->file_ino,
							   v->file_size, mode, 0, 0, 0 };
	saved.paths[saved.nfiles] = xstrdup(name);
	if (n > k && !strcmp(name + n - k, " (deleted)"))
		saved.paths[saved.nfiles][n - k] = 0;
	srcs[saved.nfiles] = (struct delsrc){ t->pid, v->start, v->end };
	return saved.nfiles++;
}

/* Bytes [from, to) of file f: their data (holes stay zero), appended. */
static int read_part(uint32_t f, int fd, uint64_t from, uint64_t to, uint64_t base,
		     struct ibcr_err *e)
{
	while (from < to) {
		off_t d = lseek(fd, (off_t)from, SEEK_DATA), h;
		uint64_t end;
		struct ibcr_delrange *r;

		if (d < 0 || (uint64_t)d >= to)
			return 0;	/* ENXIO: only holes from here */
		h = lseek(fd, d, SEEK_HOLE);
		end = h < 0 || (uint64_t)h > to ? to : (uint64_t)h;
		if (saved.data_size - base + (end - (uint64_t)d) > DELFILE_MAX)
			return ibcr_fail(e, "%s: deleted file mapped privately: more than %llu "
					 "MiB of it to save", saved.paths[f], DELFILE_MAX >> 20);
		saved.ranges = xrealloc(saved.ranges, sizeof(*saved.ranges) * (saved.nranges + 1));
		r = &saved.ranges[saved.nranges++];
		*r = (struct ibcr_delrange){ (uint64_t)d, end - (uint64_t)d, saved.data_size };
		saved.data = xrealloc(saved.data, saved.data_size + r->len + 1);
		if (pread(fd, saved.data + saved.data_size, r->len, d) != (ssize_t)r->len)
			return ibcr_fail_errno(e, errno, "%s: reading the deleted file", saved.paths[f]);
		saved.data_size += r->len;
		saved.files[f].nranges++;
		from = end;
	}
	return 0;
}

/* The file's bytes that the image's regions map, once each. */
static int read_file(const struct target *t, uint32_t n, uint32_t f, struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize(), at = 0, size = saved.files[f].size;
	uint64_t base = saved.data_size;
	char path[96];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)srcs[f].pid,
		 (unsigned long long)srcs[f].start, (unsigned long long)srcs[f].end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ibcr_fail_errno(e, errno, "%s: opening the deleted file as %s",
				       saved.paths[f], path);
	saved.files[f].range0 = saved.nranges;
	while (at < size && !rc) {	/* the lowest mapped byte from `at` on */
		uint64_t lo = UINT64_MAX, hi = 0;

		for (uint32_t k = 0; k < n; k++)
			for (uint32_t i = 0; i < t[k].ps.nvmas; i++) {
				const struct ibcr_vma *v = &t[k].ps.vmas[i];
				uint64_t end = v->pgoff + (v->end - v->start);

				if (v->kind != IBCR_VMA_FILE || !(v->flags & IBCR_VMAF_DELETED) ||
				    v->file_dev != saved.files[f].dev ||
				    v->file_ino != saved.files[f].ino || end <= at)
					continue;
				if ((v->pgoff > at ? v->pgoff : at) < lo) {
					lo = v->pgoff > at ? v->pgoff : at;
					hi = end;
				}
			}
		if (lo >= size)
			break;
		hi = hi > size ? size : (hi + pg - 1) / pg * pg;
		rc = read_part(f, fd, lo, hi < size ? hi : size, base, e);
		at = hi;
	}
	close(fd);
	return rc;
}

int delfiles_capture(const struct target *t, uint32_t n, struct ibcr_err *e)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++) {
			const struct ibcr_vma *v = &t[k].ps.vmas[i];
			char path[96];
			struct stat st;

			if (v->kind != IBCR_VMA_FILE || !(v->flags & IBCR_VMAF_DELETED))
				continue;
			snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)t[k].pid,
				 (unsigned long long)v->start, (unsigned long long)v->end);
			if (stat(path, &st))
				st.st_mode = 0600;
			record_of(&t[k], v, t[k].ps.vma_names[i], st.st_mode & 07777);
		}
	for (uint32_t f = 0; f < saved.nfiles; f++)
		if (read_file(t, n, f, e))
			return -1;
	return 0;
}

int delfiles_write_section(struct img_writer *w, struct ibcr_err *e)
{
	struct buf b = { 0 };
	int rc;

	if (!saved.nfiles)
		return 0;
	enc_delfiles(&b, &saved);
	rc = imgw_section(w, IBCR_SEC_DELFILES, IBCR_PROC_NONE, NULL, b.p, b.len, e);
	buf_free(&b);
	return rc;
}
