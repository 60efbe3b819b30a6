// SPDX-License-Identifier: MIT
/*
 * A loopback TCP connection held in an opening or closing state, which
 * the program checks itself every tick (TCP_INFO), and then finishes,
 * checking every byte and end of stream. A is the connecting side, B the
 * accepted one, on PORT. The test drops packets by PORT with a rule of
 * its own where a state needs it (packets to PORT: A to B; from PORT: B
 * to A; SYNs to PORT), and signals:
 *
 *   syn-sent    A connects (non-blocking) while SYNs to PORT are dropped:
 *               SYN-SENT; at SIGUSR2 (the SYNs pass again) it must connect,
 *               and A and B exchange a message each way.
 *   close-wait  B sends "bye" and shuts down its side: A CLOSE-WAIT, B
 *               FIN-WAIT-2; at SIGUSR2 A reads "bye" and the end, answers,
 *               B reads the answer, A closes, B reads the end.
 *   fin-wait1   A to B dropped: A sends "late" and shuts down its side:
 *               A FIN-WAIT-1; at SIGUSR2 (passing again) B reads "late" and
 *               the end, B answers and closes, A reads both.
 *   last-ack    B shuts down its side (before "ready"), then (A to B
 *               dropped) A does: A LAST-ACK; at SIGUSR2 B reads the end,
 *               A too.
 *   closing     A to B dropped: A shuts down, then B: A CLOSING, B
 *               FIN-WAIT-1; at SIGUSR2 each reads the other's end.
 *
 * It prints "ready" once connected (SIGUSR1: the test's rule is in place,
 * go on), "state A=.. B=.." once there, "tick N pid P" every tick, "DONE";
 * a state that changes before SIGUSR2, a wrong byte or end: FAIL.
 *
 *   tcpstates MODE PORT [MS]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { ESTAB = 1, SYN_SENT = 2, FIN_WAIT1 = 4, FIN_WAIT2 = 5, CLOSE_WAIT = 8,
       LAST_ACK = 9, CLOSING = 11 };

static volatile sig_atomic_t go, finish;
static long ms = 100, ticks;

static void on_usr1(int sig) { (void)sig; go = 1; }
static void on_usr2(int sig) { (void)sig; finish = 1; }

static void fail(const char *what)
{
	printf("FAIL %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	fflush(stdout);
	exit(1);
}

static int state(int s)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	if (s < 0)
		return 0;
	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &l))
		fail("TCP_INFO");
	return ti.tcpi_state;
}

static void tick(void)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	printf("tick %ld pid %d\n", ticks++, (int)getpid());
	nanosleep(&ts, NULL);
}

/* Until a state (a, b), or one of a2/b2 as well: 0 for any. */
static void reach(int a, int b, int wa, int wb)
{
	for (int k = 0; state(a) != wa || (b >= 0 && state(b) != wb); k++) {
		if (k > 5000)
			fail("the state was not reached");
		usleep(1000);
	}
	printf("state A=%d B=%d\n", state(a), state(b));
}

/* Each tick until SIGUSR2: the states are still the ones reached. */
static void hold(int a, int b, int wa, int wb, int wb2)
{
	while (!finish) {
		int sa = state(a), sb = state(b);

		if (finish)	/* the packets may pass again from now on */
			break;
		if (sa != wa || (b >= 0 && sb != wb && sb != wb2)) {
			char msg[80];

			snprintf(msg, sizeof(msg), "states A=%d B=%d, not A=%d B=%d", sa, sb, wa, wb);
			errno = 0;
			fail(msg);
		}
		tick();
	}
}

static void expect(int s, const char *want)
{
	char got[16] = "";
	size_t n = strlen(want), k = 0;
	struct pollfd p = { s, POLLIN, 0 };

	while (k < n || !n) {
		ssize_t r;

		if (poll(&p, 1, 20000) != 1)
			fail("waiting for data");
		r = read(s, got + k, n ? n - k : 1);
		if (r < 0)
			fail("read");
		if (!n) {
			if (r != 0)
				fail("data where the end was expected");
			return;
		}
		if (r == 0) {
			errno = 0;
			fail("the end where data was expected");
		}
		k += (size_t)r;
	}
	if (memcmp(got, want, n)) {
		errno = 0;
		fail("wrong data");
	}
}

static void put(int s, const char *m)
{
	if (write(s, m, strlen(m)) != (ssize_t)strlen(m))
		fail("write");
}

static int listener(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4))
		fail("listen");
	return l;
}

static int connect_to(int port, int nonblock)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);

	if (s < 0 || (connect(s, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS))
		fail("connect");
	return s;
}

static void syn_sent(int l, int port)
{
	int a = connect_to(port, 1), b, err = 0;
	socklen_t el = sizeof(err);
	struct pollfd p = { a, POLLOUT, 0 };

	reach(a, -1, SYN_SENT, 0);
	hold(a, -1, SYN_SENT, 0, 0);
	if (poll(&p, 1, 30000) != 1 || getsockopt(a, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
		errno = err;
		fail("connecting after the restore");
	}
	if ((b = accept(l, NULL, NULL)) < 0)
		fail("accept");
	put(a, "hi");
	expect(b, "hi");
	put(b, "ho");
	expect(a, "ho");
}

static void closing_modes(const char *mode, int l, int port)
{
	int a = connect_to(port, 0), b = accept(l, NULL, NULL);

	if (b < 0)
		fail("accept");
	if (!strcmp(mode, "last-ack")) {	/* B's end passes, before the rule */
		shutdown(b, SHUT_WR);
		reach(a, b, CLOSE_WAIT, FIN_WAIT2);
	}
	printf("ready\n");
	while (!go)
		tick();
	if (!strcmp(mode, "close-wait")) {
		put(b, "bye");
		shutdown(b, SHUT_WR);
		reach(a, b, CLOSE_WAIT, FIN_WAIT2);
		hold(a, b, CLOSE_WAIT, FIN_WAIT2, FIN_WAIT2);
		expect(a, "bye");
		expect(a, "");
		put(a, "back");
		expect(b, "back");
		close(a);
		expect(b, "");
	} else if (!strcmp(mode, "fin-wait1")) {
		put(a, "late");
		shutdown(a, SHUT_WR);
		reach(a, b, FIN_WAIT1, ESTAB);
		hold(a, b, FIN_WAIT1, ESTAB, ESTAB);
		expect(b, "late");
		expect(b, "");
		put(b, "x");
		close(b);
		expect(a, "x");
		expect(a, "");
	} else if (!strcmp(mode, "last-ack")) {
		shutdown(a, SHUT_WR);
		reach(a, b, LAST_ACK, FIN_WAIT2);
		/*
		 * B's end had been acknowledged; after the restore B sends it
		 * again, and A's acknowledgement (handed in by the restore)
		 * does not pass the test's rule: FIN-WAIT-1 until it does
		 */
		hold(a, b, LAST_ACK, FIN_WAIT2, FIN_WAIT1);
		expect(b, "");
		expect(a, "");
	} else if (!strcmp(mode, "closing")) {
		shutdown(a, SHUT_WR);
		reach(a, b, FIN_WAIT1, ESTAB);
		shutdown(b, SHUT_WR);
		reach(a, b, CLOSING, FIN_WAIT1);
		hold(a, b, CLOSING, FIN_WAIT1, FIN_WAIT1);
		expect(a, "");
		expect(b, "");
	} else {
		fail("unknown mode");
	}
}

int main(int argc, char **argv)
{
	int port, l;

	if (argc < 3)
		return 2;
	port = atoi(argv[2]);
	ms = argc > 3 ? atol(argv[3]) : 100;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	l = listener(port);
	if (!strcmp(argv[1], "syn-sent"))
		syn_sent(l, port);
	else
		closing_modes(argv[1], l, port);
	tick();
	printf("DONE\n");
	return 0;
}
