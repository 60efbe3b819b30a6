// SPDX-License-Identifier: MIT
/*
 * inotify: every watch (wd, mask) of an inotify descriptor, with a path
 * that leads to its inode again. fdinfo gives the inode (ino, sdev) and,
 * with exportfs, a file handle: as root, open_by_handle_at() on a mount
 * of that device gives the path; otherwise (or if that fails) the
 * directories the process is in or has open, their entries and their
 * ancestors are searched. A path is used only when it leads to that very
 * inode. A watch that cannot be placed fails the checkpoint, and so do
 * unread events (they cannot be read without taking them from the
 * process, nor put back).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "buf.h"
#include "fdkinds.h"
#include "procfs.h"

struct watch {
	uint32_t wd, mask;
	uint64_t ino;
	dev_t dev;
	unsigned htype, hbytes;
	char handle[260];	/* hex */
	char path[PATH_MAX];
};

static int parse_watch(const char *line, struct watch *w)
{
	struct fdinfo_watch f = { 0 };

	if (fdinfo_inotify_watch(line, &f))
		return -1;
	w->wd = f.wd;
	w->mask = f.mask;
	w->ino = f.ino;
	w->dev = f.dev;
	w->htype = f.htype;
	w->hbytes = f.hbytes;
	memcpy(w->handle, f.handle, sizeof(w->handle));
	w->path[0] = 0;
	return 0;
}

static int is_it(const char *path, const struct watch *w)
{
	struct stat st;

	return path[0] == '/' && !lstat(path, &st) && st.st_ino == w->ino &&
	       st.st_dev == w->dev;
}

/* The path of our descriptor fd, if it is the watched inode's. */
static int fd_path(int fd, struct watch *w)
{
	char self[64];
	ssize_t k;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	k = readlink(self, w->path, sizeof(w->path) - 1);
	w->path[k > 0 ? k : 0] = 0;
	if (k > 0 && is_it(w->path, w))
		return 1;
	w->path[0] = 0;
	return 0;
}

static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++)
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	*d = 0;
}

/* The watched inode through its file handle, from a mount of its device. */
static int by_handle(struct watch *w, struct file_handle *fh)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[4096];
	unsigned maj, min;
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		int mfd, fd;

		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &maj, &min, mnt) != 3 ||
		    makedev(maj, min) != w->dev)
			continue;
		unescape(mnt);
		/* (an O_PATH descriptor is refused as mount_fd) */
		if ((mfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		fd = open_by_handle_at(mfd, fh, O_PATH | O_CLOEXEC);
		close(mfd);
		if (fd >= 0) {
			found = fd_path(fd, w);
			close(fd);
		}
	}
	fclose(f);
	return found;
}

static int handle_path(struct watch *w)
{
	struct file_handle *fh;
	int found;

	if (!w->hbytes || w->hbytes > 128 || strlen(w->handle) != 2 * w->hbytes)
		return 0;
	fh = xmalloc(sizeof(*fh) + w->hbytes);
	fh->handle_bytes = w->hbytes;
	fh->handle_type = (int)w->htype;
	for (unsigned i = 0; i < w->hbytes; i++) {
		unsigned v;

		sscanf(w->handle + 2 * i, "%2x", &v);
		fh->f_handle[i] = (unsigned char)v;
	}
	found = by_handle(w, fh);
	free(fh);
	return found;
}

/* dir itself or one of its ancestors. */
static int ancestors(const char *dir, struct watch *w)
{
	char p[PATH_MAX], *slash;

	snprintf(p, sizeof(p), "%s", dir);
	for (;;) {
		if (is_it(p, w)) {
			snprintf(w->path, sizeof(w->path), "%s", p);
			return 1;
		}
		if (!(slash = strrchr(p, '/')) || !strcmp(p, "/"))
			return 0;
		slash[slash == p] = 0;	/* "/a" -> "/", "/a/b" -> "/a" */
	}
}

#define SEARCH_DEPTH 2		/* a candidate's entries and theirs */
#define SEARCH_BUDGET 50000	/* lstat()s per watch, at most */

/* Directories to search, each once. */
struct dirs {
	char **v;
	uint32_t n;
};

static void dirs_add(struct dirs *d, const char *p)
{
	for (uint32_t i = 0; i < d->n; i++)
		if (!strcmp(d->v[i], p))
			return;
	d->v = xrealloc(d->v, sizeof(char *) * (d->n + 1));
	d->v[d->n++] = xstrdup(p);
}

static void dirs_free(struct dirs *d)
{
	for (uint32_t i = 0; i < d->n; i++)
		free(d->v[i]);
	free(d->v);
}

/* A path's directory (a deleted file's too), or the path if it is one. */
static void add_dir_of(struct dirs *d, const char *path)
{
	char p[PATH_MAX], *slash;
	struct stat st;
	size_t n;

	snprintf(p, sizeof(p), "%s", path);
	n = strlen(p);
	if (n > 10 && !strcmp(p + n - 10, " (deleted)") && stat(p, &st))
		p[n - 10] = 0;
	if ((stat(p, &st) || !S_ISDIR(st.st_mode)) && (slash = strrchr(p, '/')))
		slash[slash == p] = 0;
	if (p[0] == '/')
		dirs_add(d, p);
}

/* dir's entries, and theirs down to depth, within *budget lstat()s. */
static int search_tree(const char *dir, int depth, long *budget, struct watch *w)
{
	char p[PATH_MAX];
	struct dirent *d;
	DIR *dh = opendir(dir);
	int found = 0;

	if (!dh)
		return 0;
	while (!found && *budget > 0 && (d = readdir(dh))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", strcmp(dir, "/") ? dir : "",
			     d->d_name) >= (int)sizeof(p))
			continue;
		(*budget)--;
		if ((found = is_it(p, w)))
			snprintf(w->path, sizeof(w->path), "%s", p);
		else if (depth > 1 && d->d_type == DT_DIR)
			found = search_tree(p, depth - 1, budget, w);
	}
	closedir(dh);
	return found;
}

/*
 * Where the process is: the directories of the watches found before
 * (a directory and files in it), its cwd, its open directories and its
 * files' directories; each with its ancestors and, two levels down, its
 * entries. (A file handle gives the path of a directory, but seldom of a
 * file: its dentry may be gone.)
 */
static int search_process(pid_t pid, const struct watch *prev, uint32_t nprev,
			  struct watch *w)
{
	char link[300], p[PATH_MAX];
	struct dirs dirs = { 0 };
	struct dirent *d;
	long budget = SEARCH_BUDGET;
	DIR *dh;
	ssize_t k;
	int found = 0;

	for (uint32_t i = 0; i < nprev; i++)
		add_dir_of(&dirs, prev[i].path);
	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	if ((k = readlink(link, p, sizeof(p) - 1)) > 0 && (p[k] = 0, 1))
		add_dir_of(&dirs, p);
	snprintf(link, sizeof(link), "/proc/%d/fd", (int)pid);
	for (dh = opendir(link); dh && (d = readdir(dh));) {
		snprintf(link, sizeof(link), "/proc/%d/fd/%s", (int)pid, d->d_name);
		if ((k = readlink(link, p, sizeof(p) - 1)) > 0 && (p[k] = 0, 1))
			add_dir_of(&dirs, p);
	}
	if (dh)
		closedir(dh);
	for (uint32_t i = 0; i < dirs.n && !found; i++)
		found = ancestors(dirs.v[i], w) ||
			search_tree(dirs.v[i], SEARCH_DEPTH, &budget, w);
	dirs_free(&dirs);
	return found;
}

int inode_path(pid_t pid, uint64_t ino, dev_t dev, char *out, size_t len)
{
	struct watch w = { .ino = ino, .dev = dev };

	if (!search_process(pid, NULL, 0, &w) || strlen(w.path) >= len)
		return 0;
	snprintf(out, len, "%s", w.path);
	return 1;
}

static int unread_events(pid_t pid, int fd, struct ibcr_err *e)
{
	int g = grab_fd(pid, fd, e), n = 0, rc;

	if (g < 0)
		return -1;
	rc = ioctl(g, FIONREAD, &n);
	close(g);
	if (rc)
		return ibcr_fail_errno(e, errno, "pid %d fd %d: inotify: counting its unread "
				       "events", (int)pid, fd);
	if (n > 0)
		return ibcr_fail(e, "pid %d fd %d: inotify has %d bytes of unread events, which "
				 "cannot be saved (they can only be read by taking them from "
				 "the process): not supported", (int)pid, fd, n);
	return 0;
}

static int read_watches(pid_t pid, int fd, struct watch **out, uint32_t *n,
			struct ibcr_err *e)
{
	char *s, *p;

	*out = NULL;
	*n = 0;
	if (fdinfo_read(pid, fd, &s, e))
		return -1;
	for (p = strstr(s, "\ninotify "); p; p = strstr(p + 1, "\ninotify ")) {
		*out = xrealloc(*out, sizeof(**out) * (*n + 1));
		if (parse_watch(p + 1, &(*out)[*n])) {
			free(s);
			return ibcr_fail(e, "pid %d fd %d: cannot parse its inotify watch "
					 "'%.80s'", (int)pid, fd, p + 1);
		}
		(*n)++;
	}
	free(s);
	return 0;
}

static int cmp_wd(const void *a, const void *b)
{
	const struct watch *x = a, *y = b;

	return x->wd < y->wd ? -1 : x->wd > y->wd;
}

static void put_watch(struct buf *b, const struct watch *w)
{
	uint32_t h[4] = { w->wd, w->mask, (uint32_t)strlen(w->path) + 1, 0 };
	static const uint8_t zero[8];

	buf_put(b, h, sizeof(h));
	buf_put(b, w->path, h[2]);
	buf_put(b, zero, (8 - h[2] % 8) % 8);
}

int inotify_capture(pid_t pid, int fd, struct ibcr_fobj *o, uint8_t **data,
		    struct ibcr_err *e)
{
	struct watch *w;
	struct buf b = { 0 };
	uint32_t n;

	if (unread_events(pid, fd, e) || read_watches(pid, fd, &w, &n, e))
		return -1;
	if (n)	/* w is NULL without watches */
		qsort(w, n, sizeof(*w), cmp_wd);
	for (uint32_t i = 0; i < n; i++) {
		if (!handle_path(&w[i]) && !search_process(pid, w, i, &w[i])) {
			ibcr_fail(e, "pid %d fd %d: inotify watch %u is on inode %llu of device "
				  "%u:%u, whose path cannot be found (not under the process's "
				  "directories, and no file handle lookup)", (int)pid, fd,
				  w[i].wd, (unsigned long long)w[i].ino, major(w[i].dev),
				  minor(w[i].dev));
			free(w);
			buf_free(&b);
			return -1;
		}
		put_watch(&b, &w[i]);
	}
	free(w);
	fobj_inotify_set_watches(o, n);
	o->data_len = b.len;
	*data = b.p;
	return 0;
}
