// SPDX-License-Identifier: MIT
/*
 * baseline: the reference costs `make bench` compares ibcr with, measured
 * in the same run, on the same file system.
 *
 *   baseline write FILE BYTES
 *       Fills a 16 MiB buffer with pseudo-random data (not timed), then
 *       times: open(O_CREAT|O_TRUNC), write(2) of BYTES in 1 MiB calls
 *       taken from that buffer over and over, fsync(2), close, fsync of
 *       the directory. Prints "write_ms=X". The source is small on
 *       purpose: the only memory the timed part takes is the file's page
 *       cache, as for the saver (whose own buffers are 4 MiB); a source
 *       of BYTES freshly touched would take as much again from the VM
 *       just before, and on this VM that alone decides whether the page
 *       cache that follows lands on slow memory (docs/benchmarks.md).
 *
 *   baseline fill FILE BYTES
 *       Reads FILE once (to have it in the page cache; not timed), then
 *       times two ways of filling BYTES of fresh anonymous memory from it:
 *         populate_pread_ms  mmap + one MADV_POPULATE_WRITE + pread(2) in
 *                            4 MiB calls (what the restore core does; this
 *                            is the limit `make bench` uses)
 *         pread_ms           mmap + pread(2) in 4 MiB calls into the
 *                            unpopulated memory (a fault per page)
 *       munmap is not timed. Prints "populate_pread_ms=X pread_ms=Y".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static void die(const char *what)
{
	fprintf(stderr, "baseline: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static unsigned char *fresh(size_t n, int populate)
{
	unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	if (populate && madvise(p, n, MADV_POPULATE_WRITE))
		die("madvise(MADV_POPULATE_WRITE)");
	return p;
}

static void read_all(int fd, unsigned char *p, size_t n)
{
	const size_t chunk = 4u << 20;

	for (size_t off = 0; off < n;) {
		size_t want = n - off < chunk ? n - off : chunk;
		ssize_t r = pread(fd, p + off, want, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			die("pread");
		}
		off += (size_t)r;
	}
}

static int do_write(const char *file, size_t n)
{
	const size_t src = 16u << 20, chunk = 1u << 20;
	unsigned char *p = fresh(src, 1);
	uint64_t s = 0x243f6a8885a308d3ull, *w = (uint64_t *)p;
	char *dcopy = strdup(file);
	int fd, dfd;

	for (size_t i = 0; i < src / 8; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		w[i] = s;
	}
	double t0 = now_ms();
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(file);
	for (size_t off = 0; off < n;) {
		size_t want = n - off < chunk ? n - off : chunk;
		ssize_t r = write(fd, p + off % src, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("write");
		off += (size_t)r;
	}
	if (fsync(fd) || close(fd))
		die("fsync");
	dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd))
		die("fsync(directory)");
	close(dfd);
	double t1 = now_ms();
	printf("write_ms=%.1f\n", t1 - t0);
	return 0;
}

static int do_fill(const char *file, size_t n)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	unsigned char *p;
	double t0, t1, t2, t3;

	if (fd < 0)
		die(file);
	p = fresh(4u << 20, 1);
	for (size_t off = 0; off < n; off += 4u << 20)	/* warm the page cache */
		if (pread(fd, p, 4u << 20, (off_t)off) < 0)
			die("pread");
	munmap(p, 4u << 20);

	t0 = now_ms();
	p = fresh(n, 1);
	read_all(fd, p, n);
	t1 = now_ms();
	munmap(p, n);

	t2 = now_ms();
	p = fresh(n, 0);
	read_all(fd, p, n);
	t3 = now_ms();
	munmap(p, n);
	close(fd);
	printf("populate_pread_ms=%.1f pread_ms=%.1f\n", t1 - t0, t3 - t2);
	return 0;
}

int main(int argc, char **argv)
{
	char *end;
	unsigned long long n;

	if (argc != 4)
		goto usage;
	n = strtoull(argv[3], &end, 0);
	if (*end || !n)
		goto usage;
	n = (n + 4095) / 4096 * 4096;
	if (!strcmp(argv[1], "write"))
		return do_write(argv[2], (size_t)n);
	if (!strcmp(argv[1], "fill"))
		return do_fill(argv[2], (size_t)n);
usage:
	fprintf(stderr, "usage: baseline write|fill FILE BYTES\n");
	return 2;
}
