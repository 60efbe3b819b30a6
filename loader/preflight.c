// SPDX-License-Identifier: MIT
/*
 * Checks made before anything changes: every file the process needs is
 * there and is the same file, and this kernel's special mappings are the
 * ones the image was taken with, or can stand in for them (vdso.c). A
 * failure here leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu.h"
#include "fdkinds.h"
#include "loader.h"

int preflight_files(const struct ibcr_files *f, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < f->nobjs; i++) {
		const struct ibcr_fobj *o = &f->objs[i];
		const char *path = f->paths[i];
		struct stat st;

		if (o->kind != IBCR_FD_REG && o->kind != IBCR_FD_DIR &&
		    o->kind != IBCR_FD_CHR && o->kind != IBCR_FD_FIFO && o->kind != IBCR_FD_OPATH)
			continue;
		if ((o->kind == IBCR_FD_OPATH && (o->flags & O_NOFOLLOW) ? lstat(path, &st) :
		     stat(path, &st)))
			return ibcr_fail_errno(e, errno, "open file %s", path);
		if (o->kind == IBCR_FD_OPATH && (st.st_mode & S_IFMT) != (o->mode & S_IFMT))
			return ibcr_fail(e, "O_PATH descriptor of %s: it is no longer the same kind "
					 "of file", path);
		if ((o->kind == IBCR_FD_REG && !S_ISREG(st.st_mode)) ||
		    (o->kind == IBCR_FD_DIR && !S_ISDIR(st.st_mode)) ||
		    (o->kind == IBCR_FD_CHR && !S_ISCHR(st.st_mode)) ||
		    (o->kind == IBCR_FD_FIFO && !S_ISFIFO(st.st_mode)))
			return ibcr_fail(e, "open file %s is no longer the same kind of file",
					 path);
	}
	return 0;
}

/* Every deleted file the process has can be made again under its name. */
static int check_deleted_names(const struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	const struct ibcr_files *f = rs->files;

	for (uint32_t i = 0; i < ps->nvmas; i++) {
		long k = (ps->vmas[i].flags & IBCR_VMAF_OBJFILE) ? objfile_of(f, &ps->vmas[i]) : -1;

		if (k >= 0 && f->objs[k].kind == IBCR_FD_DELETED &&
		    deleted_name_free(f, (uint32_t)k, "mapped", e))
			return -1;
	}
	for (uint32_t i = 0; i < ps->nfds; i++) {
		uint32_t k = ps->fds[i].obj;

		if (f->objs[k].kind == IBCR_FD_DELETED && !f->attrs[k].same_file &&
		    deleted_name_free(f, k, "had open", e))
			return -1;
	}
	return 0;
}

static int cwd_removed(const struct ibcr_process_state *ps, const struct ibcr_files *f)
{
	size_t n = strlen(ps->cwd), k = strlen(" (deleted)");

	if (n <= k || strcmp(ps->cwd + n - k, " (deleted)"))
		return 0;
	for (uint32_t i = 0; i < f->nobjs; i++)
		if (f->objs[i].kind == IBCR_FD_DELDIR && !strncmp(f->paths[i], ps->cwd, n - k) &&
		    !f->paths[i][n - k])
			return 1;
	return 0;
}

int preflight(struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	struct stat st;

	/* a removed one is made again (a DELDIR object): its parent must be there */
	if (!cwd_removed(ps, rs->files) && (stat(ps->cwd, &st) || !S_ISDIR(st.st_mode)))
		return ibcr_fail(e, "working directory %s does not exist", ps->cwd);
	if (ibcr_check_fds(ps, rs->files, e) || external_preflight(rs, e) ||
	    backing_check(rs, e) || check_deleted_names(rs, e) || vdso_preflight(rs, e) ||
	    verbs_preflight(ps, e) || attrs_preflight(rs, e) ||
	    timers_preflight(rs, e))
		return -1;
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		char why[256];

		const struct ibcr_thread_state *t = &ps->threads[i];
		int bad = rs->cpu_in_use ?
			arch_check_cpu_in_use(t->fpregs, t->rec.fpregs_size,
					      !!(t->rec.flags & IBCR_THREADF_PKEYS_DEFAULT),
					      why, sizeof(why)) :
			arch_check_cpu(t->fpregs, t->rec.fpregs_size, why, sizeof(why));

		if (bad)
			return ibcr_fail(e, "thread %d: %s", t->rec.tid, why);
	}
	return 0;
}
