// SPDX-License-Identifier: MIT
/*
 * pidfds, opened by the restored process that holds one, as its
 * descriptors are placed: of itself, of its parent, or of a child of it
 * (forked already: a process forks its children before it restores
 * itself), by the pid that one has now. A second descriptor of the same
 * pidfd in the process shares the first's description.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fdkinds.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

static pid_t now_pid(const struct restore *rs, pid_t saved)
{
	if (saved == rs->ps->rec.pid)
		return getpid();
	if (saved == rs->ps->rec.ppid)
		return getppid();
	for (uint32_t c = 0; c < rs->njobs; c++)
		if (rs->jobs[c].parent == (int)rs->proc && rs->jobs[c].ps.rec.pid == saved)
			return rs->jobs[c].child;
	return -1;
}

int pidfd_place(const struct restore *rs, const struct ibcr_fd *f, struct ibcr_err *e)
{
	const struct ibcr_files *fs = rs->files;
	const struct ibcr_fobj *o = &fs->objs[f->obj];
	struct ibcr_pidfd p;
	pid_t pid;
	int fd;

	for (const struct ibcr_fd *k = rs->ps->fds; k < f; k++)
		if (k->obj == f->obj)	/* placed already: one description */
			return dup3(k->fd, f->fd, f->cloexec ? O_CLOEXEC : 0) < 0 ?
			       ibcr_fail_errno(e, errno, "placing fd %d (a pidfd)", f->fd) : 0;
	if (o->data_len != sizeof(p) || !fs->data[f->obj])
		return ibcr_fail(e, "fd %d: its pidfd record is damaged", f->fd);
	memcpy(&p, fs->data[f->obj], sizeof(p));
	if ((pid = now_pid(rs, p.pid)) <= 0)
		return ibcr_fail(e, "fd %d: pidfd of pid %d, which is not restored as this "
				 "process, its parent or a child of it", f->fd, p.pid);
	fd = (int)syscall(SYS_pidfd_open, pid, p.thread ? PIDFD_THREAD : 0);
	if (fd < 0)
		return ibcr_fail_errno(e, errno, "fd %d: pidfd of pid %d (now %d)", f->fd, p.pid,
				       (int)pid);
	/* (it may be at that very number: the lowest free one) */
	if (fcntl(fd, F_SETFL, o->flags & STATUS_FLAGS) ||
	    (fd == f->fd ? fcntl(fd, F_SETFD, f->cloexec ? FD_CLOEXEC : 0) :
	     dup3(fd, f->fd, f->cloexec ? O_CLOEXEC : 0)) < 0) {
		close(fd);
		return ibcr_fail_errno(e, errno, "placing fd %d (a pidfd of pid %d)", f->fd, p.pid);
	}
	if (fd != f->fd)
		close(fd);
	return 0;
}
