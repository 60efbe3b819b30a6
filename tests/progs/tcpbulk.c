// SPDX-License-Identifier: MIT
/*
 * A loopback TCP connection with megabytes in both queues: a child
 * writes MB megabytes of a pattern (byte i is i * 7 mod 251) as fast as
 * it can, the parent reads nothing for the first PAUSE ticks (so the
 * receiver's queue and the sender's fill up: "full" is printed once the
 * writer has been blocked for a tick) and then reads everything,
 * checking every byte. "tick N pid P" every tick, "DONE" at the end; a
 * wrong or missing byte is a FAIL line. With RCVBUF, the reader's
 * receive buffer is fixed to that many bytes (SO_RCVBUFFORCE as root),
 * so that its queue holds as much.
 *
 *   tcpbulk [MB [PAUSE [MS [RCVBUF]]]]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint8_t at(uint64_t i)
{
	return (uint8_t)(i * 7 % 251);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int writer(const struct sockaddr_in *a, uint64_t total, int progress)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	static uint8_t buf[1 << 16];
	uint64_t off = 0;

	if (s < 0 || connect(s, (const struct sockaddr *)a, sizeof(*a)))
		return 2;
	while (off < total) {
		size_t n = total - off < sizeof(buf) ? (size_t)(total - off) : sizeof(buf);
		ssize_t k;

		for (size_t i = 0; i < n; i++)
			buf[i] = at(off + i);
		k = write(s, buf, n);
		if (k <= 0)
			return 3;
		off += (uint64_t)k;
		if (write(progress, &off, sizeof(off)) != sizeof(off))
			return 4;
	}
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t total = (argc > 1 ? strtoull(argv[1], NULL, 10) : 16) << 20, got = 0, wrote = 0;
	long pause = argc > 2 ? atol(argv[2]) : 20, ms = argc > 3 ? atol(argv[3]) : 100;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), s, st, p[2], full = 0;
	long tick = 0;
	static uint8_t buf[1 << 16];
	pid_t c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 4) {
		int rb = atoi(argv[4]);

		if (setsockopt(l, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof(rb)) &&
		    setsockopt(l, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb)))
			return 2;
	}
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al) || pipe(p))
		return 2;
	if ((c = fork()) == 0) {
		close(p[0]);
		return writer(&a, total, p[1]);
	}
	close(p[1]);
	if ((s = accept(l, NULL, NULL)) < 0)
		return 2;
	for (long t = 0; got < total; t++) {
		uint64_t before = wrote;

		/* how far the writer got: its progress reports, without blocking */
		for (;;) {
			struct timespec zero = { 0, 0 };
			fd_set fs;

			FD_ZERO(&fs);
			FD_SET(p[0], &fs);
			if (pselect(p[0] + 1, &fs, NULL, NULL, &zero, NULL) <= 0 ||
			    read(p[0], &wrote, sizeof(wrote)) != sizeof(wrote))
				break;
		}
		if (t >= 2 && wrote == before && wrote < total && !full++)
			printf("full at %llu bytes written\n", (unsigned long long)wrote);
		if (t >= pause) {
			ssize_t k = read(s, buf, sizeof(buf));

			if (k <= 0) {
				printf("FAIL connection ended after %llu bytes\n", (unsigned long long)got);
				return 1;
			}
			for (ssize_t i = 0; i < k; i++)
				if (buf[i] != at(got + (uint64_t)i)) {
					printf("FAIL byte %llu is %u, not %u\n",
					       (unsigned long long)(got + (uint64_t)i), buf[i],
					       at(got + (uint64_t)i));
					return 1;
				}
			got += (uint64_t)k;
			if (got % (1 << 20) >= (uint64_t)k && got < total)
				continue;	/* no tick line per read */
		}
		printf("tick %ld pid %d\n", tick++, (int)getpid());
		if (t < pause)
			sleep_ms(ms);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL writer status %#x\n", st);
		return 1;
	}
	printf("DONE %llu bytes\n", (unsigned long long)got);
	return 0;
}
