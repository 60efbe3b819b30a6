// SPDX-License-Identifier: MIT
/*
 * A program whose state names paths under one directory DIR (its cwd),
 * for restores of a tree moved or copied elsewhere (--path-map):
 *
 *   - it runs from DIR/bin (its executable is mapped from there);
 *   - DIR/input, which it wrote at start, open read-only: each tick it
 *     reads it back at its offset and compares;
 *   - DIR/map, mapped private read-only: compared each tick too;
 *   - a UNIX datagram socket bound at DIR/sock and a second one connected
 *     to that name: each tick one sends, the other must receive;
 *   - an inotify watch on DIR: a file that appears there is reported
 *     ("saw NAME").
 *
 * Each tick prints "tick N pid P cwd CWD"; any wrong answer "FAIL ..."
 * and exit 1. When CWD's name changes it says "moved OLD NEW" once.
 *
 *   moved [TICKS [MS]]   (started with DIR as its working directory)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char content[] = "the input of a moved program, 0123456789\n";

static int fail(const char *what)
{
	printf("FAIL %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

static int bound(const char *name, int conn)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", name);
	if (s < 0 || (conn ? connect(s, (void *)&a, sizeof(a)) : bind(s, (void *)&a, sizeof(a))))
		fail(conn ? "connect sock" : "bind sock");
	return s;
}

static void setup(int *in, const char **map, int *srv, int *cli, int *ino)
{
	char name[108];
	int fd = open("input", O_CREAT | O_TRUNC | O_WRONLY, 0644);

	if (fd < 0 || write(fd, content, sizeof(content)) != sizeof(content) || close(fd))
		fail("write input");
	fd = open("map", O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0 || write(fd, content, sizeof(content)) != sizeof(content))
		fail("write map");
	*map = mmap(NULL, sizeof(content), PROT_READ, MAP_PRIVATE, fd, 0);
	if (*map == MAP_FAILED || close(fd))
		fail("mmap map");
	*in = open("input", O_RDONLY);
	if (*in < 0 || lseek(*in, 4, SEEK_SET) != 4)
		fail("open input");
	/* by its absolute name: the one the image keeps and --path-map maps */
	if (!getcwd(name, sizeof(name) - 8))
		fail("getcwd");
	strcat(name, "/sock");
	unlink(name);
	*srv = bound(name, 0);
	*cli = bound(name, 1);
	*ino = inotify_init1(IN_NONBLOCK);
	if (*ino < 0 || inotify_add_watch(*ino, ".", IN_CREATE) < 0)
		fail("inotify");
}

static void check(int in, const char *map, int srv, int cli, int ino, long n)
{
	char buf[4096], msg[32];
	ssize_t k;

	if (read(in, buf, 8) != 8 || memcmp(buf, content + 4, 8) || lseek(in, 4, SEEK_SET) != 4)
		fail("reading input again");
	if (memcmp(map, content, sizeof(content)))
		fail("map changed");
	snprintf(msg, sizeof(msg), "msg %ld", n);
	if (send(cli, msg, strlen(msg) + 1, 0) < 0)
		fail("send to sock");
	k = recv(srv, buf, sizeof(buf), 0);
	if (k < 0 || strcmp(buf, msg))
		fail("receive on sock");
	while ((k = read(ino, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + k; ) {
			struct inotify_event *ev = (void *)p;

			if (ev->len)
				printf("saw %s\n", ev->name);
			p += sizeof(*ev) + ev->len;
		}
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	char cwd[PATH_MAX], was[PATH_MAX] = "";
	const char *map;
	int in, srv, cli, ino;

	setup(&in, &map, &srv, &cli, &ino);
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		check(in, map, srv, cli, ino, n);
		if (!getcwd(cwd, sizeof(cwd)))
			fail("getcwd");
		if (was[0] && strcmp(was, cwd))
			printf("moved %s %s\n", was, cwd);
		snprintf(was, sizeof(was), "%s", cwd);
		printf("tick %ld pid %d cwd %s\n", n, (int)getpid(), cwd);
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
