// SPDX-License-Identifier: MIT
/*
 * Files that only the process still has: a regular file deleted while
 * open, and a memfd. Their bytes go into the image (FILEDATA, once per
 * file: filedata.c), with their offset and flags, a memfd's seals. A
 * deleted file that still has another name (a hard link) would lose that
 * link's sharing: refused.
 *
 * And terminals: the restore rebinds one used above fd 2 to the loader's
 * controlling terminal, so any terminal device qualifies here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "buf.h"
#include "fdkinds.h"

#define DELETED_SUFFIX " (deleted)"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/* pty slaves, virtual consoles, serial lines, /dev/tty, /dev/console */
int is_terminal(const struct stat *st)
{
	unsigned maj = major(st->st_rdev), min = minor(st->st_rdev);

	return S_ISCHR(st->st_mode) &&
	       ((maj >= 136 && maj <= 143) || maj == 3 || maj == 4 || maj == 204 ||
		maj == 229 || (maj == 5 && min <= 1));
}

static int trim_deleted(char *link)
{
	size_t n = strlen(link), k = strlen(DELETED_SUFFIX);

	if (n <= k || strcmp(link + n - k, DELETED_SUFFIX))
		return 0;
	link[n - k] = 0;
	return 1;
}

int deleted_classify(pid_t pid, int fd, char *link, const struct stat *st,
		     struct ibcr_fobj *o, struct ibcr_err *e)
{
	struct stat named;

	if (S_ISDIR(st->st_mode) && link[0] == '/' && !st->st_nlink && trim_deleted(link)) {
		o->kind = IBCR_FD_DELDIR;	/* empty: only it was left to remove */
		return 1;
	}
	if (!S_ISREG(st->st_mode) || link[0] != '/')
		return 0;
	/* a live file whose name happens to end in " (deleted)" */
	if (!stat(link, &named) && named.st_ino == st->st_ino && named.st_dev == st->st_dev)
		return 0;
	if (!trim_deleted(link))
		return 0;
	if (!strncmp(link, "/memfd:", 7)) {
		o->kind = IBCR_FD_MEMFD;
		return 1;
	}
	if (st->st_nlink) {
		char other[PATH_MAX];

		/* the same file under another name: reopened by that name */
		if (!inode_path(pid, st->st_ino, st->st_dev, other, sizeof(other)))
			return ibcr_fail(e, "pid %d fd %d: file %s was deleted but still has %lu "
					 "other name(s) (hard links), none of them found near "
					 "the process's directories: not supported", (int)pid, fd,
					 link, (unsigned long)st->st_nlink);
		snprintf(link, PATH_MAX, "%s", other);
		o->kind = IBCR_FD_REG;
		return 1;
	}
	o->kind = IBCR_FD_DELETED;
	return 1;
}

/* Its bytes (filedata.c) and a memfd's seals, through a reopening of it. */
int deleted_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_fobj *ob = &o->f.objs[i];
	char proc[64];
	int rfd, seals;

	if (filedata_capture(pid, fd, o, i, e))
		return -1;
	if (ob->kind != IBCR_FD_MEMFD)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", (int)pid, fd);
	if ((rfd = open(proc, O_RDONLY | O_CLOEXEC)) < 0)
		return ibcr_fail_errno(e, errno, "pid %d fd %d: opening memfd %s", (int)pid, fd,
				       o->f.paths[i]);
	seals = fcntl(rfd, F_GET_SEALS);
	close(rfd);
	if (seals < 0)
		return ibcr_fail_errno(e, errno, "pid %d fd %d: reading the seals of %s",
				       (int)pid, fd, o->f.paths[i]);
	fobj_memfd_set_seals(ob, (uint64_t)seals);
	return 0;
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

/* A removed directory's owner and access time, from a stat of it. */
static void deldir_attrs(const struct stat *st, struct ibcr_fattr *a)
{
	a->flags |= IBCR_FATTR_OWNER;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->atime_ns = ts_ns(&st->st_atim);
}

int deldir_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	char proc[64];
	struct stat st;

	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", (int)pid, fd);
	if (stat(proc, &st))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: removed directory %s", (int)pid,
				       fd, o->f.paths[i]);
	deldir_attrs(&st, &o->f.attrs[i]);
	for (uint32_t k = 0; k < i; k++)	/* another description of it: one directory */
		if (o->f.objs[k].kind == IBCR_FD_DELDIR && o->f.objs[k].ino == st.st_ino &&
		    o->f.objs[k].dev == st.st_dev && !o->f.attrs[k].same_file) {
			o->f.attrs[i].same_file = k + 1;
			break;
		}
	return 0;
}

/*
 * A working directory removed since: the restore makes it as a removed
 * directory object (one of its descriptors, or one of its own), found by
 * its name: two removed directories of the same name would be ambiguous.
 */
int deldir_cwds(const struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e)
{
	for (uint32_t k = 0; k < n; k++) {
		char path[PATH_MAX], proc[64];
		struct stat st;
		long found = -1;

		if (t[k].zombie || !t[k].ps.cwd)
			continue;
		snprintf(path, sizeof(path), "%s", t[k].ps.cwd);
		snprintf(proc, sizeof(proc), "/proc/%d/cwd", (int)t[k].pid);
		if (stat(proc, &st))
			return ibcr_fail_errno(e, errno, "pid %d: its working directory", (int)t[k].pid);
		if (st.st_nlink || !trim_deleted(path))
			continue;
		for (uint32_t i = 0; i < o->f.nobjs; i++)
			if (o->f.objs[i].kind == IBCR_FD_DELDIR && !strcmp(o->f.paths[i], path)) {
				if (o->f.objs[i].ino != st.st_ino || o->f.objs[i].dev != st.st_dev)
					return ibcr_fail(e, "pid %d: its working directory %s and "
							 "another directory of that name were "
							 "removed: not supported", (int)t[k].pid, path);
				found = i;
			}
		if (found < 0) {
			struct ibcr_fobj ob = { .kind = IBCR_FD_DELDIR, .ino = st.st_ino,
						.dev = st.st_dev, .mode = st.st_mode,
						.mtime_ns = ts_ns(&st.st_mtim),
						.flags = O_RDONLY | O_DIRECTORY };

			found = fobjs_add(o, t[k].pid, -1, path);
			o->f.objs[found] = ob;
			deldir_attrs(&st, &o->f.attrs[found]);
		}
	}
	return 0;
}

/*
 * A memfd that a process of the image also maps shared: the mapping is
 * restored as shared memory of its own, the descriptor as a new memfd,
 * and they would no longer see each other's writes. Refused.
 */
int memfd_check_mapped(const struct target *t, uint32_t n, const struct fobjs *o,
		       struct ibcr_err *e)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		const struct ibcr_fobj *ob = &o->f.objs[i];

		/* one object again at restore, made writable before its seals */
		if (ob->kind != IBCR_FD_MEMFD ||
		    !(fobj_memfd_seals(ob) & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
			continue;
		for (uint32_t k = 0; k < n; k++)
			for (uint32_t r = 0; r < t[k].ps.nvmas; r++) {
				const struct ibcr_vma *v = &t[k].ps.vmas[r];

				if (v->kind == IBCR_VMA_SHMEM && v->file_ino == ob->ino &&
				    v->file_dev >> 32 == major(ob->dev) &&
				    (uint32_t)v->file_dev == minor(ob->dev))
					return ibcr_fail(e, "pid %d fd %d: memfd %s, sealed against "
							 "writing, is also mapped shared (pid %d at "
							 "%#llx): not supported", (int)o->rep_pid[i],
							 o->rep_fd[i], o->f.paths[i], (int)t[k].pid,
							 (unsigned long long)v->start);
			}
	}
	return 0;
}

static int in_checkpoint(const struct target *t, uint32_t n, long id)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].nthreads; i++)
			if (t[k].tids[i] == id)
				return 1;
	return 0;
}

/*
 * A file or directory under /proc/PID/ of a process being checkpointed
 * (/proc/self/... reads so): reopened by path at restore it would be
 * another process's file, or none, the PID being new or taken. Refused.
 */
int proc_check_own(const struct target *t, uint32_t n, const struct fobjs *o,
		   struct ibcr_err *e)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		const char *path = o->f.paths[i];
		char *end;
		long id;

		if ((o->f.objs[i].kind != IBCR_FD_REG && o->f.objs[i].kind != IBCR_FD_DIR &&
		     o->f.objs[i].kind != IBCR_FD_OPATH) || strncmp(path, "/proc/", 6))
			continue;
		id = strtol(path + 6, &end, 10);
		if (end != path + 6 && (*end == '/' || !*end) && in_checkpoint(t, n, id))
			return ibcr_fail(e, "pid %d fd %d: %s is a file of a process in the "
					 "checkpoint, which a restore gives another pid: not "
					 "supported", (int)o->rep_pid[i], o->rep_fd[i], path);
	}
	return 0;
}
