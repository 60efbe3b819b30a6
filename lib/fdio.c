// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"

/* off < 0: write(2) at the file position; else pwrite(2) at off. */
static int out_full(int fd, const void *p, size_t n, int64_t off)
{
	const uint8_t *c = p;

	while (n) {
		ssize_t k = off < 0 ? write(fd, c, n) : pwrite(fd, c, n, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (!k)
				errno = ENOSPC;
			return -1;
		}
		c += k;
		n -= (size_t)k;
		if (off >= 0)
			off += k;
	}
	return 0;
}

int write_full(int fd, const void *p, size_t n)
{
	return out_full(fd, p, n, -1);
}

int pwrite_full(int fd, const void *p, size_t n, uint64_t off)
{
	return out_full(fd, p, n, (int64_t)off);
}

/* off < 0: read(2) from the file position; else pread(2) at off. */
static int in_full(int fd, void *p, size_t n, int64_t off)
{
	uint8_t *c = p;

	while (n) {
		ssize_t k = off < 0 ? read(fd, c, n) : pread(fd, c, n, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (!k)
				errno = EIO;
			return -1;
		}
		c += k;
		n -= (size_t)k;
		if (off >= 0)
			off += k;
	}
	return 0;
}

int read_full(int fd, void *p, size_t n)
{
	return in_full(fd, p, n, -1);
}

int pread_full(int fd, void *p, size_t n, uint64_t off)
{
	return in_full(fd, p, n, (int64_t)off);
}

int fd_set_direct(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	fl = on ? fl | O_DIRECT : fl & ~O_DIRECT;
	return fcntl(fd, F_SETFL, fl) ? -1 : 0;
}

/*
 * Waits until fd has at least want bytes to read (FIONREAD), for up to
 * ms milliseconds: what is written into a pty's master reaches its
 * slave's line discipline later, from a kernel worker, with the termios
 * in force by then.
 */
int fionread_wait(int fd, int want, int ms)
{
	struct timespec t = { 0, 1000000 };
	int n = 0;

	for (int i = 0; i <= ms; i++) {
		if (ioctl(fd, FIONREAD, &n))
			return -1;
		if (n >= want)
			return 0;
		nanosleep(&t, NULL);
	}
	errno = ETIMEDOUT;
	return -1;
}
