// SPDX-License-Identifier: MIT
/*
 * A launcher and its child over a pty, as mpirun or script(1) have it: the
 * parent opens a pty pair with a window size and raw-ish settings, the
 * child (stdout = the slave, not its controlling terminal) writes
 * "tick N pid P" lines, and the parent relays what it reads from the
 * master to its own stdout, slower than the child writes (8 bytes every
 * 50 ms), so that output always waits in the pty. The child checks at every tick that the
 * window size and terminal settings are still the ones it was given.
 *
 *   ptypair [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int child(int slave, long ticks, long ms)
{
	struct winsize w;
	struct termios t;

	dup2(slave, 1);
	close(slave);
	for (long n = 0; n < ticks; n++) {
		if (ioctl(1, TIOCGWINSZ, &w) || w.ws_row != 33 || w.ws_col != 77)
			dprintf(2, "FAIL window size changed\n");
		if (tcgetattr(1, &t) || (t.c_lflag & ECHO) || !(t.c_oflag & ONLCR))
			dprintf(2, "FAIL terminal settings changed\n");
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		sleep_ms(ms);
	}
	printf("child done\n");
	return 0;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 40, ms = argc > 2 ? atol(argv[2]) : 100;
	int m = posix_openpt(O_RDWR | O_NOCTTY), s, st, cr = 0;
	struct winsize w = { 33, 77, 0, 0 };
	struct termios t;
	char buf[8];
	ssize_t k;
	pid_t c;

	if (m < 0 || grantpt(m) || unlockpt(m) || (s = open(ptsname(m), O_RDWR | O_NOCTTY)) < 0)
		return 2;
	tcgetattr(s, &t);
	t.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
	t.c_oflag |= ONLCR;
	if (tcsetattr(s, TCSANOW, &t) || ioctl(s, TIOCSWINSZ, &w))
		return 2;
	if ((c = fork()) == 0)
		return child(s, ticks, ms);
	close(s);
	/* ONLCR makes each "\n" "\r\n", once: anything else is a failure */
	while ((k = read(m, buf, 8)) > 0) {
		for (ssize_t i = 0; i < k; i++) {
			if ((buf[i] == '\r' && cr) || (buf[i] == '\n' && !cr) ||
			    (buf[i] != '\r' && buf[i] != '\n' && cr))
				printf("FAIL output processing: byte %#x after %s\n",
				       (unsigned char)buf[i], cr ? "CR" : "no CR");
			cr = buf[i] == '\r';
			if (!cr)
				putchar(buf[i]);
		}
		fflush(stdout);
		sleep_ms(50);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	printf("DONE\n");
	return 0;
}
