// SPDX-License-Identifier: MIT
/*
 * A self-contained image (saver --self-contained) carries every file its
 * processes map and every regular file they have open (BACKING
 * contents). Before the restore, the loader puts back what is missing,
 * so that nothing of the original host is needed (docs/design-notes.md,
 * "Self-contained images"):
 *
 * - a file missing at its path is made there, with its saved contents,
 *   mode and modification time, and its directories: in a container
 *   that holds only the loader and the image, the process finds its
 *   executable and libraries at their own paths, and /proc/PID/exe and
 *   the maps name them as on the original host (where the place is
 *   read-only or denied, a mapped file gets a memfd as below);
 * - a mapped file that is there but not the saved one (another
 *   machine's libc) is left alone, and the process gets a memfd with the
 *   saved contents instead (its maps say /memfd:NAME);
 * - a file only open that is there is the one opened, as without
 *   --self-contained (the restore of a job reopens its files by path);
 * - missing directories the process is in or has open, and those of
 *   its named UNIX sockets, are made (empty).
 *
 * Every byte written is checked against the image's checksum first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"
#include "sha256.h"
#include "rt/xxh64.h"

struct selfc {
	const struct ibcr_backings *b;
	char **alias;		/* per file: the path of its memfd, or NULL */
	uint8_t *trusted;	/* per file: made or checked here */
	int *memfd;
};

/* The directories of path (path itself too with `self`), 0755, as mkdir -p. */
static int make_dirs(const char *path, int self, struct ibcr_err *e)
{
	char *p = xstrdup(path), *last = strrchr(p, '/');
	size_t n = self ? strlen(p) : (size_t)(last ? last - p : 0);
	int rc = 0;

	for (size_t i = 1; i <= n && !rc; i++) {
		char c = p[i];

		if (c != '/' && c != 0 && i < n)
			continue;
		p[i] = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			rc = ibcr_fail_errno(e, errno, "self-contained image: making directory %s", p);
		p[i] = c;
	}
	free(p);
	return rc;
}

/* File k's saved bytes into fd, checked against its sum before they count. */
static int write_contents(struct contents_reader *c, uint32_t k, int fd, struct ibcr_err *e)
{
	const struct ibcr_backing *f = &c->f->f[k];
	uint8_t *buf = xmalloc(CONTENTS_CHUNK);
	size_t pg = (size_t)getpagesize();
	uint32_t sum = 0;
	int rc = 0;

	for (uint64_t done = 0; done < f->data_len && !rc; ) {
		size_t n = f->data_len - done < CONTENTS_CHUNK ? (size_t)(f->data_len - done) :
			   CONTENTS_CHUNK;
		size_t keep = done + n <= f->size ? n : (size_t)(f->size > done ? f->size - done : 0);

		rc = contents_read(c, f->data_off + done, buf, n, e);
		sum = page_sum(sum, buf, n, pg, done / pg);
		if (!rc && keep && pwrite(fd, buf, keep, (off_t)done) != (ssize_t)keep)
			rc = ibcr_fail_errno(e, errno, "self-contained image: writing %s",
					     c->f->paths[k]);
		done += n;
	}
	free(buf);
	if (!rc && sum != f->data_sum)
		rc = ibcr_fail(e, "image %s: the carried contents of %s are corrupt (checksum "
			       "mismatch)", c->r->path, c->f->paths[k]);
	if (!rc && ftruncate(fd, (off_t)f->size))
		rc = ibcr_fail_errno(e, errno, "self-contained image: sizing %s", c->f->paths[k]);
	return rc;
}

/*
 * Missing: made at its path, under a temporary name until complete.
 * A positive errno when the place cannot take it (read-only, denied).
 */
static int make_file(struct contents_reader *c, uint32_t k, struct ibcr_err *e)
{
	const struct ibcr_backing *f = &c->f->f[k];
	const char *path = c->f->paths[k];
	struct timespec t[2] = { { (time_t)(f->mtime_ns / 1000000000ull),
				   (long)(f->mtime_ns % 1000000000ull) } };
	char *tmp = xmalloc(strlen(path) + 32);
	int fd, rc;

	t[1] = t[0];
	sprintf(tmp, "%s.ibcr-tmp.%d", path, (int)getpid());
	if (make_dirs(path, 0, e)) {
		free(tmp);
		return errno == EROFS || errno == EACCES || errno == EPERM ? errno : -1;
	}
	fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = errno;
		ibcr_fail_errno(e, rc, "self-contained image: making %s", path);
		free(tmp);
		return rc == EROFS || rc == EACCES || rc == EPERM ? rc : -1;
	}
	rc = write_contents(c, k, fd, e);
	if (!rc && (fchmod(fd, f->mode & 07777) || futimens(fd, t)))
		rc = ibcr_fail_errno(e, errno, "self-contained image: mode and time of %s", path);
	if (close(fd) && !rc)
		rc = ibcr_fail_errno(e, errno, "self-contained image: writing %s", path);
	if (!rc && rename(tmp, path))
		rc = ibcr_fail_errno(e, errno, "self-contained image: making %s", path);
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

/* There but another file: a memfd with the saved contents stands in for it. */
static int make_memfd(struct selfc *sc, struct contents_reader *c, uint32_t k,
		      struct ibcr_err *e)
{
	const char *path = sc->b->paths[k], *slash = strrchr(path, '/');
	int fd = memfd_create(slash ? slash + 1 : path, MFD_CLOEXEC);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "self-contained image: a memfd for %s", path);
	if (write_contents(c, k, fd, e) ||
	    (fchmod(fd, sc->b->f[k].mode & 07777) &&
	     ibcr_fail_errno(e, errno, "self-contained image: mode of %s's memfd", path))) {
		close(fd);
		return -1;
	}
	sc->memfd[k] = fd;
	sc->alias[k] = xmalloc(64);
	/* the loader's own descriptor: every process it forks can open it there */
	snprintf(sc->alias[k], 64, "/proc/%d/fd/%d", (int)getpid(), fd);
	return 0;
}

/* The very file, or one with the saved size and contents. */
static int is_saved(const struct ibcr_backing *f, const char *path, const struct stat *st)
{
	uint8_t digest[32];
	void *p;
	int fd, same;

	if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size != f->size)
		return 0;
	if (st->st_ino == f->ino && st->st_dev == f->dev &&
	    (uint64_t)st->st_ctim.tv_sec * 1000000000ull + (uint64_t)st->st_ctim.tv_nsec ==
	    f->ctime_ns)
		return 1;
	if (!(f->flags & IBCR_BACKF_SHA256) || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	p = f->size ? mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (p == MAP_FAILED)
		return 0;
	sha256(p ? p : "", (size_t)f->size, digest);
	same = !memcmp(digest, f->sha256, sizeof(digest));
	if (p)
		munmap(p, (size_t)f->size);
	return same;
}

static int put_back(struct selfc *sc, struct contents_reader *c, uint32_t k,
		    struct ibcr_err *e)
{
	const struct ibcr_backing *f = &sc->b->f[k];
	const char *path = sc->b->paths[k];
	struct stat st;

	if (stat(path, &st)) {
		int rc;

		if (errno != ENOENT)
			return ibcr_fail_errno(e, errno, "self-contained image: %s", path);
		sc->trusted[k] = 1;
		rc = make_file(c, k, e);
		/* a read-only root: a mapped file can still be a memfd */
		if (rc > 0 && (f->flags & IBCR_BACKF_MAPPED))
			return make_memfd(sc, c, k, e);
		return rc ? -1 : 0;
	}
	if (!(f->flags & IBCR_BACKF_MAPPED))
		return 0;	/* only open: the file there is the one to open */
	if (is_saved(f, path, &st)) {
		sc->trusted[k] = 1;
		return 0;
	}
	sc->trusted[k] = 1;
	return make_memfd(sc, c, k, e);
}

/*
 * A named pipe the process had open, missing here (a session directory
 * in the old host's /tmp: Open MPI's debugger_attach_fifo): made again
 * with its mode and time; what waited in it comes back as for any pipe.
 */
static int make_fifo(const char *path, const struct ibcr_fobj *o, struct ibcr_err *e)
{
	struct timespec t[2] = { { (time_t)(o->mtime_ns / 1000000000ull),
				   (long)(o->mtime_ns % 1000000000ull) } };

	t[1] = t[0];
	if (make_dirs(path, 0, e))
		return -1;
	if (mkfifo(path, o->mode & 07777) && errno != EEXIST)
		return ibcr_fail_errno(e, errno, "self-contained image: making the named pipe %s",
				       path);
	if (chmod(path, o->mode & 07777) || utimensat(AT_FDCWD, path, t, 0))
		return ibcr_fail_errno(e, errno, "self-contained image: mode and time of the "
				       "named pipe %s", path);
	return 0;
}

int selfc_prepare(struct img_reader *r, const struct ibcr_backings *b,
		  const struct ibcr_files *files, struct selfc **out, struct ibcr_err *e)
{
	struct selfc *sc = xcalloc(1, sizeof(*sc));
	struct contents_reader c;
	int rc = 0;

	*out = sc;
	sc->b = b;
	sc->alias = xcalloc(b->n + 1, sizeof(*sc->alias));
	sc->trusted = xcalloc(b->n + 1, 1);
	sc->memfd = xcalloc(b->n + 1, sizeof(*sc->memfd));
	contents_open(&c, r, b);
	for (uint32_t k = 0; k < b->n && !rc; k++)
		rc = (b->f[k].flags & IBCR_BACKF_CONTENTS) ? put_back(sc, &c, k, e) : 0;
	contents_close(&c);
	for (uint32_t i = 0; i < files->nobjs && !rc; i++) {
		const char *p = files->paths[i];
		uint32_t kind = files->objs[i].kind;

		if (kind == IBCR_FD_DIR && access(p, F_OK))
			rc = make_dirs(p, 1, e);
		else if ((kind == IBCR_FD_UNIX || kind == IBCR_FD_DELETED) && p[0] == '/')
			rc = make_dirs(p, 0, e);
		else if (kind == IBCR_FD_FIFO && p[0] == '/' && access(p, F_OK))
			rc = make_fifo(p, &files->objs[i], e);
	}
	return rc;
}

const uint8_t *selfc_trusted(const struct selfc *sc)
{
	return sc ? sc->trusted : NULL;
}

int selfc_process(const struct selfc *sc, struct ibcr_process_state *ps, struct ibcr_err *e)
{
	if (!sc)
		return 0;
	if (access(ps->cwd, F_OK) && make_dirs(ps->cwd, 1, e))
		return -1;
	for (uint32_t k = 0; k < sc->b->n; k++) {
		const char *path = sc->b->paths[k];

		if (!sc->alias[k])
			continue;
		if (!strcmp(ps->exe, path)) {
			free(ps->exe);
			ps->exe = xstrdup(sc->alias[k]);
		}
		for (uint32_t i = 0; i < ps->nvmas; i++)
			if (ps->vmas[i].kind == IBCR_VMA_FILE && ps->vmas[i].file_dev == sc->b->f[k].dev &&
			    ps->vmas[i].file_ino == sc->b->f[k].ino) {
				free(ps->vma_names[i]);
				ps->vma_names[i] = xstrdup(sc->alias[k]);
			}
	}
	return 0;
}
