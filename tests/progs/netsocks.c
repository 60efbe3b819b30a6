// SPDX-License-Identifier: MIT
/*
 * Sockets that talk to the kernel or below TCP and UDP, checked by the
 * program itself every tick and used after PAUSE ticks:
 *
 *   a netlink (route) socket bound to the link group, with a group above
 *      32 joined (NETLINK_ADD_MEMBERSHIP) and NETLINK_NO_ENOBUFS: its port
 *      id, groups and option stay; it answers a link dump;
 *   an unbound netlink socket;
 *   a raw ICMP socket (root) with an ICMP_FILTER: the filter stays; it
 *      gets the answer to an echo request it sends to 127.0.0.1.
 *
 * "tick N pid P" every tick, "DONE"; FAIL otherwise.
 *
 *   netsocks [PAUSE [MS]]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/icmp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HIGH_GROUP 33	/* past the 32 a bind can take */

static void fail(const char *what)
{
	printf("FAIL %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	fflush(stdout);
	exit(1);
}

struct nl_state {
	uint32_t port, groups[4];
	int noenobufs;
};

static void nl_read(int s, struct nl_state *st)
{
	struct sockaddr_nl a;
	socklen_t al = sizeof(a), gl = sizeof(st->groups), ol = sizeof(st->noenobufs);

	memset(st, 0, sizeof(*st));
	if (getsockname(s, (struct sockaddr *)&a, &al) ||
	    getsockopt(s, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, st->groups, &gl) ||
	    getsockopt(s, SOL_NETLINK, NETLINK_NO_ENOBUFS, &st->noenobufs, &ol))
		fail("reading the netlink socket");
	st->port = a.nl_pid;
}

/* A link dump: at least one answer, ending with NLMSG_DONE. */
static void nl_dump(int s)
{
	struct {
		struct nlmsghdr h;
		struct rtgenmsg g;
	} req = { { sizeof(req), RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, 0 }, { AF_UNSPEC } };
	static char buf[65536];
	int done = 0, n = 0;

	if (send(s, &req, sizeof(req), 0) != sizeof(req))
		fail("netlink request");
	while (!done) {
		ssize_t len = recv(s, buf, sizeof(buf), 0);

		if (len <= 0)
			fail("netlink answer");
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE)
				done = 1;
			else if (h->nlmsg_type == RTM_NEWLINK)
				n++;
		}
	}
	errno = 0;
	if (!n)
		fail("no link in the dump");
}

static uint16_t csum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

static void echo(int r)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct icmphdr req = { .type = ICMP_ECHO };
	struct pollfd p = { r, POLLIN, 0 };
	char buf[256];

	req.un.echo.id = htons((uint16_t)getpid());
	req.un.echo.sequence = htons(7);
	req.checksum = csum(&req, sizeof(req));
	if (sendto(r, &req, sizeof(req), 0, (struct sockaddr *)&lo, sizeof(lo)) != sizeof(req))
		fail("echo request");
	/* the filter lets the reply through, not our own request */
	for (;;) {
		ssize_t n;
		const struct icmphdr *h;

		if (poll(&p, 1, 5000) != 1 || (n = recv(r, buf, sizeof(buf), 0)) < 0)
			fail("no echo reply");
		h = (const struct icmphdr *)(buf + ((struct iphdr *)buf)->ihl * 4);
		if (h->type == ICMP_ECHOREPLY && h->un.echo.sequence == htons(7))
			return;
	}
}

int main(int argc, char **argv)
{
	long pause = argc > 1 ? atol(argv[1]) : 20, ms = argc > 2 ? atol(argv[2]) : 100;
	struct sockaddr_nl a = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK };
	int nl = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE), plain = socket(AF_NETLINK, SOCK_RAW,
									     NETLINK_ROUTE);
	int one = 1, high = HIGH_GROUP, r = -1;
	struct icmp_filter flt = { ~(1u << ICMP_ECHOREPLY) }, fnow;
	socklen_t fl = sizeof(fnow);
	struct nl_state before, now;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nl < 0 || plain < 0 || bind(nl, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(nl, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &high, sizeof(high)) ||
	    setsockopt(nl, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one)))
		fail("netlink");
	if (geteuid() == 0 && ((r = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)) < 0 ||
			       setsockopt(r, SOL_RAW, ICMP_FILTER, &flt, sizeof(flt))))
		fail("raw socket");
	nl_read(nl, &before);
	for (long t = 0; t < pause; t++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		nl_read(nl, &now);
		errno = 0;
		if (memcmp(&now, &before, sizeof(now)))
			fail("the netlink socket's port id, groups or option changed");
		if (r >= 0 && (getsockopt(r, SOL_RAW, ICMP_FILTER, &fnow, &fl) ||
			       fnow.data != flt.data))
			fail("the raw socket's ICMP_FILTER changed");
		printf("tick %ld pid %d\n", t, (int)getpid());
		nanosleep(&ts, NULL);
	}
	nl_dump(nl);
	nl_dump(plain);
	if (r >= 0)
		echo(r);
	printf("tick %ld pid %d\n", pause, (int)getpid());
	printf("DONE\n");
	return 0;
}
