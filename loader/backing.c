// SPDX-License-Identifier: MIT
/*
 * Is each mapped file the one saved? (docs/design-notes.md, "Which file is the
 * saved one"). The very file, untouched: same inode, device, size,
 * modification and change time. Otherwise (changed in place, a copy,
 * another machine, --path-map, a file replaced by rename) the same size
 * and contents (SHA-256); a file too large to have been hashed passes
 * only as another inode of the same build (ELF build-id), never after an
 * edit in place, which keeps the build-id. An image without the BACKING
 * table (an older saver) is checked by size and mtime, as before.
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
#include "loader.h"
#include "sha256.h"

struct backing_ctx {
	const struct ibcr_backings *b;
	uint8_t *ok;		/* per file: found to be the saved one */
};

struct backing_ctx *backing_ctx(const struct ibcr_backings *b, const uint8_t *trusted)
{
	struct backing_ctx *c = xcalloc(1, sizeof(*c));

	c->b = b;
	c->ok = xcalloc(b->n + 1, 1);
	if (trusted)
		memcpy(c->ok, trusted, b->n);
	return c;
}

static uint64_t ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

#define REFUSE(why, ...) ibcr_fail(e, "mapped file %s " why "; refusing to resume on " \
				   "different contents", path, ##__VA_ARGS__)

/*
 * Whether the file at path has f's contents (its SHA-256), or, for a
 * file too large to have been hashed, with use_build_id, its build-id:
 * 1 yes, 0 no, -1 error.
 */
static int contents_match(const struct ibcr_backing *f, const char *path, int use_build_id,
			  struct ibcr_err *e)
{
	uint8_t id[32], digest[32], *p = NULL;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "mapped file %s", path);
	if (f->size)
		p = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return ibcr_fail_errno(e, errno, "reading mapped file %s", path);
	if (f->flags & IBCR_BACKF_SHA256) {
		sha256(p ? p : (const uint8_t *)"", (size_t)f->size, digest);
		rc = !memcmp(digest, f->sha256, sizeof(digest));
	} else if (use_build_id && (f->flags & IBCR_BACKF_BUILD_ID)) {
		rc = p && !elf_build_id_mem(p, f->size, id, sizeof(id), &len) &&
		     len == f->build_id_len && !memcmp(id, f->build_id, len);
	}
	if (p)
		munmap(p, (size_t)f->size);
	return rc;
}

static int same_file(const struct ibcr_backing *f, const char *path, struct ibcr_err *e)
{
	struct stat st;
	int rc;

	if (stat(path, &st))
		return ibcr_fail_errno(e, errno, "mapped file %s", path);
	if (!S_ISREG(st.st_mode))
		return REFUSE("is no longer a regular file");
	if (st.st_ino == f->ino && st.st_dev == f->dev && (uint64_t)st.st_size == f->size &&
	    ns(&st.st_mtim) == f->mtime_ns && ns(&st.st_ctim) == f->ctime_ns)
		return 0;
	if ((uint64_t)st.st_size != f->size)
		return REFUSE("has changed since the checkpoint (%llu bytes, saved %llu)",
			      (unsigned long long)st.st_size, (unsigned long long)f->size);
	if (st.st_ino == f->ino && st.st_dev == f->dev) {
		/* an edit in place keeps the build-id: only the contents can tell */
		rc = contents_match(f, path, 0, e);
		if (rc)
			return rc < 0 ? -1 : 0;
		return REFUSE("was changed in place since the checkpoint (its change time "
			      "differs)%s", (f->flags & IBCR_BACKF_SHA256) ?
			      " and so do its contents" : ", and it is too large to have "
			      "been hashed");
	}
	rc = contents_match(f, path, 1, e);
	if (rc)
		return rc < 0 ? -1 : 0;
	if (f->flags & IBCR_BACKF_SHA256)
		return REFUSE("is another file than the one saved (another inode) with "
			      "other contents");
	if (f->flags & IBCR_BACKF_BUILD_ID)
		return REFUSE("is another file than the one saved (another inode) of "
			      "another build (its ELF build-id differs)");
	return REFUSE("is another file than the one saved (another inode), and the image "
		      "has neither a digest nor a build-id to recognise it by");
}

static uint64_t mtime_ns(const struct stat *st)
{
	return ns(&st->st_mtim);
}

/* An image made before the BACKING table: size and mtime decide. */
static int old_rule(const struct ibcr_vma *v, const char *path, struct ibcr_err *e)
{
	struct stat st;

	if (stat(path, &st))
		return ibcr_fail_errno(e, errno, "mapped file %s", path);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != v->file_size ||
	    mtime_ns(&st) != v->file_mtime_ns)
		return REFUSE("has changed since the checkpoint (size or modification time "
			      "differ)");
	return 0;
}

static int find(const struct ibcr_backings *b, uint64_t dev, uint64_t ino)
{
	for (uint32_t i = 0; b && i < b->n; i++)
		if (b->f[i].dev == dev && b->f[i].ino == ino)
			return (int)i;
	return -1;
}

int backing_check(struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	struct backing_ctx *c = rs->backing;

	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];
		const char *path = ps->vma_names[i];
		int k;

		/* a file object of the image is made by the loader itself */
		if (v->kind != IBCR_VMA_FILE || (v->flags & IBCR_VMAF_OBJFILE))
			continue;
		k = c ? find(c->b, v->file_dev, v->file_ino) : -1;
		if (k < 0 && c && c->b->n)
			return ibcr_fail(e, "image %s: mapped file %s is not in its BACKING table",
					 rs->r->path, path);
		if (k < 0) {
			if (old_rule(v, path, e))
				return -1;
			continue;
		}
		if (!c->ok[k] && same_file(&c->b->f[k], path, e))
			return -1;
		c->ok[k] = 1;
	}
	return 0;
}
