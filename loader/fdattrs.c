// SPDX-License-Identifier: MIT
/*
 * An open file description's I/O signal (F_SETSIG), set when it is
 * made, and its lease and I/O signal owner (F_SETOWN_EX), set once every
 * restored process exists (the owner is one of them, by its restored
 * pid), on the loader's own copy of the description, before any process
 * resumes. The lease first: F_SETLEASE makes its caller the owner.
 */
#include <errno.h>
#include <fcntl.h>

#include "fdkinds.h"

int fdattr_open(const struct ibcr_files *f, uint32_t i, int fd, struct ibcr_err *e)
{
	const struct ibcr_fattr *a = &f->attrs[i];

	if (a->sig && fcntl(fd, F_SETSIG, (int)a->sig))
		return ibcr_fail_errno(e, errno, "%s (file object %u): its I/O signal %u (F_SETSIG)",
				       f->paths[i], i, a->sig);
	return 0;
}

/*
 * In the restored process, once its fds are placed: an O_ASYNC
 * description's signals name the fd that turned O_ASYNC on last (si_fd);
 * the loader's did. Turning it off and on again from the saved number
 * makes that the one.
 */
int fdattr_async(const struct restore *rs, struct ibcr_err *e)
{
	for (uint32_t k = 0; k < rs->ps->nfds; k++) {
		const struct ibcr_fd *d = &rs->ps->fds[k];
		const struct ibcr_fattr *a = &rs->files->attrs[d->obj];
		int fl;

		if (a->async_pid != rs->ps->rec.pid || a->async_fd != d->fd)
			continue;
		if ((fl = fcntl(d->fd, F_GETFL)) < 0 || fcntl(d->fd, F_SETFL, fl & ~O_ASYNC) ||
		    fcntl(d->fd, F_SETFL, fl | O_ASYNC))
			return ibcr_fail_errno(e, errno, "fd %d: turning O_ASYNC on again for its "
					       "number", d->fd);
	}
	return 0;
}

/*
 * The restored id of a saved owner: the same where the pids were kept;
 * else the new pid of the process it was (a group: of its leader; a
 * thread: only a main thread's can be told), or -1.
 */
static pid_t restored_id(const struct job *j, uint32_t n, const struct ibcr_fattr *a)
{
	for (uint32_t k = 0; k < n; k++) {
		const struct ibcr_proc *r = &j[k].ps.rec;

		if (r->flags & IBCR_PROCF_ZOMBIE)
			continue;
		if (r->pid == a->owner_pid)
			return j[k].rs.exact_pid ? r->pid : j[k].child;
		for (uint32_t t = 1; t < r->nthreads && a->owner_type == F_OWNER_TID; t++)
			if (j[k].ps.threads[t].rec.tid == a->owner_pid)
				return j[k].rs.exact_pid ? a->owner_pid : -1;
	}
	return a->owner_type == F_OWNER_PGRP ? a->owner_pid : -1;
}

int fdattr_finish(const struct job *j, uint32_t n, const struct ibcr_files *f, const int *fds,
		  struct ibcr_err *e)
{
	for (uint32_t i = 0; i < f->nobjs; i++) {
		const struct ibcr_fattr *a = &f->attrs[i];
		struct f_owner_ex own = { (int)a->owner_type, restored_id(j, n, a) };
		int lease = a->lease == 1 ? F_RDLCK : F_WRLCK;

		if ((!a->lease && !a->owner_pid) || fds[i] < 0)
			continue;
		if (a->lease && fcntl(fds[i], F_SETLEASE, lease))
			return ibcr_fail_errno(e, errno, "%s (file object %u): its %s lease",
					       f->paths[i], i, a->lease == 1 ? "read" : "write");
		if (!a->owner_pid)
			own = (struct f_owner_ex){ F_OWNER_PID, 0 };	/* nobody, as before */
		if (own.pid < 0)
			return ibcr_fail(e, "%s (file object %u): its I/O signals went to thread %d, "
					 "which has another tid now", f->paths[i], i, a->owner_pid);
		if (fcntl(fds[i], F_SETOWN_EX, &own))
			return ibcr_fail_errno(e, errno, "%s (file object %u): its I/O signal owner "
					       "%d (F_SETOWN_EX)", f->paths[i], i, own.pid);
	}
	return 0;
}
