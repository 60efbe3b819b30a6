// SPDX-License-Identifier: MIT
/*
 * Attaching to every thread of a process and letting it go again. New
 * threads can appear while we attach (a thread in clone), so the task
 * list is re-read until a pass finds nothing new.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "proc_stat.h"
#include "procfs.h"
#include "ptrace_util.h"
#include "guard.h"
#include "saver.h"

static int has_tid(const struct target *t, pid_t tid)
{
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (t->tids[i] == tid)
			return 1;
	return 0;
}

/* The process exited or is exiting: what to say instead of "cannot attach". */
static int explain_gone(pid_t pid, struct ibcr_err *e)
{
	const struct timespec ms = { 0, 1000 * 1000 };
	struct proc_stat ps;
	int c = 0, known, alive = proc_stat_of(pid, &ps);

	/*
	 * On its way out: a zombie in a moment, whose status says why. A
	 * process just killed runs a little before it is seen exiting: a
	 * failure may have come from that; look for 20 ms before trusting it.
	 */
	for (int i = 0; i < 1000 && alive && ps.state != 'Z' && ps.state != 'X' &&
	     ((ps.flags & PROC_PF_EXITING) || i < 20); i++) {
		nanosleep(&ms, NULL);
		alive = proc_stat_of(pid, &ps);
	}
	if (!alive) {
		/* reaped: by us (we trace it), or by its parent after we let go */
		known = pt_exit_status(pid, &c) ||
			waitpid(pid, &c, WNOHANG | __WALL) == pid;
		if (!known)
			return ibcr_fail(e, "pid %d: exited during the checkpoint", (int)pid);
		ps.state = 'Z';
		ps.exit_code = c;
	}
	if (ps.state == 'Z' || ps.state == 'X') {
		c = ps.exit_code;

		if (c & 0x7f)
			return ibcr_fail(e, "pid %d: exited during the checkpoint (killed by "
					 "signal %d)", (int)pid, c & 0x7f);
		return ibcr_fail(e, "pid %d: exited during the checkpoint (status %d)",
				 (int)pid, (c >> 8) & 0xff);
	}
	if (ps.flags & PROC_PF_EXITING)
		return ibcr_fail(e, "pid %d: is exiting", (int)pid);
	return 0;
}

static int has_cap_sys_ptrace(void)
{
	long long caps = proc_status_num(0, "CapEff:", 16);

	return caps > 0 && ((caps >> 19) & 1);	/* CAP_SYS_PTRACE */
}

static long yama_scope(void)
{
	long long v = proc_key_num("/proc/sys/kernel/yama/ptrace_scope", "", 10);

	return v > 0 ? (long)v : 0;
}

/* EPERM: the reason the kernel had, as far as it can be seen from here. */
static int explain_eperm(pid_t pid, struct ibcr_err *e)
{
	long tracer = (long)proc_status_num(pid, "TracerPid:", 10);
	long uid = (long)proc_status_num(pid, "Uid:", 10);
	long scope = yama_scope();

	if (tracer > 0) {
		char path[64], *comm = NULL;
		struct ibcr_err ignored;

		snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
		proc_read(path, &comm, NULL, &ignored);
		if (comm && strchr(comm, '\n'))
			*strchr(comm, '\n') = 0;
		ibcr_fail(e, "pid %d: cannot attach: already traced by pid %ld (%s)",
			  (int)pid, tracer, comm ? comm : "?");
		free(comm);
		return -1;
	}
	if (has_cap_sys_ptrace() && scope < 3)
		return ibcr_fail(e, "pid %d: cannot attach: the kernel refused it even with "
				 "CAP_SYS_PTRACE (a security module, or a process of another "
				 "user namespace)", (int)pid);
	if (uid >= 0 && (uid_t)uid != geteuid())
		return ibcr_fail(e, "pid %d: cannot attach: permission denied (it runs as "
				 "uid %ld, this saver as uid %u: needs root or CAP_SYS_PTRACE)",
				 (int)pid, uid, (unsigned)geteuid());
	if (scope > 0)
		return ibcr_fail(e, "pid %d: cannot attach: permission denied "
				 "(kernel.yama.ptrace_scope is %ld: %s)", (int)pid, scope,
				 scope == 1 ? "only its ancestors or CAP_SYS_PTRACE may trace it" :
				 scope == 2 ? "only CAP_SYS_PTRACE may trace" : "no tracing at all");
	return ibcr_fail(e, "pid %d: cannot attach: permission denied (not dumpable, "
			 "or it has capabilities this saver lacks: needs CAP_SYS_PTRACE)",
			 (int)pid);
}

static int seize_new(struct target *t, struct ibcr_err *e);

static int explain_seize_failure(pid_t pid, int err, struct ibcr_err *e)
{
	if ((err == ESRCH || err == EPERM) && explain_gone(pid, e))
		return -1;
	if (err == ESRCH)
		return ibcr_fail(e, "pid %d: no such process", (int)pid);
	if (err == EPERM)
		return explain_eperm(pid, e);
	return ibcr_fail_errno(e, err, "pid %d: cannot attach", (int)pid);
}

void explain_exited(const struct target *t, uint32_t n, struct ibcr_err *e)
{
	struct ibcr_err why;

	for (uint32_t i = 0; i < n; i++) {
		if (t[i].zombie || !t[i].nthreads || !explain_gone(t[i].pid, &why))
			continue;
		/* the first cause stays: what failed because it was gone */
		ibcr_fail(e, "%s; nothing was saved", why.msg);
		return;
	}
}

/*
 * One pass over /proc/PID/task; returns how many threads were new. Each
 * new thread is seized and interrupted, and only then are they waited
 * for, together: a busy thread stops only once it gets a CPU, and 24
 * busy threads on 2 CPUs, waited for one by one, took seconds.
 */
static int seize_pass(struct target *t, struct ibcr_err *e)
{
	uint32_t first = t->nthreads;
	int added = seize_new(t, e);

	for (uint32_t i = first; added > 0 && i < t->nthreads; i++)
		if (pt_interrupt_wait(t->tids[i], e))
			return -1;
	return added;
}

static int seize_new(struct target *t, struct ibcr_err *e)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int added = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	dir = opendir(path);
	if (!dir)
		return explain_seize_failure(t->pid, errno == ENOENT ? ESRCH : errno, e);
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid <= 0 || has_tid(t, tid))
			continue;
		if (pt_seize(tid, PTRACE_O_TRACESYSGOOD, e)) {
			if (errno == ESRCH && tid != t->pid)
				continue;	/* the thread exited meanwhile */
			closedir(dir);
			return explain_seize_failure(tid == t->pid ? t->pid : tid, errno, e);
		}
		t->tids = xrealloc(t->tids, sizeof(pid_t) * (t->nthreads + 1));
		t->seized = xrealloc(t->seized, sizeof(int) * (t->nthreads + 1));
		t->tids[t->nthreads] = tid;
		t->seized[t->nthreads] = 1;
		t->nthreads++;
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
			ibcr_fail_errno(e, errno, "thread %d: PTRACE_INTERRUPT", (int)tid);
			closedir(dir);
			return -1;
		}
		added++;
	}
	closedir(dir);
	return added;
}

/*
 * The NSpid: line of /proc/PID/status (pid 0: this saver): how many PID
 * namespaces see it, and in *inner the pid its innermost one gives it.
 * 0 when the line cannot be read.
 */
static int nspid_depth(pid_t pid, long *inner)
{
	char path[64], *text = NULL, *line, *end;
	struct ibcr_err ignored;
	int depth = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	if (proc_read(path, &text, NULL, &ignored))
		return 0;
	line = strstr(text, "\nNSpid:");
	for (line = line ? line + 7 : NULL; line; line = end, depth++) {
		long v = strtol(line, &end, 10);

		if (end == line)
			break;
		*inner = v;
	}
	free(text);
	return depth;
}

/*
 * A process in a PID namespace below this saver's knows itself, its
 * parent and its group by that namespace's pids, which /proc here does
 * not show: saved from here, it would come back with other ids.
 */
int pidns_check(pid_t pid, struct ibcr_err *e)
{
	long inner = 0, self = 0;
	int depth = nspid_depth(pid, &inner), own = nspid_depth(0, &self);

	if (!depth || !own || depth <= own)
		return 0;
	return ibcr_fail(e, "pid %d: is pid %ld of a PID namespace below this saver's (a "
			 "container, or restart-loader --pid-ns), whose ids it would not "
			 "keep: run the saver in there (nsenter -t %d -p -m saver -o "
			 "/ABSOLUTE/IMAGE %ld)", (int)pid, inner, (int)pid, inner);
}

/* Refuses, with the reason, what cannot be a target; before any change. */
int target_check(pid_t pid, struct ibcr_err *e)
{
	struct proc_stat ps;
	char path[64];
	long long tgid;
	int fd;

	if (!proc_stat_of(pid, &ps))
		return ibcr_fail(e, "pid %d: no such process", (int)pid);
	tgid = proc_status_num(pid, "Tgid:", 10);
	if (tgid > 0 && tgid != pid)
		return ibcr_fail(e, "pid %d: is a thread of process %lld, not a process: give "
				 "%lld to checkpoint that process", (int)pid, tgid, tgid);
	if (ps.flags & PROC_PF_KTHREAD)
		return ibcr_fail(e, "pid %d: is a kernel thread: only user processes can "
				 "be checkpointed", (int)pid);
	if (pid == 1)
		return ibcr_fail(e, "pid 1: is the init process of this system or "
				 "container: it cannot be checkpointed (stopping or killing it "
				 "would stop or end everything else)");
	if (ps.state == 'Z' || ps.state == 'X')
		return ibcr_fail(e, "pid %d: the process is a zombie", (int)pid);
	if (pidns_check(pid, e))
		return -1;
	if (pid == getpid() || pid == guard_pid())
		return ibcr_fail(e, "pid %d: is this saver%s: it cannot checkpoint itself",
				 (int)pid, pid == getpid() ? "" : "'s own guardian");
	/* /proc/PID/mem opens only with ptrace-attach rights: ask now */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return explain_seize_failure(pid, errno == EACCES ? EPERM : errno, e);
	close(fd);
	return 0;
}

/* Stopped by job control (state T) before we came: it stays so. */
static int is_stopped(pid_t pid)
{
	char path[64], *s = NULL, *p;
	struct ibcr_err ignored;
	int stopped = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!proc_read(path, &s, NULL, &ignored) && (p = strrchr(s, ')')))
		stopped = p[2] == 'T';
	free(s);
	return stopped;
}

int target_seize(struct target *t, struct ibcr_err *e)
{
	char path[64];
	int added;

	t->stopped = is_stopped(t->pid);
	/* The main thread first: a failure there is the process's failure. */
	if (pt_seize(t->pid, PTRACE_O_TRACESYSGOOD, e))
		return explain_seize_failure(t->pid, errno, e);
	t->tids = xmalloc(sizeof(pid_t));
	t->seized = xmalloc(sizeof(int));
	t->tids[0] = t->pid;
	t->seized[0] = 1;
	t->nthreads = 1;
	pt_group_stop_signal();
	if (pt_interrupt(t->pid, e))
		return -1;
	do {
		added = seize_pass(t, e);
		if (added < 0)
			return -1;
	} while (added);
	/* in a group stop (also one a stop signal on its way in began): its signal */
	t->stop_sig = pt_group_stop_signal();
	if (t->stop_sig)
		t->stopped = 1;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->pid);
	t->memfd = open(path, O_RDWR | O_CLOEXEC);
	if (t->memfd < 0)
		return ibcr_fail_errno(e, errno, "pid %d: opening %s", (int)t->pid, path);
	return 0;
}

void target_release(struct target *t, int how)
{
	if (t->released)
		return;
	if (how == RELEASE_KILL && t->nthreads)
		kill(t->pid, SIGKILL);
	if (how == RELEASE_STOP)
		kill(t->pid, SIGSTOP);
	else if (how == RELEASE_RUN && t->stopped)	/* by its own stop signal */
		kill(t->pid, t->stop_sig ? t->stop_sig : SIGSTOP);
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (t->seized[i])
			ptrace(PTRACE_DETACH, t->tids[i], NULL, NULL);
	t->released = 1;
}

/*
 * After --kill: returns once every process has exited (bounded: 60 s),
 * and has been reaped by its parent or is at least a zombie (up to 2 s
 * more), so that a restore started right after finds its pids free and
 * its ports too: the kernel frees a process's memory before it closes
 * its descriptors, so a large one holds its sockets a while after SIGKILL.
 * A zombie whose parent does not reap it keeps its pid; the loader
 * waits for such a one a little (docs/design-notes.md, "Identity").
 */
void wait_gone(const struct target *t, uint32_t n)
{
	const struct timespec step = { 0, 1000 * 1000 };
	struct proc_stat ps;

	for (int phase = 0; phase < 2; phase++) {
		for (int ms = 0; ms < (phase ? 2000 : 60000); ms++) {
			uint32_t left = 0;

			for (uint32_t i = 0; i < n; i++)
				if (proc_stat_of(t[i].pid, &ps) &&
				    (phase || (ps.state != 'Z' && ps.state != 'X')))
					left++;
			if (!left)
				break;
			nanosleep(&step, NULL);
		}
	}
}
