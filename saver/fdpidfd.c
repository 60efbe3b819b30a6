// SPDX-License-Identifier: MIT
/*
 * pidfds. One of a process of the image comes back as a pidfd of that
 * process under its restored pid, opened by each process that holds it
 * once the process it refers to exists and its new pid is known there:
 * the holder itself, its parent, or a child of it (forked before the
 * holder restores its descriptors). Any other (a sibling, a process
 * outside the image, one that is gone) is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fdkinds.h"

int pidfd_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_pidfd p = { 0, (o->f.objs[i].flags & O_EXCL) ? 1 : 0 };
	uint64_t v = 0;
	char *s;
	int rc;

	if (fdinfo_read(pid, fd, &s, e))
		return -1;
	rc = fdinfo_field(s, "Pid:", 10, &v);	/* "-1": gone */
	free(s);
	if (!rc)
		return ibcr_fail(e, "pid %d fd %d: pidfd without a Pid line in its fdinfo",
				 (int)pid, fd);
	if ((int64_t)v <= 0)
		return ibcr_fail(e, "pid %d fd %d: pidfd of a process that is gone (reaped): "
				 "not supported", (int)pid, fd);
	p.pid = (int32_t)v;
	o->f.data[i] = xmalloc(sizeof(p));
	memcpy(o->f.data[i], &p, sizeof(p));
	o->f.objs[i].data_len = sizeof(p);
	return 0;
}

static const struct target *find(const struct target *t, uint32_t n, pid_t pid)
{
	for (uint32_t k = 0; k < n; k++)
		if (t[k].pid == pid)
			return &t[k];
	return NULL;
}

/* Each holder must be able to name the process the pidfd refers to. */
int pidfd_check(const struct target *t, uint32_t n, const struct fobjs *o, struct ibcr_err *e)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t f = 0; f < t[k].ps.nfds; f++) {
			uint32_t i = t[k].ps.fds[f].obj;
			const struct target *x;
			struct ibcr_pidfd p;

			if (o->f.objs[i].kind != IBCR_FD_PIDFD)
				continue;
			memcpy(&p, o->f.data[i], sizeof(p));
			x = find(t, n, p.pid);
			if (!x)
				return ibcr_fail(e, "pid %d fd %d: pidfd of pid %d, which is outside "
						 "the checkpoint: not supported", (int)t[k].pid,
						 t[k].ps.fds[f].fd, p.pid);
			if (x != &t[k] && x->pid != t[k].ps.rec.ppid && x->ps.rec.ppid != t[k].pid)
				return ibcr_fail(e, "pid %d fd %d: pidfd of pid %d, which is neither "
						 "it, its parent nor a child of it: not supported",
						 (int)t[k].pid, t[k].ps.fds[f].fd, p.pid);
		}
	return 0;
}
