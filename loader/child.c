// SPDX-License-Identifier: MIT
/*
 * The child that becomes the restored process: files, working
 * directory, the plan in the hole, then the jump into the core. Errors
 * before the jump go to the parent through the status pipe, like the
 * core's own.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "loader.h"
#include "options.h"

__attribute__((noreturn)) void child_fail(int fd, const struct ibcr_err *e)
{
	char msg[sizeof(e->msg) + 1];
	size_t n = strlen(e->msg);

	msg[0] = ST_ERROR;
	memcpy(msg + 1, e->msg, n);
	if (write(fd, msg, n + 1) < 0)
		_exit(127);
	_exit(127);
}

static void trace(int fd, const char *what)
{
	char line[128];
	int n;

	if (!trace_on())
		return;
	n = snprintf(line, sizeof(line), "%c%s\n", ST_TRACE, what);
	if (write(fd, line, (size_t)n) < 0)
		return;
}

void run_child(struct restore *rs)
{
	struct ibcr_err e = { "" };
	struct plan *plan;
	uint64_t entry, sp, all = ~0ull;

	loader_stdio_restore();	/* --log: fd 2 is the caller's again */
	/* first: the cgroup counts what follows */
	if (attrs_child(rs, &e) || setup_files(rs, &e) || restore_locks(rs, &e) ||
	    creds_child(rs, &e))
		child_fail(rs->status_fd, &e);
	trace(rs->status_fd, "files set up");
	if (build_plan(rs, &entry, &plan, &sp, &e) || verbs_creds_check(rs, plan, &e))
		child_fail(rs->status_fd, &e);
	trace(rs->status_fd, "plan built; entering the core");
	/*
	 * Signals wait until each thread's own mask comes back: every one,
	 * also those musl's sigfillset leaves out (32-34, glibc's SIGRTMIN is
	 * 34), or a pending one is delivered to the program's handler in the
	 * middle of the restore.
	 */
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(all))) {
		ibcr_fail_errno(&e, errno, "blocking every signal for the restore");
		child_fail(rs->status_fd, &e);
	}
	ibcr_enter(entry, plan, sp);
}
