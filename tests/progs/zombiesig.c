// SPDX-License-Identifier: MIT
/*
 * Children that died and wait to be reaped, each with its own kind of
 * exit status; after the restore (gate.h) the parent reaps each and
 * checks the status wait(2) gives, bit for bit:
 *
 *   exit      exited with status 3
 *   term      killed by SIGTERM (sent by the parent)
 *   segv      died of SIGSEGV, with no core dump (RLIMIT_CORE 0)
 *   kill      killed by SIGKILL
 *
 *   zombiesig        the four above
 *   zombiesig core   one child that died of SIGABRT and dumped core (in
 *                    the working directory): a status that a restore
 *                    cannot make again, which the saver refuses
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate.h"

static pid_t child(int how)
{
	pid_t p = fork();
	struct rlimit core = { how == SIGABRT ? RLIM_INFINITY : 0,
			       how == SIGABRT ? RLIM_INFINITY : 0 };

	check(p >= 0, "fork");
	if (p)
		return p;
	setrlimit(RLIMIT_CORE, &core);
	if (how == 0)
		_exit(3);
	if (how == SIGTERM || how == SIGKILL)
		for (;;)
			pause();
	signal(how, SIG_DFL);
	raise(how);
	_exit(99);
}

/* The child's status as wait(2) gives it, without reaping it. */
static void settle(pid_t p)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	check(waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT) == 0, "waitid %d", (int)p);
}

int main(int argc, char **argv)
{
	static const int how[] = { 0, SIGTERM, SIGSEGV, SIGKILL };
	static const int want[] = { 3 << 8, SIGTERM, SIGSEGV, SIGKILL };
	int core = argc > 1 && !strcmp(argv[1], "core"), n = core ? 1 : 4;
	pid_t kids[4];

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < n; i++) {
		kids[i] = child(core ? SIGABRT : how[i]);
		if (how[i] == SIGTERM || how[i] == SIGKILL)
			kill(kids[i], how[i]);
		settle(kids[i]);
	}
	gate_wait();
	for (int i = 0; i < n; i++) {
		int st = -1;

		check(waitpid(kids[i], &st, 0) == kids[i], "reaping child %d", (int)kids[i]);
		check(st == (core ? (SIGABRT | 0x80) : want[i]),
		      "child %d: status %#x, want %#x", (int)kids[i], st,
		      core ? (SIGABRT | 0x80) : want[i]);
		printf("child %d status %#x\n", (int)kids[i], st);
	}
	gate_done();
	return 0;
}
