// SPDX-License-Identifier: MIT
/*
 * A file that the processes mapped shared and that was deleted while
 * mapped (python's multiprocessing semaphores in /dev/shm) is made
 * again at its path, with its size and mode, mapped where shm.c hands
 * it down, and unlinked at once: every process's mappings are of one
 * deleted file again and show as "PATH (deleted)". The name must be
 * free: a file that has it now is not ours to replace.
 *
 * The descriptor stays with the loader, for a descriptor of the image
 * that is the same deleted file (the fd side asks shm_file_fd).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"

#define DELETED_SUFFIX " (deleted)"

static struct made_file {
	uint64_t dev, ino;	/* the object's identity in the image */
	int fd;
} *made;
static uint32_t nmade;

int shm_file_fd(uint64_t st_dev, uint64_t ino)
{
	uint64_t dev = ((uint64_t)major((dev_t)st_dev) << 32) | minor((dev_t)st_dev);

	for (uint32_t k = 0; k < nmade; k++)
		if (made[k].dev == dev && made[k].ino == ino && made[k].fd >= 0) {
			int fd = made[k].fd;

			made[k].fd = -1;
			return fd;
		}
	return -1;
}

void shm_file_keep(uint64_t st_dev, uint64_t ino, int fd)
{
	int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (mine < 0)
		return;	/* a descriptor of it is then made apart, as before */
	made = xrealloc(made, sizeof(*made) * (nmade + 1));
	made[nmade++] = (struct made_file){
		((uint64_t)major((dev_t)st_dev) << 32) | minor((dev_t)st_dev), ino, mine };
}

/* The path that maps shows without its " (deleted)". */
static char *path_of(const char *shown)
{
	size_t n = strlen(shown), k = strlen(DELETED_SUFFIX);
	char *p = xstrdup(shown);

	if (n > k && !strcmp(p + n - k, DELETED_SUFFIX))
		p[n - k] = 0;
	return p;
}

static int made_here(const char *path, int fd, const struct shm_obj *o, struct ibcr_err *e)
{
	if (ftruncate(fd, (off_t)o->named->file_size))
		return ibcr_fail_errno(e, errno, "%s: setting its size to %llu", path,
				       (unsigned long long)o->named->file_size);
	if (mmap((void *)(uintptr_t)o->addr, o->size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0) == MAP_FAILED)
		return ibcr_fail_errno(e, errno, "%s: mapping it", path);
	if (unlink(path))
		return ibcr_fail_errno(e, errno, "%s: deleting it again", path);
	return 0;
}

int shm_deleted_open(const struct shm_obj *o, struct ibcr_err *e)
{
	char *path = path_of(o->path);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
		      (mode_t)(o->named->file_mode & 07777));

	if (fd < 0) {
		if (errno == EEXIST)
			ibcr_fail(e, "%s: the processes mapped a deleted file of this name, and "
				  "a file of this name exists now: it is not replaced (remove "
				  "it to restore)", path);
		else
			ibcr_fail_errno(e, errno, "%s (a deleted file the processes mapped "
					"shared): making it again", path);
		free(path);
		return -1;
	}
	if (made_here(path, fd, o, e)) {
		unlink(path);
		close(fd);
		free(path);
		return -1;
	}
	free(path);
	made = xrealloc(made, sizeof(*made) * (nmade + 1));
	made[nmade++] = (struct made_file){ o->dev, o->ino, fd };
	return 0;
}
