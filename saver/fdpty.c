// SPDX-License-Identifier: MIT
/*
 * Pseudo-terminal pairs with their master in the image (a launcher such
 * as mpirun or script(1) reading what its children write to a pty): the
 * master's terminal state, and the output that waited for its reader,
 * are saved; slaves of that master become IBCR_FD_PTS and are opened
 * through the new master at restore. A slave whose master is outside
 * the image is the user's terminal, rebound as before (files.c).
 *
 * The waiting output is read from the master, which takes it from the
 * process, and written back through the slave with output processing
 * off, so the master's reader still gets it, byte for byte, in order;
 * every process of the image is stopped meanwhile. Unread input (master
 * to slave) of a non-canonical reader is read through the slave and typed
 * in again through the master with nothing echoed or edited, saved, and
 * typed into the new pair the same way; a canonical reader's is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "fdio.h"
#include "buf.h"
#include "fdkinds.h"

int is_ptmx(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 5 && minor(st->st_rdev) == 2;
}

static void state_of(const struct termios *t, const struct winsize *w, struct ibcr_pty *p)
{
	p->iflag = t->c_iflag;
	p->oflag = t->c_oflag;
	p->cflag = t->c_cflag;
	p->lflag = t->c_lflag;
	p->line = t->c_line;
	memcpy(p->cc, t->c_cc, sizeof(p->cc) < sizeof(t->c_cc) ? sizeof(p->cc) : sizeof(t->c_cc));
	p->rows = w->ws_row;
	p->cols = w->ws_col;
	p->xpixel = w->ws_xpixel;
	p->ypixel = w->ws_ypixel;
}

/* The output goes back where it was: written by the slave, raw. */
static int put_back(const char *slave, const struct termios *t, const uint8_t *p, size_t n)
{
	struct termios raw = *t;
	int fd = open(slave, O_WRONLY | O_NOCTTY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -1;
	raw.c_oflag &= ~(tcflag_t)OPOST;
	if (tcsetattr(fd, TCSANOW, &raw))
		rc = -1;
	while (!rc && n) {
		ssize_t k = write(fd, p, n);

		if (k <= 0)
			rc = -1;
		else {
			p += k;
			n -= (size_t)k;
		}
	}
	if (tcsetattr(fd, TCSANOW, t))
		rc = -1;
	close(fd);
	return rc;
}

/*
 * Input typed in again through the master, as is: nothing echoed or
 * edited, and the termios back only once the slave has it all.
 */
static int type_in(int m, int s, const struct termios *t, const uint8_t *p, size_t n)
{
	struct termios raw = *t;
	int rc;

	raw.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ISIG | ICANON | IEXTEN);
	raw.c_iflag &= ~(tcflag_t)(ICRNL | INLCR | IGNCR | ISTRIP | IXON | IXOFF | BRKINT |
				   PARMRK | IUCLC);
	if (tcsetattr(m, TCSANOW, &raw))
		return -1;
	rc = write_full(m, p, n) || fionread_wait(s, (int)n, 5000);
	return tcsetattr(m, TCSANOW, t) || rc ? -1 : 0;
}

/*
 * Input the slave's reader has not read yet, read through the slave and
 * typed in again at once (every process of the image is stopped). Only
 * without ICANON: a canonical reader's partial line cannot be seen
 * without pushing it out as a line of its own.
 */
static int take_input(pid_t pid, int fd, int m, const char *slave, const struct termios *t,
		      struct buf *in, struct ibcr_err *e)
{
	int s = open(slave, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC), n = 0, rc = 0;

	if (s < 0)
		return ibcr_fail_errno(e, errno, "pid %d fd %d: pty master: opening %s", (int)pid,
				       fd, slave);
	if (ioctl(s, FIONREAD, &n))
		rc = ibcr_fail_errno(e, errno, "pid %d fd %d: pty master: %s: FIONREAD", (int)pid,
				     fd, slave);
	else if (n && (t->c_lflag & ICANON))
		rc = ibcr_fail(e, "pid %d fd %d: pty master: %s has %d bytes of unread input "
			       "for a canonical (line by line) reader: not supported", (int)pid,
			       fd, slave, n);
	else if (n) {
		uint8_t *p = xmalloc((size_t)n);

		if (read_full(s, p, (size_t)n))
			rc = ibcr_fail_errno(e, errno ? errno : EIO, "pid %d fd %d: pty master: "
					     "reading the %d bytes of input waiting in %s",
					     (int)pid, fd, n, slave);
		else if (type_in(m, s, t, p, (size_t)n))
			rc = ibcr_fail_errno(e, errno, "pid %d fd %d: pty master: %d bytes of "
					     "input were read from %s and could not be put back",
					     (int)pid, fd, n, slave);
		if (!rc)
			buf_put(in, p, (size_t)n);
		free(p);
	}
	close(s);
	return rc;
}

static int master_state(pid_t pid, int fd, int m, const char *slave, struct ibcr_fobj *o,
			uint8_t **data, struct buf *in, struct ibcr_err *e)
{
	struct ibcr_pty p = { 0 };
	struct termios t;
	struct winsize w;
	int lock = 0, n = 0;

	/* termios and window size asked of a master are its slave's */
	if (tcgetattr(m, &t) || ioctl(m, TIOCGWINSZ, &w) || ioctl(m, TIOCGPTLCK, &lock) ||
	    ioctl(m, FIONREAD, &n))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: pty master %s: its state",
				       (int)pid, fd, slave);
	if (take_input(pid, fd, m, slave, &t, in, e))
		return -1;
	state_of(&t, &w, &p);
	p.locked = (uint32_t)lock;
	p.pending = (uint32_t)n;
	*data = xmalloc(sizeof(p) + (size_t)n + in->len + 8);
	if (n && read_full(m, *data + sizeof(p), (size_t)n))	/* FIONREAD's n: never blocks */
		return ibcr_fail_errno(e, errno ? errno : EIO, "pid %d fd %d: pty master %s: "
				       "reading the %d bytes of output waiting in it", (int)pid,
				       fd, slave, n);
	if (n && put_back(slave, &t, *data + sizeof(p), (size_t)n))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: pty master %s: %d bytes of "
				       "output were read and could not be put back", (int)pid,
				       fd, slave, n);
	memcpy(*data, &p, sizeof(p));
	if (in->len)
		memcpy(*data + sizeof(p) + n, in->p, in->len);
	o->data_len = sizeof(p) + (uint64_t)n + in->len;
	return 0;
}

int ptmx_capture(pid_t pid, int fd, struct fobjs *fo, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_fobj *o = &fo->f.objs[i];
	struct ibcr_fattr *a = &fo->f.attrs[i];
	uint8_t **data = &fo->f.data[i];
	char *info, slave[32];
	struct buf in = { 0 };
	struct stat st;
	uint64_t idx;
	int m, rc;

	if (fdinfo_read(pid, fd, &info, e))
		return -1;
	rc = !fdinfo_field(info, "tty-index:", 10, &idx);
	free(info);
	if (rc)
		return ibcr_fail(e, "pid %d fd %d: pty master without a tty-index in its fdinfo",
				 (int)pid, fd);
	fobj_pty_set_index(o, idx);
	snprintf(slave, sizeof(slave), "/dev/pts/%llu", (unsigned long long)idx);
	/* a new pair is the restorer's (root's): the slave's owner and mode come back */
	if (stat(slave, &st))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: pty master: %s", (int)pid, fd,
				       slave);
	a->flags |= IBCR_FATTR_OWNER;
	a->uid = st.st_uid;
	a->gid = st.st_gid;
	a->mode = st.st_mode & 07777;
	if ((m = grab_fd(pid, fd, e)) < 0)
		return -1;
	rc = master_state(pid, fd, m, slave, o, data, &in, e);
	a->pty_input = (uint32_t)in.len;
	buf_free(&in);
	close(m);
	return rc;
}

/* "/dev/pts/N": N, else -1. */
static long pts_index(const char *path)
{
	char *end;
	long n;

	if (strncmp(path, "/dev/pts/", 9) || !path[9])
		return -1;
	n = strtol(path + 9, &end, 10);
	return *end ? -1 : n;
}

/* The pty master, in the image, whose slave is the terminal tty_nr (stat's). */
static long master_of(const struct fobjs *o, uint32_t tty_nr)
{
	unsigned maj = major(tty_nr), min = minor(tty_nr);

	for (uint32_t k = 0; maj >= 136 && maj <= 143 && k < o->f.nobjs; k++)
		if (o->f.objs[k].kind == IBCR_FD_PTMX &&
		    fobj_pty_index(&o->f.objs[k]) == (uint64_t)((maj - 136) * 256 + min))
			return k;
	return -1;
}

/*
 * A session started below the image's roots has its controlling terminal
 * again when that is a pty slave of the image: the session leader makes
 * it so, with its foreground group. One outside the image cannot be.
 * (The roots stay in restart-loader's session, on its terminal.)
 */
int pty_ctty(const struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e)
{
	for (uint32_t k = 0; k < n; k++) {
		const struct ibcr_proc *r = &t[k].ps.rec;
		int below_root = 0;
		long m;

		for (uint32_t p = 0; p < n; p++)
			below_root |= t[p].pid == r->ppid && !t[p].zombie;
		if (t[k].zombie || r->sid != r->pid || !t[k].tty_nr || !below_root)
			continue;
		if ((m = master_of(o, t[k].tty_nr)) < 0)
			return ibcr_fail(e, "pid %d: session leader whose controlling terminal "
					 "(%u:%u) is outside the checkpoint: not supported",
					 (int)t[k].pid, major(t[k].tty_nr), minor(t[k].tty_nr));
		o->f.attrs[m].ctty_sid = r->pid;
		o->f.attrs[m].fg_pgrp = t[k].tpgid > 0 ? t[k].tpgid : 0;
	}
	return 0;
}

void pty_finish(struct fobjs *o)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		struct ibcr_fobj *s = &o->f.objs[i];
		long n = pts_index(o->f.paths[i]);

		if (n < 0 || (s->kind != IBCR_FD_STDIO && s->kind != IBCR_FD_TTY))
			continue;
		for (uint32_t k = 0; k < o->f.nobjs; k++)
			if (o->f.objs[k].kind == IBCR_FD_PTMX &&
			    fobj_pty_index(&o->f.objs[k]) == (uint64_t)n) {
				s->kind = IBCR_FD_PTS;
				fobj_pty_set_index(s, (uint64_t)n);
				fobj_pts_set_master(s, k);
			}
	}
}
