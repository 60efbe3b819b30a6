// SPDX-License-Identifier: MIT
/*
 * Deleted files mapped privately (the image's DELFILES, saver/memdel.c)
 * are made again before anything is forked: at their path, with their
 * saved bytes, size and mode, and unlinked at once, so that each region
 * maps a deleted file of that name again ("PATH (deleted)", its offset,
 * its own VMA) and the pages the process changed go on top, as for any
 * private file mapping. The name must be free: a file that has it now
 * (the new version of an upgraded library) is not ours to replace, and
 * a mapping of another name would not be what the process had, so the
 * restore is refused, naming the path. Each process maps the file
 * through a copy of the loader's descriptor (delfile_fd); a descriptor
 * of the image that is the same file takes it through shm_file_fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"

static struct made {
	uint64_t dev, ino;	/* st_dev, st_ino at the checkpoint */
	int fd;
} *made;
static uint32_t nmade;

static int fill(int fd, const struct ibcr_delfiles *d, uint32_t i, const char *path,
		struct ibcr_err *e)
{
	const struct ibcr_delfile *f = &d->files[i];

	if (ftruncate(fd, (off_t)f->size))
		return ibcr_fail_errno(e, errno, "%s: setting its size to %llu", path,
				       (unsigned long long)f->size);
	for (uint32_t k = f->range0; k < f->range0 + f->nranges; k++) {
		const struct ibcr_delrange *r = &d->ranges[k];

		if (pwrite(fd, d->data + r->data_off, r->len, (off_t)r->off) != (ssize_t)r->len)
			return ibcr_fail_errno(e, errno, "%s: writing its bytes %llu-%llu back",
					       path, (unsigned long long)r->off,
					       (unsigned long long)(r->off + r->len));
	}
	if (fchmod(fd, (mode_t)(f->mode & 07777)))
		return ibcr_fail_errno(e, errno, "%s: restoring its mode %#o", path, f->mode);
	return 0;
}

static int make_one(const struct ibcr_delfiles *d, uint32_t i, struct ibcr_err *e)
{
	const char *path = d->paths[i];
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0) {
		if (errno == EEXIST)
			return ibcr_fail(e, "%s: the process mapped a deleted file of this name, "
					 "and a file of this name exists now: it is not replaced, "
					 "and a mapping of another name would not be the same "
					 "(move it away to restore)", path);
		return ibcr_fail_errno(e, errno, "%s (a deleted file the process mapped): "
				       "making it again", path);
	}
	if (fill(fd, d, i, path, e) || unlink(path)) {
		if (!e->msg[0])
			ibcr_fail_errno(e, errno, "%s: deleting it again", path);
		unlink(path);
		close(fd);
		return -1;
	}
	made = xrealloc(made, sizeof(*made) * (nmade + 1));
	made[nmade++] = (struct made){ d->files[i].dev, d->files[i].ino, fd };
	shm_file_keep(d->files[i].dev, d->files[i].ino, fd);
	return 0;
}

int delfiles_prepare(const struct ibcr_delfiles *d, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < d->nfiles; i++) {
		e->msg[0] = 0;
		if (make_one(d, i, e))
			return -1;
	}
	return 0;
}

int delfile_fd(uint64_t dev, uint64_t ino)
{
	for (uint32_t k = 0; k < nmade; k++)
		if (made[k].dev == dev && made[k].ino == ino)
			return fcntl(made[k].fd, F_DUPFD_CLOEXEC, 0);
	errno = ENOENT;
	return -1;
}
