// SPDX-License-Identifier: MIT
/*
 * Job control seen from a parent, as a shell sees its jobs: the child
 * ticks ("child tick N pid P"); the parent waits for it with WUNTRACED
 * and WCONTINUED and says what happened: "child stopped by SIG",
 * "child continued", "child exited STATUS" (then it exits too).
 *
 *   jobctl [MS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	pid_t child = fork();

	if (child < 0)
		return 2;
	if (child == 0) {
		for (long n = 0;; n++) {
			printf("child tick %ld pid %d\n", n, (int)getpid());
			fflush(stdout);
			nanosleep(&ts, NULL);
		}
	}
	printf("parent pid %d child %d\n", (int)getpid(), (int)child);
	fflush(stdout);
	for (;;) {
		int st;
		pid_t w = waitpid(child, &st, WUNTRACED | WCONTINUED);

		if (w != child)
			continue;
		if (WIFSTOPPED(st))
			printf("child stopped by %d\n", WSTOPSIG(st));
		else if (WIFCONTINUED(st))
			printf("child continued\n");
		else {
			printf("child exited %#x\n", st);
			return 0;
		}
		fflush(stdout);
	}
}
