// SPDX-License-Identifier: MIT
/*
 * Pipes and named pipes whose bytes, sizes and ends must survive a
 * checkpoint. MODE sets one up, says "ready", waits for "go" (gate.h)
 * and checks, from inside, that every byte is there once, in order:
 *
 *   full2        a full 64 KiB pipe with a second open file description
 *                of each end (reopened through /proc/self/fd)
 *   size         a pipe grown to 1 MiB holding 300000 bytes, one shrunk
 *                to one page holding 100: F_GETPIPE_SZ and the bytes
 *   fifo         named pipe "f", a reader and a writer, 5000 bytes in it
 *   fifo-two     named pipes "f1" and "f2", each with both ends and bytes
 *   fifo-rdwr    "f" opened O_RDWR alone, 3000 bytes in it
 *   fifo-reader  "f" whose writer closed, 2000 bytes left: then EOF
 *   fifo-writer  "f" open only for writing, 1000 bytes in it: a reader
 *                that opens it later reads them
 *
 *   pipes MODE   (in a directory of its own)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gate.h"

static uint8_t pat(size_t i, int seed)
{
	return (uint8_t)(i * 7 + (size_t)seed * 13 + i / 251);
}

static void put(int fd, size_t n, int seed)
{
	static uint8_t b[1 << 20];

	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
	check(write(fd, b, n) == (ssize_t)n, "writing %zu bytes", n);
}

/* Exactly n bytes of pattern seed are waiting in fd (non-blocking), no more. */
static void expect(int fd, size_t n, int seed, const char *what)
{
	static uint8_t b[1 << 20];
	size_t got = 0;
	ssize_t k;

	check(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0, "%s: O_NONBLOCK", what);
	while ((k = read(fd, b + got, sizeof(b) - got)) > 0)
		got += (size_t)k;
	check(got == n, "%s: %zu bytes waiting, want %zu", what, got, n);
	for (size_t i = 0; i < n; i++)
		check(b[i] == pat(i, seed), "%s: byte %zu is %u, want %u", what, i, b[i],
		      pat(i, seed));
}

static int reopen(int fd, int flags)
{
	char p[32];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return open(p, flags);
}

static void full2(void)
{
	int p[2], r2, w2;

	check(pipe(p) == 0, "pipe");
	check(fcntl(p[0], F_GETPIPE_SZ) == 65536, "default pipe size");
	put(p[1], 65536, 1);
	r2 = reopen(p[0], O_RDONLY);
	w2 = reopen(p[1], O_WRONLY);
	check(r2 >= 0 && w2 >= 0, "second descriptions");
	gate_wait();
	check(fcntl(r2, F_GETPIPE_SZ) == 65536, "pipe size %d", fcntl(r2, F_GETPIPE_SZ));
	expect(r2, 65536, 1, "full pipe, second reader");
	put(w2, 100, 2);
	expect(p[0], 100, 2, "full pipe, first reader after a write by the second writer");
}

static void size(void)
{
	int a[2], b[2];

	check(pipe(a) == 0 && pipe(b) == 0, "pipe");
	check(fcntl(a[1], F_SETPIPE_SZ, 1 << 20) == 1 << 20, "growing a pipe");
	check(fcntl(b[1], F_SETPIPE_SZ, 4096) == 4096, "shrinking a pipe");
	put(a[1], 300000, 3);
	put(b[1], 100, 4);
	gate_wait();
	check(fcntl(a[0], F_GETPIPE_SZ) == 1 << 20, "grown pipe's size %d",
	      fcntl(a[0], F_GETPIPE_SZ));
	check(fcntl(b[1], F_GETPIPE_SZ) == 4096, "shrunk pipe's size %d",
	      fcntl(b[1], F_GETPIPE_SZ));
	expect(a[0], 300000, 3, "grown pipe");
	expect(b[0], 100, 4, "shrunk pipe");
}

static void fifo_ends(const char *path, int *r, int *w)
{
	check(mkfifo(path, 0600) == 0, "mkfifo %s", path);
	*r = open(path, O_RDONLY | O_NONBLOCK);
	*w = open(path, O_WRONLY);
	check(*r >= 0 && *w >= 0, "opening %s", path);
	check(fcntl(*r, F_SETFL, 0) == 0, "blocking reader");
}

static void fifo(void)
{
	int r, w;

	fifo_ends("f", &r, &w);
	put(w, 5000, 5);
	gate_wait();
	expect(r, 5000, 5, "fifo f");
	put(w, 10, 6);
	expect(r, 10, 6, "fifo f after the restore");
}

static void fifo_two(void)
{
	int r1, w1, r2, w2;

	fifo_ends("f1", &r1, &w1);
	fifo_ends("f2", &r2, &w2);
	put(w1, 1000, 7);
	put(w2, 2000, 8);
	gate_wait();
	expect(r1, 1000, 7, "fifo f1");
	expect(r2, 2000, 8, "fifo f2");
}

static void fifo_rdwr(void)
{
	int fd;

	check(mkfifo("f", 0600) == 0, "mkfifo");
	check((fd = open("f", O_RDWR)) >= 0, "open O_RDWR");
	put(fd, 3000, 9);
	gate_wait();
	check((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR, "fifo is not O_RDWR");
	expect(fd, 3000, 9, "fifo opened O_RDWR");
}

static void fifo_reader(void)
{
	int r, w;
	char c;

	fifo_ends("f", &r, &w);
	put(w, 2000, 10);
	close(w);
	gate_wait();
	expect(r, 2000, 10, "fifo without writer");
	check(read(r, &c, 1) == 0, "fifo without writer: no EOF after its bytes");
}

static void fifo_writer(void)
{
	int k, w, r;

	check(mkfifo("f", 0600) == 0, "mkfifo");
	check((k = open("f", O_RDWR)) >= 0, "keeper");
	check((w = open("f", O_WRONLY)) >= 0, "writer");
	put(w, 1000, 11);
	close(k);
	gate_wait();
	check((r = open("f", O_RDONLY | O_NONBLOCK)) >= 0, "a reader for the writer's fifo");
	expect(r, 1000, 11, "fifo with only a writer, then a reader");
}

int main(int argc, char **argv)
{
	static const struct gate_mode modes[] = {
		{ "full2", full2 }, { "size", size }, { "fifo", fifo }, { "fifo-two", fifo_two },
		{ "fifo-rdwr", fifo_rdwr }, { "fifo-reader", fifo_reader },
		{ "fifo-writer", fifo_writer },
	};

	return gate_main(argc, argv, modes, sizeof(modes) / sizeof(modes[0]));
}
