// SPDX-License-Identifier: MIT
/*
 * smaps of a whole tree, read before the freeze. A single process's
 * VmFlags are read while it still runs (vmflags.c) and only checked in
 * the freeze; a tree's members are known only once each is stopped
 * (tree.c), so their smaps were read in the freeze: a page-table walk
 * each, ~4 ms for a 256 MiB child here. Now the tree is walked once
 * while it runs, as it is then (/proc/PID/task/TID/children), each
 * member's smaps read, and after the freeze each stopped member takes
 * the reading made for its pid. vmflags_layout then checks it against
 * the frozen layout as for one process: a member that changed, or a pid
 * that is another process now, has a different layout and is read in
 * the freeze after all; one that appeared meanwhile has none.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "saver.h"

#define MAX_TREE 4096

static struct pre {
	pid_t pid;
	struct maps_entry *m;
	size_t n;
} *pres;
static size_t npres;

static int seen(pid_t pid)
{
	for (size_t i = 0; i < npres; i++)
		if (pres[i].pid == pid)
			return 1;
	return 0;
}

/* The pids in /proc/PID/task/ * /children, appended to *kids. */
static void children(pid_t pid, pid_t **kids, size_t *nk)
{
	char path[80];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		char file[320], buf[4096], *tok, *save = NULL;
		FILE *f;
		size_t got;

		if (d->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%s/children", (int)pid, d->d_name);
		f = fopen(file, "r");
		got = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		if (f)
			fclose(f);
		buf[got] = 0;
		for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
			*kids = xrealloc(*kids, sizeof(**kids) * (*nk + 1));
			(*kids)[(*nk)++] = (pid_t)atoi(tok);
		}
	}
	if (dir)
		closedir(dir);
}

void tree_preread(const struct target *t, uint32_t n)
{
	pid_t *todo = NULL;
	size_t ntodo = 0;

	for (uint32_t i = 0; i < n; i++) {
		todo = xrealloc(todo, sizeof(*todo) * (ntodo + 1));
		todo[ntodo++] = t[i].pid;
	}
	while (ntodo && npres < MAX_TREE) {
		pid_t pid = todo[--ntodo];
		struct ibcr_err e;
		struct pre p = { pid, NULL, 0 };

		if (pid <= 0 || seen(pid))
			continue;
		if (maps_read(pid, 1, &p.m, &p.n, &e))
			p.m = NULL;	/* a zombie, or gone: read in the freeze if need be */
		else
			shm_copy_reserve(p.m, p.n);
		pres = xrealloc(pres, sizeof(*pres) * (npres + 1));
		pres[npres++] = p;
		children(pid, &todo, &ntodo);
	}
	free(todo);
}

void tree_adopt_preread(struct target *t, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		for (size_t i = 0; i < npres && !t[k].zombie && !t[k].pre; i++)
			if (pres[i].pid == t[k].pid && pres[i].m) {
				t[k].pre = pres[i].m;
				t[k].npre = pres[i].n;
				pres[i].m = NULL;
			}
	for (size_t i = 0; i < npres; i++)
		if (pres[i].m)
			maps_free(pres[i].m, pres[i].n);
	free(pres);
	pres = NULL;
	npres = 0;
}
