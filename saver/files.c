// SPDX-License-Identifier: MIT
/*
 * Open files. Supported here: regular files and directories (reopened
 * by path at their offset with their flags), the stateless character
 * devices, and whatever sits on fds 0-2 when it is a terminal, pipe or
 * socket (rebound to the restarting loader's own). Anything else fails
 * the checkpoint, naming the fd, its kind and the pid.
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
#include "procfs.h"
#include "saver.h"

static int is_stateless_chr(const char *path)
{
	static const char *const ok[] = { "/dev/null", "/dev/zero", "/dev/full",
					  "/dev/random", "/dev/urandom" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(path, ok[i]))
			return 1;
	return 0;
}

static const char *kind_name(mode_t m, const char *link)
{
	if (S_ISFIFO(m))
		return "pipe";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISCHR(m))
		return "character device";
	if (S_ISBLK(m))
		return "block device";
	if (!strncmp(link, "anon_inode:", 11))
		return link + 11;
	return "unknown file kind";
}

static int read_fdinfo(pid_t pid, int fd, struct ibcr_fd *r, struct ibcr_err *e)
{
	char path[64], *s, *p;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	if (proc_read(path, &s, NULL, e))
		return -1;
	if ((p = strstr(s, "pos:")))
		r->pos = strtoull(p + 4, NULL, 10);
	if ((p = strstr(s, "flags:")))
		r->flags = (uint32_t)strtoul(p + 6, NULL, 8);
	free(s);
	r->cloexec = (r->flags & O_CLOEXEC) != 0;
	r->flags &= ~(uint32_t)O_CLOEXEC;
	return 0;
}

static int classify(pid_t pid, int fd, const char *link, const struct stat *st,
		    struct ibcr_fd *r, struct ibcr_err *e)
{
	size_t n = strlen(link);

	if (S_ISREG(st->st_mode) && n > 10 && !strcmp(link + n - 10, " (deleted)"))
		return ibcr_fail(e, "pid %d fd %d: file %s was deleted while open: "
				 "not supported yet", (int)pid, fd, link);
	if (S_ISREG(st->st_mode) && link[0] == '/')
		r->kind = IBCR_FD_REG;
	else if (S_ISDIR(st->st_mode) && link[0] == '/')
		r->kind = IBCR_FD_DIR;
	else if (S_ISCHR(st->st_mode) && is_stateless_chr(link))
		r->kind = IBCR_FD_CHR;
	else if (fd <= 2 && (S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode) ||
			     S_ISSOCK(st->st_mode)))
		r->kind = IBCR_FD_STDIO;
	else
		return ibcr_fail(e, "pid %d fd %d: %s (%s) is not supported yet",
				 (int)pid, fd, kind_name(st->st_mode, link), link);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The fd numbers in /proc/PID/fd, sorted. */
static int list_fds(pid_t pid, int **out, uint32_t *n, struct ibcr_err *e)
{
	char path[64];
	struct dirent *d;
	uint32_t cnt = 0;
	int *v = NULL;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return ibcr_fail_errno(e, errno, "pid %d: listing %s", (int)pid, path);
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			v = xrealloc(v, sizeof(int) * (cnt + 1));
			v[cnt++] = atoi(d->d_name);
		}
	closedir(dir);
	qsort(v, cnt, sizeof(int), cmp_int);
	*out = v;
	*n = cnt;
	return 0;
}

int capture_files(struct target *t, struct ibcr_err *e)
{
	struct ibcr_process_state *ps = &t->ps;
	int *fds = NULL;
	uint32_t n = 0;

	if (list_fds(t->pid, &fds, &n, e))
		return -1;
	ps->fds = xcalloc(n, sizeof(*ps->fds));
	ps->fd_paths = xcalloc(n, sizeof(char *));
	for (uint32_t i = 0; i < n; i++) {
		struct ibcr_fd *r = &ps->fds[ps->nfds];
		char path[64], link[4096];
		struct stat st;
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)t->pid, fds[i]);
		k = readlink(path, link, sizeof(link) - 1);
		if (k < 0 || stat(path, &st)) {
			if (errno == ENOENT)
				continue;	/* closed meanwhile by a thread we stopped late */
			free(fds);
			return ibcr_fail_errno(e, errno, "pid %d fd %d", (int)t->pid, fds[i]);
		}
		link[k] = 0;
		r->fd = fds[i];
		r->mode = st.st_mode;
		r->ino = st.st_ino;
		r->dev = st.st_dev;
		r->size = (uint64_t)st.st_size;
		r->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			      (uint64_t)st.st_mtim.tv_nsec;
		if (verbs_owns_fd(t, fds[i]))
			r->kind = IBCR_FD_STAGE;	/* the verbs stage stands in */
		else if (classify(t->pid, fds[i], link, &st, r, e)) {
			free(fds);
			return -1;
		}
		if (read_fdinfo(t->pid, fds[i], r, e)) {
			free(fds);
			return -1;
		}
		ps->fd_paths[ps->nfds++] = xstrdup(link);
	}
	free(fds);
	return 0;
}
