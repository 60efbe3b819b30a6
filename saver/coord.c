// SPDX-License-Identifier: MIT
/*
 * One checkpoint over several savers (one per node of a job): at each
 * point where every node must be before any goes on, the saver runs the
 * barrier command given with --barrier, as `CMD PHASE`, and goes on only
 * if it exits 0. The command is the engine the cluster has (ibcr-job's
 * shared-directory barrier, a PMIx fence); it prints why it failed (a
 * peer's failure) on its standard output. A saver that fails runs
 * `CMD abort MESSAGE`, so that every peer's next barrier fails too and
 * all processes run on. Phases:
 *
 *   sends     every shim has no signaled send outstanding (phase 1 of
 *             the verbs quiesce): only then may any drain its CQs
 *   written   every image is complete: only then may any be killed
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "saver.h"

static const char *barrier_cmd;
static int aborted;

void coord_init(const char *cmd)
{
	barrier_cmd = cmd;
}

/* Runs CMD ARG1 [ARG2]; 0 if it exits 0, else -1 with its output in why. */
static int run(const char *a1, const char *a2, char *why, size_t n)
{
	char cmd[4096];
	FILE *p;
	size_t got = 0;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s%s%s%s", barrier_cmd, a1, a2 ? " '" : "",
		 a2 ? a2 : "", a2 ? "'" : "");
	p = popen(cmd, "r");
	if (!p) {
		snprintf(why, n, "cannot run the barrier command: %s", strerror(errno));
		return -1;
	}
	why[0] = 0;
	while (got + 1 < n && fgets(why + got, (int)(n - got), p))
		got = strlen(why);
	st = pclose(p);
	while (got && (why[got - 1] == '\n' || why[got - 1] == ' '))
		why[--got] = 0;
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		if (!got)
			snprintf(why, n, "status %d", st == -1 ? -1 : WIFEXITED(st) ?
				 WEXITSTATUS(st) : 128 + WTERMSIG(st));
		return -1;
	}
	return 0;
}

int coord_barrier(const char *phase, struct ibcr_err *e)
{
	char why[512];

	if (!barrier_cmd)
		return 0;
	if (run(phase, NULL, why, sizeof(why)))
		return ibcr_fail(e, "the job's checkpoint was abandoned at barrier '%s': %s",
				 phase, why);
	return 0;
}

void coord_abort(const char *msg)
{
	char why[512], m[512];
	size_t i;

	if (!barrier_cmd || aborted)
		return;
	aborted = 1;
	/* one shell word between single quotes */
	snprintf(m, sizeof(m), "%s", msg);
	for (i = 0; m[i]; i++)
		if (m[i] == '\'')
			m[i] = '"';
	if (run("abort", m, why, sizeof(why)))
		fprintf(stderr, "saver: note: telling the job's other savers: %s\n", why);
}
