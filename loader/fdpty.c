// SPDX-License-Identifier: MIT
/*
 * pty pairs whose master was in the image: a new pair (its number is the
 * kernel's choice, as a new terminal's always is), with the saved
 * terminal state, and the output that waited for the master's reader
 * written again through the slave, output processing off, so the reader
 * gets the same bytes. Slaves are opened through their master
 * (TIOCGPTPEER), which finds the right devpts instance in a container
 * too. Masters are made before any slave (objects.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "fdkinds.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

static void termios_of(const struct ibcr_pty *p, struct termios *t)
{
	memset(t, 0, sizeof(*t));
	t->c_iflag = p->iflag;
	t->c_oflag = p->oflag;
	t->c_cflag = p->cflag;
	t->c_lflag = p->lflag;
	t->c_line = p->line;
	memcpy(t->c_cc, p->cc, sizeof(p->cc) < sizeof(t->c_cc) ? sizeof(p->cc) : sizeof(t->c_cc));
}

/* The waiting output, raw, then the saved output processing. */
static int refill(int m, const struct ibcr_pty *p, const struct termios *t)
{
	struct termios raw = *t;
	int s = ioctl(m, TIOCGPTPEER, O_WRONLY | O_NOCTTY | O_CLOEXEC), rc = 0;

	if (s < 0)
		return -1;
	raw.c_oflag &= ~(tcflag_t)OPOST;
	if (tcsetattr(s, TCSANOW, &raw) || write_full(s, p + 1, p->pending))
		rc = -1;
	close(s);
	return rc;
}

/*
 * The slave's unread input, typed in through the master: nothing echoed
 * or edited, and all of it at the slave before the saved termios come
 * back (the line discipline takes it from a kernel worker, later).
 */
static int type_in(int m, const struct termios *t, const uint8_t *in, size_t n)
{
	struct termios raw = *t;
	int s, rc;

	raw.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ISIG | ICANON | IEXTEN);
	raw.c_iflag &= ~(tcflag_t)(ICRNL | INLCR | IGNCR | ISTRIP | IXON | IXOFF | BRKINT |
				   PARMRK | IUCLC);
	if ((s = ioctl(m, TIOCGPTPEER, O_RDONLY | O_NOCTTY | O_CLOEXEC)) < 0)
		return -1;
	rc = tcsetattr(m, TCSANOW, &raw) || write_full(m, in, n) ||
	     fionread_wait(s, (int)n, 5000) ? -1 : 0;
	close(s);
	return rc;
}

static int master_setup(int m, const struct ibcr_fobj *o, const uint8_t *data,
			uint32_t input, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_pty *p = (const struct ibcr_pty *)data;
	struct winsize w;
	struct termios t;
	int unlock = 0;

	if (o->data_len < sizeof(*p) || o->data_len != sizeof(*p) + p->pending + input)
		return ibcr_fail(e, "pty master (file object %u): its record is damaged", i);
	termios_of(p, &t);
	w = (struct winsize){ p->rows, p->cols, p->xpixel, p->ypixel };
	if (ioctl(m, TIOCSPTLCK, &unlock) || ioctl(m, TIOCSWINSZ, &w))
		return ibcr_fail_errno(e, errno, "pty master (file object %u): setting it up", i);
	if (p->pending && refill(m, p, &t))
		return ibcr_fail_errno(e, errno, "pty master (file object %u): writing the %u "
				       "bytes of output that waited in it", i, p->pending);
	if (input && type_in(m, &t, data + sizeof(*p) + p->pending, input))
		return ibcr_fail_errno(e, errno, "pty master (file object %u): typing in the %u "
				       "bytes of input its slave's reader had not read", i, input);
	if (tcsetattr(m, TCSANOW, &t))
		return ibcr_fail_errno(e, errno, "pty master (file object %u): its terminal "
				       "settings", i);
	if (p->locked && ioctl(m, TIOCSPTLCK, &p->locked))
		return ibcr_fail_errno(e, errno, "pty master (file object %u): locking it", i);
	return 0;
}

/* The slave's owner and mode: a new pair is its maker's, the loader's. */
static int slave_owner(int m, const struct ibcr_fattr *a, uint32_t i, struct ibcr_err *e)
{
	int s, rc = 0;

	if (!(a->flags & IBCR_FATTR_OWNER))
		return 0;
	if ((s = ioctl(m, TIOCGPTPEER, O_RDONLY | O_NOCTTY | O_CLOEXEC)) < 0)
		return ibcr_fail_errno(e, errno, "pty master (file object %u): its slave", i);
	if ((fchown(s, a->uid, a->gid) && (errno != EPERM || a->uid != geteuid())) ||
	    fchmod(s, (mode_t)a->mode))
		rc = ibcr_fail_errno(e, errno, "pty master (file object %u): giving its slave "
				     "owner %u:%u and mode %#o", i, a->uid, a->gid, a->mode);
	close(s);
	return rc;
}

int ptmx_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	int m = open("/dev/ptmx", (int)(o->flags & (O_ACCMODE | STATUS_FLAGS)) | O_NOCTTY |
			 O_CLOEXEC);

	if (m < 0)
		return ibcr_fail_errno(e, errno, "pty master (file object %u): opening /dev/ptmx",
				       i);
	if (master_setup(m, o, f->data[i], f->attrs[i].pty_input, i, e) ||
	    slave_owner(m, &f->attrs[i], i, e)) {
		close(m);
		return -1;
	}
	return m;
}

static const struct ibcr_fattr *ctty_of(const struct restore *rs, uint32_t *obj)
{
	const struct ibcr_files *f = rs->files;

	for (uint32_t i = 0; i < f->nobjs; i++)
		if (f->objs[i].kind == IBCR_FD_PTMX && f->attrs[i].ctty_sid &&
		    f->attrs[i].ctty_sid == rs->ps->rec.pid && rs->obj_fds[i] >= 0) {
			*obj = i;
			return &f->attrs[i];
		}
	return NULL;
}

/*
 * A restored session leader, right after setsid and before it forks its
 * children: its controlling terminal again, the slave of a pair of the
 * image (through the master the loader made, inherited). Before the
 * forks: a process has the terminal its session leader had when it was
 * forked, and no way to get it later.
 */
int pty_ctty_take(const struct restore *rs, struct ibcr_err *e)
{
	uint32_t i;
	int s, rc = 0;

	if (!ctty_of(rs, &i))
		return 0;
	s = ioctl(rs->obj_fds[i], TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0 || ioctl(s, TIOCSCTTY, 0))
		rc = ibcr_fail_errno(e, errno, "pid %d: making its pty slave its controlling "
				     "terminal", rs->ps->rec.pid);
	if (s >= 0)
		close(s);
	return rc;
}

/*
 * Later, once its fds are placed: the terminal's foreground group, when
 * that group exists (its members are forked before the leader restores
 * itself, and set their group first thing).
 */
int pty_ctty_restore(const struct restore *rs, struct ibcr_err *e)
{
	struct timespec ms = { 0, 1000000 };
	const struct ibcr_fattr *a;
	uint32_t i;
	int s, tries = 5000;

	if (!(a = ctty_of(rs, &i)) || !a->fg_pgrp)
		return 0;
	if ((s = ioctl(rs->obj_fds[i], TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		return ibcr_fail_errno(e, errno, "pid %d: opening its controlling terminal",
				       rs->ps->rec.pid);
	while (tcsetpgrp(s, a->fg_pgrp) && --tries && (errno == ESRCH || errno == EPERM))
		nanosleep(&ms, NULL);
	close(s);
	if (!tries)
		return ibcr_fail_errno(e, errno, "pid %d: making group %d the foreground of its "
				       "terminal", rs->ps->rec.pid, a->fg_pgrp);
	return 0;
}

int pts_open(const struct ibcr_files *f, uint32_t i, const int *fds, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	uint64_t master = fobj_pts_master(o);
	int s;

	if (master >= f->nobjs || f->objs[master].kind != IBCR_FD_PTMX || fds[master] < 0)
		return ibcr_fail(e, "pty slave %s (file object %u): its master (object %llu) is "
				 "not there", f->paths[i], i, (unsigned long long)master);
	s = ioctl(fds[master], TIOCGPTPEER,
		  (int)(o->flags & (O_ACCMODE | STATUS_FLAGS)) | O_NOCTTY | O_CLOEXEC);
	if (s < 0)
		return ibcr_fail_errno(e, errno, "pty slave %s (file object %u): opening it "
				       "through its master", f->paths[i], i);
	return s;
}
