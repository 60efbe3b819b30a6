// SPDX-License-Identifier: MIT
/*
 * Descriptors that led outside the image, as saver --external-fd said:
 * closed, /dev/null (with the saved access mode and flags),
 * restart-loader's own descriptor of that number (inherit), or its
 * controlling terminal. And std streams used above fd 2 too: there they
 * follow the std stream of their process (bash's fd 255, a dup of fd 2).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fdkinds.h"

uint32_t external_action(const struct ibcr_files *f, uint32_t i)
{
	struct ibcr_external x;

	if (f->objs[i].kind != IBCR_FD_EXTERNAL || f->objs[i].data_len != sizeof(x) ||
	    !f->data[i])
		return 0;
	memcpy(&x, f->data[i], sizeof(x));
	return x.action >= IBCR_EXT_CLOSE && x.action <= IBCR_EXT_TTY ? x.action : 0;
}

int external_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	int flags = (int)(f->objs[i].flags & (O_ACCMODE | STATUS_FLAGS)), fd;

	switch (external_action(f, i)) {
	case IBCR_EXT_NULL:
		if ((fd = open("/dev/null", flags | O_CLOEXEC)) < 0)
			return ibcr_fail_errno(e, errno, "opening /dev/null for %s (file object "
					       "%u, --external-fd null)", f->paths[i], i);
		return fd;
	case IBCR_EXT_TTY:
		return tty_open(f, i, e);
	}
	return ibcr_fail(e, "file object %u (%s): a descriptor leading outside whose record "
			 "is damaged", i, f->paths[i]);
}

/* Whether the loader itself has fd (other than the image's). */
static int loader_has(const struct restore *rs, int fd)
{
	return fd != rs->r->fd && fcntl(fd, F_GETFD) >= 0;
}

/* The loader's own descriptors the image rebinds to: there before anything changes. */
int external_preflight(const struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;

	for (uint32_t i = 0; i < ps->nfds; i++) {
		const struct ibcr_fd *f = &ps->fds[i];
		uint32_t kind = rs->files->objs[f->obj].kind;

		if (((kind == IBCR_FD_STDIO || kind == IBCR_FD_TTY) && f->fd <= 2 &&
		     !loader_has(rs, f->fd)))
			return ibcr_fail(e, "pid %d fd %d was a terminal, pipe or socket leading "
					 "outside and is rebound to restart-loader's own fd %d, "
					 "which it does not have", ps->rec.pid, f->fd, f->fd);
		if (external_action(rs->files, f->obj) == IBCR_EXT_INHERIT &&
		    !loader_has(rs, f->fd))
			return ibcr_fail(e, "pid %d fd %d (%s) is restart-loader's own fd %d "
					 "(saver --external-fd %d:inherit), which it does not have",
					 ps->rec.pid, f->fd, rs->files->paths[f->obj], f->fd, f->fd);
	}
	return 0;
}

int external_place(const struct restore *rs, const struct ibcr_fd *f, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	uint32_t kind = rs->files->objs[f->obj].kind, action = external_action(rs->files, f->obj);

	if (kind == IBCR_FD_STDIO && f->fd > 2) {
		/* its process has it on a std fd too (the saver checked): share that */
		for (uint32_t k = 0; k < ps->nfds && ps->fds[k].fd <= 2; k++)
			if (ps->fds[k].obj == f->obj)
				return dup3(ps->fds[k].fd, f->fd, f->cloexec ? O_CLOEXEC : 0) < 0 ?
				       ibcr_fail_errno(e, errno, "placing fd %d as a copy of "
						       "fd %d", f->fd, ps->fds[k].fd) : 0;
		return ibcr_fail(e, "fd %d was a std stream of another process: it cannot be "
				 "rebound here", f->fd);
	}
	if (kind == IBCR_FD_STDIO || action == IBCR_EXT_INHERIT) {
		if (fcntl(f->fd, F_GETFD) < 0)
			return ibcr_fail(e, "fd %d is rebound to the loader's, but the loader "
					 "has no fd %d", f->fd, f->fd);
		return fcntl(f->fd, F_SETFD, f->cloexec ? FD_CLOEXEC : 0) < 0 ?
		       ibcr_fail_errno(e, errno, "fd %d: its close-on-exec flag", f->fd) : 0;
	}
	if (action == IBCR_EXT_CLOSE) {
		close(f->fd);
		return 0;
	}
	return 1;	/* an object of the loader's, placed as any other */
}
