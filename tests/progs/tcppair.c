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
 *   tcppair [TICKS [6]]
 */
#include <arpa/inet.h>
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

static int child(struct sockaddr_in6 *a, long total)
{
	int s = socket(a->sin6_family, SOCK_STREAM, 0);
	unsigned expect = 1, got;
	char rec[REC];

	if (s < 0 || connect(s, (struct sockaddr *)a, a->sin6_family == AF_INET6 ? sizeof(*a) :
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

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 50;
	int v6 = argc > 2 && !strcmp(argv[2], "6");
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&a;
	socklen_t al = sizeof(a);
	int l = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), s, st;
	unsigned count = 0;
	char rec[REC], want[REC];
	pid_t c;

	if (!v6) {
		memset(&a, 0, sizeof(a));
		a4->sin_family = AF_INET;
		a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	if (l < 0 || bind(l, (struct sockaddr *)&a, v6 ? sizeof(a) : sizeof(*a4)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((c = fork()) == 0)
		return child(&a, ticks * 100);
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
			printf("tick %ld pid %d\n", n / 100, (int)getpid());
		}
		sleep_us(400);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL child status %#x\n", st);
		return 1;
	}
	printf("DONE\n");
	return 0;
}
