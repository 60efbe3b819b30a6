// SPDX-License-Identifier: MIT
/*
 * UNIX socket queues that a checkpoint peeks at and must leave as they
 * were: a stream pair holding KB kilobytes of a pattern (byte i is
 * i * 7 mod 251) and a datagram pair holding 200 numbered datagrams,
 * written and never read. Every tick (50 ms) it checks that nothing
 * outside changed how its sockets read: no peek offset (SO_PEEK_OFF -1),
 * no credentials passing (SO_PASSCRED 0), and a MSG_PEEK of each queue
 * gives its first bytes; then "tick N pid P". On SIGUSR1 it reads both
 * queues whole from the start, checks every byte, writes them again and
 * prints "verified K". Anything wrong is a FAIL line.
 *
 *   unixpeek [KB [TICKS]]
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NDGRAM 200

static volatile sig_atomic_t asked;

static void on_usr1(int sig)
{
	(void)sig;
	asked = 1;
}

static uint8_t at(size_t i)
{
	return (uint8_t)(i * 7 % 251);
}

/* Writes the stream's pattern and the datagrams again; 0 when all went in. */
static int fill(int st, int dg, size_t len)
{
	uint8_t buf[4096];
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < sizeof(buf) ? len - done : sizeof(buf);
		ssize_t k;

		for (size_t i = 0; i < n; i++)
			buf[i] = at(done + i);
		k = send(st, buf, n, MSG_DONTWAIT);	/* never blocks: a FAIL */
		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	for (unsigned d = 0; d < NDGRAM; d++) {
		char m[100];

		memset(m, 'a' + (int)(d % 26), sizeof(m));
		snprintf(m, sizeof(m), "dgram %u", d);
		if (send(dg, m, sizeof(m), MSG_DONTWAIT) != (ssize_t)sizeof(m))
			return -1;
	}
	return 0;
}

static int opt(int s, int name)
{
	int v = -2;
	socklen_t l = sizeof(v);

	if (getsockopt(s, SOL_SOCKET, name, &v, &l))
		return -3;
	return v;
}

/* How the sockets read is theirs: 0, or a FAIL line said. */
static int check_opts(const int *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int off = opt(s[i], SO_PEEK_OFF), pass = opt(s[i], SO_PASSCRED);

		if (off != -1 || pass != 0) {
			printf("FAIL socket %zu: SO_PEEK_OFF %d, SO_PASSCRED %d (-1 and 0 were set)\n",
			       i, off, pass);
			return -1;
		}
	}
	return 0;
}

static int check_heads(int st, int dg)
{
	uint8_t b[64];
	char m[100];
	ssize_t k = recv(st, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);

	if (k != (ssize_t)sizeof(b)) {
		printf("FAIL stream peek: %zd bytes (%s)\n", k, k < 0 ? strerror(errno) : "short");
		return -1;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		if (b[i] != at(i)) {
			printf("FAIL stream peek: byte %zu is %u, not %u\n", i, b[i], at(i));
			return -1;
		}
	k = recv(dg, m, sizeof(m), MSG_PEEK | MSG_DONTWAIT);
	if (k != (ssize_t)sizeof(m) || strcmp(m, "dgram 0")) {
		printf("FAIL datagram peek: %zd bytes, '%.20s'\n", k, k > 0 ? m : "");
		return -1;
	}
	return 0;
}

/* Reads both queues whole, from the start; 0 when every byte was right. */
static int drain(int st, int dg, size_t len)
{
	uint8_t buf[4096];
	size_t done = 0;

	while (done < len) {
		ssize_t k = recv(st, buf, sizeof(buf), MSG_DONTWAIT);

		if (k <= 0) {
			printf("FAIL stream: %zu of %zu bytes read (%s)\n", done, len,
			       k < 0 ? strerror(errno) : "end");
			return -1;
		}
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] != at(done + (size_t)i)) {
				printf("FAIL stream: byte %zu is %u, not %u\n", done + (size_t)i,
				       buf[i], at(done + (size_t)i));
				return -1;
			}
		done += (size_t)k;
	}
	for (unsigned d = 0; d < NDGRAM; d++) {
		char m[100], want[16];
		ssize_t k = recv(dg, m, sizeof(m), MSG_DONTWAIT);

		snprintf(want, sizeof(want), "dgram %u", d);
		if (k != (ssize_t)sizeof(m) || strcmp(m, want) || m[99] != 'a' + (int)(d % 26)) {
			printf("FAIL datagram %u: %zd bytes, '%.20s'\n", d, k, k > 0 ? m : "");
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t len = (size_t)(argc > 1 ? atol(argv[1]) : 2048) * 1024;
	long ticks = argc > 2 ? atol(argv[2]) : 100000;
	int st[2], dg[2], buf = (int)(len * 2), verified = 0;
	struct timespec tick = { 0, 50 * 1000000L };

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGUSR1, on_usr1);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, st) || socketpair(AF_UNIX, SOCK_DGRAM, 0, dg)) {
		perror("unixpeek: socketpair");
		return 2;
	}
	/* room for the whole queue (root); else the default, and less data */
	if (setsockopt(st[1], SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) &&
	    setsockopt(st[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)))
		perror("unixpeek: SO_SNDBUF");
	if (fill(st[1], dg[1], len)) {
		perror("unixpeek: filling the queues");
		return 2;
	}
	printf("queued %zu bytes and %d datagrams\n", len, NDGRAM);
	for (long n = 0; n < ticks; n++) {
		const int all[4] = { st[0], st[1], dg[0], dg[1] };

		nanosleep(&tick, NULL);
		if (check_opts(all, 4) || check_heads(st[0], dg[0]))
			return 1;
		if (asked) {
			asked = 0;
			if (drain(st[0], dg[0], len) || fill(st[1], dg[1], len))
				return 1;
			printf("verified %d\n", ++verified);
		}
		printf("tick %ld pid %d\n", n, (int)getpid());
	}
	printf("DONE\n");
	return 0;
}
