// SPDX-License-Identifier: MIT
/*
 * Anonymous file kinds, read from /proc/PID/fdinfo while the processes
 * are stopped: an eventfd's counter and semaphore mode, a signalfd's
 * mask, a timerfd's clock, flags, interval, time left and unread
 * expirations, an epoll's interest list (target fd, events, data word).
 *
 * A timerfd is read through a copy of its descriptor (pidfd_getfd):
 * timerfd_gettime() first brings an expired periodic timer up to date
 * (its fdinfo shows 0 left and the expirations of only the first period
 * until someone reads or queries it), as a query by the program would.
 * Every epoll target is checked with kcmp(KCMP_EPOLL_TFD) to be the file
 * that its process has at that fd number: the restore adds it again by
 * number, and an epoll keys its entries by (file, number). One whose
 * number was closed since or holds another file now is another
 * description of the image with that file (found with the same kcmp):
 * the restore puts it at that number for the add, and back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fdkinds.h"
#include "procfs.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#define KCMP_EPOLL_TFD 7

int fdinfo_read(pid_t pid, int fd, char **s, struct ibcr_err *e)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	return proc_read(path, s, NULL, e);
}

/* A descriptor of ours on the same open file description as pid's fd. */
int grab_fd(pid_t pid, int fd, struct ibcr_err *e)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), g, err;

	if (pfd < 0)
		return ibcr_fail_errno(e, errno, "pid %d fd %d: pidfd_open", (int)pid, fd);
	g = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
	err = errno;
	close(pfd);
	if (g < 0)
		return ibcr_fail_errno(e, err, "pid %d fd %d: taking a copy of it "
				       "(pidfd_getfd)", (int)pid, fd);
	return g;
}

int anon_classify(const char *link, struct ibcr_fobj *o)
{
	static const struct { const char *link; uint32_t kind; } k[] = {
		{ "anon_inode:[eventfd]", IBCR_FD_EVENTFD },
		{ "anon_inode:[timerfd]", IBCR_FD_TIMERFD },
		{ "anon_inode:[signalfd]", IBCR_FD_SIGNALFD },
		{ "anon_inode:[eventpoll]", IBCR_FD_EPOLL },
		{ "anon_inode:inotify", IBCR_FD_INOTIFY },
		{ "anon_inode:[pidfd]", IBCR_FD_PIDFD },
	};

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (!strcmp(link, k[i].link)) {
			o->kind = k[i].kind;
			return 1;
		}
	return 0;
}

static int need(const char *s, const char *key, int base, uint64_t *v, pid_t pid, int fd,
		const char *what, struct ibcr_err *e)
{
	if (fdinfo_field(s, key, base, v))
		return 0;
	return ibcr_fail(e, "pid %d fd %d: %s: this kernel's fdinfo has no '%s' line, so "
			 "its state cannot be read", (int)pid, fd, what, key);
}

static int cap_eventfd(pid_t pid, int fd, struct ibcr_fobj *o, struct ibcr_err *e)
{
	uint64_t count = 0, sem = 0;
	char *s;
	int rc;

	if (fdinfo_read(pid, fd, &s, e))
		return -1;
	rc = need(s, "eventfd-count:", 16, &count, pid, fd, "eventfd", e);
	/* before Linux 6.4 the mode is not shown: fdeventfd.c finds it */
	if (!rc && !fdinfo_field(s, "eventfd-semaphore:", 10, &sem))
		rc = eventfd_semaphore_probe(pid, fd, count, &sem, e);
	free(s);
	fobj_eventfd_set(o, count, sem);
	return rc;
}

static int cap_signalfd(pid_t pid, int fd, struct ibcr_fobj *o, struct ibcr_err *e)
{
	uint64_t mask = 0;
	char *s;
	int rc;

	if (fdinfo_read(pid, fd, &s, e))
		return -1;
	rc = need(s, "sigmask:", 16, &mask, pid, fd, "signalfd", e);
	free(s);
	fobj_signalfd_set_mask(o, mask);
	return rc;
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

/* The timer as timerfd_gettime() sees it, and the clock's time then. */
static int timer_now(pid_t pid, int fd, clockid_t clk, struct itimerspec *cur,
		     struct timespec *now, struct ibcr_err *e)
{
	int g = grab_fd(pid, fd, e), rc = 0;

	if (g < 0)
		return -1;
	if (timerfd_gettime(g, cur) || clock_gettime(clk, now))
		rc = ibcr_fail_errno(e, errno, "pid %d fd %d: reading its timerfd's time",
				     (int)pid, fd);
	close(g);
	return rc;
}

static int cap_timerfd(pid_t pid, int fd, struct ibcr_fobj *o, struct ibcr_err *e)
{
	uint64_t clk = 0, ticks = 0, flags = 0, value;
	struct itimerspec cur = { 0 };
	struct timespec now = { 0 };
	char *s;
	int rc;

	if (fdinfo_read(pid, fd, &s, e))
		return -1;
	rc = need(s, "clockid:", 10, &clk, pid, fd, "timerfd", e);
	free(s);
	if (rc || timer_now(pid, fd, (clockid_t)clk, &cur, &now, e))
		return -1;
	/* after timerfd_gettime: the expirations it has brought up to date */
	if (fdinfo_read(pid, fd, &s, e))
		return -1;
	rc = need(s, "ticks:", 10, &ticks, pid, fd, "timerfd", e) ||
	     need(s, "settime flags:", 8, &flags, pid, fd, "timerfd", e) ? -1 : 0;
	free(s);
	if (rc)
		return -1;
	value = ts_ns(&cur.it_value);
	if (value && (flags & TFD_TIMER_ABSTIME))
		value += ts_ns(&now);	/* the deadline it was given */
	fobj_timerfd_set(o, clk, flags, ticks, ts_ns(&cur.it_interval), value);
	return 0;
}

int anon_capture(pid_t pid, int fd, struct ibcr_fobj *o, struct ibcr_err *e)
{
	switch (o->kind) {
	case IBCR_FD_EVENTFD:
		return cap_eventfd(pid, fd, o, e);
	case IBCR_FD_SIGNALFD:
		return cap_signalfd(pid, fd, o, e);
	case IBCR_FD_TIMERFD:
		return cap_timerfd(pid, fd, o, e);
	}
	return 0;	/* epoll: epoll_finish; inotify: fdinotify.c */
}

/*
 * The object whose file pid's epoll efd watches as tfd (toff-th such
 * entry): the one at tfd now, or (closed since, or renumbered) another
 * description of the image with that very file: *obj 1 + its index, 0 for
 * the file at tfd.
 */
static int find_target(const struct fobjs *o, pid_t pid, int efd, int tfd, uint32_t toff,
		       uint32_t *obj, struct ibcr_err *e)
{
	struct { uint32_t efd, tfd, toff; } slot = { (uint32_t)efd, (uint32_t)tfd, toff };
	long r = syscall(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, tfd, &slot);

	*obj = 0;
	if (r < 0 && errno != EBADF)
		return ibcr_fail_errno(e, errno, "pid %d fd %d: checking its epoll target fd %d "
				       "(kcmp KCMP_EPOLL_TFD)", (int)pid, efd, tfd);
	if (r == 0)
		return 0;
	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		uint32_t k = o->f.objs[i].kind;

		if (k == IBCR_FD_STAGE || k == IBCR_FD_STDIO || k == IBCR_FD_EXTERNAL ||
		    syscall(SYS_kcmp, o->rep_pid[i], pid, KCMP_EPOLL_TFD, o->rep_fd[i], &slot))
			continue;
		*obj = i + 1;	/* added by that number with this file, then put back */
		return 0;
	}
	return ibcr_fail(e, "pid %d fd %d: epoll watches a file as fd %d, which the process "
			 "%s, and no descriptor of the image has that file (not supported)",
			 (int)pid, efd, tfd, r > 0 ? "now has another file at" : "has closed");
}

/* How many entries before the last of w (n of them) have its target fd. */
static uint32_t same_fd_before(const uint64_t *w, size_t n)
{
	uint32_t k = 0;

	for (size_t i = 0; i + 1 < n; i++)
		k += (uint32_t)w[3 * i] == (uint32_t)w[3 * (n - 1)];	/* the fd numbers */
	return k;
}

static int epoll_entries(const struct fobjs *o, pid_t pid, int efd, struct buf *b,
			 struct ibcr_err *e)
{
	char *s, *p;
	int rc = 0;

	if (fdinfo_read(pid, efd, &s, e))
		return -1;
	for (p = strstr(s, "\ntfd:"); p && !rc; p = strstr(p + 1, "\ntfd:")) {
		uint64_t data;
		uint32_t events;
		int tfd;
		uint64_t w[3];

		if (fdinfo_epoll_entry(p + 1, &tfd, &events, &data)) {
			rc = ibcr_fail(e, "pid %d fd %d: cannot parse its epoll entry '%.60s'",
				       (int)pid, efd, p + 1);
			break;
		}
		uint32_t obj = 0;

		w[0] = (uint32_t)tfd;
		w[1] = events;
		w[2] = data;
		buf_put(b, w, sizeof(w));
		rc = find_target(o, pid, efd, tfd, same_fd_before((uint64_t *)b->p,
								  b->len / sizeof(w)), &obj, e);
		w[0] |= (uint64_t)obj << 32;
		memcpy(b->p + b->len - sizeof(w), w, sizeof(w[0]));
	}
	free(s);
	return rc;
}

/*
 * Each epoll's entries, by target fd number in the first process found
 * with it: the restore adds them there, after that process's fds are in
 * place (an epoll shared by several processes is one object).
 */
int epoll_finish(struct fobjs *o, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		struct ibcr_fobj *ob = &o->f.objs[i];
		struct buf b = { 0 };

		if (ob->kind != IBCR_FD_EPOLL)
			continue;
		if (epoll_entries(o, o->rep_pid[i], o->rep_fd[i], &b, e)) {
			buf_free(&b);
			return -1;
		}
		fobj_epoll_set(ob, o->rep_pid[i], b.len / 24);
		ob->data_len = b.len;
		o->f.data[i] = b.p;
	}
	return 0;
}
