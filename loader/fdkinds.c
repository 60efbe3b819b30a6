// SPDX-License-Identifier: MIT
/*
 * eventfd, timerfd, signalfd and epoll objects, and terminals used above
 * fd 2, made again from their image records (lib/fobj.h unpacks what
 * each aux[] word holds).
 *
 * A timerfd is armed when the loader makes it, shortly before the
 * process resumes: a relative timer has the time it had left then (the
 * process did not live meanwhile, like a relative sleep), an absolute one
 * (TFD_TIMER_ABSTIME) its deadline on its clock, missed periods counted
 * as the kernel counts them. Unread expirations are put back with
 * TFD_IOC_SET_TICKS.
 *
 * An epoll is made empty here; the restored process that the interest
 * list's fd numbers belong to adds every entry again once its fds are in
 * place (epoll_fill), so that each entry has its file and its number,
 * its events and data word, and is reported if its file is ready.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "fdkinds.h"

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

static int nonblock_as_saved(int fd, const struct ibcr_fobj *o, const char *what,
			     uint32_t i, struct ibcr_err *e)
{
	if (fcntl(fd, F_SETFL, o->flags & STATUS_FLAGS) == 0)
		return fd;
	ibcr_fail_errno(e, errno, "%s (file object %u): setting its flags", what, i);
	close(fd);
	return -1;
}

static int eventfd_open(const struct ibcr_fobj *o, uint32_t i, struct ibcr_err *e)
{
	int sem = fobj_eventfd_semaphore(o) ? 1 /* EFD_SEMAPHORE */ : 0;
	int fd = (int)syscall(SYS_eventfd2, 0, O_CLOEXEC | sem);
	uint64_t count = fobj_eventfd_count(o);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "eventfd (file object %u): creating it", i);
	if (count && write(fd, &count, 8) != 8) {
		ibcr_fail_errno(e, errno, "eventfd (file object %u): setting its count to %llu",
				i, (unsigned long long)count);
		close(fd);
		return -1;
	}
	return nonblock_as_saved(fd, o, "eventfd", i, e);
}

static int signalfd_open(const struct ibcr_fobj *o, uint32_t i, struct ibcr_err *e)
{
	uint64_t mask = fobj_signalfd_mask(o);
	int fd = (int)syscall(SYS_signalfd4, -1, &mask, sizeof(mask), O_CLOEXEC);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "signalfd (file object %u) for signals %#llx",
				       i, (unsigned long long)mask);
	return nonblock_as_saved(fd, o, "signalfd", i, e);
}

static struct timespec ns_ts(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
}

/* Arms it as saved; expirations since (a deadline passed) come back too. */
static int timer_arm(int fd, const struct ibcr_fobj *o, uint32_t i, struct ibcr_err *e)
{
	struct itimerspec its = { ns_ts(fobj_timerfd_interval(o)), ns_ts(fobj_timerfd_value(o)) };
	uint64_t ticks = fobj_timerfd_ticks(o), more = 0;

	if (fobj_timerfd_value(o) && timerfd_settime(fd, fobj_timerfd_flags(o), &its, NULL))
		return ibcr_fail_errno(e, errno, "timerfd (file object %u): arming it", i);
	/* (ECANCELED: the clock was set meanwhile; the timer stays armed) */
	if (read(fd, &more, sizeof(more)) < 0 && errno != EAGAIN && errno != ECANCELED)
		return ibcr_fail_errno(e, errno, "timerfd (file object %u)", i);
	ticks += more;
	if (ticks && ioctl(fd, TFD_IOC_SET_TICKS, &ticks))
		return ibcr_fail_errno(e, errno, "timerfd (file object %u): putting back its "
				       "%llu unread expiration(s) (TFD_IOC_SET_TICKS)", i,
				       (unsigned long long)ticks);
	return 0;
}

static int timerfd_open(const struct ibcr_fobj *o, uint32_t i, struct ibcr_err *e)
{
	int clk = fobj_timerfd_clock(o);
	int fd = timerfd_create(clk, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "timerfd (file object %u) on clock %d", i, clk);
	if (timer_arm(fd, o, i, e)) {
		close(fd);
		return -1;
	}
	return nonblock_as_saved(fd, o, "timerfd", i, e);
}

static int epoll_open(const struct ibcr_fobj *o, uint32_t i, struct ibcr_err *e)
{
	int fd = epoll_create1(EPOLL_CLOEXEC);

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "epoll (file object %u): creating it", i);
	return nonblock_as_saved(fd, o, "epoll", i, e);
}

static unsigned tty_dev(int fd)
{
	unsigned dev = 0;

	return ioctl(fd, TIOCGDEV, &dev) ? 0 : dev;
}

/*
 * The loader's controlling terminal: as /dev/tty when it was opened so,
 * else through the name of the std stream of ours that is that terminal
 * when there is one (the fd shows /dev/pts/N as before).
 */
int tty_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	int flags = (int)(f->objs[i].flags & (O_ACCMODE | STATUS_FLAGS)) | O_NOCTTY | O_CLOEXEC;
	int fd = open("/dev/tty", flags);
	unsigned dev = fd >= 0 ? tty_dev(fd) : 0;

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "terminal %s (file object %u) is used above fd 2 "
				       "and is rebound to restart-loader's controlling terminal, "
				       "but restart-loader has none (/dev/tty)", f->paths[i], i);
	for (int k = 0; k <= 2 && dev && strcmp(f->paths[i], "/dev/tty"); k++) {
		struct stat st;
		char self[32];
		int nfd;

		if (fstat(k, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != (dev_t)dev)
			continue;
		snprintf(self, sizeof(self), "/proc/self/fd/%d", k);
		if ((nfd = open(self, flags)) >= 0) {
			close(fd);
			return nfd;
		}
	}
	return fd;
}

int fdk_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];

	switch (o->kind) {
	case IBCR_FD_EVENTFD: return eventfd_open(o, i, e);
	case IBCR_FD_TIMERFD: return timerfd_open(o, i, e);
	case IBCR_FD_SIGNALFD: return signalfd_open(o, i, e);
	case IBCR_FD_EPOLL: return epoll_open(o, i, e);
	case IBCR_FD_INOTIFY: return inotify_open(f, i, e);
	case IBCR_FD_TTY: return tty_open(f, i, e);
	case IBCR_FD_PTMX: return ptmx_open(f, i, e);
	case IBCR_FD_EXTERNAL: return external_open(f, i, e);
	}
	return ibcr_fail(e, "file object %u (%s) is of kind %u, which this restart-loader "
			 "does not know", i, f->paths[i], o->kind);
}

/* The fd number at which this process has object i (for messages). */
static int fd_of(const struct restore *rs, uint32_t i)
{
	for (uint32_t k = 0; k < rs->ps->nfds; k++)
		if (rs->ps->fds[k].obj == i)
			return rs->ps->fds[k].fd;
	return -1;
}

/*
 * Entry w added with the file of object obj at number tfd, which now
 * holds another (or none): the occupant aside, the file there for the
 * add, the occupant back. The epoll keys the entry by (file, number).
 */
static int add_moved(const struct restore *rs, int efd, int tfd, uint32_t obj,
		     struct epoll_event *ev)
{
	int aside = -1, fl = fcntl(tfd, F_GETFD), rc;

	if (obj >= rs->files->nobjs || rs->obj_fds[obj] < 0) {
		errno = EBADF;
		return -1;
	}
	if (fl >= 0 && (aside = fcntl(tfd, F_DUPFD_CLOEXEC, rs->fd_base)) < 0)
		return -1;
	rc = dup2(rs->obj_fds[obj], tfd) < 0 ? -1 : epoll_ctl(efd, EPOLL_CTL_ADD, tfd, ev);
	if (aside >= 0) {
		if (dup3(aside, tfd, fl & FD_CLOEXEC ? O_CLOEXEC : 0) < 0)
			rc = -1;
		close(aside);
	} else {
		close(tfd);
	}
	return rc;
}

static int epoll_add(const struct restore *rs, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &rs->files->objs[i];
	const uint64_t *w = (const uint64_t *)rs->files->data[i];

	if (o->data_len != fobj_epoll_entries(o) * 24 || (o->data_len && !w))
		return ibcr_fail(e, "pid %d fd %d: epoll: its %llu entries do not match its "
				 "data", rs->ps->rec.pid, fd_of(rs, i),
				 (unsigned long long)fobj_epoll_entries(o));
	for (uint64_t k = 0; k < fobj_epoll_entries(o); k++, w += 3) {
		struct epoll_event ev = { .events = (uint32_t)w[1], .data.u64 = w[2] };
		int tfd = (int)(uint32_t)w[0];
		uint32_t moved = (uint32_t)(w[0] >> 32);

		if (moved ? add_moved(rs, rs->obj_fds[i], tfd, moved - 1, &ev) :
		    epoll_ctl(rs->obj_fds[i], EPOLL_CTL_ADD, tfd, &ev))
			return ibcr_fail_errno(e, errno, "pid %d fd %d: epoll: watching fd %d "
					       "again (events %#x)", rs->ps->rec.pid,
					       fd_of(rs, i), tfd, (unsigned)w[1]);
	}
	return 0;
}

/* Epoll entries by this process's fd numbers, now that they are in place. */
int epoll_fill(const struct restore *rs, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < rs->files->nobjs; i++) {
		const struct ibcr_fobj *o = &rs->files->objs[i];

		if (o->kind != IBCR_FD_EPOLL || fobj_epoll_pid(o) != rs->ps->rec.pid ||
		    fd_of(rs, i) < 0)
			continue;
		if (rs->obj_fds[i] < 0)
			return ibcr_fail(e, "pid %d fd %d: its epoll was not made",
					 rs->ps->rec.pid, fd_of(rs, i));
		if (epoll_add(rs, i, e))
			return -1;
	}
	return 0;
}

/*
 * A terminal above fd 2: the loader's controlling terminal, sharing the
 * description of a std stream of this process that was the same one
 * before and is that terminal now (as bash's fd 255, a dup of fd 2).
 * On fds 0-2 the loader's own stays, as for IBCR_FD_STDIO.
 */
int tty_place(const struct restore *rs, const struct ibcr_fd *f, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	int src = rs->obj_fds[f->obj];

	if (f->fd <= 2)
		return fcntl(f->fd, F_GETFD) < 0 ?
		       ibcr_fail(e, "fd %d was a terminal and is rebound to the loader's, "
				 "but the loader has no fd %d", f->fd, f->fd) : 0;
	if (src < 0)
		return ibcr_fail(e, "fd %d: its terminal was not opened", f->fd);
	for (uint32_t k = 0; k < ps->nfds && ps->fds[k].fd <= 2; k++)
		if (ps->fds[k].obj == f->obj && tty_dev(ps->fds[k].fd) == tty_dev(src) &&
		    tty_dev(src)) {
			src = ps->fds[k].fd;
			break;
		}
	if (dup3(src, f->fd, f->cloexec ? O_CLOEXEC : 0) < 0)
		return ibcr_fail_errno(e, errno, "placing fd %d (terminal %s)", f->fd,
				       rs->files->paths[f->obj]);
	return 0;
}
