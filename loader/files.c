// SPDX-License-Identifier: MIT
/*
 * Files, in the child that becomes the restored process: the loader has
 * opened every file object already (objects.c) above every saved number;
 * each saved fd gets its object at its number with its close-on-exec
 * flag, std streams saved as a terminal, pipe or socket leading outside
 * stay bound to the loader's own, a terminal above fd 2 becomes the
 * loader's controlling terminal, epolls get their entries back (by this
 * process's fd numbers, so only now), and everything else inherited
 * closes.
 */
#include <dirent.h>
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

static int move_high(int *fd, int base, const char *what, struct ibcr_err *e)
{
	int nfd = fcntl(*fd, F_DUPFD_CLOEXEC, base);

	if (nfd < 0)
		return ibcr_fail_errno(e, errno, "moving the %s descriptor above %d",
				       what, base);
	close(*fd);
	*fd = nfd;
	return 0;
}

static int is_saved(const struct ibcr_process_state *ps, int fd)
{
	for (uint32_t i = 0; i < ps->nfds; i++)
		if (ps->fds[i].fd == fd)
			return 1;
	return 0;
}

static int is_ours(const struct restore *rs, int fd)
{
	if (fd == rs->r->fd || fd == rs->status_fd || fd == rs->control_fd ||
	    fd == rs->exe_fd)
		return 1;
	for (uint32_t i = 0; i < rs->ps->nvmas; i++)
		if (rs->map_fds[i] == fd)
			return 1;
	return group_keeps(rs, fd);
}

/* Closes what the loader inherited and the process did not have. */
static void close_strays(struct restore *rs)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int *v = NULL, n = 0;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			v = xrealloc(v, sizeof(int) * (size_t)(n + 1));
			v[n++] = atoi(de->d_name);
		}
	closedir(d);
	for (int i = 0; i < n; i++)
		if (!is_saved(rs->ps, v[i]) && !is_ours(rs, v[i]))
			close(v[i]);
	free(v);
}

static int open_mappings(struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;

	rs->map_fds = xmalloc(sizeof(int) * (ps->nvmas + 1));
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];
		int writable = (v->flags & IBCR_VMAF_SHARED) && (v->prot & 2 /* PROT_WRITE */);
		int fd;

		rs->map_fds[i] = -1;
		if (v->kind != IBCR_VMA_FILE)
			continue;
		if (v->flags & IBCR_VMAF_OBJFILE) {	/* a deleted file or memfd of the image */
			if ((rs->map_fds[i] = objfile_open(rs, v, (v->flags & IBCR_VMAF_SHARED) != 0,
							     e)) < 0)
				return -1;
			continue;
		}
		/* Regions of one file share a descriptor. */
		for (uint32_t k = 0; k < i && rs->map_fds[i] < 0; k++)
			if (rs->map_fds[k] >= 0 && !strcmp(ps->vma_names[k], ps->vma_names[i]) &&
			    (!writable || (ps->vmas[k].flags & IBCR_VMAF_SHARED)))
				rs->map_fds[i] = rs->map_fds[k];
		if (rs->map_fds[i] >= 0)
			continue;
		fd = open(ps->vma_names[i], (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (fd < 0)
			return ibcr_fail_errno(e, errno, "opening mapped file %s", ps->vma_names[i]);
		if (move_high(&fd, rs->fd_base, "mapped file", e))
			return -1;
		rs->map_fds[i] = fd;
	}
	/* a deleted executable: the file object its regions map */
	for (uint32_t i = 0; i < ps->nvmas; i++)
		if ((ps->vmas[i].flags & IBCR_VMAF_OBJFILE) && !strcmp(ps->vma_names[i], ps->exe))
			return (rs->exe_fd = objfile_open(rs, &ps->vmas[i], 0, e)) < 0 ? -1 : 0;
	rs->exe_fd = open(ps->exe, O_RDONLY | O_CLOEXEC);
	if (rs->exe_fd >= 0 && move_high(&rs->exe_fd, rs->fd_base, "executable", e))
		return -1;
	return 0;
}

static int place(struct restore *rs, const struct ibcr_fd *f, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &rs->files->objs[f->obj];
	int rc;

	if (o->kind == IBCR_FD_STAGE)
		return 0;	/* verbs_standins puts something there */
	if (o->kind == IBCR_FD_TTY)
		return tty_place(rs, f, e);
	if (o->kind == IBCR_FD_PIDFD)
		return pidfd_place(rs, f, e);
	if ((rc = external_place(rs, f, e)) <= 0)	/* std streams, --external-fd */
		return rc;
	if (rs->obj_fds[f->obj] < 0)
		return ibcr_fail(e, "fd %d: its file %s was not opened", f->fd,
				 rs->files->paths[f->obj]);
	if (dup3(rs->obj_fds[f->obj], f->fd, f->cloexec ? O_CLOEXEC : 0) < 0)
		return ibcr_fail_errno(e, errno, "placing fd %d (%s)", f->fd,
				       rs->files->paths[f->obj]);
	return 0;
}

static int chdir_umask(const struct restore *rs, int cwd_done, struct ibcr_err *e)
{
	if (!cwd_done && chdir(rs->ps->cwd))
		return ibcr_fail_errno(e, errno, "changing to directory %s", rs->ps->cwd);
	umask((mode_t)rs->ps->rec.umask);
	return 0;
}

int setup_files(struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	int cwd_done = 0;

	/* sharing another's table (placed by it already): only our own */
	if (ps->rec.files_of)
		return group_follow(rs, open_mappings, e) || deldir_chdir(rs, &cwd_done, e) ||
		       chdir_umask(rs, cwd_done, e) ? -1 : 0;
	if (open_mappings(rs, e))
		return -1;
	for (uint32_t i = 0; i < ps->nfds; i++)
		if (place(rs, &ps->fds[i], e))
			return -1;
	if (verbs_standins(rs, e) || epoll_fill(rs, e) || fdattr_async(rs, e) ||
	    pty_ctty_restore(rs, e) || deldir_chdir(rs, &cwd_done, e) || group_lead(rs, e))
		return -1;
	close_strays(rs);
	group_close(rs);
	return chdir_umask(rs, cwd_done, e);
}
