// SPDX-License-Identifier: MIT
/*
 * UNIX sockets in the states a restore must give back, one MODE a run,
 * files in DIR; each waits PAUSE ticks with the state set up, then checks
 * it as a program would:
 *
 *   dgram-bound    a non-blocking datagram socket bound to DIR/r.sock with
 *                  datagrams waiting (from DIR/s.sock, an empty one among
 *                  them, and from an unnamed socket): each comes in order,
 *                  with its length and its sender's name; then it is empty
 *                  and does not block
 *   dgram-deleted  the same, DIR/r.sock deleted after the bind: it keeps
 *                  its name and the file stays gone
 *   half-closed    a stream pair, one end shut down for writing after
 *                  sending: the other reads the bytes then the end, and the
 *                  shut end still reads, and cannot write (EPIPE)
 *   peer-closed    a stream pair, one end closed after sending: the bytes,
 *                  then the end
 *   pending        a listener DIR/l.sock with two connections not accepted
 *                  yet: accept gives them, in order, and they carry bytes
 *   pending-data   the same, a client having sent bytes already (which a
 *                  saver must refuse: it runs on and checks the same)
 *   rights         descriptors in flight (SCM_RIGHTS): the only write end of
 *                  a pipe and a file at offset 3 on a stream pair, an eventfd
 *                  on a datagram pair; received, they work
 *   creds          SCM_CREDENTIALS of a child (SO_PASSCRED): the child's pid,
 *                  uid and gid
 *
 * "ready" once set up, "tick N pid P" every tick, "DONE"; FAIL otherwise.
 *
 *   unixmore MODE DIR [PAUSE [MS]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static long ticks, pause_ticks = 20, ms = 100;

static void fail(const char *what)
{
	printf("FAIL %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	fflush(stdout);
	exit(1);
}

static void tick(void)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	printf("tick %ld pid %d\n", ticks++, (int)getpid());
	nanosleep(&ts, NULL);
}

static void wait_a_while(void)
{
	printf("ready\n");
	while (ticks < pause_ticks)
		tick();
}

static socklen_t name(const char *file, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", dir, file);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path) + 1);
}

static int bound(int type, const char *file)
{
	struct sockaddr_un a;
	socklen_t l = name(file, &a);
	int s = socket(AF_UNIX, type, 0);

	unlink(a.sun_path);
	if (s < 0 || bind(s, (struct sockaddr *)&a, l))
		fail(file);
	return s;
}

static void expect(int s, const char *want, int eof_after)
{
	char got[64];
	size_t n = strlen(want), k = 0;

	while (k < n) {
		ssize_t r = read(s, got + k, n - k);

		if (r <= 0)
			fail(r ? "read" : "the end where bytes were expected");
		k += (size_t)r;
	}
	errno = 0;
	if (memcmp(got, want, n))
		fail("wrong bytes");
	if (eof_after && read(s, got, 1) != 0)
		fail("bytes where the end was expected");
}

static size_t dsize(int k)
{
	return k == 1 ? 0 : (size_t)k * 50;
}

static void dgram(int deleted)
{
	int r = bound(SOCK_DGRAM | SOCK_NONBLOCK, "r.sock"), s = bound(SOCK_DGRAM, "s.sock");
	int u = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un ra, from, want;
	socklen_t rl = name("r.sock", &ra);
	char buf[512];

	for (int k = 0; k < 7; k++) {
		memset(buf, 'a' + k, sizeof(buf));
		if (sendto(k < 5 ? s : u, buf, k < 5 ? dsize(k) : 3, 0, (struct sockaddr *)&ra,
			   rl) < 0)
			fail("sendto");
	}
	if (deleted && unlink(ra.sun_path))
		fail("unlink");
	wait_a_while();
	for (int k = 0; k < 7; k++) {
		socklen_t fl = sizeof(from), wl = k < 5 ? name("s.sock", &want) : 0;
		ssize_t n = recvfrom(r, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);

		if (n < 0)
			fail("a datagram is missing");
		errno = 0;
		if ((size_t)n != (k < 5 ? dsize(k) : 3) || (n && buf[0] != 'a' + k))
			fail("a datagram is wrong");
		if (fl != wl || (k < 5 && strcmp(from.sun_path, want.sun_path)))
			fail("a datagram's sender is wrong");
	}
	if (recv(r, buf, 1, 0) >= 0 || errno != EAGAIN)
		fail("the socket is not empty and non-blocking");
	if (sendto(s, "z", 1, 0, (struct sockaddr *)&ra, rl) != (deleted ? -1 : 1))
		fail(deleted ? "a deleted name took a datagram" : "sending again");
	if (deleted) {
		struct stat st;
		struct sockaddr_un self;
		socklen_t sl = sizeof(self);

		errno = 0;
		if (!stat(ra.sun_path, &st) || getsockname(r, (struct sockaddr *)&self, &sl) ||
		    strcmp(self.sun_path, ra.sun_path))
			fail("the deleted socket's name");
	}
}

static void closed(int half)
{
	int sv[2];

	signal(SIGPIPE, SIG_IGN);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		fail("socketpair");
	if (write(sv[0], "abc", 3) != 3 || (half ? shutdown(sv[0], SHUT_WR) : close(sv[0])) ||
	    (half && write(sv[1], "xyz", 3) != 3))
		fail("setting up");
	wait_a_while();
	expect(sv[1], "abc", 1);
	if (half) {
		expect(sv[0], "xyz", 0);
		if (write(sv[0], "q", 1) != -1 || errno != EPIPE)
			fail("the shut end could write");
	}
}

static void pending(int data)
{
	struct sockaddr_un a;
	socklen_t l = name("l.sock", &a);
	int s = bound(SOCK_STREAM, "l.sock"), c1 = socket(AF_UNIX, SOCK_STREAM, 0),
	    c2 = socket(AF_UNIX, SOCK_STREAM, 0), a1, a2;

	if (listen(s, 4) || connect(c1, (struct sockaddr *)&a, l) ||
	    (data && write(c1, "hello", 5) != 5) || connect(c2, (struct sockaddr *)&a, l))
		fail("connecting");
	wait_a_while();
	if ((!data && write(c1, "hello", 5) != 5) || (a1 = accept(s, NULL, NULL)) < 0 ||
	    (a2 = accept(s, NULL, NULL)) < 0)
		fail("accept");
	expect(a1, "hello", 0);
	if (write(a1, "back", 4) != 4 || write(c2, "x", 1) != 1)
		fail("write");
	expect(c1, "back", 0);
	expect(a2, "x", 0);
	close(c2);
	expect(a2, "", 1);
}

static void send_fds(int s, const char *msg, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	struct iovec v = { (void *)msg, strlen(msg) };
	struct msghdr mh = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = CMSG_SPACE((size_t)n * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	memset(cbuf, 0, sizeof(cbuf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	if (sendmsg(s, &mh, 0) != (ssize_t)strlen(msg))
		fail("sendmsg");
}

static int recv_fds(int s, const char *msg, int *fds, int n)
{
	char cbuf[CMSG_SPACE(3 * sizeof(int))], got[32] = "";
	struct iovec v = { got, strlen(msg) };
	struct msghdr mh = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	if (recvmsg(s, &mh, 0) != (ssize_t)strlen(msg) || strcmp(got, msg))
		fail("recvmsg");
	c = CMSG_FIRSTHDR(&mh);
	errno = 0;
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN((size_t)n * sizeof(int)))
		fail("the descriptors did not come");
	memcpy(fds, CMSG_DATA(c), (size_t)n * sizeof(int));
	return 0;
}

static void rights(void)
{
	int st[2], dg[2], p[2], f, ev, got[2];
	char path[300];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/file", dir);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, st) || socketpair(AF_UNIX, SOCK_DGRAM, 0, dg) ||
	    pipe(p) || (f = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) < 0 ||
	    write(f, "hello", 5) != 5 || lseek(f, 3, SEEK_SET) != 3 ||
	    (ev = eventfd(7, 0)) < 0)
		fail("setting up");
	send_fds(st[0], "fdmsg", (int[]){ p[1], f }, 2);
	send_fds(dg[0], "evmsg", &ev, 1);
	close(p[1]);	/* the write end is only in flight now */
	close(f);
	close(ev);
	wait_a_while();
	recv_fds(st[1], "fdmsg", got, 2);
	if (write(got[0], "via", 3) != 3)
		fail("writing to the pipe received");
	close(got[0]);
	expect(p[0], "via", 1);
	expect(got[1], "lo", 1);
	recv_fds(dg[1], "evmsg", got, 1);
	if (read(got[0], &v, 8) != 8 || v != 7)
		fail("the eventfd received");
}

static void creds(void)
{
	int sv[2], on = 1;
	pid_t c;
	char cbuf[CMSG_SPACE(sizeof(struct ucred))], got = 0;
	struct iovec v = { &got, 1 };
	struct msghdr mh = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	struct ucred u;

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) ||
	    setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)))
		fail("socketpair");
	if ((c = fork()) == 0) {
		if (write(sv[0], "c", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	wait_a_while();
	if (recvmsg(sv[1], &mh, 0) != 1 || got != 'c' || !(cm = CMSG_FIRSTHDR(&mh)) ||
	    cm->cmsg_type != SCM_CREDENTIALS)
		fail("the message or its credentials");
	memcpy(&u, CMSG_DATA(cm), sizeof(u));
	errno = 0;
	if (u.pid != c || u.uid != getuid() || u.gid != getgid()) {
		printf("FAIL credentials pid %d uid %d gid %d, sender %d\n", (int)u.pid,
		       (int)u.uid, (int)u.gid, (int)c);
		exit(1);
	}
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[1] : "";

	dir = argc > 2 ? argv[2] : ".";
	pause_ticks = argc > 3 ? atol(argv[3]) : 20;
	ms = argc > 4 ? atol(argv[4]) : 100;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "dgram-bound") || !strcmp(mode, "dgram-deleted"))
		dgram(!strcmp(mode, "dgram-deleted"));
	else if (!strcmp(mode, "half-closed") || !strcmp(mode, "peer-closed"))
		closed(!strcmp(mode, "half-closed"));
	else if (!strcmp(mode, "pending") || !strcmp(mode, "pending-data"))
		pending(!strcmp(mode, "pending-data"));
	else if (!strcmp(mode, "rights"))
		rights();
	else if (!strcmp(mode, "creds"))
		creds();
	else
		fail("usage: unixmore MODE DIR [PAUSE [MS]]");
	tick();
	printf("DONE\n");
	return 0;
}
