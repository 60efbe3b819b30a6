// SPDX-License-Identifier: MIT
/*
 * Open files. Every descriptor of every process is traced back to its
 * open file description, compared across descriptors and processes with
 * kcmp(KCMP_FILE): one that is shared (dup, fork) becomes one object of
 * the image, shared again after restore (offset, flags and all).
 *
 * Supported: regular files and directories (reopened by path at their
 * offset with their flags), the stateless character devices, pipes whose
 * two ends are both in the image (with the bytes in them), named pipes,
 * and whatever sits on fds 0-2 when it is a terminal, a pipe or socket
 * leading outside the image (rebound to the restarting loader's own);
 * terminals above fd 2 (rebound to the loader's controlling terminal);
 * eventfd, timerfd, signalfd, epoll, inotify, deleted files and memfds
 * with their state (fdkinds.h).
 * Anything else fails the checkpoint, naming the fd, its kind and the pid.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "external.h"
#include "fdkinds.h"
#include "guard.h"
#include "procfs.h"
#include "saver.h"

#define KCMP_FILE 0

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

static int read_fdinfo(pid_t pid, int fd, struct ibcr_fobj *o, uint32_t *cloexec,
		       struct ibcr_err *e)
{
	char path[64], *s;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	if (proc_read(path, &s, NULL, e))
		return -1;
	fdinfo_pos_flags(s, &o->pos, &o->flags);
	free(s);
	*cloexec = (o->flags & O_CLOEXEC) != 0;
	o->flags &= ~(uint32_t)O_CLOEXEC;
	return 0;
}

/* The file system of pid's fd: the mqueue one (whose files look regular). */
static int is_mqueue(pid_t pid, int fd)
{
	char path[64];
	struct statfs sf;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	return !statfs(path, &sf) && sf.f_type == 0x19800202 /* MQUEUE_MAGIC */;
}

/*
 * The kind of a new object (a deleted file's link loses its " (deleted)");
 * pipes and terminals are settled later (files_finish).
 */
static int classify(pid_t pid, int fd, char *link, const struct stat *st,
		    struct ibcr_fobj *o, struct ibcr_err *e)
{
	struct stat named;
	int k;

	/* a place in the file system, not an open file: reopened by its name */
	if (o->flags & O_PATH) {
		if (link[0] != '/' || lstat(link, &named) || named.st_ino != st->st_ino ||
		    named.st_dev != st->st_dev)
			return ibcr_fail(e, "pid %d fd %d: O_PATH descriptor of %s, which no longer "
					 "has that name: not supported", (int)pid, fd, link);
		o->kind = IBCR_FD_OPATH;
		return 0;
	}
	if (is_mqueue(pid, fd))
		return ibcr_fail(e, "pid %d fd %d: POSIX message queue %s (mq_open): not "
				 "supported", (int)pid, fd, link);
	k = deleted_classify(pid, fd, link, st, o, e);

	if (k)
		return k < 0 ? -1 : 0;
	if (anon_classify(link, o))
		return 0;
	/* reopened by its name, it must be this file (not one of another mount namespace) */
	if ((S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) && link[0] == '/' &&
	    (stat(link, &named) || named.st_ino != st->st_ino || named.st_dev != st->st_dev))
		return ibcr_fail(e, "pid %d fd %d: %s %s is not that file by its name here (in "
				 "another mount namespace?): not supported", (int)pid, fd,
				 S_ISDIR(st->st_mode) ? "directory" : "file", link);
	if (S_ISREG(st->st_mode) && link[0] == '/')
		o->kind = IBCR_FD_REG;
	else if (S_ISDIR(st->st_mode) && link[0] == '/')
		o->kind = IBCR_FD_DIR;
	else if (S_ISCHR(st->st_mode) && is_stateless_chr(link))
		o->kind = IBCR_FD_CHR;
	else if (S_ISFIFO(st->st_mode) && !strncmp(link, "pipe:[", 6))
		o->kind = IBCR_FD_PIPE;
	else if (S_ISFIFO(st->st_mode) && link[0] == '/' && !st->st_nlink)
		return ibcr_fail(e, "pid %d fd %d: named pipe %s was deleted while open: not "
				 "supported", (int)pid, fd, link);
	else if (S_ISFIFO(st->st_mode) && link[0] == '/')
		o->kind = IBCR_FD_FIFO;
	else if (S_ISSOCK(st->st_mode))
		o->kind = IBCR_FD_UNIX;	/* settled by sockets_finish */
	else if (is_ptmx(st))
		o->kind = IBCR_FD_PTMX;
	else if (fd <= 2 && S_ISCHR(st->st_mode))
		o->kind = IBCR_FD_STDIO;
	else if (is_terminal(st))
		o->kind = IBCR_FD_TTY;
	else
		return ibcr_fail(e, "pid %d fd %d: %s (%s) is not supported yet",
				 (int)pid, fd, kind_name(st->st_mode, link), link);
	if (o->kind == IBCR_FD_PIPE || o->kind == IBCR_FD_FIFO)
		fobj_pipe_set_ino(o, st->st_ino);
	if (o->kind == IBCR_FD_UNIX)
		fobj_sock_set_ino(o, st->st_ino);
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
	if (cnt)	/* v is NULL without descriptors */
		qsort(v, cnt, sizeof(int), cmp_int);
	*out = v;
	*n = cnt;
	return 0;
}

/* An object already in the table that pid's fd shares, or -1. */
static long find_shared(const struct fobjs *o, pid_t pid, int fd, const struct stat *st)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++)
		if (o->f.objs[i].ino == st->st_ino && o->f.objs[i].dev == st->st_dev &&
		    o->f.objs[i].kind != IBCR_FD_STAGE &&
		    syscall(SYS_kcmp, pid, o->rep_pid[i], KCMP_FILE, fd, o->rep_fd[i]) == 0)
			return i;
	return -1;
}

uint32_t fobjs_add(struct fobjs *o, pid_t pid, int fd, const char *link)
{
	uint32_t i = o->f.nobjs++;

	if (i == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 32;
		o->f.objs = xrealloc(o->f.objs, sizeof(*o->f.objs) * o->cap);
		o->f.paths = xrealloc(o->f.paths, sizeof(char *) * o->cap);
		o->f.data = xrealloc(o->f.data, sizeof(uint8_t *) * o->cap);
		o->rep_pid = xrealloc(o->rep_pid, sizeof(pid_t) * o->cap);
		o->rep_fd = xrealloc(o->rep_fd, sizeof(int) * o->cap);
		o->f.attrs = xrealloc(o->f.attrs, sizeof(*o->f.attrs) * o->cap);
	}
	memset(&o->f.objs[i], 0, sizeof(o->f.objs[i]));
	memset(&o->f.attrs[i], 0, sizeof(o->f.attrs[i]));
	o->f.paths[i] = xstrdup(link);
	o->f.data[i] = NULL;
	o->rep_pid[i] = pid;
	o->rep_fd[i] = fd;
	return i;
}

/* What the object holds beyond path, offset and flags. */
static int capture_state(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_fobj *ob = &o->f.objs[i];

	switch (ob->kind) {
	case IBCR_FD_DELETED:
	case IBCR_FD_MEMFD:
		return deleted_capture(pid, fd, o, i, e);
	case IBCR_FD_INOTIFY:
		return inotify_capture(pid, fd, ob, &o->f.data[i], e);
	case IBCR_FD_PTMX:
		return ptmx_capture(pid, fd, o, i, e);
	case IBCR_FD_DELDIR:
		return deldir_capture(pid, fd, o, i, e);
	case IBCR_FD_PIDFD:
		return pidfd_capture(pid, fd, o, i, e);
	}
	return anon_capture(pid, fd, ob, e);
}

static int capture_fd(struct target *t, struct fobjs *o, int fd, struct ibcr_fd *r,
		      struct ibcr_err *e)
{
	char path[64], link[4096];
	struct ibcr_fobj probe = { 0 };
	const struct ext_rule *rule;
	struct stat st;
	ssize_t k;
	long shared;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)t->pid, fd);
	k = readlink(path, link, sizeof(link) - 1);
	if (k < 0 || stat(path, &st))
		return errno == ENOENT ? 1 /* closed meanwhile */ :
		       ibcr_fail_errno(e, errno, "pid %d fd %d", (int)t->pid, fd);
	link[k] = 0;
	r->fd = fd;
	if (read_fdinfo(t->pid, fd, &probe, &r->cloexec, e))
		return -1;
	if ((rule = external_find(o, t->pid, fd))) {
		/* what it leads to does not matter: it does not come back */
		r->obj = fobjs_add(o, t->pid, fd, link);
		probe.kind = IBCR_FD_EXTERNAL;
		o->f.objs[r->obj] = probe;
		external_object(rule, fd, &o->f.objs[r->obj], &o->f.data[r->obj]);
		return 0;
	}
	shared = verbs_owns_fd(t, fd) ? -1 : find_shared(o, t->pid, fd, &st);
	if (shared >= 0) {
		r->obj = (uint32_t)shared;
		return 0;
	}
	probe.ino = st.st_ino;
	probe.dev = st.st_dev;
	probe.size = (uint64_t)st.st_size;
	probe.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			 (uint64_t)st.st_mtim.tv_nsec;
	probe.mode = st.st_mode;
	if (verbs_owns_fd(t, fd))
		probe.kind = IBCR_FD_STAGE;	/* the verbs stage stands in */
	else if (classify(t->pid, fd, link, &st, &probe, e))
		return -1;
	r->obj = fobjs_add(o, t->pid, fd, link);
	o->f.objs[r->obj] = probe;
	return capture_state(t->pid, fd, o, r->obj, e) ||
	       fdattr_capture(t->pid, fd, o, r->obj, e) ? -1 : 0;
}

int files_add_held(struct fobjs *o, int fd, uint32_t *obj, struct ibcr_err *e)
{
	struct target self = { .pid = getpid(), .memfd = -1 };
	struct ibcr_fd r = { 0 };
	int rc = capture_fd(&self, o, fd, &r, e);

	*obj = r.obj;
	return rc ? -1 : 0;
}

int capture_files(struct target *t, struct fobjs *o, struct ibcr_err *e)
{
	struct ibcr_process_state *ps = &t->ps;
	int *fds = NULL;
	uint32_t n = 0;

	if (list_fds(t->pid, &fds, &n, e))
		return -1;
	ps->fds = xcalloc(n, sizeof(*ps->fds));
	for (uint32_t i = 0; i < n; i++) {
		int rc = capture_fd(t, o, fds[i], &ps->fds[ps->nfds], e);

		if (rc < 0) {
			free(fds);
			return -1;
		}
		if (rc == 0)
			ps->nfds++;
	}
	free(fds);
	return 0;
}

/* The bytes in a pipe, copied with tee(2): the reader still gets them. */
static int pipe_data(struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_fobj *ob = &o->f.objs[i];
	char path[64];
	int src, tmp[2] = { -1, -1 }, rc = -1;
	long cap;
	ssize_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)o->rep_pid[i], o->rep_fd[i]);
	src = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (src < 0)
		return ibcr_fail_errno(e, errno, "pid %d fd %d: reopening its pipe",
				       (int)o->rep_pid[i], o->rep_fd[i]);
	cap = fcntl(src, F_GETPIPE_SZ);
	if (cap <= 0 || pipe2(tmp, O_NONBLOCK | O_CLOEXEC) ||
	    fcntl(tmp[1], F_SETPIPE_SZ, cap) < cap) {
		ibcr_fail_errno(e, errno, "pid %d fd %d: sizing a pipe for its data",
				(int)o->rep_pid[i], o->rep_fd[i]);
		goto out;
	}
	fobj_pipe_set_size(ob, (uint64_t)cap);
	n = tee(src, tmp[1], (size_t)cap, SPLICE_F_NONBLOCK);
	if (n < 0 && errno == EAGAIN)
		n = 0;	/* empty */
	if (n < 0) {
		ibcr_fail_errno(e, errno, "pid %d fd %d: copying the data in its pipe",
				(int)o->rep_pid[i], o->rep_fd[i]);
		goto out;
	}
	if (n) {
		o->f.data[i] = xmalloc((size_t)n);
		if (read(tmp[0], o->f.data[i], (size_t)n) != n) {
			ibcr_fail_errno(e, errno, "pid %d fd %d: reading its pipe's data",
					(int)o->rep_pid[i], o->rep_fd[i]);
			goto out;
		}
	}
	ob->data_len = (uint64_t)n;
	rc = 0;
out:
	close(src);
	if (tmp[0] >= 0)
		close(tmp[0]);
	if (tmp[1] >= 0)
		close(tmp[1]);
	return rc;
}

static int has_end(const struct fobjs *o, uint64_t ino, uint32_t mode)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++)
		if ((o->f.objs[i].kind == IBCR_FD_PIPE || o->f.objs[i].kind == IBCR_FD_FIFO) &&
		    fobj_pipe_ino(&o->f.objs[i]) == ino && ((o->f.objs[i].flags & O_ACCMODE) == mode ||
						    (o->f.objs[i].flags & O_ACCMODE) == O_RDWR))
			return 1;
	return 0;
}

static int in_image(const struct target *t, uint32_t n, pid_t pid)
{
	for (uint32_t k = 0; k < n; k++)
		if (t[k].pid == pid || t[k].mem_pid == pid)
			return 1;
	return 0;
}

/* The saver and its guardian, which holds copies of sockets in repair mode. */
static int ours(pid_t pid)
{
	return pid == getpid() || pid == guard_pid();
}

/*
 * Does a process outside the image hold pipe (or named pipe) object i?
 * Then its missing end leads outside; otherwise that end is simply
 * closed (its writer exited, say), and the pipe is restored with the end
 * closed. A named pipe held outside would be joined again at restore
 * with the bytes still in it.
 */
/* Every descriptor of a process outside the image: fn(arg, pid, /proc path, its link). */
static void walk_fds(const struct target *t, uint32_t n,
		     int (*fn)(void *arg, pid_t pid, const char *path, const char *link),
		     void *arg)
{
	char path[300], link[4096];
	struct dirent *p, *f;
	DIR *procs = opendir("/proc"), *fds;
	int stop = 0;

	while (procs && !stop && (p = readdir(procs))) {
		pid_t pid = (pid_t)atoi(p->d_name);

		if (pid <= 0 || ours(pid) || in_image(t, n, pid))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
		if (!(fds = opendir(path)))
			continue;
		while (!stop && (f = readdir(fds))) {
			ssize_t k;

			snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid, f->d_name);
			k = readlink(path, link, sizeof(link) - 1);
			if (k > 0) {
				link[k] = 0;
				stop = fn(arg, pid, path, link);
			}
		}
		closedir(fds);
	}
	if (procs)
		closedir(procs);
}

struct kind_walk {
	const char *kind;
	size_t klen;
	int (*fn)(void *arg, pid_t pid, uint64_t ino);
	void *arg;
};

static int kind_one(void *arg, pid_t pid, const char *path, const char *link)
{
	const struct kind_walk *w = arg;

	(void)path;
	if (strncmp(link, w->kind, w->klen) || link[w->klen] != ':' || link[w->klen + 1] != '[')
		return 0;
	return w->fn(w->arg, pid, strtoull(link + w->klen + 2, NULL, 10));
}

void walk_outside(const struct target *t, uint32_t n, const char *kind,
		  int (*fn)(void *arg, pid_t pid, uint64_t ino), void *arg)
{
	struct kind_walk w = { kind, strlen(kind), fn, arg };

	walk_fds(t, n, kind_one, &w);
}

struct held_walk {
	const char *want;
	const struct ibcr_fobj *ob;
	int found;
};

static int held_one(void *arg, pid_t pid, const char *path, const char *link)
{
	struct held_walk *w = arg;
	struct stat st;

	(void)pid;
	w->found = !strcmp(link, w->want) && !stat(path, &st) && st.st_ino == w->ob->ino &&
		   st.st_dev == w->ob->dev;
	return w->found;
}

static int held_outside(const struct target *t, uint32_t n, const struct fobjs *o, uint32_t i)
{
	const struct ibcr_fobj *ob = &o->f.objs[i];
	char want[4096];
	struct held_walk w = { want, ob, 0 };

	if (ob->kind == IBCR_FD_PIPE)
		snprintf(want, sizeof(want), "pipe:[%llu]", (unsigned long long)fobj_pipe_ino(ob));
	else
		snprintf(want, sizeof(want), "%s", o->f.paths[i]);
	walk_fds(t, n, held_one, &w);
	return w.found;
}

static int on_std_fd(const struct target *x, uint32_t i)
{
	for (uint32_t f = 0; f < x->ps.nfds && x->ps.fds[f].fd <= 2; f++)
		if (x->ps.fds[f].obj == i)
			return 1;
	return 0;
}

/*
 * The first descriptor (pid, fd) above fd 2 that refers to object i in a
 * process that does not also have it on fds 0-2: one that does follows
 * its std stream at restore (bash's fd 255, a dup of fd 2).
 */
static int lone_high_user(const struct target *t, uint32_t n, uint32_t i, pid_t *pid,
			  int *fd)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t f = 0; f < t[k].ps.nfds; f++)
			if (t[k].ps.fds[f].obj == i && t[k].ps.fds[f].fd > 2 &&
			    !on_std_fd(&t[k], i)) {
				*pid = t[k].pid;
				*fd = t[k].ps.fds[f].fd;
				return 1;
			}
	return 0;
}

/*
 * A terminal, pipe or socket seen first on fds 0-2 (a std stream to
 * rebind) and also used above fd 2: there it follows the std stream of
 * its process at restore. Used above fd 2 alone (no std stream of that
 * process shares it), and a terminal first seen above fd 2, it leads
 * outside the checkpoint: refused, unless --external-fd said what comes
 * back there (the loader cannot know it will have a terminal to give).
 */
static int settle_stdio(const struct target *t, uint32_t n, struct fobjs *o, uint32_t i,
			struct ibcr_err *e)
{
	struct ibcr_fobj *ob = &o->f.objs[i];
	pid_t pid = o->rep_pid[i];
	int fd = o->rep_fd[i];

	if (ob->kind == IBCR_FD_TTY || (ob->kind == IBCR_FD_STDIO &&
					lone_high_user(t, n, i, &pid, &fd)))
		return ibcr_fail(e, "pid %d fd %d: %s (%s) leads outside the checkpoint and "
				 "is not one of fds 0-2 of its process, which are rebound"
				 EXTERNAL_HINT, (int)pid, fd, ob->kind == IBCR_FD_TTY ||
				 !strncmp(o->f.paths[i], "/dev/pts/", 9) ||
				 !strncmp(o->f.paths[i], "/dev/tty", 8) ? "terminal" :
				 kind_name(ob->mode, o->f.paths[i]), o->f.paths[i], fd);
	return 0;
}

/* The first object before i that is a description of the same pipe, or i. */
static uint32_t first_of_pipe(const struct fobjs *o, uint32_t i)
{
	for (uint32_t k = 0; k < i; k++)
		if (o->f.objs[k].kind == o->f.objs[i].kind &&
		    fobj_pipe_ino(&o->f.objs[k]) == fobj_pipe_ino(&o->f.objs[i]))
			return k;
	return i;
}

/*
 * A pipe or named pipe: one leading outside is a std stream to rebind
 * when only fds 0-2 use it, else refused; the bytes in it are the pipe's,
 * saved once, with its first description; every description has the
 * pipe's size.
 */
static int pipe_settle(const struct target *t, uint32_t n, struct fobjs *o, uint32_t i,
		       struct ibcr_err *e)
{
	struct ibcr_fobj *ob = &o->f.objs[i];
	uint32_t first;
	pid_t pid;
	int fd;

	if (ob->kind != IBCR_FD_PIPE && ob->kind != IBCR_FD_FIFO)
		return 0;
	first = first_of_pipe(o, i);
	if (first < i) {
		fobj_pipe_set_size(ob, fobj_pipe_size(&o->f.objs[first]));
		return 0;
	}
	if ((ob->kind == IBCR_FD_FIFO ||
	     !has_end(o, fobj_pipe_ino(ob), O_RDONLY) || !has_end(o, fobj_pipe_ino(ob), O_WRONLY)) &&
	    held_outside(t, n, o, i)) {
		if (ob->kind == IBCR_FD_FIFO)
			pid = o->rep_pid[i], fd = o->rep_fd[i];
		if (ob->kind == IBCR_FD_FIFO || lone_high_user(t, n, i, &pid, &fd))
			return ibcr_fail(e, "pid %d fd %d: %s (%s) leads to a process "
					 "outside the checkpoint" EXTERNAL_HINT, (int)pid, fd,
					 ob->kind == IBCR_FD_FIFO ? "named pipe" : "pipe",
					 o->f.paths[i], fd);
		ob->kind = IBCR_FD_STDIO;
		return 0;
	}
	return pipe_data(o, i, e);
}

/*
 * Once every process is known: pipes (with both ends in the image a pipe
 * is restored with its data; one leading outside is a std stream to
 * rebind when only fds 0-2 use it, else it cannot be restored), std
 * streams also used above fd 2, pty slaves of masters in the image,
 * memfds also mapped shared, epoll interest lists.
 */
static int has_sockets(const struct fobjs *o)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++)
		if (o->f.objs[i].kind == IBCR_FD_UNIX)
			return 1;
	return 0;
}

/* Their sockets changed while they are held: a saver's death harms none (hold.c). */
static int sockets_held(struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e)
{
	struct ibcr_err later = { "" };	/* a failure to let go, after a failure */
	int rc;

	if (!has_sockets(o))
		return 0;
	if (hold_all(t, n, e))
		return -1;
	rc = sockets_finish(o, e);
	if (hold_release(rc ? &later : e))
		rc = -1;
	return rc;
}

int files_finish(struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e)
{
	if (fdtable_share(t, n, e) || sockets_held(t, n, o, e) || net_precheck(t, n, o, e) ||
	    delmap_finish(t, n, o, e))
		return -1;
	for (uint32_t i = 0; i < o->f.nobjs; i++)
		if (pipe_settle(t, n, o, i, e))
			return -1;
	pty_finish(o);	/* slaves of masters in the image are not terminals outside */
	for (uint32_t i = 0; i < o->f.nobjs; i++)
		if (settle_stdio(t, n, o, i, e))
			return -1;
	return memfd_check_mapped(t, n, o, e) || proc_check_own(t, n, o, e) ||
	       epoll_finish(o, e) || external_check_epolls(t, n, o, e) ||
	       fdattr_check(t, n, o, e) || pty_ctty(t, n, o, e) || deldir_cwds(t, n, o, e) ||
	       pidfd_check(t, n, o, e) || reopen_check(o, e) ?
	       -1 : 0;
}
