// SPDX-License-Identifier: MIT
/*
 * Files a restore must reopen where they were:
 *
 *   DATA    an existing file opened read-write and positioned at OFFSET;
 *           each tick writes a 9-byte record "rec NNNN\n" at the current
 *           position, so the file ends up as its old bytes with the
 *           records laid over them from OFFSET on
 *   APPEND  opened O_APPEND; each tick seeks to 0 and writes "app N\n",
 *           which must still land at the end
 *
 *   DATA also opened O_DIRECT, read 4 KiB at 0 each tick through an
 *           aligned buffer ("direct on" first; "direct unsupported" where
 *           the file system refuses O_DIRECT)
 *
 * Each tick it checks DATA's offset is where its records end, APPEND
 * still has O_APPEND and the direct descriptor O_DIRECT, then prints "tick
 * N pid P" on stdout (a pipe, a terminal or a file). Any mismatch: "FAIL
 * ..." on stdout and exit 1.
 *
 *   stdio TICKS MS DATA OFFSET APPEND
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what)
{
	printf("FAIL %s\n", what);
	fflush(stdout);
	exit(1);
}

int main(int argc, char **argv)
{
	long ticks, ms;
	static char block[4096] __attribute__((aligned(4096)));
	off_t offset;
	int data, app, direct;

	if (argc != 6) {
		fprintf(stderr, "usage: stdio TICKS MS DATA OFFSET APPEND\n");
		return 2;
	}
	ticks = atol(argv[1]);
	ms = atol(argv[2]);
	offset = atol(argv[4]);
	data = open(argv[3], O_RDWR);
	app = open(argv[5], O_WRONLY | O_APPEND);
	if (data < 0 || app < 0 || lseek(data, offset, SEEK_SET) != offset)
		fail("cannot open the files");
	direct = open(argv[3], O_RDONLY | O_DIRECT);
	if (direct < 0 && errno != EINVAL)
		fail("cannot open the data file O_DIRECT");
	printf("direct %s\n", direct < 0 ? "unsupported" : "on");
	for (long n = 0; n < ticks; n++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
		char rec[32], line[32];

		if (lseek(data, 0, SEEK_CUR) != offset + n * 9)
			fail("data file offset moved");
		if (!(fcntl(app, F_GETFL) & O_APPEND))
			fail("append file lost O_APPEND");
		if (direct >= 0 && (!(fcntl(direct, F_GETFL) & O_DIRECT) ||
				    pread(direct, block, 4096, 0) != 4096))
			fail("the O_DIRECT descriptor lost O_DIRECT or cannot read");
		snprintf(rec, sizeof(rec), "rec %04ld\n", n);
		snprintf(line, sizeof(line), "app %ld\n", n);
		/* with O_APPEND the seek does not matter: the write goes to the end */
		if (write(data, rec, 9) != 9 || lseek(app, 0, SEEK_SET) != 0 ||
		    write(app, line, strlen(line)) != (ssize_t)strlen(line))
			fail("write");
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
