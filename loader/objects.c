// SPDX-License-Identifier: MIT
/*
 * The image's open file descriptions are opened once, by the loader,
 * before it forks anything: every restored process inherits them all,
 * places those it had at its saved numbers and closes the rest. So a
 * description shared by dup() or fork() is shared again (one offset, one
 * set of flags), and both ends of a pipe exist before either process
 * runs, with the unread bytes already in it. Kinds with more state
 * (eventfd, timerfd, signalfd, epoll, inotify, deleted files, memfds,
 * terminals above fd 2) are made by fdkinds.c, fdinotify.c, fdfiles.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fdkinds.h"
#include "loader.h"

static int reopen(const struct ibcr_fobj *o, const char *path, struct ibcr_err *e)
{
	int flags = (int)(o->flags & ~(uint32_t)(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY));
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "reopening %s", path);
	if (o->kind != IBCR_FD_CHR && lseek(fd, (off_t)o->pos, SEEK_SET) < 0) {
		ibcr_fail_errno(e, errno, "seeking %s to %llu", path, (unsigned long long)o->pos);
		close(fd);
		return -1;
	}
	return fd;
}

/* A named pipe, without blocking: a keeper end exists while we open. */
static int reopen_fifo(const struct ibcr_fobj *o, const char *path, int *keeper,
		       struct ibcr_err *e)
{
	int fd;

	if (*keeper < 0 && (*keeper = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		return ibcr_fail_errno(e, errno, "opening named pipe %s", path);
	fd = open(path, (int)(o->flags & (O_ACCMODE | STATUS_FLAGS)) | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return ibcr_fail_errno(e, errno, "opening named pipe %s", path);
	if (fcntl(fd, F_SETFL, o->flags & STATUS_FLAGS) < 0) {
		close(fd);
		return ibcr_fail_errno(e, errno, "named pipe %s: setting its flags", path);
	}
	return fd;
}

/* Both ends of pipe `ino`, made once, filled with the data it had. */
static int make_pipe(const struct ibcr_files *f, uint64_t ino, int ends[2],
		     struct ibcr_err *e)
{
	if (pipe2(ends, O_CLOEXEC))
		return ibcr_fail_errno(e, errno, "creating a pipe");
	for (uint32_t i = 0; i < f->nobjs; i++) {
		const struct ibcr_fobj *o = &f->objs[i];

		if (o->kind != IBCR_FD_PIPE || o->aux[0] != ino)
			continue;
		if (o->aux[1] && fcntl(ends[0], F_SETPIPE_SZ, (int)o->aux[1]) < 0)
			return ibcr_fail_errno(e, errno, "pipe %s: restoring its size %llu",
					       f->paths[i], (unsigned long long)o->aux[1]);
		if (o->data_len && write(ends[1], f->data[i], o->data_len) != (ssize_t)o->data_len)
			return ibcr_fail_errno(e, errno, "pipe %s: putting back its %llu bytes",
					       f->paths[i], (unsigned long long)o->data_len);
	}
	return 0;
}

static int pipe_end(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	int ends[2] = { -1, -1 }, fd;

	/* an end of this pipe opened already: the other end is in the same pipe */
	for (uint32_t k = 0; k < i; k++)
		if (f->objs[k].kind == IBCR_FD_PIPE && f->objs[k].aux[0] == o->aux[0]) {
			char path[64];

			/* reopening through /proc gives the wanted end of that pipe */
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[k]);
			fd = open(path, (int)(o->flags & O_ACCMODE) | O_NONBLOCK | O_CLOEXEC);
			if (fd < 0 || fcntl(fd, F_SETFL, o->flags & STATUS_FLAGS) < 0)
				return ibcr_fail_errno(e, errno, "pipe %s: opening its other end",
						       f->paths[i]);
			return fd;
		}
	if (make_pipe(f, o->aux[0], ends, e))
		return -1;
	fd = (o->flags & O_ACCMODE) == O_RDONLY ? ends[0] : ends[1];
	close(fd == ends[0] ? ends[1] : ends[0]);
	if (fcntl(fd, F_SETFL, o->flags & STATUS_FLAGS) < 0)
		return ibcr_fail_errno(e, errno, "pipe %s: setting its flags", f->paths[i]);
	return fd;
}

/*
 * Objects are made in three passes: pty masters first (their slaves are
 * opened through them), TCP connections taken over last (bound in repair
 * mode, they may share a port with a listener that binds normally, which
 * works only in this order).
 */
static uint32_t pass_of(const struct ibcr_fobj *o)
{
	if (o->kind == IBCR_FD_PTMX)
		return 0;
	if (o->kind == IBCR_FD_INET && ((o->aux[1] >> 16) & 0xff) == IBCR_SOCK_REPAIR)
		return 2;
	return 1;
}

int objects_open(const struct ibcr_files *f, int base, int **out, struct ibcr_err *e)
{
	int *fds = xmalloc(sizeof(int) * (f->nobjs + 1)), keeper = -1, rc = 0;

	for (uint32_t i = 0; i < f->nobjs; i++)
		fds[i] = -1;
	for (uint32_t k = 0; k < 3 * f->nobjs && !rc; k++) {
		uint32_t i = k % f->nobjs;
		const struct ibcr_fobj *o = &f->objs[i];
		int fd = -1, high;

		if (pass_of(o) != k / f->nobjs)
			continue;
		switch (o->kind) {
		case IBCR_FD_REG:
		case IBCR_FD_DIR:
		case IBCR_FD_CHR:
			fd = reopen(o, f->paths[i], e);
			break;
		case IBCR_FD_FIFO:
			fd = reopen_fifo(o, f->paths[i], &keeper, e);
			break;
		case IBCR_FD_PIPE:
			fd = pipe_end(f, i, fds, e);
			break;
		case IBCR_FD_UNIX:
		case IBCR_FD_INET:
			fd = sock_open(f, i, fds, e);
			if (fd == UNIX_LATER)
				continue;	/* made by unix_pending */
			break;
		case IBCR_FD_PTS:
			fd = pts_open(f, i, fds, e);
			break;
		case IBCR_FD_NETLINK:
			e->msg[0] = 0;
			fd = netlink_open(f, i, e);
			break;
		case IBCR_FD_STDIO:
		case IBCR_FD_STAGE:
			continue;	/* per process */
		default:
			fd = fdk_open(f, i, e);	/* the kinds of fdkinds.h */
			break;
		}
		if (fd < 0) {
			rc = -1;
			break;
		}
		high = fcntl(fd, F_DUPFD_CLOEXEC, base);
		close(fd);
		if (high < 0)
			rc = ibcr_fail_errno(e, errno, "placing file %s above fd %d",
					     f->paths[i], base);
		fds[i] = high;
	}
	if (keeper >= 0)
		close(keeper);
	if (!rc)
		rc = unix_pending(f, fds, base, e);
	if (!rc)
		rc = udp_refill(f, fds, e);
	*out = fds;
	return rc;
}
