// SPDX-License-Identifier: MIT
/*
 * Holds a descriptor on fd 3 and ticks, so that a test can check what
 * saver and restart-loader do with it (a refused checkpoint leaves it
 * running). KIND, with files made in the working directory:
 *
 *   pidfd           a pidfd of its parent, outside the image (not supported)
 *   netlink         a netlink (route) socket
 *   proc-self       /proc/self/stat (not supported: a file of the process
 *                   itself, which a restore gives another pid or none)
 *   proc-self-dir   /proc/self/fd, a directory (not supported either)
 *   eventfd         an eventfd (supported)
 *   inotify-unread  an inotify watching the directory, in which it then
 *                   creates "new": an event nobody read
 *   epoll-closed    an epoll whose target, added as fd 4, now lives at
 *                   fd 5 only
 *   deleted-linked-far  a file with two names, one deleted, the other
 *                   (../far/x/y/b) far from the process's directories
 *   memfd-sealed    a memfd sealed against writing, also mapped shared
 *   mqueue          a POSIX message queue (mq_open: not supported; it
 *                   looks like a regular file, "/NAME", reopened by that
 *                   name it would be another file)
 *   fanotify        a fanotify group (not supported)
 *   aio             an aio context (io_setup: a ring mapped shared, not
 *                   supported)
 *   deleted         sub/f, 6 bytes, deleted; reading it from offset 2 each
 *                   tick must give "llo\n", else "FAIL" and exit 1
 *
 *   fdholder KIND [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <mqueue.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef NETLINK_ROUTE
#define NETLINK_ROUTE 0	/* linux/netlink.h: not in every cross sysroot */
#endif

static int watched_dir(void)
{
	int in = inotify_init1(0);

	return in != 3 || inotify_add_watch(in, ".", IN_CREATE) < 0 ||
	       close(open("new", O_CREAT | O_WRONLY, 0644));
}

static int epoll_closed(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(0), e = eventfd(0, 0);

	return ep != 3 || e != 4 || epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) ||
	       dup2(e, 5) != 5 || close(e);
}

static int deleted(void)
{
	int fd;

	if (mkdir("sub", 0755) || (fd = open("sub/f", O_RDWR | O_CREAT, 0644)) != 3)
		return -1;
	return write(fd, "hello\n", 6) != 6 || lseek(fd, 2, SEEK_SET) != 2 || unlink("sub/f");
}

/* The file kinds: 0 when set up, else -1 (or an unknown kind). */
static int hold_file(const char *kind)
{
	int fd;

	if (!strcmp(kind, "inotify-unread"))
		return watched_dir() ? -1 : 0;
	if (!strcmp(kind, "epoll-closed"))
		return epoll_closed() ? -1 : 0;
	if (!strcmp(kind, "deleted"))
		return deleted() ? -1 : 0;
	if (!strcmp(kind, "memfd-sealed"))
		return (fd = memfd_create("sealed", MFD_ALLOW_SEALING)) != 3 ||
		       ftruncate(fd, 4096) || fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) ||
		       mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED ? -1 : 0;
	if (!strcmp(kind, "mqueue")) {
		char name[32];

		snprintf(name, sizeof(name), "/ibcr-test-%d", (int)getpid());
		fd = (int)mq_open(name, O_CREAT | O_RDWR, 0600, NULL);
		return fd != 3 || mq_unlink(name) ? -1 : 0;
	}
	if (!strcmp(kind, "fanotify"))
		return (int)syscall(SYS_fanotify_init, 0, O_RDONLY) != 3 ? -1 : 0;
	if (!strcmp(kind, "aio")) {
		unsigned long ctx = 0;

		return syscall(SYS_io_setup, 8, &ctx) || eventfd(0, 0) != 3 ? -1 : 0;
	}
	if (!strcmp(kind, "deleted-linked-far"))
		return mkdir("../far", 0755) || mkdir("../far/x", 0755) ||
		       mkdir("../far/x/y", 0755) || open("a", O_RDWR | O_CREAT, 0644) != 3 ||
		       link("a", "../far/x/y/b") || unlink("a") ? -1 : 0;
	return -1;
}

int main(int argc, char **argv)
{
	long ticks = argc > 2 ? atol(argv[2]) : -1;
	long ms = argc > 3 ? atol(argv[3]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "pidfd")) {
		if (syscall(SYS_pidfd_open, getppid(), 0) != 3)
			return 2;
	} else if (!strcmp(argv[1], "eventfd")) {
		if (eventfd(0, 0) != 3)
			return 2;
	} else if (!strcmp(argv[1], "netlink")) {
		if (socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE) != 3)
			return 2;
	} else if (!strcmp(argv[1], "proc-self")) {
		if (open("/proc/self/stat", O_RDONLY) != 3)
			return 2;
	} else if (!strcmp(argv[1], "proc-self-dir")) {
		if (open("/proc/self/fd", O_RDONLY | O_DIRECTORY) != 3)
			return 2;
	} else if (hold_file(argv[1])) {
		return 2;
	}
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		char buf[8] = "";

		if (!strcmp(argv[1], "deleted") &&
		    (read(3, buf, sizeof(buf)) != 4 || memcmp(buf, "llo\n", 4) ||
		     lseek(3, 2, SEEK_SET) != 2)) {
			printf("FAIL the deleted file reads '%.4s'\n", buf);
			return 1;
		}
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
