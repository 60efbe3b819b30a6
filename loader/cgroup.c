// SPDX-License-Identifier: MIT
/*
 * cgroup v2 membership: a restored process goes back into the cgroup it
 * was in, by its path, before it restores anything (so that its memory
 * and tasks are counted there from the start). The path must exist
 * here and take us: checked before anything changes. A process that was
 * in our own cgroup stays where fork put it; so does every one with
 * --cgroup=here (a container's cgroup is the operator's choice, and the
 * saved path means nothing inside it). cgroup v1 hierarchies are not
 * restored: the process is in ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"
#include "procfs.h"

/* What a refusal offers instead. */
#define HERE "restart-loader --cgroup=here leaves it in the loader's own cgroup"

/* Where cgroup2 is mounted and which cgroup its root is, from mountinfo. */
static int cgroup2_mount(char *dir, size_t dsize, char *root, size_t rsize)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char r[2048], m[2048];
		const char *dash = strstr(line, " - ");

		if (!dash || strncmp(dash + 3, "cgroup2 ", 8) ||
		    sscanf(line, "%*s %*s %*s %2047s %2047s", r, m) != 2)
			continue;
		found = snprintf(dir, dsize, "%s", m) < (int)dsize &&
			snprintf(root, rsize, "%s", r) < (int)rsize;
	}
	fclose(f);
	return found;
}

/* Our own cgroup v2 path, malloc'd ("" when there is none). */
static char *own_cgroup(void)
{
	struct ibcr_err ignored;
	char *s, *p, *out;

	if (proc_read("/proc/self/cgroup", &s, NULL, &ignored))
		return xstrdup("");
	p = strstr(s, "0::");
	if (p && (p == s || p[-1] == '\n')) {
		p[3 + strcspn(p + 3, "\n")] = 0;
		out = xstrdup(p + 3);
	} else {
		out = xstrdup("");
	}
	free(s);
	return out;
}

/*
 * The directory of the saved cgroup, or NULL (and *why) when it cannot
 * be reached. *same: we are in it already.
 */
static char *cgroup_dir(const struct ibcr_process_state *ps, int *same, const char **why)
{
	char mnt[2048], root[2048], *own = own_cgroup(), *dir;
	size_t rl;

	*same = !strcmp(own, ps->cgroup);
	free(own);
	*why = "no cgroup2 file system is mounted here";
	if (*same || !cgroup2_mount(mnt, sizeof(mnt), root, sizeof(root)))
		return NULL;
	rl = strcmp(root, "/") ? strlen(root) : 0;
	*why = "it is outside the cgroup2 mount here";
	if (strncmp(ps->cgroup, root, rl) || (ps->cgroup[rl] && ps->cgroup[rl] != '/'))
		return NULL;
	dir = xmalloc(strlen(mnt) + strlen(ps->cgroup) + 2);
	sprintf(dir, "%s%s", mnt, ps->cgroup + rl);
	return dir;
}

/*
 * The saved cgroup's directory and cgroup.procs, malloc'd; both NULL
 * when there is nothing to do (none saved, or we are in it).
 */
static int target(const struct restore *rs, char **dir, char **procs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	const char *why;
	int same;

	*dir = *procs = NULL;
	if (!ps->cgroup || !ps->cgroup[0] || rs->cgroup_here)
		return 0;
	*dir = cgroup_dir(ps, &same, &why);
	if (same)
		return 0;
	if (!*dir)
		return ibcr_fail(e, "pid %d: cannot go back into its cgroup %s: %s (" HERE ")",
				 ps->rec.pid, ps->cgroup, why);
	*procs = xmalloc(strlen(*dir) + 16);
	sprintf(*procs, "%s/cgroup.procs", *dir);
	return 0;
}

int attrs_check_cgroup(const struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	char *dir, *procs;
	struct stat st;
	int rc = target(rs, &dir, &procs, e);

	if (rc || !dir)
		return rc;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		rc = ibcr_fail(e, "pid %d: its cgroup %s does not exist here (%s; " HERE ")",
			       ps->rec.pid, ps->cgroup, dir);
	else if (access(procs, W_OK))
		rc = ibcr_fail_errno(e, errno, "pid %d: cannot go back into its cgroup %s "
				     "(%s; " HERE ")", ps->rec.pid, ps->cgroup, procs);
	free(procs);
	free(dir);
	return rc;
}

int cgroup_enter(const struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	char *dir, *procs, pid[16];
	int fd, n, rc = target(rs, &dir, &procs, e);

	if (rc || !dir)
		return rc;
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, pid, (size_t)n) != n)
		rc = ibcr_fail_errno(e, errno, "moving into cgroup %s (%s)", ps->cgroup, procs);
	if (fd >= 0)
		close(fd);
	free(procs);
	free(dir);
	return rc;
}
