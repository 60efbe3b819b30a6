// SPDX-License-Identifier: MIT
/*
 * The output path of an image: what may be replaced by an image file,
 * and what savers that died left beside it. A saver once replaced
 * /dev/null with its image (the rename goes over whatever has the name):
 * every check here runs before anything is attached or written.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "outpath.h"
#include "proc_stat.h"

/* ".tmp." and a pid: what the writer appends (image_write.c) */
#define TMP_SUFFIX_MAX 16

static const char *kind_of(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a named pipe (FIFO); images are not streamed, since a "
		       "saver rewrites headers at the end";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/* The directory part of path ("." when none), malloc'd. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	char *d = xmalloc((size_t)(slash - path) + 1);

	memcpy(d, path, (size_t)(slash - path));
	d[slash - path] = 0;
	return d;
}

/*
 * Creates and removes the temporary file the writer will create: what
 * no permission bit tells (a file system that takes no new files, such
 * as /proc, one that is full of inodes) shows before the capture.
 */
static int probe(const char *path, struct ibcr_err *e)
{
	size_t n = strlen(path) + TMP_SUFFIX_MAX + 1;
	char *tmp = xmalloc(n);
	int fd;

	snprintf(tmp, n, "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	/* one of a dead saver that had our pid: nobody writes it */
	if (fd < 0 && errno == EEXIST && !unlink(tmp))
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ibcr_fail_errno(e, errno, "image %s: cannot create %s", path, tmp);
		free(tmp);
		return -1;
	}
	close(fd);
	unlink(tmp);
	free(tmp);
	return 0;
}

static int check_dir(const char *path, struct ibcr_err *e)
{
	char *dir = dir_of(path);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	struct stat st;
	int rc = 0;

	if (stat(dir, &st))
		rc = ibcr_fail_errno(e, errno, "image %s: its directory %s", path, dir);
	else if (!S_ISDIR(st.st_mode))
		rc = ibcr_fail(e, "image %s: %s is not a directory", path, dir);
	else if (access(dir, W_OK | X_OK))
		rc = ibcr_fail_errno(e, errno, "image %s: cannot create files in %s",
				     path, dir);
	else if (strlen(base) + TMP_SUFFIX_MAX > NAME_MAX)
		rc = ibcr_fail(e, "image %s: file name too long (the temporary file "
			       "beside it needs %d more characters)", path, TMP_SUFFIX_MAX);
	else
		rc = probe(path, e);
	free(dir);
	return rc;
}

int outpath_check(const char *path, char **real, struct ibcr_err *e)
{
	struct stat st;
	size_t n = strlen(path);

	*real = NULL;
	if (!n)
		return ibcr_fail(e, "the image path (-o) is empty");
	if (!strcmp(path, "-"))
		return ibcr_fail(e, "-o -: an image cannot go to standard output (the "
				 "saver rewrites headers at its end); give a file name");
	if (path[n - 1] == '/')
		return ibcr_fail(e, "image %s: ends in '/', names a directory; give a "
				 "file name", path);
	if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
		char *target = realpath(path, NULL);

		if (!target)
			return ibcr_fail_errno(e, errno, "image %s: a symbolic link whose "
					       "target cannot be resolved", path);
		if (stat(target, &st)) {
			ibcr_fail_errno(e, errno, "image %s: a symbolic link to %s", path, target);
			free(target);
			return -1;
		}
		if (!S_ISREG(st.st_mode)) {
			ibcr_fail(e, "image %s: a symbolic link to %s, which is %s", path,
				  target, kind_of(st.st_mode));
			free(target);
			return -1;
		}
		if (check_dir(target, e)) {
			free(target);
			return -1;
		}
		*real = target;
		return 0;
	}
	if (!lstat(path, &st) && !S_ISREG(st.st_mode))
		return ibcr_fail(e, "image %s: is %s, not replaced by an image", path,
				 kind_of(st.st_mode));
	if (check_dir(path, e))
		return -1;
	*real = xstrdup(path);
	return 0;
}

int outpath_replaceable(const char *path, struct ibcr_err *e)
{
	struct stat st;

	if (lstat(path, &st) || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
		return 0;
	return ibcr_fail(e, "image %s: became %s while the image was written; "
			 "not replaced", path, kind_of(st.st_mode));
}

/* A live saver: a process (not a zombie) whose name is this program's. */
static int live_saver(long pid)
{
	struct proc_stat st, self;
	char path[32];

	if (!proc_stat_of((pid_t)pid, &st)) {
		snprintf(path, sizeof(path), "/proc/%ld", pid);
		return !access(path, F_OK);	/* there, but hidden from us: keep it */
	}
	if (st.state == 'Z' || st.state == 'X')
		return 0;
	return !proc_stat_of(getpid(), &self) || !strcmp(st.comm, self.comm);
}

/* s is digits only, at least one */
static int digits(const char *s, const char *end)
{
	if (s >= end)
		return 0;
	for (; s < end; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* name is BASE.tmp.N or BASE.K.tmp.N; returns N, or 0 */
static long stale_pid(const char *name, const char *base)
{
	size_t b = strlen(base);
	const char *rest, *tmp;

	if (strncmp(name, base, b) || name[b] != '.')
		return 0;
	rest = name + b + 1;
	tmp = strstr(rest, "tmp.");
	if (!tmp || (tmp != rest && (tmp[-1] != '.' || !digits(rest, tmp - 1))))
		return 0;
	if (!digits(tmp + 4, tmp + 4 + strlen(tmp + 4)))
		return 0;
	return strtol(tmp + 4, NULL, 10);
}

void outpath_clean_stale(const char *path)
{
	char *dir = dir_of(path);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	struct dirent *d;
	DIR *dh = opendir(dir);

	while (dh && (d = readdir(dh))) {
		long pid = stale_pid(d->d_name, base);
		char *full;
		size_t n;

		if (pid <= 0 || pid == (long)getpid() || live_saver(pid))
			continue;
		n = strlen(dir) + strlen(d->d_name) + 2;
		full = xmalloc(n);
		snprintf(full, n, "%s/%s", dir, d->d_name);
		if (!unlink(full))
			fprintf(stderr, "saver: note: removed %s, left by a saver (pid %ld) "
				"that died\n", full, pid);
		free(full);
	}
	if (dh)
		closedir(dh);
	free(dir);
}
