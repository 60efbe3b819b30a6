// SPDX-License-Identifier: MIT
/*
 * --tree: a process and all its descendants. They are stopped top-down,
 * breadth first: once a process is stopped it forks no more, so reading
 * its children after stopping it finds them all. A child that already
 * exited and waits to be reaped (a zombie) is recorded as such: its
 * parent will find it again, with its exit status.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "guard.h"
#include "procfs.h"
#include "saver.h"

static int is_zombie(pid_t pid, int *exit_code, struct ibcr_err *e)
{
	char path[64], *s, *p;
	int z = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	p = strrchr(s, ')');
	if (p && p[2] == 'Z') {
		/* field 52, exit_code, as waitpid would report it */
		const char *f = p + 2;

		for (int n = 3; n < 52 && f; n++)
			f = strchr(f + 1, ' ');
		*exit_code = f ? atoi(f + 1) : 0;
		z = 1;
	}
	free(s);
	return z;
}

static int zombie_record(struct target *t, int exit_code, struct ibcr_err *e)
{
	char path[64], *s, *p;
	int ppid = 0, pgid = 0, sid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	p = strrchr(s, ')');
	if (p)
		sscanf(p + 2, "%*c %d %d %d", &ppid, &pgid, &sid);
	/* its name, between the first '(' and the last ')' */
	if (p && strchr(s, '('))
		snprintf(t->ps.rec.comm, sizeof(t->ps.rec.comm), "%.*s",
			 (int)(p - strchr(s, '(') - 1), strchr(s, '(') + 1);
	free(s);
	t->ps.rec.pid = t->pid;
	t->ps.rec.ppid = ppid;
	t->ps.rec.pgid = pgid;
	t->ps.rec.sid = sid;
	t->ps.rec.flags = IBCR_PROCF_ZOMBIE;
	t->ps.rec.exit_status = exit_code;
	t->zombie = 1;
	/* a restore makes the status again by dying the same way, without a core */
	if (WIFSIGNALED(exit_code) && WCOREDUMP(exit_code))
		return ibcr_fail(e, "pid %d: zombie (child of %d) died of signal %d and dumped "
				 "core: a restore cannot make that exit status again without "
				 "dumping core: not supported", (int)t->pid, ppid,
				 WTERMSIG(exit_code));
	t->ps.exe = xstrdup("");
	t->ps.cwd = xstrdup("");
	t->ps.cmdline = xstrdup("");
	return 0;
}

static int known(const struct target *t, uint32_t n, pid_t pid)
{
	for (uint32_t i = 0; i < n; i++)
		if (t[i].pid == pid)
			return 1;
	return 0;
}

/* Appends the children of pid's thread tid that are not in the list yet. */
int tree_add_children(struct target **t, uint32_t *n, pid_t pid, pid_t tid,
		      struct ibcr_err *e)
{
	char path[80], *s, *tok, *save = NULL;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	for (tok = strtok_r(s, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		pid_t c = (pid_t)atoi(tok);

		if (c <= 0 || known(*t, *n, c))
			continue;
		*t = xrealloc(*t, sizeof(**t) * (*n + 1));
		memset(&(*t)[*n], 0, sizeof(**t));
		(*t)[*n].pid = c;
		(*t)[*n].memfd = -1;
		(*n)++;
	}
	free(s);
	return 0;
}

/* Appends the children of t[i] (every thread's) that are not in the list yet. */
static int add_children(struct target **t, uint32_t *n, uint32_t i, struct ibcr_err *e)
{
	pid_t pid = (*t)[i].pid;

	for (uint32_t k = 0; k < (*t)[i].nthreads; k++)
		if (tree_add_children(t, n, pid, (*t)[i].tids[k], e))
			return -1;
	return 0;
}

int tree_seize(struct target **t, uint32_t *n, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < *n; i++) {
		struct target *x = &(*t)[i];
		int code = 0, z = is_zombie(x->pid, &code, e);

		if (z < 0)
			return -1;
		if (z) {
			if (zombie_record(x, code, e))
				return -1;
			continue;
		}
		if (x->pid == getpid() || x->pid == guard_pid())
			return ibcr_fail(e, "pid %d: is this saver%s, a descendant of a process "
					 "saved with --tree: run the saver from outside the tree",
					 (int)x->pid, x->pid == getpid() ? "" : "'s guardian");
		x->tree = 1;	/* its children are saved too */
		if (pidns_check(x->pid, e) || target_seize(x, e) || add_children(t, n, i, e))
			return -1;
	}
	return 0;
}
