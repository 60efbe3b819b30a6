// SPDX-License-Identifier: MIT
/*
 * A process in a chroot: as root it changes its root directory to DIR
 * and its working directory to /sub inside it. Each tick it checks that
 * "/" is DIR (same device and inode as before), that getcwd() is still
 * "/sub", and that /MARKER, a file only DIR holds, is there; prints
 * "tick N pid P". Any difference: "FAIL ..." and exit 1.
 *
 *   chrooted DIR TICKS [MS]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what, const char *detail)
{
	printf("FAIL %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	fflush(stdout);
	_exit(1);
}

int main(int argc, char **argv)
{
	long ticks = argc > 2 ? atol(argv[2]) : 100;
	long ms = argc > 3 ? atol(argv[3]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	struct stat jail, st;
	char cwd[4096];

	if (argc < 3)
		fail("usage: chrooted DIR TICKS [MS]", NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (stat(argv[1], &jail) || chroot(argv[1]) || chdir("/sub"))
		fail("entering the chroot", argv[1]);
	for (long n = 0; n < ticks; n++) {
		if (stat("/", &st) || st.st_ino != jail.st_ino || st.st_dev != jail.st_dev)
			fail("the root directory is not the chroot", argv[1]);
		if (!getcwd(cwd, sizeof(cwd)) || strcmp(cwd, "/sub"))
			fail("the working directory is not /sub", cwd);
		if (access("/MARKER", F_OK))
			fail("/MARKER is missing", NULL);
		printf("tick %ld pid %d\n", n, (int)getpid());
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
