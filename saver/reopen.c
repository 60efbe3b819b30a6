// SPDX-License-Identifier: MIT
/*
 * Files the restore reopens by path must open for whoever restores. The
 * saver cannot know who that is; the usual restorer is the user who
 * checkpointed, so an unprivileged saver checks, before anything is
 * killed, that it could open each of them again with the saved flags: a
 * root-owned file root opened for a process of nobody's, say, would
 * otherwise make nobody's `saver --kill` succeed and the restore fail.
 * Root is not checked: it can open them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "saver.h"

static const char *acc_name(uint32_t flags)
{
	switch (flags & O_ACCMODE) {
	case O_WRONLY: return "writing";
	case O_RDWR: return "reading and writing";
	default: return "reading";
	}
}

static int can_reopen(const struct ibcr_fobj *o, const char *path, int *err)
{
	int mode = (o->flags & O_ACCMODE) == O_WRONLY ? W_OK :
		   (o->flags & O_ACCMODE) == O_RDWR ? R_OK | W_OK : R_OK;
	struct stat st;

	if (faccessat(AT_FDCWD, path, mode, AT_EACCESS)) {
		*err = errno;
		return 0;
	}
	/* O_NOATIME is the owner's (or CAP_FOWNER's) */
	if ((o->flags & O_NOATIME) && (stat(path, &st) || st.st_uid != geteuid())) {
		*err = EPERM;
		return 0;
	}
	return 1;
}

int reopen_check(const struct fobjs *o, struct ibcr_err *e)
{
	if (geteuid() == 0)
		return 0;
	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		const struct ibcr_fobj *ob = &o->f.objs[i];
		int err = 0;

		if (ob->kind != IBCR_FD_REG && ob->kind != IBCR_FD_DIR &&
		    ob->kind != IBCR_FD_FIFO && ob->kind != IBCR_FD_CHR)
			continue;
		if (!can_reopen(ob, o->f.paths[i], &err))
			return ibcr_fail(e, "pid %d fd %d: %s could not be reopened for %s by "
					 "this user (uid %u) at a restore: %s (checkpoint it as "
					 "root, who can)", (int)o->rep_pid[i], o->rep_fd[i],
					 o->f.paths[i], acc_name(ob->flags), (unsigned)geteuid(),
					 strerror(err));
	}
	return 0;
}
