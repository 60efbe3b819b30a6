// SPDX-License-Identifier: MIT
/*
 * An inotify descriptor with its watches, each with its saved watch
 * descriptor number. inotify hands out numbers in increasing order, one
 * more than the last handed out, whether or not that one still exists:
 * the watches are added in wd order, and each number in a gap is used up
 * by a throwaway watch (on a memfd of ours) removed at once. The
 * IN_IGNORED events that the removals queue are read off before the
 * process gets the descriptor, and so is whatever the real watches saw
 * meanwhile: the restore's own instants, like those while the process was
 * gone, are not reported.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdkinds.h"

#define MAX_WD (1u << 20)	/* gaps filled one watch at a time: bounded */

static void drain(int fd)
{
	char buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

/* Uses up the next watch descriptor number. */
static int skip_wd(int fd, int *filler, uint32_t i, struct ibcr_err *e)
{
	char path[32];
	int wd;

	if (*filler < 0 && (*filler = memfd_create("ibcr-inotify-gap", MFD_CLOEXEC)) < 0)
		return ibcr_fail_errno(e, errno, "inotify (file object %u): memfd", i);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", *filler);
	wd = inotify_add_watch(fd, path, IN_ATTRIB);
	if (wd < 0 || inotify_rm_watch(fd, wd))
		return ibcr_fail_errno(e, errno, "inotify (file object %u): using up a watch "
				       "descriptor number", i);
	if (wd % 1024 == 0)
		drain(fd);	/* stay below max_queued_events */
	return 0;
}

struct wrec {
	uint32_t wd, mask, len, zero;
};

/* Watch k of the data area at *off, moving past it. */
static int next_watch(const struct ibcr_files *f, uint32_t i, uint64_t *off,
		      struct wrec *w, const char **path, struct ibcr_err *e)
{
	uint64_t n = f->objs[i].data_len;
	const uint8_t *d = f->data[i];

	if (!d || *off + sizeof(*w) > n)
		return ibcr_fail(e, "inotify (file object %u): its watch list is malformed", i);
	memcpy(w, d + *off, sizeof(*w));
	*path = (const char *)d + *off + sizeof(*w);
	if (!w->len || w->len > n - *off - sizeof(*w) || (*path)[w->len - 1] ||
	    strlen(*path) + 1 != w->len)
		return ibcr_fail(e, "inotify (file object %u): its watch list is malformed", i);
	*off += sizeof(*w) + (w->len + 7) / 8 * 8;
	return 0;
}

static int add_watches(int fd, const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	uint64_t off = 0;
	uint32_t next = 1;
	int filler = -1, rc = 0;

	for (uint64_t k = 0; k < fobj_inotify_watches(&f->objs[i]) && !rc; k++) {
		const char *path = NULL;
		struct wrec w = { 0 };
		int got;

		if ((rc = next_watch(f, i, &off, &w, &path, e)))
			break;
		if (w.wd < next || w.wd > MAX_WD) {
			rc = ibcr_fail(e, "inotify (file object %u): watch descriptor %u is out of "
				       "order or above %u", i, w.wd, MAX_WD);
			break;
		}
		for (; next < w.wd; next++)
			if ((rc = skip_wd(fd, &filler, i, e)))
				break;
		if (rc)
			break;
		got = inotify_add_watch(fd, path, w.mask | IN_DONT_FOLLOW);
		if (got < 0)
			rc = ibcr_fail_errno(e, errno, "inotify (file object %u): watching %s "
					     "again (mask %#x)", i, path, w.mask);
		else if ((uint32_t)got != w.wd)
			rc = ibcr_fail(e, "inotify (file object %u): the watch on %s came back as "
				       "wd %d, not %u", i, path, got, w.wd);
		next = w.wd + 1;
	}
	if (filler >= 0)
		close(filler);
	drain(fd);
	return rc;
}

int inotify_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "inotify (file object %u): creating it", i);
	if (add_watches(fd, f, i, e)) {
		close(fd);
		return -1;
	}
	if (fcntl(fd, F_SETFL, f->objs[i].flags & STATUS_FLAGS)) {
		ibcr_fail_errno(e, errno, "inotify (file object %u): setting its flags", i);
		close(fd);
		return -1;
	}
	return fd;
}
