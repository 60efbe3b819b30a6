// SPDX-License-Identifier: MIT
/*
 * The files the processes map (BACKING section): each once, with what a
 * restore recognises it by (docs/design-notes.md, "Which file is the saved
 * one"). Its inode, device, size, modification and change times say
 * whether it is the very file, untouched; where that cannot hold (a copy,
 * another machine, --path-map), the SHA-256 of its contents says whether
 * it has the same bytes (an ELF build-id does not: an edited binary keeps
 * it), and for a file too large to hash, its ELF build-id whether it is
 * the same build. The digests are taken before the freeze, while the
 * processes run (the files they map then), and for files mapped only by
 * then, or changed since, while the image is written: never in the freeze
 * of a process that runs on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "elfsym.h"
#include "saver.h"
#include "sha256.h"
#include "sink.h"
#include "rt/xxh64.h"

/*
 * Larger files are not hashed (a mapped database would cost its whole
 * size at every checkpoint): recognised as the very file, or by build-id.
 */
#define HASH_MAX (64ull << 20)
#define CARRY_CHUNK (1ul << 20)

static uint64_t ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

static int find(const struct ibcr_backings *b, uint64_t dev, uint64_t ino)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (b->f[i].dev == dev && b->f[i].ino == ino)
			return (int)i;
	return -1;
}

/* The file's identity now; it must be the one the region maps. */
static int add(struct ibcr_backings *b, const char *path, uint64_t dev, uint64_t ino,
	       uint32_t flags, struct ibcr_err *e)
{
	struct ibcr_backing *f;
	struct stat st;
	int k = find(b, dev, ino);

	if (k >= 0) {
		b->f[k].flags |= flags;
		return k;
	}
	if (stat(path, &st))
		return ibcr_fail_errno(e, errno, "file %s", path);
	if (st.st_dev != dev || st.st_ino != ino)
		return ibcr_fail(e, "file %s was replaced during the checkpoint", path);
	b->f = xrealloc(b->f, (b->n + 1) * sizeof(*b->f));
	b->paths = xrealloc(b->paths, (b->n + 1) * sizeof(*b->paths));
	f = &b->f[b->n];
	*f = (struct ibcr_backing){
		.ino = ino, .dev = dev, .size = (uint64_t)st.st_size,
		.mtime_ns = ns(&st.st_mtim), .ctime_ns = ns(&st.st_ctim),
		.mode = st.st_mode, .flags = flags,
	};
	b->paths[b->n] = xstrdup(path);
	return (int)b->n++;
}

/*
 * Digests taken before the freeze (backing_prehash), while the processes
 * still run: reused for a file whose identity is still the one hashed.
 * A static list: one saver run writes one image.
 */
static struct ibcr_backing *pre;
static size_t npre;

static int same_identity(const struct ibcr_backing *a, const struct ibcr_backing *b)
{
	return a->ino == b->ino && a->dev == b->dev && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static int identify(struct ibcr_backing *f, const char *path, struct ibcr_err *e);

void backing_prehash(pid_t pid)
{
	struct ibcr_err e = { "" };
	struct maps_entry *m;
	size_t n;

	if (maps_read(pid, 0, &m, &n, &e))
		return;	/* it is read again in the freeze, where errors count */
	for (size_t i = 0; i < n; i++) {
		struct ibcr_backing f = { 0 };
		struct stat st;
		int known = 0;

		if (m[i].path[0] != '/' || stat(m[i].path, &st) || !S_ISREG(st.st_mode))
			continue;
		f = (struct ibcr_backing){ .ino = st.st_ino, .dev = st.st_dev,
					   .size = (uint64_t)st.st_size,
					   .mtime_ns = ns(&st.st_mtim), .ctime_ns = ns(&st.st_ctim) };
		for (size_t k = 0; k < npre && !known; k++)
			known = same_identity(&pre[k], &f);
		if (known || identify(&f, m[i].path, &e))
			continue;
		pre = xrealloc(pre, (npre + 1) * sizeof(*pre));
		pre[npre++] = f;
	}
	maps_free(m, n);
}

/* SHA-256 (up to HASH_MAX) and build-id (ELF), of the file as recorded. */
static int identify(struct ibcr_backing *f, const char *path, struct ibcr_err *e)
{
	struct stat st;
	uint8_t *p = NULL;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 && (errno == EACCES || errno == EPERM))
		return 0;	/* unreadable to us: recognised as the very file only */
	if (fd < 0)
		return ibcr_fail_errno(e, errno, "mapped file %s", path);
	if (fstat(fd, &st) || st.st_ino != f->ino || st.st_dev != f->dev ||
	    (uint64_t)st.st_size != f->size || ns(&st.st_ctim) != f->ctime_ns) {
		close(fd);
		return ibcr_fail(e, "mapped file %s changed during the checkpoint", path);
	}
	if (f->size)
		p = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return ibcr_fail_errno(e, errno, "reading mapped file %s", path);
	if (p && !elf_build_id_mem(p, f->size, f->build_id, sizeof(f->build_id), &len)) {
		f->build_id_len = (uint32_t)len;
		f->flags |= IBCR_BACKF_BUILD_ID;
	}
	if (f->size <= HASH_MAX) {
		sha256(p ? p : (const uint8_t *)"", (size_t)f->size, f->sha256);
		f->flags |= IBCR_BACKF_SHA256;
	}
	if (p)
		munmap(p, (size_t)f->size);
	return 0;
}

/* The machine's files, not the program's: never carried. */
static int machine_file(const char *path)
{
	return !strncmp(path, "/proc/", 6) || !strncmp(path, "/sys/", 5) ||
	       !strncmp(path, "/dev/", 5);
}

static int collect(const struct target *t, uint32_t n, const struct backing_opt *o,
		   struct ibcr_backings *b, struct ibcr_err *e)
{
	for (uint32_t i = 0; o->self_contained && i < o->files->nobjs; i++) {
		const struct ibcr_fobj *f = &o->files->objs[i];

		if (f->kind == IBCR_FD_REG && !machine_file(o->files->paths[i]) &&
		    add(b, o->files->paths[i], f->dev, f->ino, IBCR_BACKF_OPEN, e) < 0)
			return -1;
	}
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++) {
			const struct ibcr_vma *v = &t[k].ps.vmas[i];

			/* a deleted file or a file object is in the image already */
			if (v->kind == IBCR_VMA_FILE &&
			    !(v->flags & (IBCR_VMAF_OBJFILE | IBCR_VMAF_DELETED)) &&
			    add(b, t[k].ps.vma_names[i], v->file_dev, v->file_ino,
				IBCR_BACKF_MAPPED, e) < 0)
				return -1;
		}
	/* a file only open is found by its path at restore, as it is then */
	for (uint32_t i = 0; i < b->n; i++) {
		struct ibcr_backing *f = &b->f[i];
		size_t k = 0;

		if (!(f->flags & IBCR_BACKF_MAPPED))
			continue;
		while (k < npre && !same_identity(&pre[k], f))
			k++;
		if (k < npre) {
			f->flags |= pre[k].flags & (IBCR_BACKF_SHA256 | IBCR_BACKF_BUILD_ID);
			memcpy(f->sha256, pre[k].sha256, sizeof(f->sha256));
			memcpy(f->build_id, pre[k].build_id, sizeof(f->build_id));
			f->build_id_len = pre[k].build_id_len;
		} else if (identify(f, b->paths[i], e)) {
			return -1;
		}
	}
	return 0;
}

/*
 * One file's bytes into the contents stream, the last page padded with
 * zeros; it must still be the file recorded.
 */
static int carry(struct sink *sk, struct ibcr_backing *f, const char *path, uint8_t *buf,
		 struct ibcr_err *e)
{
	uint64_t pg = (uint64_t)getpagesize(), done = 0;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "file %s", path);
	if (fstat(fd, &st) || st.st_ino != f->ino || st.st_dev != f->dev) {
		close(fd);
		return ibcr_fail(e, "file %s was replaced during the checkpoint", path);
	}
	if ((uint64_t)st.st_size != f->size && (f->flags & IBCR_BACKF_MAPPED)) {
		close(fd);
		return ibcr_fail(e, "mapped file %s changed during the checkpoint", path);
	}
	/* one only open (a log a running program appends to): as it is now */
	f->size = (uint64_t)st.st_size;
	f->data_off = sk->pos;
	f->data_len = (f->size + pg - 1) / pg * pg;
	f->data_sum = 0;
	while (done < f->data_len) {
		size_t want = f->data_len - done < CARRY_CHUNK ? (size_t)(f->data_len - done) :
			      CARRY_CHUNK, got = 0;

		while (got < want && done + got < f->size) {
			ssize_t k = read(fd, buf + got, want - got);

			if (k <= 0) {
				close(fd);
				return ibcr_fail_errno(e, k ? errno : EIO, "reading file %s", path);
			}
			got += (size_t)k;
		}
		memset(buf + got, 0, want - got);
		f->data_sum = page_sum(f->data_sum, buf, want, pg, done / pg);
		if (sink_put(sk, buf, want, e)) {
			close(fd);
			return -1;
		}
		done += want;
	}
	close(fd);
	f->flags |= IBCR_BACKF_CONTENTS;
	return 0;
}

/* Self-contained: every listed file's contents, a stream of their own. */
static int write_contents(struct img_writer *w, struct ibcr_backings *b,
			  const struct backing_opt *o, struct ibcr_err *e)
{
	uint32_t flags = IBCR_SECF_CRC_PER_REGION | (o->codec ? IBCR_SECF_BLOCKS : 0);
	uint8_t *buf = xmalloc(CARRY_CHUNK);
	struct sink sk;
	int rc = imgw_begin(w, IBCR_SEC_BACKING, IBCR_PROC_NONE, flags,
			    o->codec ? 8 : (uint32_t)getpagesize(), e);

	if (!rc)
		rc = sink_init(&sk, w, o->codec, o->level);
	for (uint32_t i = 0; i < b->n && !rc; i++)
		rc = carry(&sk, &b->f[i], b->paths[i], buf, e);
	if (!rc)
		rc = sink_finish(&sk, e);
	if (!rc)
		rc = imgw_end(w, e);
	free(buf);
	return rc;
}

int backing_write(struct img_writer *w, const struct target *t, uint32_t n,
		  const struct backing_opt *o, struct ibcr_err *e)
{
	struct ibcr_backings b = { 0 };
	struct buf p = { 0 };
	int rc = collect(t, n, o, &b, e);

	if (!rc && b.n && o->self_contained)
		rc = write_contents(w, &b, o, e);
	if (!rc && b.n) {
		enc_backing(&p, &b);
		rc = imgw_section(w, IBCR_SEC_BACKING, IBCR_PROC_NONE, NULL, p.p, p.len, e);
	}
	buf_free(&p);
	ibcr_backings_free(&b);
	return rc;
}
