// SPDX-License-Identifier: MIT
/*
 * What an open file description carries besides its file, checked from
 * inside after the restore (gate.h). MODE, in its own directory:
 *
 *   opath   O_PATH descriptors: of a file "f", of a symlink "l" (to f)
 *           itself (O_NOFOLLOW), of the directory; each is the same
 *           inode, still O_PATH, the symlink still reads "f", a file is
 *           opened through the directory's
 *   owner   a pipe with O_ASYNC whose I/O signals (F_SETOWN_EX) go to
 *           this process as SIGUSR1 (F_SETSIG): after the restore a write
 *           brings SIGUSR1 with si_fd, the owner and signal read back
 *   lease   a read lease on "lf" (F_SETLEASE), its break signal SIGUSR2:
 *           F_GETLEASE says F_RDLCK, and a child opening lf for writing
 *           breaks it: SIGUSR2 arrives here, the lease is given up, the
 *           child's open then succeeds
 *
 *   epoll   an epoll watching an eventfd added as fd A, which was closed
 *           since (the eventfd lives on at B), and one added as fd C,
 *           which holds another eventfd now (the first lives on at D):
 *           writes through B and D are reported with the entries' data
 *           words, one through the eventfd at C is not
 *
 *   pidfd   pidfds: of itself (non-blocking), of a child C that holds one
 *           of its parent, of a child Z that exited (a zombie): each one
 *           names the restored process (fdinfo Pid), C's exit is seen
 *           through poll and waitid(P_PIDFD) on it, Z's status too
 *
 *   inotify-moved  an inotify watching a directory and a file that were
 *           both moved far away since (to ../far-PID/deep): after the restore
 *           a file made in the directory and a write to the file are
 *           reported on their watches
 *
 *   fdattrs MODE
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK O_NONBLOCK
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#include "gate.h"

static void same_inode(int fd, const char *path, int follow)
{
	struct stat a, b;

	check(fstatat(fd, "", &a, AT_EMPTY_PATH) == 0 &&
	      (follow ? stat(path, &b) : lstat(path, &b)) == 0, "stat %s", path);
	check(a.st_ino == b.st_ino && a.st_dev == b.st_dev && (a.st_mode & S_IFMT) ==
	      (b.st_mode & S_IFMT), "the O_PATH descriptor is not %s", path);
	check((fcntl(fd, F_GETFL) & O_PATH) != 0, "the descriptor of %s is not O_PATH", path);
}

static void opath(void)
{
	int f, l, d, g;
	char buf[16] = "";

	check(close(open("f", O_CREAT | O_WRONLY, 0644)) == 0 && symlink("f", "l") == 0, "f, l");
	f = open("f", O_PATH);
	l = open("l", O_PATH | O_NOFOLLOW);
	d = open(".", O_PATH | O_DIRECTORY);
	check(f >= 0 && l >= 0 && d >= 0, "O_PATH opens");
	gate_wait();
	same_inode(f, "f", 1);
	same_inode(l, "l", 0);
	same_inode(d, ".", 1);
	check(readlinkat(l, "", buf, sizeof(buf) - 1) == 1 && !strcmp(buf, "f"),
	      "the symlink reads '%s'", buf);
	check((g = openat(d, "f", O_RDONLY)) >= 0, "opening f through the directory's fd");
	close(g);
}

static volatile sig_atomic_t got, got_fd = -1, broke;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	got++;
	got_fd = si->si_fd;
}

static void on_usr2(int sig)
{
	(void)sig;
	broke++;
}

static void wait_for(volatile sig_atomic_t *v, const char *what)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 1000 && !*v; i++)
		nanosleep(&ts, NULL);
	check(*v != 0, "no %s after 10 s", what);
}

static void owner(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	struct f_owner_ex own = { F_OWNER_PID, getpid() }, back = { 0, 0 };
	int p[2];

	check(sigaction(SIGUSR1, &sa, NULL) == 0 && pipe(p) == 0, "setup");
	check(fcntl(p[0], F_SETOWN_EX, &own) == 0 && fcntl(p[0], F_SETSIG, SIGUSR1) == 0 &&
	      fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK) == 0, "F_SETOWN_EX, F_SETSIG, O_ASYNC");
	gate_wait();
	check(fcntl(p[0], F_GETOWN_EX, &back) == 0 && back.type == F_OWNER_PID &&
	      back.pid == getpid(), "owner %d type %d after the restore", back.pid, back.type);
	check(fcntl(p[0], F_GETSIG) == SIGUSR1, "F_GETSIG %d", fcntl(p[0], F_GETSIG));
	check(write(p[1], "x", 1) == 1, "write");
	wait_for(&got, "SIGUSR1 for the pipe's input");
	check(got_fd == p[0], "the signal names fd %d, not %d", (int)got_fd, p[0]);
}

static void lease(void)
{
	int fd, st;
	pid_t c;

	check(close(open("lf", O_CREAT | O_WRONLY, 0644)) == 0, "lf");
	check((fd = open("lf", O_RDONLY)) >= 0, "open lf");
	check(signal(SIGUSR2, on_usr2) != SIG_ERR && fcntl(fd, F_SETSIG, SIGUSR2) == 0 &&
	      fcntl(fd, F_SETLEASE, F_RDLCK) == 0, "F_SETLEASE");
	gate_wait();
	check(fcntl(fd, F_GETLEASE) == F_RDLCK, "F_GETLEASE %d", fcntl(fd, F_GETLEASE));
	if (!(c = fork())) {
		int w = open("lf", O_WRONLY);	/* blocks until the lease is given up */

		_exit(w >= 0 ? 0 : 1);
	}
	wait_for(&broke, "SIGUSR2 for the lease break");
	check(fcntl(fd, F_SETLEASE, F_UNLCK) == 0, "giving the lease up");
	check(waitpid(c, &st, 0) == c && st == 0, "the child could not open lf for writing");
}

/* The data words epoll reports now (0 if none). */
static uint64_t ready(int ep)
{
	struct epoll_event ev[4];
	int n = epoll_wait(ep, ev, 4, 100);

	check(n >= 0 && n <= 1, "%d events at once", n);
	return n ? ev[0].data.u64 : 0;
}

static void epoll_moved(void)
{
	struct epoll_event ea = { EPOLLIN, { .u64 = 0x11 } }, ec = { EPOLLIN, { .u64 = 0x22 } };
	int ep = epoll_create1(0), a = eventfd(0, EFD_NONBLOCK), b, c, d, other;
	uint64_t one = 1, got;

	check(ep >= 0 && a >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, a, &ea) == 0, "epoll, a");
	check((b = dup(a)) >= 0 && close(a) == 0, "a moved to b");
	c = eventfd(0, EFD_NONBLOCK);
	check(c >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, c, &ec) == 0, "c");
	other = eventfd(0, EFD_NONBLOCK);
	check((d = dup(c)) >= 0 && dup2(other, c) == c && close(other) == 0, "c renumbered");
	check(ready(ep) == 0, "something ready before");
	gate_wait();
	check(write(b, &one, 8) == 8, "writing through b");
	got = ready(ep);
	check(got == 0x11, "a write through b: the closed entry reports %#llx",
	      (unsigned long long)got);
	check(read(b, &got, 8) == 8 && write(d, &one, 8) == 8, "writing through d");
	got = ready(ep);
	check(got == 0x22, "a write through d: the renumbered entry reports %#llx",
	      (unsigned long long)got);
	check(read(d, &got, 8) == 8 && write(c, &one, 8) == 8 && ready(ep) == 0,
	      "the eventfd now at c is watched");
}

static long fd_pid(int fd)
{
	char p[64], line[128];
	long pid = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	check((f = fopen(p, "r")) != NULL, "fdinfo of %d", fd);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Pid:", 4))
			pid = atol(line + 4);
	fclose(f);
	return pid;
}

static void pidfds(void)
{
	int go[2], self, cfd, zfd;
	struct pollfd pf;
	siginfo_t si;
	pid_t c, z;

	check(pipe(go) == 0, "pipe");
	if (!(c = fork())) {
		int pfd = (int)syscall(SYS_pidfd_open, getppid(), 0);
		char x;

		if (pfd < 0 || read(go[0], &x, 1) != 1)
			_exit(10);
		_exit(fd_pid(pfd) == getppid() ? 0 : 11);	/* its parent's, restored */
	}
	if (!(z = fork()))
		_exit(5);
	self = (int)syscall(SYS_pidfd_open, getpid(), PIDFD_NONBLOCK);
	cfd = (int)syscall(SYS_pidfd_open, c, 0);
	check(self >= 0 && cfd >= 0, "pidfds");
	check(waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT) == 0, "z exits");
	check((zfd = (int)syscall(SYS_pidfd_open, z, 0)) >= 0, "pidfd of a zombie");
	gate_wait();
	check(fd_pid(self) == getpid() && (fcntl(self, F_GETFL) & O_NONBLOCK), "its own pidfd");
	check(fd_pid(cfd) == c, "the child's pidfd names %ld, not %d", fd_pid(cfd), (int)c);
	check(fd_pid(zfd) == z, "the zombie's pidfd names %ld, not %d", fd_pid(zfd), (int)z);
	pf = (struct pollfd){ cfd, POLLIN, 0 };
	check(poll(&pf, 1, 0) == 0, "the child's pidfd is ready before it exits");
	check(write(go[1], "g", 1) == 1, "go");
	check(poll(&pf, 1, 10000) == 1, "its pidfd does not say the child exited");
	check(waitid(P_PIDFD, (id_t)cfd, &si, WEXITED) == 0 && si.si_pid == c, "waitid on it");
	check(si.si_code == CLD_EXITED && si.si_status == 0, "the child's check %d failed",
	      si.si_status);
	check(waitid(P_PIDFD, (id_t)zfd, &si, WEXITED) == 0 && si.si_pid == z &&
	      si.si_status == 5, "the zombie's status through its pidfd");
}

static void inotify_moved(void)
{
	int in = inotify_init1(IN_NONBLOCK), wd1, wd2, f;
	char b[4096], far[64], deep[80], y[96], h[96], made[112];
	struct pollfd pf;
	uint32_t seen = 0;

	check(in >= 0 && mkdir("x", 0755) == 0 && close(open("g", O_CREAT | O_WRONLY, 0644)) == 0,
	      "setup");
	wd1 = inotify_add_watch(in, "x", IN_CREATE);
	wd2 = inotify_add_watch(in, "g", IN_MODIFY);
	check(wd1 == 1 && wd2 == 2, "watches %d %d", wd1, wd2);
	snprintf(far, sizeof(far), "../far-%d", (int)getpid());
	snprintf(deep, sizeof(deep), "%s/deep", far);
	snprintf(y, sizeof(y), "%s/y", deep);
	snprintf(h, sizeof(h), "%s/h", deep);
	snprintf(made, sizeof(made), "%s/new", y);
	check(mkdir(far, 0755) == 0 && mkdir(deep, 0755) == 0 && rename("x", y) == 0 &&
	      rename("g", h) == 0, "moving");
	gate_wait();
	check(mkdir(made, 0755) == 0, "making a directory in the moved one");
	check((f = open(h, O_WRONLY | O_APPEND)) >= 0 && write(f, "x", 1) == 1,
	      "writing the moved file");
	close(f);
	pf = (struct pollfd){ in, POLLIN, 0 };
	for (int tries = 0; tries < 100 && seen != 3; tries++) {
		ssize_t k;

		if (poll(&pf, 1, 100) <= 0 || (k = read(in, b, sizeof(b))) <= 0)
			continue;
		for (char *p = b; p < b + k;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			seen |= (ev->wd == 1 && (ev->mask & IN_CREATE)) ? 1 : 0;
			seen |= (ev->wd == 2 && (ev->mask & IN_MODIFY)) ? 2 : 0;
			p += sizeof(*ev) + ev->len;
		}
	}
	check(seen == 3, "events seen: %#x, want 3 (the moved watches)", seen);
}

int main(int argc, char **argv)
{
	static const struct gate_mode modes[] = {
		{ "opath", opath }, { "owner", owner }, { "lease", lease }, { "epoll", epoll_moved },
		{ "pidfd", pidfds }, { "inotify-moved", inotify_moved },
	};

	return gate_main(argc, argv, modes, sizeof(modes) / sizeof(modes[0]));
}
