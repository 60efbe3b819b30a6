// SPDX-License-Identifier: MIT
/*
 * An established loopback TCP connection with bytes in flight: a child
 * connects to its parent and streams 16-byte numbered records faster than
 * the parent reads them, so both the sender's and the receiver's queues
 * hold data most of the time; every 100 records the parent prints "tick
 * N pid P" and sends the child a 4-byte count, which the child checks.
 * A record out of order, lost or doubled, or a count out of turn, is a
 * FAIL line. With "6", over IPv6 (::1).
 *
 *   tcppair [TICKS [6 | SERVER_ADDR CLIENT_ADDR]]
 *
 * With two IPv4 addresses the parent listens on SERVER_ADDR and the child
 * binds CLIENT_ADDR before it connects; each tick line then also says
 * "conn LOCAL->PEER", the parent's end as the kernel names it now (after
 * a restart with --addr-map, the new addresses). The child is then on its
 * own (a grandchild, "client pid P" on stdout, as the other end of a
 * connection between two nodes would be), and prints "CLIENT DONE" once
 * every count it was sent was right; the parent's "DONE" means every
 * record arrived in order. Both then write stdout through descriptions of
 * their own, appending, so that two images restored apart (each with its
 * own offset) never write over each other's lines.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REC 16

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static int read_all(int s, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t k = read(s, c, n);

		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int child(struct sockaddr_in6 *a, const struct sockaddr_in *me, long total)
{
	int s = socket(a->sin6_family, SOCK_STREAM, 0);
	unsigned expect = 1, got;
	char rec[REC];

	if (s < 0 || (me->sin_addr.s_addr && bind(s, (const struct sockaddr *)me, sizeof(*me))) ||
	    connect(s, (struct sockaddr *)a, a->sin6_family == AF_INET6 ? sizeof(*a) :
						      sizeof(struct sockaddr_in)))
		return 2;
	for (long n = 0; n < total; n++) {
		snprintf(rec, sizeof(rec), "rec %011u", (unsigned)n);
		if (write(s, rec, REC) != REC)
			return 3;
		if ((n + 1) % 100 == 0) {
			if (read_all(s, &got, 4))
				return 4;
			if (got != expect)
				printf("FAIL child: count %u where %u was expected\n", got, expect);
			expect++;
		}
		if (n % 8 == 0)
			sleep_us(1000);
	}
	close(s);
	return 0;
}

/* stdout through a description of this process's own, appending */
static int own_stdout(void)
{
	int fd = open("/proc/self/fd/1", O_WRONLY | O_APPEND);

	if (fd < 0 || dup2(fd, 1) != 1)
		return -1;
	close(fd);
	return 0;
}

/* " conn 192.0.2.1:4000->192.0.2.2:5000": s's addresses now, or "". */
static void conn_name(int s, char *out, size_t n)
{
	struct sockaddr_in a[2];
	socklen_t l0 = sizeof(a[0]), l1 = sizeof(a[1]);
	char h[2][INET_ADDRSTRLEN];

	if (getsockname(s, (struct sockaddr *)&a[0], &l0) ||
	    getpeername(s, (struct sockaddr *)&a[1], &l1) ||
	    !inet_ntop(AF_INET, &a[0].sin_addr, h[0], sizeof(h[0])) ||
	    !inet_ntop(AF_INET, &a[1].sin_addr, h[1], sizeof(h[1]))) {
		snprintf(out, n, " conn ?");
		return;
	}
	snprintf(out, n, " conn %s:%u->%s:%u", h[0], ntohs(a[0].sin_port), h[1],
		 ntohs(a[1].sin_port));
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 50;
	int v6 = argc == 3 && !strcmp(argv[2], "6"), named = argc > 3;
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&a;
	struct sockaddr_in me = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int l = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), s, st;
	unsigned count = 0;
	char rec[REC], want[REC], conn[80] = "";
	pid_t c;

	if (!v6) {
		memset(&a, 0, sizeof(a));
		a4->sin_family = AF_INET;
		a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	if (named && (inet_pton(AF_INET, argv[2], &a4->sin_addr) != 1 ||
		      inet_pton(AF_INET, argv[3], &me.sin_addr) != 1)) {
		fprintf(stderr, "tcppair: %s, %s: not IPv4 addresses\n", argv[2], argv[3]);
		return 2;
	}
	if (named && own_stdout()) {
		perror("tcppair: stdout");
		return 2;
	}
	if (l < 0 || bind(l, (struct sockaddr *)&a, v6 ? sizeof(a) : sizeof(*a4)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((c = fork()) == 0 && !named)
		return child(&a, &me, ticks * 100);
	if (c == 0) {	/* named: the client is a grandchild, on its own */
		if ((c = fork()) != 0)
			_exit(c < 0);
		close(l);	/* another node's process would not hold it */
		if (own_stdout())
			return 2;
		printf("client pid %d\n", (int)getpid());
		if ((st = child(&a, &me, ticks * 100)) == 0)
			printf("CLIENT DONE\n");
		return st;
	}
	if (c < 0 || (named && (waitpid(c, &st, 0) != c || st)))
		return 2;
	if ((s = accept(l, NULL, NULL)) < 0)
		return 2;
	for (long n = 0; n < ticks * 100; n++) {
		if (read_all(s, rec, REC)) {
			printf("FAIL parent: connection ended at record %ld\n", n);
			return 1;
		}
		snprintf(want, sizeof(want), "rec %011u", (unsigned)n);
		if (memcmp(rec, want, REC)) {
			printf("FAIL parent: record %ld reads '%.15s'\n", n, rec);
			return 1;
		}
		if ((n + 1) % 100 == 0) {
			count++;
			if (write(s, &count, 4) != 4)
				return 1;
			if (named)
				conn_name(s, conn, sizeof(conn));
			printf("tick %ld pid %d%s\n", n / 100, (int)getpid(), conn);
		}
		sleep_us(400);
	}
	if (!named && (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))) {
		printf("FAIL child status %#x\n", st);
		return 1;
	}
	printf("DONE\n");
	return 0;
}
