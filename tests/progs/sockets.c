// SPDX-License-Identifier: MIT
/*
 * UNIX sockets between a parent and its child, with data waiting in them:
 *
 *   a stream socketpair: the parent writes 3 numbered records a tick, the
 *      child reads 1 a tick (the rest waits) and answers each;
 *   a datagram socketpair: the parent sends 3 numbered messages a tick,
 *      the child reads 1 (the rest waits, message boundaries and all, up
 *      to the queue's limit, where the parent's send waits);
 *   a listening socket DIR/srv.sock: the child connects every 10 ticks
 *      (one connection stays open across the checkpoint) and checks that
 *      the parent, which accepts and echoes, answers on each.
 *
 * Every record, message and echo is checked ("FAIL ..." and exit 1);
 * the parent prints "tick N pid P child C" and "DONE pid P" at the end.
 *
 *   sockets DIR [TICKS [MS]]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void fail(const char *who, const char *what, long got, long want)
{
	printf("FAIL %s: %s: got %ld, want %ld\n", who, what, got, want);
	fflush(stdout);
	exit(1);
}

static int full(int fd, void *p, size_t n, int rd)
{
	uint8_t *c = p;

	while (n) {
		ssize_t k = rd ? read(fd, c, n) : write(fd, c, n);

		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static struct sockaddr_un server_addr(const char *dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/srv.sock", dir);
	return a;
}

/* One round trip on a new or kept connection to the server. */
static void ping(int c, int64_t v)
{
	int64_t back;

	if (full(c, &v, 8, 0) || full(c, &back, 8, 1) || back != v + 1000)
		fail("child", "echo from the server", back, v + 1000);
}

static int child(const char *dir, int s, int d, long ticks, long ms)
{
	struct sockaddr_un a = server_addr(dir);
	int64_t want = 0, dwant = 0, v;
	int kept = -1;

	for (long n = 0;; n++) {
		if (full(s, &v, 8, 1))
			fail("child", "stream read", -1, want);
		if (v < 0)
			break;
		if (v != want)
			fail("child", "stream record", v, want);
		want++;
		if (full(s, &want, 8, 0))
			fail("child", "stream answer", -1, want);
		if (recv(d, &v, 8, 0) != 8 || v != dwant)
			fail("child", "datagram", v, dwant);
		dwant++;
		if (n % 10 == 2) {
			int c = socket(AF_UNIX, SOCK_STREAM, 0);

			if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
				fail("child", "connect to the server", errno, 0);
			ping(c, n);
			if (kept < 0)
				kept = c;	/* stays open across the checkpoint */
			else
				close(c);
		}
		if (kept >= 0)
			ping(kept, n);
		if (n < ticks)
			sleep_ms(ms);	/* slower than the parent: data waits */
	}
	return 0;
}

static void serve(int l, int *conns, int *nconns)
{
	struct pollfd p[16];
	int n = 0;

	p[n++] = (struct pollfd){ l, POLLIN, 0 };
	for (int i = 0; i < *nconns; i++)
		p[n++] = (struct pollfd){ conns[i], POLLIN, 0 };
	while (poll(p, (nfds_t)n, 0) > 0) {
		if (p[0].revents & POLLIN && *nconns < 15)
			conns[(*nconns)++] = accept(l, NULL, NULL);
		for (int i = 1; i < n; i++) {
			int64_t v;

			if (!(p[i].revents & (POLLIN | POLLHUP)))
				continue;
			if (full(p[i].fd, &v, 8, 1)) {
				close(p[i].fd);
				conns[i - 1] = conns[--(*nconns)];
				return;
			}
			v += 1000;
			full(p[i].fd, &v, 8, 0);
		}
		n = 0;
		p[n++] = (struct pollfd){ l, POLLIN, 0 };
		for (int i = 0; i < *nconns; i++)
			p[n++] = (struct pollfd){ conns[i], POLLIN, 0 };
	}
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	long ticks = argc > 2 ? atol(argv[2]) : 40, ms = argc > 3 ? atol(argv[3]) : 100;
	struct sockaddr_un a = server_addr(dir);
	int s[2], d[2], l = socket(AF_UNIX, SOCK_STREAM, 0), conns[16], nconns = 0, st;
	int64_t next = 0, dnext = 0, answer, seen = 0;
	pid_t c;

	unlink(a.sun_path);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 8) ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, s) || socketpair(AF_UNIX, SOCK_DGRAM, 0, d))
		return 2;
	if ((c = fork()) == 0) {
		close(s[0]);
		close(d[0]);
		close(l);
		return child(dir, s[1], d[1], ticks, ms);
	}
	close(s[1]);
	close(d[1]);
	for (long n = 0; n < ticks; n++) {
		for (int k = 0; k < 3; k++, next++)
			if (full(s[0], &next, 8, 0))
				fail("parent", "stream write", -1, next);
		for (int k = 0; k < 3; k++, dnext++)
			if (send(d[0], &dnext, 8, 0) != 8)
				fail("parent", "datagram send", -1, dnext);
		/* answers: one a tick, at most as many as the child got */
		if (full(s[0], &answer, 8, 1) || answer != seen + 1)
			fail("parent", "answer", answer, seen + 1);
		seen = answer;
		serve(l, conns, &nconns);
		printf("tick %ld pid %d child %d\n", n, (int)getpid(), (int)c);
		fflush(stdout);
		for (int t = 0; t < 10; t++) {	/* keep echoing while we wait */
			sleep_ms(ms / 10);
			serve(l, conns, &nconns);
		}
	}
	next = -1;
	full(s[0], &next, 8, 0);
	while (waitpid(c, &st, WNOHANG) == 0) {
		serve(l, conns, &nconns);
		sleep_ms(5);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail("parent", "child's status", st, 0);
	unlink(a.sun_path);
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
