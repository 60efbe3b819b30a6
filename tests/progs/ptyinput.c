// SPDX-License-Identifier: MIT
/*
 * Input waiting in a pty for its reader: the parent holds the master and
 * types "a\rb\003c\177" into it; the child, whose stdin is the slave,
 * reads only after the restore (gate.h), non-canonically (ICANON and
 * ISIG off, ICRNL and INLCR on: the \r arrived as \n, and that \n typed
 * in again with input processing on would come out as \r). It must read
 * "a\nb\003c\177", once, and nothing more.
 *
 *   ptyinput          the reader is non-canonical
 *   ptyinput canon    the reader is canonical (a checkpoint is refused)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "gate.h"

static const char typed[] = "a\rb\003c\177", got[] = "a\nb\003c\177";

/* canon: its first line only ("a\n": the rest is a line not ended yet) */
static int reader(int go, int canon)
{
	size_t want = canon ? 2 : sizeof(got) - 1;
	char b[64], x;
	ssize_t k;

	if (read(go, &x, 1) != 1)
		return 10;
	if (fcntl(0, F_SETFL, O_NONBLOCK) || (k = read(0, b, sizeof(b))) < 0)
		return 11;
	if ((size_t)k != want || memcmp(b, got, want))
		return 12;
	return read(0, b, sizeof(b)) < 0 ? 0 : 13;	/* nothing more */
}

int main(int argc, char **argv)
{
	int canon = argc > 1 && !strcmp(argv[1], "canon");
	int m = posix_openpt(O_RDWR | O_NOCTTY), s, go[2], st;
	struct termios t;
	pid_t c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	check(m >= 0 && !grantpt(m) && !unlockpt(m), "posix_openpt");
	check((s = open(ptsname(m), O_RDWR | O_NOCTTY)) >= 0 && pipe(go) == 0, "slave");
	check(tcgetattr(s, &t) == 0, "tcgetattr");
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ISIG);
	if (!canon)
		t.c_lflag &= ~(tcflag_t)ICANON;
	t.c_iflag |= ICRNL | INLCR;
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	check(tcsetattr(s, TCSANOW, &t) == 0, "tcsetattr");
	if (!(c = fork())) {
		dup2(s, 0);
		close(s);
		_exit(reader(go[0], canon));
	}
	close(s);
	check(write(m, typed, sizeof(typed) - 1) == sizeof(typed) - 1, "typing");
	gate_wait();
	check(write(go[1], "g", 1) == 1 && waitpid(c, &st, 0) == c && WIFEXITED(st),
	      "the reader");
	check(WEXITSTATUS(st) == 0, "the reader's check %d failed (wrong or no input)",
	      WEXITSTATUS(st));
	gate_done();
	return 0;
}
