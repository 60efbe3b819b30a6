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
 * to slave) cannot be put back so: refused.
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

/* Input the slave's reader has not read yet: it cannot be put back. */
static int check_input(pid_t pid, int fd, const char *slave, struct ibcr_err *e)
{
	int s = open(slave, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC), n = 0;

	if (s < 0)
		return ibcr_fail_errno(e, errno, "pid %d fd %d: pty master: opening %s", (int)pid,
				       fd, slave);
	if (ioctl(s, FIONREAD, &n))
		n = -1;
	close(s);
	if (n)
		return ibcr_fail(e, "pid %d fd %d: pty master: %s has %d bytes of unread input: "
				 "not supported", (int)pid, fd, slave, n);
	return 0;
}

static int master_state(pid_t pid, int fd, int m, const char *slave, struct ibcr_fobj *o,
			uint8_t **data, struct ibcr_err *e)
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
	if (check_input(pid, fd, slave, e))
		return -1;
	state_of(&t, &w, &p);
	p.locked = (uint32_t)lock;
	p.pending = (uint32_t)n;
	*data = xmalloc(sizeof(p) + (size_t)n + 8);
	if (n && read_full(m, *data + sizeof(p), (size_t)n))	/* FIONREAD's n: never blocks */
		return ibcr_fail_errno(e, errno ? errno : EIO, "pid %d fd %d: pty master %s: "
				       "reading the %d bytes of output waiting in it", (int)pid,
				       fd, slave, n);
	if (n && put_back(slave, &t, *data + sizeof(p), (size_t)n))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: pty master %s: %d bytes of "
				       "output were read and could not be put back", (int)pid,
				       fd, slave, n);
	memcpy(*data, &p, sizeof(p));
	o->data_len = sizeof(p) + (uint64_t)n;
	return 0;
}

int ptmx_capture(pid_t pid, int fd, struct ibcr_fobj *o, uint8_t **data, struct ibcr_err *e)
{
	char *info, slave[32];
	uint64_t idx;
	int m, rc;

	if (fdinfo_read(pid, fd, &info, e))
		return -1;
	rc = !fdinfo_field(info, "tty-index:", 10, &idx);
	free(info);
	if (rc)
		return ibcr_fail(e, "pid %d fd %d: pty master without a tty-index in its fdinfo",
				 (int)pid, fd);
	o->aux[0] = idx;
	snprintf(slave, sizeof(slave), "/dev/pts/%llu", (unsigned long long)idx);
	if ((m = grab_fd(pid, fd, e)) < 0)
		return -1;
	rc = master_state(pid, fd, m, slave, o, data, e);
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

void pty_finish(struct fobjs *o)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		struct ibcr_fobj *s = &o->f.objs[i];
		long n = pts_index(o->f.paths[i]);

		if (n < 0 || (s->kind != IBCR_FD_STDIO && s->kind != IBCR_FD_TTY))
			continue;
		for (uint32_t k = 0; k < o->f.nobjs; k++)
			if (o->f.objs[k].kind == IBCR_FD_PTMX && o->f.objs[k].aux[0] == (uint64_t)n) {
				s->kind = IBCR_FD_PTS;
				s->aux[0] = (uint64_t)n;
				s->aux[1] = k;
			}
	}
}
