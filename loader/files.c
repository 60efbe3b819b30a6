// SPDX-License-Identifier: MIT
/*
 * Files, in the child that becomes the restored process: the loader's
 * own descriptors move above every saved number, each saved fd is
 * reopened at its number, flags and offset, std streams saved as a
 * terminal, pipe or socket stay bound to the loader's own, and every
 * other inherited descriptor is closed.
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

static int open_saved(const struct ibcr_fd *f, const char *path, struct ibcr_err *e)
{
	int flags = (int)(f->flags & ~(uint32_t)(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY));
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "fd %d: reopening %s", f->fd, path);
	if (f->kind != IBCR_FD_CHR && lseek(fd, (off_t)f->pos, SEEK_SET) < 0) {
		ibcr_fail_errno(e, errno, "fd %d: seeking %s to %llu", f->fd, path,
				(unsigned long long)f->pos);
		close(fd);
		return -1;
	}
	return fd;
}

static int place(const struct ibcr_fd *f, int fd, struct ibcr_err *e)
{
	if (dup3(fd, f->fd, f->cloexec ? O_CLOEXEC : 0) < 0)
		return ibcr_fail_errno(e, errno, "placing fd %d", f->fd);
	close(fd);
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
	return 0;
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

static int open_mappings(struct restore *rs, int base, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;

	rs->map_fds = xmalloc(sizeof(int) * ps->nvmas);
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];
		int writable = (v->flags & IBCR_VMAF_SHARED) && (v->prot & 2 /* PROT_WRITE */);
		int fd;

		rs->map_fds[i] = -1;
		if (v->kind != IBCR_VMA_FILE)
			continue;
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
		if (move_high(&fd, base, "mapped file", e))
			return -1;
		rs->map_fds[i] = fd;
	}
	rs->exe_fd = open(ps->exe, O_RDONLY | O_CLOEXEC);
	if (rs->exe_fd >= 0 && move_high(&rs->exe_fd, base, "executable", e))
		return -1;
	return 0;
}

int setup_files(struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	int base = 3;

	for (uint32_t i = 0; i < ps->nfds; i++)
		if (ps->fds[i].fd >= base)
			base = ps->fds[i].fd + 1;
	if (move_high(&rs->r->fd, base, "image", e) ||
	    move_high(&rs->status_fd, base, "status pipe", e) ||
	    move_high(&rs->control_fd, base, "control pipe", e) ||
	    open_mappings(rs, base, e))
		return -1;
	for (uint32_t i = 0; i < ps->nfds; i++) {
		const struct ibcr_fd *f = &ps->fds[i];
		int fd;

		if (f->kind == IBCR_FD_STAGE)
			continue;	/* verbs_standins puts something there */
		if (f->kind == IBCR_FD_STDIO) {
			if (fcntl(f->fd, F_GETFD) < 0)
				return ibcr_fail(e, "fd %d was a terminal, pipe or socket and is "
						 "rebound to the loader's, but the loader has no "
						 "fd %d", f->fd, f->fd);
			continue;
		}
		fd = open_saved(f, ps->fd_paths[i], e);
		if (fd < 0 || move_high(&fd, base, "file", e) || place(f, fd, e))
			return -1;
	}
	if (verbs_standins(rs, e))
		return -1;
	close_strays(rs);
	if (chdir(ps->cwd))
		return ibcr_fail_errno(e, errno, "changing to directory %s", ps->cwd);
	umask((mode_t)ps->rec.umask);
	return 0;
}
