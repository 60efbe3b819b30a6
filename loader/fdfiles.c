// SPDX-License-Identifier: MIT
/*
 * Files that only the process had: a regular file deleted while open
 * comes back as an unlinked file (O_TMPFILE, or a name removed at once)
 * in the directory it was in, so that it is on the same file system as
 * before (a program may link it in there); a memfd as a memfd of the same
 * name. Both with the bytes saved, their mode, and the memfd's seals;
 * then reopened through /proc/self/fd with the saved access mode and
 * flags, at the saved offset.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "fdkinds.h"

static int unlinked_in(const char *dir, mode_t mode)
{
	char tmpl[PATH_MAX];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	/* no O_TMPFILE on this file system */
	if (snprintf(tmpl, sizeof(tmpl), "%s/.ibcr-deleted-XXXXXX", dir) >= (int)sizeof(tmpl)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = mkostemp(tmpl, O_CLOEXEC)) < 0)
		return -1;
	unlink(tmpl);
	if (fchmod(fd, mode)) {
		close(fd);
		return -1;
	}
	return fd;
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

static int fill(int fd, const struct ibcr_files *f, uint32_t i, const char *what,
		struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];

	if (write_full(fd, f->data[i], o->data_len) || ftruncate(fd, (off_t)o->data_len)) {
		ibcr_fail_errno(e, errno, "%s %s: writing its %llu bytes back", what,
				f->paths[i], (unsigned long long)o->data_len);
		close(fd);
		return -1;
	}
	return 0;
}

int deleted_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const char *path = f->paths[i], *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	/* mapped shared too: the file shm.c made for the mapping (shmdel.c) */
	int fd = shm_file_fd(f->objs[i].dev, f->objs[i].ino);

	if (fd >= 0)
		return as_saved(fd, &f->objs[i], "deleted file", path, e);
	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return ibcr_fail(e, "deleted file %s (file object %u): no directory", path, i);
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	fd = unlinked_in(dir, (mode_t)(f->objs[i].mode & 07777));
	if (fd < 0)
		return ibcr_fail_errno(e, errno, "deleted file %s: making it again, unlinked, "
				       "in %s", path, dir);
	if (fill(fd, f, i, "deleted file", e))
		return -1;
	return as_saved(fd, &f->objs[i], "deleted file", path, e);
}

int memfd_make(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	const char *name = f->paths[i] + (strncmp(f->paths[i], "/memfd:", 7) ? 0 : 7);
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "memfd %s (file object %u): creating it", name, i);
	if (fill(fd, f, i, "memfd", e))
		return -1;
	if (fchmod(fd, (mode_t)(o->mode & 07777))) {
		ibcr_fail_errno(e, errno, "memfd %s: restoring its mode %#o", name,
				(unsigned)(o->mode & 07777));
		close(fd);
		return -1;
	}
	return fd;
}

int memfd_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	int fd = shm_memfd(i);	/* made already if it is mapped shared too */

	if (fd < 0 && (fd = memfd_make(f, i, e)) < 0)
		return -1;
	if (o->aux[0] && fcntl(fd, F_ADD_SEALS, (int)o->aux[0])) {
		ibcr_fail_errno(e, errno, "memfd %s: restoring its seals %#llx", f->paths[i],
				(unsigned long long)o->aux[0]);
		close(fd);
		return -1;
	}
	return as_saved(fd, o, "memfd", f->paths[i], e);
}
