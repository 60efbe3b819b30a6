// SPDX-License-Identifier: MIT
/*
 * Which processes the verbs quiesce covers. The shim must be quiesced
 * while its process still runs, so with --tree the descendants are
 * looked for before anything is stopped (mpirun -> ranks: the ranks
 * carry the shim, mpirun may too). Once everything is stopped, each
 * saved process is looked at again: one that holds verbs state but was
 * not quiesced (it appeared, or opened a device, in between) fails the
 * checkpoint, naming it; the processes then run on.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "procfs.h"
#include "saver.h"

/* Appends pid's children (of every thread) that are not listed yet. */
static void add_children(struct target **t, uint32_t *n, pid_t pid)
{
	char path[32];
	struct ibcr_err ignored;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;		/* gone: it has no children to save either */
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			tree_add_children(t, n, pid, (pid_t)atoi(de->d_name), &ignored);
	closedir(d);
}

int verbs_tree_find(const struct target *roots, uint32_t nroots, struct target **pre,
		    uint32_t *npre, struct ibcr_err *e)
{
	*pre = xcalloc(nroots, sizeof(**pre));
	*npre = nroots;
	for (uint32_t i = 0; i < nroots; i++) {
		(*pre)[i].pid = roots[i].pid;
		(*pre)[i].memfd = -1;
	}
	for (uint32_t i = 0; i < *npre; i++) {
		char path[32];

		add_children(pre, npre, (*pre)[i].pid);
		if (!verbs_find(&(*pre)[i], e))
			continue;
		snprintf(path, sizeof(path), "/proc/%d", (int)(*pre)[i].pid);
		if (i < nroots || !access(path, F_OK))
			return -1;
		/* a descendant gone by now is not saved either */
	}
	return 0;
}

/* Is pid's shim holding verbs state now (a device, descriptors)? */
static int holds_state(struct target *t, struct ibcr_err *e)
{
	struct ibcr_verbs_control c;

	if (read_target(t, t->verbs_addr, &c, sizeof(c), e))
		return -1;
	return c.ndevices || c.nfds || c.state != IBCR_VSTATE_RUNNING;
}

int verbs_after_seize(struct target *t, uint32_t n, struct target *pre, uint32_t npre,
		      struct ibcr_err *e)
{
	for (uint32_t i = 0; i < n; i++) {
		struct target *x = &t[i];
		int found = 0;

		for (uint32_t j = 0; j < npre && !found; j++)
			if (pre[j].pid == x->pid && !x->verbs_addr) {
				x->verbs_addr = pre[j].verbs_addr;
				x->verbs = pre[j].verbs;
				pre[j].verbs = NULL;
				found = 1;
			}
		if (x->zombie || x->verbs)
			continue;
		if (!found && !x->verbs_addr && verbs_find(x, e))
			return -1;
		if (x->verbs)
			return ibcr_fail(e, "pid %d: started with the verbs shim and holding "
					 "verbs state, but it appeared after the shims were "
					 "quiesced: try again", (int)x->pid);
		if (x->verbs_addr) {
			int r = holds_state(x, e);

			if (r < 0)
				return -1;
			if (r)
				return ibcr_fail(e, "pid %d: opened an RDMA device while the "
						 "checkpoint began (its verbs shim was not "
						 "quiesced): try again", (int)x->pid);
		}
	}
	/* quiesced, but not among the processes saved: they run on */
	verbs_release(pre, npre);
	return 0;
}
