// SPDX-License-Identifier: MIT
/*
 * restart-loader as a container's init (pid 1 of its PID namespace, as in
 * an image made by ckpt-oci). The kernel gives pid 1 only the signals it
 * handles, so `runc kill ID TERM` (or `docker stop`) would reach nobody:
 * the loader passes the usual stop and control signals on to the
 * restored processes it is the parent of, which then act on them as they
 * would have as the container's first process. It reaps every orphan
 * anyway (its wait loop waits for any child).
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"

#define MAX_ROOTS 64

static pid_t roots[MAX_ROOTS];
static size_t nroots;

static void pass_on(int sig)
{
	for (size_t i = 0; i < nroots; i++)
		kill(roots[i], sig);
}

static void forward(const int *sigs, size_t nsigs, const pid_t *pids, size_t n)
{
	struct sigaction sa;

	nroots = n < MAX_ROOTS ? n : MAX_ROOTS;
	memcpy(roots, pids, nroots * sizeof(*pids));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pass_on;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < nsigs; i++)
		sigaction(sigs[i], &sa, NULL);
}

void init_forward(const pid_t *pids, size_t n)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2 };

	if (getpid() == 1)
		forward(sigs, sizeof(sigs) / sizeof(sigs[0]), pids, n);
}

/*
 * Any loader stands for the restored program: SIGTERM and SIGHUP sent to
 * it (a supervisor, ibcr-launch --restart, a closed terminal) were meant
 * for the program, and go on to it. (As pid 1, init_forward does more.)
 */
void term_forward(const pid_t *pids, size_t n)
{
	static const int sigs[] = { SIGTERM, SIGHUP };

	if (getpid() != 1)
		forward(sigs, sizeof(sigs) / sizeof(sigs[0]), pids, n);
}
