// SPDX-License-Identifier: MIT
/*
 * The restored processes' pids and thread ids: the saved ones where the
 * loader may choose them (clone3 set_tid: root or CAP_CHECKPOINT_RESTORE)
 * and they are free. A pid still held by the checkpointed process itself
 * (a zombie its parent has not reaped yet, or a process being torn down
 * after `saver --kill`) is waited for, a few seconds at most. Any other
 * pid or tid that cannot come back refuses the restore before anything
 * changes (ids_preflight); with --new-pids a root and its threads take
 * new ones instead, said once on stderr, always.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
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
#define NEW_IDS_HINT "free it, restore with --pid-ns, or accept a new one with --new-pids"
#define NEW_IDS_PRIV_HINT "restore with --pid-ns, or accept a new one with --new-pids"

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

/* clone3's set_tid needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN */
static int may_choose_ids(void)
{
	long long eff = proc_status_num(0, "CapEff:", 16);

	return eff > 0 && ((eff >> CAP_CHECKPOINT_RESTORE & 1) || (eff >> CAP_SYS_ADMIN & 1));
}

/*
 * Who holds id (a pid or a tid) for good, in holder; 0 when it is free or
 * its holder is on its way out (the checkpointed process itself, after a
 * kill: the forks wait for it).
 */
static int id_taken(pid_t id, char *holder, size_t len)
{
	struct proc_stat st;
	long long tgid = proc_status_num(id, "Tgid:", 10);

	if (!proc_stat_of(id, &st) || st.state == 'Z' || st.state == 'X' ||
	    (st.flags & PROC_PF_EXITING))
		return 0;
	if (tgid > 0 && tgid != id && proc_stat_of((pid_t)tgid, &st))
		snprintf(holder, len, "a thread of pid %lld, '%.16s'", tgid, st.comm);
	else
		snprintf(holder, len, "a process, '%.16s'", st.comm);
	return 1;
}

/*
 * Every saved pid and tid free and choosable, before anything changes.
 * With --new-pids only the children's pids must be: their parents know
 * them by number.
 */
int ids_preflight(const struct job *j, uint32_t n, struct ibcr_err *e)
{
	int may = may_choose_ids();
	char holder[96];

	for (uint32_t i = 0; i < n; i++) {
		const struct ibcr_process_state *ps = &j[i].ps;
		int child = j[i].parent >= 0;
		const char *hint = child ? "free it, or restore with --pid-ns" : NEW_IDS_HINT;

		if (!child && j[i].rs.new_ids)
			continue;
		if (!may && child)
			return ibcr_fail(e, "pid %d: its child, pid %d (%.16s): not permitted to "
					 "choose its pid (needs root or CAP_CHECKPOINT_RESTORE), and "
					 "the parent knows it by that pid (restore with --pid-ns)",
					 (int)j[j[i].parent].ps.rec.pid, (int)ps->rec.pid,
					 ps->rec.comm);
		if (!may)
			return ibcr_fail(e, "pid %d (%.16s): not permitted to choose its pid (needs "
					 "root or CAP_CHECKPOINT_RESTORE) (%s)", (int)ps->rec.pid,
					 ps->rec.comm, NEW_IDS_PRIV_HINT);
		if (id_taken(ps->rec.pid, holder, sizeof(holder)))
			return child ? ibcr_fail(e, "pid %d: its child, pid %d (%.16s), is in use by "
						 "%s: the parent knows it by that pid (%s)",
						 (int)j[j[i].parent].ps.rec.pid, (int)ps->rec.pid,
						 ps->rec.comm, holder, hint) :
				       ibcr_fail(e, "pid %d (%.16s) is in use by %s (%s)",
						 (int)ps->rec.pid, ps->rec.comm, holder, hint);
		for (uint32_t k = 1; !j[i].rs.new_ids && !is_zombie(&j[i]) && k < ps->rec.nthreads;
		     k++)
			if (id_taken(ps->threads[k].rec.tid, holder, sizeof(holder)))
				return ibcr_fail(e, "pid %d (%.16s): its thread id %d is in use by "
						 "%s (%s)", (int)ps->rec.pid, ps->rec.comm,
						 (int)ps->threads[k].rec.tid, holder, NEW_IDS_HINT);
	}
	return 0;
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

/* Why the saved pid of x cannot be had (err from clone3), in words. */
static void pid_cause(const struct job *x, int err, int child, char *buf, size_t len)
{
	pid_t want = x->ps.rec.pid;
	struct proc_stat st;
	char who[80];

	snprintf(who, sizeof(who), "%spid %d (%.16s)", child ? "its child, " : "", (int)want,
		 x->ps.rec.comm);
	if (err == EEXIST && proc_stat_of(want, &st))
		snprintf(buf, len, "%s%s is in use by %s, '%.16s'", who, child ? "," : "",
			 st.state == 'Z' ? "a zombie its parent has not reaped" : "a process",
			 st.comm);
	else if (err == EEXIST)	/* a thread's id, or a process gone since */
		snprintf(buf, len, "%s%s is in use", who, child ? "," : "");
	else if (err == EPERM)
		snprintf(buf, len, "%s: not permitted to choose its pid (needs root or "
			 "CAP_CHECKPOINT_RESTORE)", who);
	else
		snprintf(buf, len, "%s: cannot have its pid back (%s)", who, strerror(err));
}

/*
 * A root's pid may be in a pidfile or a peer's notes, and libc caches
 * every thread's id (pthread_kill, robust and PI mutexes): under another
 * one the program would run on wrong state. Refused, unless --new-pids
 * accepts it; said on stderr then, always.
 */
pid_t fork_root(const struct job *x, int *exact, struct ibcr_err *e)
{
	long pid = fork_saved(x, 0);
	int err = errno;
	char cause[256];

	*exact = pid >= 0;
	if (pid >= 0)
		return (pid_t)pid;
	pid_cause(x, err, 0, cause, sizeof(cause));
	if (!x->rs.new_ids)
		return ibcr_fail(e, "%s (%s)", cause, err == EPERM ? NEW_IDS_PRIV_HINT :
				 NEW_IDS_HINT);
	fflush(NULL);
	pid = fork();
	if (pid > 0)
		fprintf(stderr, "restart-loader: %s; restored as pid %d%s (--new-pids)\n", cause,
			(int)pid, x->ps.rec.nthreads > 1 ? ", its threads with new ids too" : "");
	else if (pid < 0)
		ibcr_fail_errno(e, errno, "pid %d (%.16s): fork", (int)x->ps.rec.pid,
				x->ps.rec.comm);
	return (pid_t)pid;
}

/*
 * A child's parent knows it by its pid (fork's result, wait's): under
 * another one, the parent would wait for it in vain. Refused even with
 * --new-pids (the loader names the parent).
 */
pid_t fork_exact(const struct job *x, unsigned long flags, struct ibcr_err *e)
{
	long pid = fork_saved(x, flags);
	int err = errno;
	char cause[256];

	if (pid >= 0)
		return (pid_t)pid;
	pid_cause(x, err, 1, cause, sizeof(cause));
	return ibcr_fail(e, "%s: the parent knows it by that pid (%s)", cause,
			 err == EPERM ? "restore with --pid-ns" : "free it, or restore with --pid-ns");
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
