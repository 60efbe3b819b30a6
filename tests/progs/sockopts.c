// SPDX-License-Identifier: MIT
/*
 * Sockets with options set, each checked by the program itself every
 * tick against what it set (getsockopt), and a connection kept busy:
 *
 *   a TCP listener (SO_REUSEADDR, TCP_DEFER_ACCEPT, TCP_FASTOPEN) and a
 *      loopback connection to it, both ends with keepalive settings,
 *      TCP_NODELAY, SO_LINGER, fixed buffer sizes, IP_TOS, IP_TTL,
 *      SO_PRIORITY, TCP_USER_TIMEOUT, TCP_CONGESTION, TCP_NOTSENT_LOWAT,
 *      SO_MARK (as root), a classic BPF filter; a ping-pong on it every
 *      tick;
 *   a second connection, idle, corked, bound to the device "lo", with
 *      IP_FREEBIND;
 *   a UDP socket (non-blocking) with SO_BROADCAST, SO_RCVTIMEO,
 *      multicast settings, IP_RECVERR, IP_PKTINFO, SO_TIMESTAMP;
 *   an IPv6 listener on ::1 with IPV6_V6ONLY, IPV6_TCLASS, IPV6_UNICAST_HOPS;
 *   a UNIX datagram pair (non-blocking) with SO_PASSCRED and SO_SNDBUF;
 *   a TCP and a UDP socket never bound (in none of the kernel's tables),
 *      with TCP_NODELAY and SO_BROADCAST.
 *
 * "tick N pid P" per tick, "DONE" at the end; a changed option or flag,
 * or a ping-pong that fails, is a FAIL line and exit 1.
 *
 *   sockopts [TICKS [MS]]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct want {
	int fd, level, name;
	const char *label;
	unsigned char val[32];
	socklen_t len;
};

static struct want wants[64];
static int nwants;

static void fail(const char *what)
{
	printf("FAIL %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	fflush(stdout);
	exit(1);
}

/* Sets the option and remembers what getsockopt says it is now. */
static void opt(int fd, int level, int name, const char *label, const void *v, socklen_t n)
{
	struct want *w = &wants[nwants++];

	if (setsockopt(fd, level, name, v, n))
		fail(label);
	w->fd = fd;
	w->level = level;
	w->name = name;
	w->label = label;
	w->len = sizeof(w->val);
	if (getsockopt(fd, level, name, w->val, &w->len))
		fail(label);
}

static void iopt(int fd, int level, int name, const char *label, int v)
{
	opt(fd, level, name, label, &v, sizeof(v));
}

#define IOPT(fd, level, name, v) iopt(fd, level, name, #name, v)

static void check(void)
{
	for (int i = 0; i < nwants; i++) {
		const struct want *w = &wants[i];
		unsigned char now[32];
		socklen_t l = sizeof(now);
		char msg[160];

		if (getsockopt(w->fd, w->level, w->name, now, &l))
			fail(w->label);
		if (l != w->len || memcmp(now, w->val, l)) {
			int a = 0, b = 0;

			memcpy(&a, w->val, sizeof(a) < w->len ? sizeof(a) : w->len);
			memcpy(&b, now, sizeof(b) < l ? sizeof(b) : l);
			snprintf(msg, sizeof(msg), "fd %d option %s is %d (%u bytes), was set to %d "
				 "(%u bytes)", w->fd, w->label, b, l, a, w->len);
			errno = 0;
			fail(msg);
		}
	}
}

static int tcp_socket(int family)
{
	int s = socket(family, SOCK_STREAM, 0);

	if (s < 0)
		fail("socket");
	return s;
}

/* The busy connection and its listener, with their options. */
static void busy_pair(int *l, int *c, int *a)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct linger lg = { 1, 5 };
	struct sock_filter accept_all = BPF_STMT(BPF_RET | BPF_K, 0xffffffff);
	struct sock_fprog prog = { 1, &accept_all };
	const char reno[] = "reno";

	*l = tcp_socket(AF_INET);
	IOPT(*l, SOL_SOCKET, SO_REUSEADDR, 1);
	if (bind(*l, (struct sockaddr *)&sa, sizeof(sa)) || listen(*l, 8) ||
	    getsockname(*l, (struct sockaddr *)&sa, &sl))
		fail("listen");
	IOPT(*l, IPPROTO_TCP, TCP_DEFER_ACCEPT, 7);
	IOPT(*l, IPPROTO_TCP, TCP_FASTOPEN, 5);
	*c = tcp_socket(AF_INET);
	IOPT(*c, SOL_SOCKET, SO_REUSEADDR, 1);
	IOPT(*c, SOL_SOCKET, SO_SNDBUF, 100000);
	IOPT(*c, SOL_SOCKET, SO_RCVBUF, 80000);
	if (connect(*c, (struct sockaddr *)&sa, sizeof(sa)) || write(*c, "x", 1) != 1)
		fail("connect");
	if ((*a = accept(*l, NULL, NULL)) < 0 || read(*a, (char[1]){ 0 }, 1) != 1)
		fail("accept");
	for (int k = 0; k < 2; k++) {
		int s = k ? *a : *c;

		IOPT(s, SOL_SOCKET, SO_KEEPALIVE, 1);
		IOPT(s, IPPROTO_TCP, TCP_KEEPIDLE, 300 + k);
		IOPT(s, IPPROTO_TCP, TCP_KEEPINTVL, 30 + k);
		IOPT(s, IPPROTO_TCP, TCP_KEEPCNT, 4 + k);
		IOPT(s, IPPROTO_TCP, TCP_NODELAY, 1);
		IOPT(s, IPPROTO_TCP, TCP_USER_TIMEOUT, 600000 + k);
		IOPT(s, IPPROTO_TCP, TCP_NOTSENT_LOWAT, 123456 + k);
		IOPT(s, IPPROTO_IP, IP_TOS, 0x10);
		IOPT(s, IPPROTO_IP, IP_TTL, 33 + k);
		IOPT(s, SOL_SOCKET, SO_PRIORITY, 3);
		opt(s, SOL_SOCKET, SO_LINGER, "SO_LINGER", &lg, sizeof(lg));
		opt(s, IPPROTO_TCP, TCP_CONGESTION, "TCP_CONGESTION", reno, sizeof(reno));
		if (geteuid() == 0)
			IOPT(s, SOL_SOCKET, SO_MARK, 7 + k);
	}
	if (setsockopt(*a, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)))
		fail("SO_ATTACH_FILTER");
	IOPT(*a, SOL_SOCKET, SO_RCVLOWAT, 1);
	IOPT(*a, SOL_SOCKET, SO_SNDBUF, 60000);
}

/* The idle connection: corked, bound to lo, IP_FREEBIND. */
static void idle_pair(int l)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int c = tcp_socket(AF_INET), a;

	if (getsockname(l, (struct sockaddr *)&sa, &sl))
		fail("getsockname");
	opt(c, SOL_SOCKET, SO_BINDTODEVICE, "SO_BINDTODEVICE", "lo", 3);
	IOPT(c, IPPROTO_IP, IP_FREEBIND, 1);
	if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) || write(c, "y", 1) != 1 ||
	    (a = accept(l, NULL, NULL)) < 0)
		fail("idle connection");
	IOPT(c, IPPROTO_TCP, TCP_CORK, 1);
	IOPT(a, IPPROTO_TCP, TCP_CORK, 1);
}

static void udp_socket(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { 2, 500000 };
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	if (u < 0 || bind(u, (struct sockaddr *)&sa, sizeof(sa)))
		fail("udp");
	IOPT(u, SOL_SOCKET, SO_BROADCAST, 1);
	opt(u, SOL_SOCKET, SO_RCVTIMEO, "SO_RCVTIMEO", &tv, sizeof(tv));
	IOPT(u, IPPROTO_IP, IP_MULTICAST_TTL, 5);
	IOPT(u, IPPROTO_IP, IP_MULTICAST_LOOP, 0);
	IOPT(u, IPPROTO_IP, IP_RECVERR, 1);
	IOPT(u, IPPROTO_IP, IP_PKTINFO, 1);
	IOPT(u, SOL_SOCKET, SO_TIMESTAMP, 1);
	IOPT(u, SOL_SOCKET, SO_RCVBUF, 30000);
}

static void ipv6_listener(void)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int l = tcp_socket(AF_INET6);

	IOPT(l, IPPROTO_IPV6, IPV6_V6ONLY, 1);
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4))
		fail("ipv6 listen");
	IOPT(l, IPPROTO_IPV6, IPV6_TCLASS, 0x20);
	IOPT(l, IPPROTO_IPV6, IPV6_UNICAST_HOPS, 20);
}

static void unbound(void)
{
	int t = tcp_socket(AF_INET), u = socket(AF_INET6, SOCK_DGRAM, 0);

	if (u < 0)
		fail("udp6");
	IOPT(t, IPPROTO_TCP, TCP_NODELAY, 1);
	IOPT(u, SOL_SOCKET, SO_BROADCAST, 1);
}

static void unix_pair(void)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv))
		fail("socketpair");
	IOPT(sv[0], SOL_SOCKET, SO_PASSCRED, 1);
	IOPT(sv[1], SOL_SOCKET, SO_SNDBUF, 50000);
}

/* Every socket's O_NONBLOCK as it was set. */
static void check_flags(int first, int last, const int *nonblock)
{
	for (int fd = first; fd <= last; fd++) {
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || !!(fl & O_NONBLOCK) != nonblock[fd]) {
			char msg[64];

			snprintf(msg, sizeof(msg), "fd %d: O_NONBLOCK is %d", fd, !!(fl & O_NONBLOCK));
			errno = 0;
			fail(msg);
		}
	}
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 30, ms = argc > 2 ? atol(argv[2]) : 100;
	int l, c, a, nonblock[64] = { 0 }, last;

	setvbuf(stdout, NULL, _IOLBF, 0);
	busy_pair(&l, &c, &a);
	idle_pair(l);
	udp_socket();
	ipv6_listener();
	unix_pair();
	unbound();
	last = dup(0) - 1;
	close(last + 1);
	for (int fd = 3; fd <= last && fd < 64; fd++)
		nonblock[fd] = !!(fcntl(fd, F_GETFL) & O_NONBLOCK);
	for (long t = 0; t < ticks; t++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
		char b = (char)t, got = 0;

		check();
		check_flags(3, last, nonblock);
		if (write(c, &b, 1) != 1 || read(a, &got, 1) != 1 || got != b ||
		    write(a, &b, 1) != 1 || read(c, &got, 1) != 1 || got != b)
			fail("ping-pong");
		printf("tick %ld pid %d\n", t, (int)getpid());
		nanosleep(&ts, NULL);
	}
	printf("DONE\n");
	return 0;
}
