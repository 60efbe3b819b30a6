// SPDX-License-Identifier: MIT
/*
 * Files that only the processes had: a regular file deleted while open
 * or mapped is made again here, once, under its own name and removed at
 * once, so that it is on the same file system as before (a program may
 * link it in there) and /proc shows it as before in fd links and maps;
 * a memfd as a memfd of the same name. Both with the bytes saved, their
 * mode, and the memfd's seals; then reopened through /proc/self/fd with
 * the saved access mode and flags, at the saved offset. Every mapping of
 * such a file maps this one (objfile_open).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "fdkinds.h"
#include "filedata.h"

/* The directory path is in, as a string, into dir (size PATH_MAX). */
static int dir_of(const char *path, char *dir)
{
	const char *slash = strrchr(path, '/');

	if (!slash || (size_t)(slash - path) >= PATH_MAX)
		return -1;
	snprintf(dir, PATH_MAX, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return 0;
}

int deleted_name_free(const struct ibcr_files *f, uint32_t i, const char *held,
		      struct ibcr_err *e)
{
	const char *path = f->paths[i];
	char dir[PATH_MAX];
	struct stat st;
	int err;

	if (!lstat(path, &st))
		return ibcr_fail(e, "%s: the process %s a deleted file of this name, and a file of "
				 "this name exists now: it is not replaced, and one of another "
				 "name would not be the same (move it away to restore)", path, held);
	if (errno != ENOENT)
		return ibcr_fail_errno(e, errno, "deleted file %s: looking for its name", path);
	if (dir_of(path, dir))
		return ibcr_fail(e, "deleted file %s (file object %u): no directory", path, i);
	err = stat(dir, &st) ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	if (err)
		return ibcr_fail_errno(e, err, "deleted file %s: making it again in %s", path, dir);
	return 0;
}

/* Our read-write fd of the new file, as the saved description. */
static int as_saved(int fd, const struct ibcr_fobj *o, const char *what, const char *path,
		    struct ibcr_err *e)
{
	/* O_NOFOLLOW would refuse /proc/self/fd/N, a symbolic link itself */
	int flags = (int)(o->flags & ~(uint32_t)(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY |
						 O_TMPFILE | O_NOFOLLOW));
	char self[32];
	int nfd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	nfd = open(self, flags | O_CLOEXEC);
	close(fd);
	if (nfd < 0)
		return ibcr_fail_errno(e, errno, "%s %s: opening it with its flags %#o", what,
				       path, (unsigned)flags);
	if (lseek(nfd, (off_t)o->pos, SEEK_SET) < 0) {
		ibcr_fail_errno(e, errno, "%s %s: seeking to %llu", what, path,
				(unsigned long long)o->pos);
		close(nfd);
		return -1;
	}
	return nfd;
}

static int put_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	return pwrite_full(*(int *)arg, p, n, off);
}

/* Its size, its bytes where it had data (holes stay holes), owner, mode, times. */
static int fill(int fd, const struct ibcr_files *f, uint32_t i, const char *what,
		struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	const struct ibcr_fattr *a = &f->attrs[i];
	struct timespec t[2] = { { (time_t)(a->atime_ns / 1000000000u), (long)(a->atime_ns % 1000000000u) },
				 { (time_t)(o->mtime_ns / 1000000000u), (long)(o->mtime_ns % 1000000000u) } };
	int rc = 0;

	if (ftruncate(fd, (off_t)(o->data_len ? o->data_len : o->size)))
		rc = ibcr_fail_errno(e, errno, "%s %s: making it %llu bytes long", what,
				     f->paths[i], (unsigned long long)o->size);
	else if (o->data_len && write_full(fd, f->data[i], o->data_len))	/* older images */
		rc = ibcr_fail_errno(e, errno, "%s %s: writing its %llu bytes back", what,
				     f->paths[i], (unsigned long long)o->data_len);
	else if ((a->flags & IBCR_FATTR_DATA) &&
		 filedata_walk(f->filedata_fd, f, i, put_piece, &fd, e))
		rc = -1;
	else if (fchmod(fd, (mode_t)(o->mode & 07777)))
		rc = ibcr_fail_errno(e, errno, "%s %s: restoring its mode %#o", what, f->paths[i],
				     (unsigned)(o->mode & 07777));
	else if ((a->flags & IBCR_FATTR_OWNER) && fchown(fd, a->uid, a->gid) &&
		 (errno != EPERM || a->uid != geteuid() || a->gid != getegid()))
		rc = ibcr_fail_errno(e, errno, "%s %s: restoring its owner %u:%u", what,
				     f->paths[i], a->uid, a->gid);
	/* last: writing changes them */
	else if ((a->flags & IBCR_FATTR_OWNER) && futimens(fd, t))
		rc = ibcr_fail_errno(e, errno, "%s %s: restoring its times", what, f->paths[i]);
	if (rc)
		close(fd);
	return rc;
}

/* Another description of the file object k is (the same file, saved once). */
static int same_file(const struct ibcr_files *f, uint32_t i, const int *fds, const char *what,
		     struct ibcr_err *e)
{
	uint32_t k = f->attrs[i].same_file - 1;
	int fd;

	if (fds[k] < 0 || (fd = fcntl(fds[k], F_DUPFD_CLOEXEC, 0)) < 0)
		return ibcr_fail(e, "%s %s (file object %u) is the file of object %u, which was "
				 "not made", what, f->paths[i], i, k);
	return as_saved(fd, &f->objs[i], what, f->paths[i], e);
}

/*
 * Made under its own name and removed at once, so that /proc shows it as
 * it showed the original ("NAME (deleted)"; an O_TMPFILE original is
 * "#INODE" there, and so is this one). A file that has the name now is
 * not replaced: preflight refused that already (deleted_name_free), and
 * O_EXCL does again.
 */
int deleted_open(const struct ibcr_files *f, uint32_t i, const int *fds, struct ibcr_err *e)
{
	const char *path = f->paths[i];
	int fd;

	if (f->attrs[i].same_file)
		return same_file(f, i, fds, "deleted file", e);
	fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW,
		  (mode_t)(f->objs[i].mode & 07777));
	if (fd < 0)
		return ibcr_fail_errno(e, errno, "deleted file %s (file object %u): making it "
				       "again", path, i);
	if (unlink(path)) {
		ibcr_fail_errno(e, errno, "deleted file %s: deleting it again", path);
		close(fd);
		return -1;
	}
	if (fill(fd, f, i, "deleted file", e))
		return -1;
	return as_saved(fd, &f->objs[i], "deleted file", path, e);
}

/*
 * A directory removed while open (or a removed working directory): made
 * again where it was, under its name if that is free (else a name of our
 * own beside it), opened, given its mode, owner and times, and removed.
 */
int deldir_open(const struct ibcr_files *f, uint32_t i, const int *fds, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	const struct ibcr_fattr *a = &f->attrs[i];
	struct timespec t[2] = { { (time_t)(a->atime_ns / 1000000000u), (long)(a->atime_ns % 1000000000u) },
				 { (time_t)(o->mtime_ns / 1000000000u), (long)(o->mtime_ns % 1000000000u) } };
	char dir[PATH_MAX], made[PATH_MAX];
	int fd;

	if (a->same_file)
		return same_file(f, i, fds, "removed directory", e);
	if (dir_of(f->paths[i], dir))
		return ibcr_fail(e, "removed directory %s (file object %u): no parent", f->paths[i], i);
	snprintf(made, sizeof(made), "%s", f->paths[i]);
	if (mkdir(made, 0700)) {
		if (errno != EEXIST || snprintf(made, sizeof(made), "%s/.ibcr-removed-XXXXXX", dir) >=
		    (int)sizeof(made) || !mkdtemp(made))
			return ibcr_fail_errno(e, errno, "removed directory %s: making it again in %s",
					       f->paths[i], dir);
	}
	fd = open(made, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || rmdir(made)) {
		ibcr_fail_errno(e, errno, "removed directory %s: opening and removing it again",
				f->paths[i]);
		rmdir(made);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fchmod(fd, (mode_t)(o->mode & 07777)) ||
	    ((a->flags & IBCR_FATTR_OWNER) && fchown(fd, a->uid, a->gid) &&
	     (errno != EPERM || a->uid != geteuid() || a->gid != getegid())) ||
	    ((a->flags & IBCR_FATTR_OWNER) && futimens(fd, t))) {
		ibcr_fail_errno(e, errno, "removed directory %s: its mode, owner and times",
				f->paths[i]);
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * In the restored process, before its inherited objects close: a working
 * directory removed since is such a directory object of the image.
 */
int deldir_chdir(const struct restore *rs, int *done, struct ibcr_err *e)
{
	const char *cwd = rs->ps->cwd;
	size_t n = strlen(cwd), k = strlen(" (deleted)");

	*done = 0;
	if (n <= k || strcmp(cwd + n - k, " (deleted)"))
		return 0;
	for (uint32_t i = 0; i < rs->files->nobjs; i++)
		if (rs->files->objs[i].kind == IBCR_FD_DELDIR && rs->obj_fds[i] >= 0 &&
		    !strncmp(rs->files->paths[i], cwd, n - k) && !rs->files->paths[i][n - k]) {
			if (fchdir(rs->obj_fds[i]))
				return ibcr_fail_errno(e, errno, "changing to its removed working "
						       "directory %.*s", (int)(n - k), cwd);
			*done = 1;
			return 0;
		}
	return 0;
}

/*
 * For a region mapping a deleted file or memfd that is a file object: a
 * descriptor of that object, of its own (the core closes it), above the
 * saved numbers, writable if the mapping is shared and writable.
 */
long objfile_of(const struct ibcr_files *f, const struct ibcr_vma *v)
{
	for (uint32_t i = 0; i < f->nobjs; i++)
		if ((f->objs[i].kind == IBCR_FD_DELETED || f->objs[i].kind == IBCR_FD_MEMFD) &&
		    f->objs[i].ino == v->file_ino && f->objs[i].dev == v->file_dev &&
		    !f->attrs[i].same_file)
			return i;
	return -1;
}

int objfile_open(const struct restore *rs, const struct ibcr_vma *v, int writable,
		 struct ibcr_err *e)
{
	const struct ibcr_files *f = rs->files;
	long i = objfile_of(f, v);
	char self[32];
	int fd, high;

	if (i < 0 || rs->obj_fds[i] < 0)
		return ibcr_fail(e, "region %#llx maps a deleted file or memfd that the image "
				 "does not have", (unsigned long long)v->start);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", rs->obj_fds[i]);
	if ((fd = open(self, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC)) < 0)
		return ibcr_fail_errno(e, errno, "region %#llx: opening %s to map it",
				       (unsigned long long)v->start, f->paths[i]);
	high = fcntl(fd, F_DUPFD_CLOEXEC, rs->fd_base);
	close(fd);
	if (high < 0)
		return ibcr_fail_errno(e, errno, "region %#llx: placing %s's descriptor",
				       (unsigned long long)v->start, f->paths[i]);
	return high;
}

int memfd_make(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const char *name = f->paths[i] + (strncmp(f->paths[i], "/memfd:", 7) ? 0 : 7);
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "memfd %s (file object %u): creating it", name, i);
	if (fill(fd, f, i, "memfd", e))
		return -1;
	return fd;
}

int memfd_open(const struct ibcr_files *f, uint32_t i, const int *fds, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	int fd;

	if (f->attrs[i].same_file)
		return same_file(f, i, fds, "memfd", e);
	fd = shm_memfd(i);	/* made already if it is mapped shared too */
	if (fd < 0 && (fd = memfd_make(f, i, e)) < 0)
		return -1;
	if (fobj_memfd_seals(o) && fcntl(fd, F_ADD_SEALS, (int)fobj_memfd_seals(o))) {
		ibcr_fail_errno(e, errno, "memfd %s: restoring its seals %#llx", f->paths[i],
				(unsigned long long)fobj_memfd_seals(o));
		close(fd);
		return -1;
	}
	/*
	 * memfd_create's own description, read-write as it was: it holds no
	 * write access to the file as a reopened one would, so execveat of
	 * the memfd works (ETXTBSY through a reopening)
	 */
	if ((o->flags & O_ACCMODE) == O_RDWR &&
	    !(o->flags & ~(uint32_t)(O_ACCMODE | O_LARGEFILE | STATUS_FLAGS))) {
		if (lseek(fd, (off_t)o->pos, SEEK_SET) < 0 ||
		    fcntl(fd, F_SETFL, o->flags & STATUS_FLAGS) < 0) {
			ibcr_fail_errno(e, errno, "memfd %s: its offset and flags", f->paths[i]);
			close(fd);
			return -1;
		}
		return fd;
	}
	return as_saved(fd, o, "memfd", f->paths[i], e);
}
