// SPDX-License-Identifier: MIT
/*
 * An eventfd's semaphore mode on kernels whose fdinfo does not show it
 * (before 6.4; Debian 12's 6.1 among them). EFD_SEMAPHORE lives only in
 * the eventfd's own context, not in the file's flags, so nothing can be
 * read: it is found by behaviour, through a copy of the descriptor while
 * the processes are stopped. A read in semaphore mode takes 1, otherwise
 * the whole count; with a count of at least 2 the two differ, and the
 * count is put back as it was with a write. Reads happen only with a
 * count above 0 and writes only restore it, so nothing blocks.
 *
 * Cost of the test, said in docs/design-notes.md: waiters of the eventfd are
 * woken by the read and the write (none of the image's own: they are
 * stopped, and a woken reader finds the count it had), and an
 * edge-triggered epoll watching it for EPOLLOUT reports it once more.
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "fdkinds.h"

static int rd(int g, uint64_t *v)
{
	return read(g, v, sizeof(*v)) == (ssize_t)sizeof(*v) ? 0 : -1;
}

static int wr(int g, uint64_t v)
{
	return write(g, &v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : -1;
}

/* The test proper, on our copy g of the eventfd holding count. */
static int probe(int g, uint64_t count, uint64_t *sem)
{
	uint64_t got = 0, rest = 0;

	if (count < 2) {
		/* 0 -> 2: semaphore reads 1 and 1; else 2. 1 -> 2: reads 1 or 2 */
		if (wr(g, 2 - count) || rd(g, &got))
			return -1;
		*sem = got == 1;
		if (count == 0)
			return *sem ? rd(g, &rest) : 0;
		return *sem ? 0 : wr(g, 1);
	}
	if (rd(g, &got))
		return -1;
	*sem = got == 1;
	return wr(g, got == 1 ? 1 : count);
}

int eventfd_semaphore_probe(pid_t pid, int fd, uint64_t count, uint64_t *sem,
			    struct ibcr_err *e)
{
	int g = grab_fd(pid, fd, e), rc;

	if (g < 0)
		return -1;
	rc = probe(g, count, sem);
	if (rc)
		rc = ibcr_fail_errno(e, errno, "pid %d fd %d: eventfd: testing its semaphore "
				     "mode (this kernel's fdinfo does not show it)", (int)pid, fd);
	close(g);
	return rc;
}
