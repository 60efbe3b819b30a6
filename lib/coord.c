// SPDX-License-Identifier: MIT
/*
 * One checkpoint over several savers, or one restart over several
 * restart-loaders (one per node of a job): at each point where every
 * node must be before any goes on, the tool runs the barrier command
 * given with --barrier, as `CMD PHASE`, and goes on only if it exits 0. The command is the engine the cluster has (ibcr-job's
 * shared-directory barrier, a PMIx fence); it prints why it failed (a
 * peer's failure) on its standard output. A saver that fails runs
 * `CMD abort MESSAGE`, so that every peer's next barrier fails too and
 * all processes run on (a checkpoint) or none is restored (a restart).
 * Phases of a checkpoint (saver):
 *
 *   sends     every shim has no signaled send outstanding (phase 1 of
 *             the verbs quiesce): only then may any drain its CQs
 *   written   every image is complete: only then may any be killed
 *
 * of a restart (restart-loader):
 *
 *   sockets   every node made its TCP connections, still in repair mode:
 *             only then may any leave repair mode, which sends a window
 *             probe, and a probe reaching a node whose end is not made yet
 *             would be answered with a reset
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coord.h"

static const char *barrier_cmd, *barrier_who = "checkpoint";
static int aborted, settled;
static pid_t exit_pid;

void coord_init(const char *cmd, const char *who)
{
	barrier_cmd = cmd;
	barrier_who = who;
}

int coord_active(void)
{
	return barrier_cmd != NULL;
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
		return ibcr_fail(e, "the job's %s was abandoned at barrier '%s': %s",
				 barrier_who, phase, why);
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
		fprintf(stderr, "note: telling the job's other nodes of the failure: %s\n", why);
}

/* The tool ended before its last barrier: its peers must not wait for it. */
static void abort_at_exit(void)
{
	if (getpid() == exit_pid && !settled)
		coord_abort("it failed before every node was ready (see its messages)");
}

void coord_abort_on_exit(void)
{
	if (!barrier_cmd || exit_pid)
		return;
	exit_pid = getpid();
	atexit(abort_at_exit);
}

void coord_settled(void)
{
	settled = 1;
}
