// SPDX-License-Identifier: MIT
/*
 * A client that increments a counter on a server over one TCP connection,
 * one request at a time, for as long as it runs: redis (`INCR KEY`,
 * answered ":N") or memcached (`incr KEY 1`, answered "N"; the key is
 * made first with `set`). Every answer must be the previous one plus
 * one; the connection must never end or be reset. It prints "tick N" every
 * 20 answers, and on SIGTERM (or after COUNT answers) "acked N stall_ms
 * S", N the answers received and S the longest wait for one, then exits
 * 0. Anything else is a FAIL line and exit 1.
 *
 *   incrloop redis|memcached PORT KEY [COUNT [GAP_MS]]
 *
 * With GAP_MS, it waits that long between requests (default 5 ms).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what, long n)
{
	printf("FAIL after %ld answers: %s%s%s\n", n, what, errno ? ": " : "",
	       errno ? strerror(errno) : "");
	exit(1);
}

/* One line, without its \r\n; 0 at the end of the connection. */
static int read_line(int s, char *line, size_t n, long acked)
{
	size_t k = 0;

	while (k + 1 < n) {
		ssize_t r = recv(s, line + k, 1, 0);

		if (r < 0 && errno == EINTR && !stop)
			continue;
		if (r < 0 && errno == EINTR)
			return -1;	/* the answer may still come: not counted */
		if (r <= 0) {
			if (r == 0)
				errno = 0;
			die(r == 0 ? "the server closed the connection" : "reading", acked);
		}
		if (line[k] == '\n') {
			line[k > 0 && line[k - 1] == '\r' ? k - 1 : k] = 0;
			return 1;
		}
		k++;
	}
	die("answer too long", acked);
	return -1;
}

static void send_all(int s, const char *p, long acked)
{
	size_t n = strlen(p);

	while (n) {
		ssize_t k = send(s, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die("sending", acked);
		p += k;
		n -= (size_t)k;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sigaction sa = { .sa_handler = on_term };
	int redis, s, one = 1;
	long count, gap, acked = 0, first = -1;
	double stall = 0;
	char req[128], line[256];

	if (argc < 4)
		return 2;
	redis = !strcmp(argv[1], "redis");
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	count = argc > 4 ? atol(argv[4]) : 0;
	gap = argc > 5 ? atol(argv[5]) : 5;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGTERM, &sa, NULL);	/* no SA_RESTART: a wait for an answer ends */
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		die("connecting", 0);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!redis) {
		snprintf(req, sizeof(req), "set %s 0 0 1\r\n0\r\n", argv[3]);
		send_all(s, req, 0);
		if (read_line(s, line, sizeof(line), 0) != 1 || strcmp(line, "STORED"))
			die("set did not store", 0);
		first = 0;
	}
	snprintf(req, sizeof(req), redis ? "INCR %s\r\n" : "incr %s 1\r\n", argv[3]);
	while (!stop && (!count || acked < count)) {
		double t0 = now_ms();
		long v;

		send_all(s, req, acked);
		if (read_line(s, line, sizeof(line), acked) < 0)
			break;
		if (now_ms() - t0 > stall)
			stall = now_ms() - t0;
		v = strtol(line + (redis && line[0] == ':'), NULL, 10);
		if ((redis && line[0] != ':') || (first >= 0 && v != first + acked + 1)) {
			printf("FAIL answer %ld: '%s', expected %ld\n", acked + 1, line,
			       first + acked + 1);
			return 1;
		}
		if (first < 0)
			first = v - 1;
		if (++acked % 20 == 0)
			printf("tick %ld value %ld\n", acked / 20 - 1, v);
		if (gap) {
			struct timespec ts = { gap / 1000, (gap % 1000) * 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	printf("acked %ld last %ld stall_ms %.0f\n", acked, first + acked, stall);
	return 0;
}
