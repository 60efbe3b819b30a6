// SPDX-License-Identifier: MIT
/*
 * Calls the kernel ends with EINTR instead of restarting must not see
 * one because of a checkpoint: a worker thread each blocks, with all
 * signals blocked and a long timeout, in epoll_wait, epoll_pwait,
 * epoll_pwait2, rt_sigtimedwait, semop and semtimedop (nothing ever
 * wakes them), and fails on any return at all ("FAIL <call> returned
 * ..."). The main thread ticks; on SIGUSR1 it says DONE and exits.
 *
 *   eintr [TICK-MS]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int epfd, semid;
static volatile sig_atomic_t done;

#define FAIL(...) do { printf("FAIL " __VA_ARGS__); printf("\n"); fflush(stdout); exit(1); } while (0)

static long call(int which)
{
	struct epoll_event ev;
	struct timespec ts = { 100000, 0 };
	struct sembuf down = { 0, -1, 0 };
	sigset_t all;

	sigfillset(&all);
	switch (which) {
	case 0: return epoll_wait(epfd, &ev, 1, -1);
	case 1: return epoll_pwait(epfd, &ev, 1, 100000 * 1000, &all);
	case 2: return syscall(SYS_epoll_pwait2, epfd, &ev, 1, &ts, &all, 8);
	case 3: {
		sigset_t usr2;

		sigemptyset(&usr2);
		sigaddset(&usr2, SIGUSR2);
		return sigtimedwait(&usr2, NULL, &ts);
	}
	case 4: return semop(semid, &down, 1);
	default: return semtimedop(semid, &down, 1, &ts);
	}
}

static const char *const names[] = { "epoll_wait", "epoll_pwait", "epoll_pwait2",
				     "rt_sigtimedwait", "semop", "semtimedop" };

static void *worker(void *arg)
{
	int which = (int)(intptr_t)arg;

	for (;;) {
		long r = call(which);

		FAIL("%s returned %ld (%s)", names[which], r, r < 0 ? strerror(errno) : "");
	}
	return NULL;
}

static void on_usr1(int sig) { (void)sig; done = 1; }

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 100;
	sigset_t all, usr1;
	pthread_t th;

	setvbuf(stdout, NULL, _IOLBF, 0);
	epfd = epoll_create1(0);
	semid = semget(IPC_PRIVATE, 1, 0600);
	if (epfd < 0 || semid < 0)
		FAIL("setup: %s", strerror(errno));
	printf("semid %d\n", semid);
	signal(SIGUSR1, on_usr1);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);	/* the workers inherit it */
	for (int i = 0; i < 6; i++)
		if (pthread_create(&th, NULL, worker, (void *)(intptr_t)i))
			FAIL("pthread_create");
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	for (long n = 0; !done; n++) {
		struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

		printf("tick %ld pid %d\n", n, (int)getpid());
		while (nanosleep(&t, &t) && !done)
			;
	}
	/* the test removes the set: removed here, it would wake the workers */
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
