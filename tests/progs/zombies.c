// SPDX-License-Identifier: MIT
/*
 * Zombies keep their process group: the parent forks A, which leads a
 * group of its own, and B, which joins A's group; both exit (3 and 4)
 * and stay unreaped. Each tick the parent checks, from /proc/PID/stat,
 * that both are zombies in group A; after TICKS ticks it reaps them and
 * checks their exit statuses. Any difference: "FAIL ..." and exit 1.
 *
 *   zombies [TICKS [MS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* State letter and process group of pid, from /proc/PID/stat. */
static int stat_of(pid_t pid, char *state, int *pgid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	p = ok ? strrchr(buf, ')') : NULL;
	return p && sscanf(p + 2, "%c %*d %d", state, pgid) == 2 ? 0 : -1;
}

static pid_t child(const int p[2], int code)
{
	pid_t pid = fork();
	char c;

	if (pid == 0) {
		close(p[1]);
		while (read(p[0], &c, 1) > 0)	/* until the parent has set our group */
			;
		_exit(code);
	}
	return pid;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 30;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	int p[2], st;
	pid_t a, b;

	if (pipe(p))
		return 2;
	a = child(p, 3);
	b = child(p, 4);
	if (setpgid(a, a) || setpgid(b, a)) {
		printf("FAIL setpgid\n");
		return 1;
	}
	close(p[0]);
	close(p[1]);
	printf("zombies %d %d\n", (int)a, (int)b);
	for (long n = 0; n < ticks; n++) {
		const pid_t z[2] = { a, b };

		nanosleep(&ts, NULL);
		for (int i = 0; i < 2; i++) {
			char state = '?';
			int pgid = -1;

			if (stat_of(z[i], &state, &pgid) || (state != 'Z' && n > 3) || pgid != a) {
				printf("FAIL pid %d: state %c group %d, expected a zombie in group %d\n",
				       (int)z[i], state, pgid, (int)a);
				return 1;
			}
		}
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
	}
	if (waitpid(a, &st, 0) != a || !WIFEXITED(st) || WEXITSTATUS(st) != 3 ||
	    waitpid(b, &st, 0) != b || !WIFEXITED(st) || WEXITSTATUS(st) != 4) {
		printf("FAIL exit statuses\n");
		return 1;
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
