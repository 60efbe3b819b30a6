// SPDX-License-Identifier: MIT
/*
 * UDP datagrams waiting to be read across a checkpoint: an IPv4 and an
 * IPv6 socket, each sent numbered datagrams of varying sizes (an empty
 * one and one of 60000 bytes among them) from a sender socket of its
 * own, and a connected pair with datagrams queued in one end. Nothing is
 * read for PAUSE ticks; then every datagram must come, in order, with its
 * bytes, its length and its sender's address and port. "queued" once
 * sent, "tick N pid P" every tick, "DONE" at the end; anything else is a
 * FAIL line.
 *
 *   udpqueue [PAUSE [MS]]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define N4 22
#define N6 5
#define NC 3

static uint8_t buf[65536];

static void fail(const char *what, int k)
{
	printf("FAIL %s (datagram %d)%s%s\n", what, k, errno ? ": " : "",
	       errno ? strerror(errno) : "");
	fflush(stdout);
	exit(1);
}

static size_t size_of(int k)
{
	return k == 0 ? 0 : k == 1 ? 60000 : (size_t)k * 97;
}

static void fill(int tag, int k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(tag * 31 + k * 7 + i);
}

static int bound(int family)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int s = socket(family, SOCK_DGRAM, 0), big = 1 << 20;

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)) ||
	    bind(s, family == AF_INET ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6,
		 family == AF_INET ? sizeof(a4) : sizeof(a6)))
		fail("socket", -1);
	return s;
}

static void send_n(int from, int to, int tag, int n)
{
	struct sockaddr_storage a;
	socklen_t al = sizeof(a);

	if (getsockname(to, (struct sockaddr *)&a, &al))
		fail("getsockname", -1);
	for (int k = 0; k < n; k++) {
		fill(tag, k, size_of(k));
		if (sendto(from, buf, size_of(k), 0, (struct sockaddr *)&a, al) !=
		    (ssize_t)size_of(k))
			fail("sendto", k);
	}
}

static void read_n(int s, int from, int tag, int n)
{
	struct sockaddr_storage want, got;
	socklen_t wl = sizeof(want);

	if (getsockname(from, (struct sockaddr *)&want, &wl))
		fail("getsockname", -1);
	for (int k = 0; k < n; k++) {
		socklen_t gl = sizeof(got);
		ssize_t r = recvfrom(s, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&got, &gl);

		if (r < 0)
			fail("missing", k);
		errno = 0;
		if ((size_t)r != size_of(k)) {
			printf("FAIL %zd bytes where %zu were expected\n", r, size_of(k));
			fail("wrong length", k);
		}
		if (gl != wl || memcmp(&got, &want, gl))
			fail("wrong sender", k);
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != (uint8_t)(tag * 31 + k * 7 + i))
				fail("wrong byte", k);
	}
	if (recv(s, buf, sizeof(buf), MSG_DONTWAIT) >= 0 || errno != EAGAIN)
		fail("one datagram too many", n);
}

int main(int argc, char **argv)
{
	long pause = argc > 1 ? atol(argv[1]) : 30, ms = argc > 2 ? atol(argv[2]) : 100, t = 0;
	int r4 = bound(AF_INET), s4 = bound(AF_INET), r6 = bound(AF_INET6), s6 = bound(AF_INET6);
	int a = bound(AF_INET), b = bound(AF_INET);
	struct sockaddr_in aa, ba;
	socklen_t l = sizeof(aa);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getsockname(a, (struct sockaddr *)&aa, &l) || (l = sizeof(ba), getsockname(b, (struct sockaddr *)&ba, &l)) ||
	    connect(a, (struct sockaddr *)&ba, sizeof(ba)) ||
	    connect(b, (struct sockaddr *)&aa, sizeof(aa)))
		fail("connecting", -1);
	send_n(s4, r4, 1, N4);
	send_n(s6, r6, 2, N6);
	send_n(b, a, 3, NC);
	printf("queued\n");
	for (; t < pause; t++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		printf("tick %ld pid %d\n", t, (int)getpid());
		nanosleep(&ts, NULL);
	}
	read_n(r4, s4, 1, N4);
	read_n(r6, s6, 2, N6);
	read_n(a, b, 3, NC);
	/* and the sockets go on working */
	send_n(s4, r4, 4, 3);
	usleep(100000);
	read_n(r4, s4, 4, 3);
	printf("tick %ld pid %d\n", t, (int)getpid());
	printf("DONE\n");
	return 0;
}
