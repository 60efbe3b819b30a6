// SPDX-License-Identifier: MIT
/*
 * A session on a pty inside the image, as a terminal emulator or sshd
 * makes one: the parent holds the master; its child C starts a session
 * whose controlling terminal is the slave, and its child G (group of its
 * own) is that terminal's foreground group. The slave belongs to uid
 * 1234, group 5, mode 0620 (as root; the pair's maker otherwise). After
 * the restore (gate.h) the slave still has that owner and mode, C is
 * still the session leader with the slave as controlling terminal
 * (/dev/tty opens it), G still its foreground group and /dev/tty opens
 * for G too. C and G report through their exit status.
 *
 *   ttysess
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "gate.h"

/* Both are that terminal (TIOCGDEV: /dev/tty's inode is its own) */
static int is_slave(int fd, int slave)
{
	unsigned a = 0, b = 1;

	return !ioctl(fd, TIOCGDEV, &a) && !ioctl(slave, TIOCGDEV, &b) && a == b;
}

/* G: waits for C's word, then checks its terminal. */
static int grandchild(int go, int slave)
{
	char x;
	int t;

	if (read(go, &x, 1) != 1)
		return 10;
	t = open("/dev/tty", O_RDWR);
	if (t < 0 || !is_slave(t, slave))
		return 11;
	return tcgetpgrp(slave) == getpgrp() ? 0 : 12;
}

static int session(int go, int slave)
{
	int p[2], st, t;
	pid_t g;
	char x;

	if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) || pipe(p))
		return 20;
	if (!(g = fork()))
		_exit(setpgid(0, 0) ? 13 : grandchild(p[0], slave));
	setpgid(g, g);
	if (tcsetpgrp(slave, g))
		return 21;
	if (read(go, &x, 1) != 1)
		return 22;
	/* after the restore */
	if (getsid(0) != getpid() || tcgetsid(slave) != getpid())
		return 23;
	if ((t = open("/dev/tty", O_RDWR)) < 0 || !is_slave(t, slave))
		return 24;
	if (tcgetpgrp(slave) != g)
		return 25;
	if (write(p[1], "g", 1) != 1 || waitpid(g, &st, 0) != g)
		return 26;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 27;
}

int main(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), s, go[2], st;
	int root = geteuid() == 0;
	struct stat sb;
	pid_t c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	check(m >= 0 && !grantpt(m) && !unlockpt(m), "posix_openpt");
	check((s = open(ptsname(m), O_RDWR | O_NOCTTY)) >= 0 && pipe(go) == 0, "slave");
	check(!root || (fchown(s, 1234, 5) == 0 && fchmod(s, 0620) == 0), "chown slave");
	if (!(c = fork()))
		_exit(session(go[0], s));
	close(s);
	gate_wait();
	check(stat(ptsname(m), &sb) == 0, "stat %s", ptsname(m));
	check(!root || (sb.st_uid == 1234 && sb.st_gid == 5 && (sb.st_mode & 0777) == 0620),
	      "slave %s: owner %u:%u mode %o", ptsname(m), sb.st_uid, sb.st_gid,
	      sb.st_mode & 0777);
	check(write(go[1], "g", 1) == 1 && waitpid(c, &st, 0) == c, "session leader");
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the session's check %d failed",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	gate_done();
	return 0;
}
