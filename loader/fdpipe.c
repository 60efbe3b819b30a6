// SPDX-License-Identifier: MIT
/*
 * Pipes and named pipes, made once per pipe: every open file description
 * of one pipe (its inode in the image) is opened together, in a pipe
 * that holds the saved bytes once, whatever the number of descriptions
 * of either end. The bytes go in before the processes exist, through a
 * non-blocking writer of our own after the pipe has its saved size: a
 * pipe that cannot take them is an error, never a wait (writing a full
 * pipe's bytes twice once hung the loader here).
 *
 * A named pipe is opened by its path while a keeper (O_RDWR, ours) holds
 * it, so that no open waits for its other end and the bytes stay in it
 * until every description is open. A named pipe that already holds bytes
 * belongs to a process outside the image that has it open: refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fdio.h"
#include "fdkinds.h"

static int is_pipe(const struct ibcr_fobj *o)
{
	return o->kind == IBCR_FD_PIPE || o->kind == IBCR_FD_FIFO;
}

/* Object k is a description of the same pipe as object i. */
static int same_pipe(const struct ibcr_files *f, uint32_t i, uint32_t k)
{
	return is_pipe(&f->objs[k]) && f->objs[k].kind == f->objs[i].kind &&
	       fobj_pipe_ino(&f->objs[k]) == fobj_pipe_ino(&f->objs[i]);
}

/* Another description of the pipe that our fd is on, as object k was. */
static int reopen_end(int fd, const struct ibcr_fobj *o)
{
	char self[32];
	int nfd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	nfd = open(self, (int)(o->flags & O_ACCMODE) | O_NONBLOCK | O_CLOEXEC);
	if (nfd >= 0 && fcntl(nfd, F_SETFL, o->flags & STATUS_FLAGS) < 0) {
		close(nfd);
		return -1;
	}
	return nfd;
}

/* Size and bytes of the pipe (the saver gives one object of it the bytes). */
static int fill(const struct ibcr_files *f, uint32_t i, int wfd, struct ibcr_err *e)
{
	uint64_t size = 0;
	int w;

	for (uint32_t k = i; k < f->nobjs; k++)
		if (same_pipe(f, i, k) && fobj_pipe_size(&f->objs[k]) > size)
			size = fobj_pipe_size(&f->objs[k]);
	if (size && fcntl(wfd, F_SETPIPE_SZ, (int)size) < (int)size)
		return ibcr_fail_errno(e, errno, "%s %s: restoring its size of %llu bytes",
				       f->objs[i].kind == IBCR_FD_FIFO ? "named pipe" : "pipe",
				       f->paths[i], (unsigned long long)size);
	for (uint32_t k = i; k < f->nobjs; k++) {
		const struct ibcr_fobj *o = &f->objs[k];

		if (!same_pipe(f, i, k) || !o->data_len)
			continue;
		if ((w = reopen_end(wfd, &(struct ibcr_fobj){ .flags = O_WRONLY | O_NONBLOCK })) < 0)
			return ibcr_fail_errno(e, errno, "pipe %s: a writer for its bytes",
					       f->paths[k]);
		if (write_full(w, f->data[k], o->data_len)) {
			ibcr_fail_errno(e, errno, "%s %s: putting back its %llu bytes (a pipe of "
					"%llu bytes)", o->kind == IBCR_FD_FIFO ? "named pipe" : "pipe",
					f->paths[k], (unsigned long long)o->data_len,
					(unsigned long long)size);
			close(w);
			return -1;
		}
		close(w);
	}
	return 0;
}

/* Every description of the pipe of object i, from our end fd, above base. */
static int open_all(const struct ibcr_files *f, uint32_t i, int fd, int *fds, int base,
		    struct ibcr_err *e)
{
	for (uint32_t k = i; k < f->nobjs; k++) {
		int nfd;

		if (!same_pipe(f, i, k))
			continue;
		nfd = reopen_end(fd, &f->objs[k]);
		if (nfd < 0)
			return ibcr_fail_errno(e, errno, "%s %s (file object %u): opening it",
					       f->objs[k].kind == IBCR_FD_FIFO ? "named pipe" :
					       "pipe", f->paths[k], k);
		fds[k] = fcntl(nfd, F_DUPFD_CLOEXEC, base);
		close(nfd);
		if (fds[k] < 0)
			return ibcr_fail_errno(e, errno, "placing pipe %s above fd %d",
					       f->paths[k], base);
	}
	return 0;
}

static int anon_pipe(const struct ibcr_files *f, uint32_t i, int *fds, int base,
		     struct ibcr_err *e)
{
	int ends[2], rc;

	if (pipe2(ends, O_CLOEXEC))
		return ibcr_fail_errno(e, errno, "pipe %s: creating it", f->paths[i]);
	rc = fill(f, i, ends[1], e) || open_all(f, i, ends[0], fds, base, e) ? -1 : 0;
	close(ends[0]);
	close(ends[1]);
	return rc;
}

static int named_pipe(const struct ibcr_files *f, uint32_t i, int *fds, int base,
		      struct ibcr_err *e)
{
	int keeper = open(f->paths[i], O_RDWR | O_NONBLOCK | O_CLOEXEC), n = 0, rc;

	if (keeper < 0)
		return ibcr_fail_errno(e, errno, "opening named pipe %s", f->paths[i]);
	if (ioctl(keeper, FIONREAD, &n) || n) {
		close(keeper);
		return n ? ibcr_fail(e, "named pipe %s holds %d bytes already: a process "
				     "outside the image has it open", f->paths[i], n) :
			   ibcr_fail_errno(e, errno, "named pipe %s: FIONREAD", f->paths[i]);
	}
	rc = fill(f, i, keeper, e) || open_all(f, i, keeper, fds, base, e) ? -1 : 0;
	close(keeper);
	return rc;
}

int pipe_open_all(const struct ibcr_files *f, uint32_t i, int *fds, int base,
		  struct ibcr_err *e)
{
	return f->objs[i].kind == IBCR_FD_FIFO ? named_pipe(f, i, fds, base, e) :
	       anon_pipe(f, i, fds, base, e);
}
