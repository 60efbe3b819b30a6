// SPDX-License-Identifier: MIT
/*
 * What an open file description carries besides its file, offset and
 * flags: who gets its I/O signals (F_SETOWN_EX: a thread, a process or a
 * process group) and which signal (F_SETSIG), and a lease (F_SETLEASE).
 * Read through a copy of the descriptor (pidfd_getfd), into the object's
 * FILEATTRS record. The owner must be in the image: the restore sets it
 * again by the restored pid, and a root restore naming a process outside
 * would send it signals with root's credentials.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "fdkinds.h"

static int owner_in_image(const struct target *t, uint32_t n, const struct ibcr_fattr *a)
{
	for (uint32_t k = 0; k < n; k++) {
		if (a->owner_type == F_OWNER_PID && t[k].pid == a->owner_pid)
			return 1;
		if (a->owner_type == F_OWNER_PGRP && t[k].ps.rec.pgid == a->owner_pid)
			return 1;
		for (uint32_t i = 0; a->owner_type == F_OWNER_TID && i < t[k].nthreads; i++)
			if (t[k].tids[i] == a->owner_pid)
				return 1;
	}
	return 0;
}

int fdattr_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_fattr *a = &o->f.attrs[i];
	struct f_owner_ex own = { 0 };
	int g, sig, lease;

	switch (o->f.objs[i].kind) {
	case IBCR_FD_STAGE:	/* the stage's own */
	case IBCR_FD_EXTERNAL:	/* does not come back as it was */
	case IBCR_FD_STDIO:
	case IBCR_FD_OPATH:	/* has none */
		return 0;
	}
	if ((g = grab_fd(pid, fd, e)) < 0)
		return -1;
	sig = fcntl(g, F_GETSIG);
	lease = fcntl(g, F_GETLEASE);
	if (fcntl(g, F_GETOWN_EX, &own) || sig < 0 || (lease < 0 && errno != EINVAL)) {
		int err = errno;

		close(g);
		return ibcr_fail_errno(e, err, "pid %d fd %d: reading its owner, signal and "
				       "lease", (int)pid, fd);
	}
	close(g);
	a->sig = (uint32_t)sig;
	a->lease = lease == F_RDLCK ? 1 : lease == F_WRLCK ? 2 : 0;
	a->owner_pid = own.pid;
	a->owner_type = own.pid ? (uint32_t)own.type : 0;
	if (o->f.objs[i].flags & O_ASYNC) {
		a->async_pid = pid;
		a->async_fd = fd;
	}
	return 0;
}

int fdattr_check(const struct target *t, uint32_t n, const struct fobjs *o, struct ibcr_err *e)
{
	static const char *const what[] = { "thread", "process", "process group" };

	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		const struct ibcr_fattr *a = &o->f.attrs[i];

		if (a->owner_pid && a->owner_type > F_OWNER_PGRP)
			return ibcr_fail(e, "pid %d fd %d: its I/O signals go to an owner of type "
					 "%u: not supported", (int)o->rep_pid[i], o->rep_fd[i],
					 a->owner_type);
		if (a->owner_pid && !owner_in_image(t, n, a))
			return ibcr_fail(e, "pid %d fd %d: its I/O signals (F_SETOWN) go to %s %d, "
					 "outside the checkpoint: not supported",
					 (int)o->rep_pid[i], o->rep_fd[i], what[a->owner_type],
					 a->owner_pid);
	}
	return 0;
}
