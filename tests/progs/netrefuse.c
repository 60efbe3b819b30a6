// SPDX-License-Identifier: MIT
/*
 * Holds a socket the saver must refuse on fd 3 (and what goes with it)
 * and ticks, so that a test can check the refusal and that the program
 * runs on unharmed. KIND:
 *
 *   pending  a TCP listener with a connection it has not accepted (the
 *            client end on fd 4)
 *   shared   a TCP listener also held by a child that is not checkpointed
 *            (it prints "child C")
 *   addr A   a UDP socket bound to address A (the test then removes it)
 *   ebpf     a UDP socket with an eBPF socket filter (SO_ATTACH_BPF)
 *   netlink  a netlink (route) socket with the answer to a link dump unread
 *   packet   a packet socket (AF_PACKET)
 *   raw      a raw ICMP socket with packets waiting (an echo to 127.0.0.1)
 *
 * Each tick it checks its socket is still as made (the listener still
 * listening, the filter still attached...) and prints "tick N pid P";
 * anything else is a FAIL line.
 *
 *   netrefuse KIND [ARG] [TICKS [MS]]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what)
{
	printf("FAIL %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	fflush(stdout);
	exit(1);
}

static int listener(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) || l != 3)
		fail("listener on fd 3");
	return l;
}

static void pending(void)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int l = listener(), c = socket(AF_INET, SOCK_STREAM, 0);

	if (c < 0 || getsockname(l, (struct sockaddr *)&a, &al) ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)))
		fail("connecting");
}

static void shared(void)
{
	pid_t c;

	listener();
	if ((c = fork()) == 0) {
		for (;;)
			pause();
	}
	printf("child %d\n", (int)c);
}

static void bound(const char *addr)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int u = socket(AF_INET, SOCK_DGRAM, 0);

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1 || u != 3 ||
	    bind(u, (struct sockaddr *)&a, sizeof(a)))
		fail("binding");
}

/* r0 = 0xffffffff (keep the whole packet); exit */
static void ebpf(void)
{
	struct bpf_insn prog[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = -1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr at;
	char license[] = "MIT";
	int u = socket(AF_INET, SOCK_DGRAM, 0), fd;

	memset(&at, 0, sizeof(at));
	at.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	at.insn_cnt = 2;
	at.insns = (uintptr_t)prog;
	at.license = (uintptr_t)license;
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &at, sizeof(at));
	if (u != 3 || fd < 0 || setsockopt(u, SOL_SOCKET, SO_ATTACH_BPF, &fd, sizeof(fd)))
		fail("attaching an eBPF filter");
	close(fd);
}

static void netlink(void)
{
	struct {
		struct nlmsghdr h;
		struct rtgenmsg g;
	} req = { { sizeof(req), RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, 0 }, { AF_UNSPEC } };
	int s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);

	if (s != 3 || send(s, &req, sizeof(req), 0) != sizeof(req))
		fail("netlink request");
}

static void packet(void)
{
	if (socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL)) != 3)
		fail("packet socket");
}

static void raw(void)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	/* an echo request, checksum precomputed for id 0 sequence 0 */
	unsigned char req[8] = { 8, 0, 0xf7, 0xff, 0, 0, 0, 0 };
	int r = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);

	if (r != 3 || sendto(r, req, sizeof(req), 0, (struct sockaddr *)&lo, sizeof(lo)) != 8)
		fail("raw socket");
}

static void still(const char *kind)
{
	int v = 0;
	socklen_t l = sizeof(v);

	if (!strcmp(kind, "pending") || !strcmp(kind, "shared")) {
		if (getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) || !v)
			fail("fd 3 no longer listens");
	} else if (!strcmp(kind, "netlink") || !strcmp(kind, "packet") || !strcmp(kind, "raw")) {
		char b;

		if (getsockopt(3, SOL_SOCKET, SO_TYPE, &v, &l) || (strcmp(kind, "packet") &&
		    recv(3, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0))
			fail("fd 3 lost its socket or what waits in it");
	} else if (getsockopt(3, SOL_SOCKET, SO_TYPE, &v, &l) || v != SOCK_DGRAM) {
		fail("fd 3 is no longer the UDP socket");
	}
	/* an eBPF filter reads back as "not readable" while it is there */
	if (!strcmp(kind, "ebpf") && (l = 0, !getsockopt(3, SOL_SOCKET, SO_GET_FILTER, NULL, &l) ||
				      errno != EACCES))
		fail("the eBPF filter is gone");
}

int main(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "";
	int arg = !strcmp(kind, "addr");
	long ticks = argc > 2 + arg ? atol(argv[2 + arg]) : 1000;
	long ms = argc > 3 + arg ? atol(argv[3 + arg]) : 50;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(kind, "pending"))
		pending();
	else if (!strcmp(kind, "shared"))
		shared();
	else if (arg && argc > 2)
		bound(argv[2]);
	else if (!strcmp(kind, "ebpf"))
		ebpf();
	else if (!strcmp(kind, "netlink"))
		netlink();
	else if (!strcmp(kind, "packet"))
		packet();
	else if (!strcmp(kind, "raw"))
		raw();
	else
		fail("usage: netrefuse pending|shared|addr A|ebpf|netlink|packet|raw [TICKS [MS]]");
	for (long t = 0; t < ticks; t++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		still(kind);
		printf("tick %ld pid %d\n", t, (int)getpid());
		nanosleep(&ts, NULL);
	}
	return 0;
}
