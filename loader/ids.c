// SPDX-License-Identifier: MIT
/*
 * The restored processes' pids and thread ids: the saved ones where the
 * loader may choose them (clone3 set_tid: root or CAP_CHECKPOINT_RESTORE)
 * and they are free. A pid still held by the checkpointed process itself
 * (a zombie its parent has not reaped yet, or a process being torn down
 * after `saver --kill`) is waited for, a few seconds at most. Whatever
 * does not come back as it was is said once on stderr, always.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"
#include "proc_stat.h"

#define PID_WAIT_MS 5000

/*
 * The checkpointed process itself, on its way out, holds pid (or nobody
 * does any more, since the clone3 that found it taken): worth waiting for.
 */
static int held_by_ghost(pid_t pid, const char *comm)
{
	struct proc_stat st;

	if (!proc_stat_of(pid, &st))
		return 1;
	return !strncmp(st.comm, comm, 15) &&
	       (st.state == 'Z' || st.state == 'X' || (st.flags & PROC_PF_EXITING));
}

/* clone3 with flags (CLONE_NEWPID...), with pid want when want > 0 */
static long try_clone(pid_t want, unsigned long flags)
{
	struct clone_args ca = { .flags = flags, .exit_signal = SIGCHLD };
	pid_t tid = want;

	if (want > 0) {
		ca.set_tid = (uint64_t)(uintptr_t)&tid;
		ca.set_tid_size = 1;
	}
	return syscall(SYS_clone3, &ca, sizeof(ca));
}

static void say_new_pid(const struct job *x, int err, pid_t got)
{
	pid_t want = x->ps.rec.pid;
	const char *threads = x->ps.rec.nthreads > 1 ? " (its threads get new ids too)" : "";
	struct proc_stat st;

	if (err == EEXIST && proc_stat_of(want, &st))
		fprintf(stderr, "restart-loader: pid %d is in use by %s '%s'%s; restored as "
			"pid %d%s\n", (int)want, st.state == 'Z' ? "a zombie," : "a process,",
			st.comm, st.state == 'Z' ? " that its parent has not reaped" : "",
			(int)got, threads);
	else if (err == EEXIST)
		fprintf(stderr, "restart-loader: pid %d is in use; restored as pid %d%s\n",
			(int)want, (int)got, threads);
	else if (err == EPERM)
		fprintf(stderr, "restart-loader: not permitted to restore pid %d (needs root "
			"or CAP_CHECKPOINT_RESTORE); restored as pid %d%s\n", (int)want,
			(int)got, threads);
	else
		fprintf(stderr, "restart-loader: cannot restore pid %d (%s); restored as "
			"pid %d%s\n", (int)want, strerror(err), (int)got, threads);
}

/* clone3 with the saved pid, waiting for a ghost that holds it; errno */
static long fork_saved(const struct job *x, unsigned long flags)
{
	const struct timespec step = { 0, 2 * 1000 * 1000 };
	pid_t want = x->ps.rec.pid;
	long pid;

	for (int ms = 0;; ms += 2) {
		pid = try_clone(want, flags);
		if (pid >= 0 || errno != EEXIST || ms >= PID_WAIT_MS ||
		    !held_by_ghost(want, x->ps.rec.comm))
			return pid;
		nanosleep(&step, NULL);
	}
}

pid_t fork_as(const struct job *x, unsigned long flags, int *exact)
{
	long pid = fork_saved(x, flags);
	int err = errno;

	*exact = pid >= 0;
	if (pid >= 0)
		return (pid_t)pid;
	fflush(NULL);
	pid = flags ? try_clone(0, flags) : fork();
	if (pid > 0)
		say_new_pid(x, err, (pid_t)pid);	/* always: a pid that changes matters */
	return (pid_t)pid;
}

/*
 * A child's parent knows it by its pid (fork's result, wait's): under
 * another one, the parent would wait for it in vain. Refused instead (the
 * loader names the parent).
 */
pid_t fork_exact(const struct job *x, unsigned long flags, struct ibcr_err *e)
{
	long pid = fork_saved(x, flags);
	int err = errno;
	pid_t want = x->ps.rec.pid;
	struct proc_stat st;

	if (pid >= 0)
		return (pid_t)pid;
	if (err == EEXIST && proc_stat_of(want, &st))
		ibcr_fail(e, "its child, pid %d (%.16s), is in use by a process, '%s': the "
			  "parent knows it by that pid (free it, or restore with --pid-ns)",
			  (int)want, x->ps.rec.comm, st.comm);
	else if (err == EEXIST)	/* a thread's id, or a process gone since */
		ibcr_fail(e, "its child, pid %d (%.16s), is in use: the parent knows it by "
			  "that pid (free it, or restore with --pid-ns)", (int)want, x->ps.rec.comm);
	else if (err == EPERM)
		ibcr_fail(e, "its child, pid %d (%.16s): not permitted to choose its pid "
			  "(needs root or CAP_CHECKPOINT_RESTORE), and the parent knows it by "
			  "that pid (restore with --pid-ns)", (int)want, x->ps.rec.comm);
	else
		ibcr_fail_errno(e, err, "its child, pid %d (%.16s): cannot have its pid "
				"back", (int)want, x->ps.rec.comm);
	return -1;
}

static int has(const pid_t *v, uint32_t n, pid_t x)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

void ids_report(const struct job *x)
{
	char path[64], lost[256] = "", got[256] = "";
	pid_t *now = NULL, *saved;
	uint32_t n = 0, m = x->ps.rec.nthreads;
	struct dirent *d;
	DIR *dir;

	if (!x->rs.exact_pid || m < 2)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)x->child);
	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			now = xrealloc(now, sizeof(pid_t) * (n + 1));
			now[n++] = (pid_t)atoi(d->d_name);
		}
	closedir(dir);
	saved = xmalloc(sizeof(pid_t) * m);
	for (uint32_t i = 0; i < m; i++)
		saved[i] = x->ps.threads[i].rec.tid;
	for (uint32_t i = 0; i < m; i++)
		if (!has(now, n, saved[i]))
			snprintf(lost + strlen(lost), sizeof(lost) - strlen(lost), "%s%d",
				 lost[0] ? ", " : "", (int)saved[i]);
	for (uint32_t i = 0; i < n; i++)
		if (!has(saved, m, now[i]))
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d",
				 got[0] ? ", " : "", (int)now[i]);
	if (lost[0])
		fprintf(stderr, "restart-loader: pid %d: thread id(s) %s were in use; those "
			"threads were restored as %s\n", (int)x->child, lost, got);
	free(now);
	free(saved);
}
