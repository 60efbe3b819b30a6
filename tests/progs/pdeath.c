// SPDX-License-Identifier: MIT
/*
 * A child with a parent-death signal: it asks for SIGUSR1 when the
 * thread that forked it exits, and prints "child got the parent-death
 * signal" when it comes; both tick ("parent tick N", "child tick N").
 * MODE main: the parent's main thread forks it; thread: a second
 * thread of the parent does, and then sleeps for ever.
 *
 *   pdeath MODE [MS]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static long ms = 100;
static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	(void)sig;
	got = 1;
}

static void tick(const char *who)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	for (long n = 0;; n++) {
		if (got) {
			printf("child got the parent-death signal\n");
			fflush(stdout);
			got = 0;
		}
		printf("%s tick %ld pid %d\n", who, n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
}

static void *fork_child(void *arg)
{
	pid_t pid = fork();

	(void)arg;
	if (pid == 0) {
		signal(SIGUSR1, on_usr1);
		prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0);
		tick("child");
	}
	printf("forked child %d\n", (int)pid);
	fflush(stdout);
	if (arg)
		for (;;)
			pause();
	return NULL;
}

int main(int argc, char **argv)
{
	static int stay = 1;
	pthread_t th;

	if (argc > 2)
		ms = atol(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "thread"))
		pthread_create(&th, NULL, fork_child, &stay);
	else
		fork_child(NULL);
	tick("parent");
}
