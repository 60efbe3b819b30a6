// SPDX-License-Identifier: MIT
/*
 * The image's open file descriptions are opened once, by the loader,
 * before it forks anything: every restored process inherits them all,
 * places those it had at its saved numbers and closes the rest. So a
 * description shared by dup() or fork() is shared again (one offset, one
 * set of flags), and both ends of a pipe exist before either process
 * runs, with the unread bytes already in it (fdpipe.c). Kinds with more state
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

/* An O_PATH descriptor: the same name, the same kind of file, not opened. */
static int opath_open(const struct ibcr_fobj *o, const char *path, struct ibcr_err *e)
{
	int fd = open(path, O_PATH | O_CLOEXEC | (int)(o->flags & (O_NOFOLLOW | O_DIRECTORY)));
	struct stat st;

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "O_PATH descriptor of %s: opening it", path);
	if (fstat(fd, &st) || (st.st_mode & S_IFMT) != (o->mode & S_IFMT)) {
		close(fd);
		return ibcr_fail(e, "O_PATH descriptor of %s: it is no longer the same kind of "
				 "file", path);
	}
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
	if (o->kind == IBCR_FD_INET && fobj_inet_role(o) == IBCR_SOCK_REPAIR)
		return 2;
	return 1;
}

int objects_open(const struct ibcr_files *f, int base, int **out, uint32_t *failed,
		 struct ibcr_err *e)
{
	int *fds = xmalloc(sizeof(int) * (f->nobjs + 1)), rc = 0;

	*failed = UINT32_MAX;

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
		case IBCR_FD_OPATH:
			fd = opath_open(o, f->paths[i], e);
			break;
		case IBCR_FD_FIFO:
		case IBCR_FD_PIPE:
			/* every description of that pipe at once (fdpipe.c) */
			if (fds[i] < 0 && pipe_open_all(f, i, fds, base, e))
				rc = -1;
			continue;
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
		case IBCR_FD_DELETED:
			fd = deleted_open(f, i, fds, e);
			break;
		case IBCR_FD_MEMFD:
			fd = memfd_open(f, i, fds, e);
			break;
		case IBCR_FD_DELDIR:
			fd = deldir_open(f, i, fds, e);
			break;
		case IBCR_FD_STDIO:
		case IBCR_FD_STAGE:
		case IBCR_FD_PIDFD:
			continue;	/* per process */
		case IBCR_FD_EXTERNAL:
			if (external_action(f, i) == IBCR_EXT_CLOSE ||
			    external_action(f, i) == IBCR_EXT_INHERIT)
				continue;	/* per process */
			fd = fdk_open(f, i, e);
			break;
		default:
			fd = fdk_open(f, i, e);	/* the kinds of fdkinds.h */
			break;
		}
		if (fd < 0) {
			rc = -1;
			*failed = i;
			break;
		}
		high = fcntl(fd, F_DUPFD_CLOEXEC, base);
		close(fd);
		if (high < 0)
			rc = ibcr_fail_errno(e, errno, "placing file %s above fd %d",
					     f->paths[i], base);
		fds[i] = high;
	}
	if (!rc)	/* every listener exists: their pending clients connect */
		rc = unix_pending(f, fds, base, e);
	for (uint32_t i = 0; i < f->nobjs && !rc; i++)
		if (fds[i] >= 0)
			rc = fdattr_open(f, i, fds[i], e);
	if (!rc)	/* every UDP sender exists */
		rc = udp_refill(f, fds, e);
	*out = fds;
	return rc;
}

/* "pid P fd N: " before a message about object obj: the first holder. */
void objects_name_holder(const struct job *j, uint32_t n, uint32_t obj,
			 struct ibcr_err *e)
{
	struct ibcr_err was = *e;

	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < j[k].ps.nfds; i++)
			if (j[k].ps.fds[i].obj == obj) {
				ibcr_fail(e, "pid %d fd %d: %.480s", j[k].ps.rec.pid,
					  j[k].ps.fds[i].fd, was.msg);
				return;
			}
}
