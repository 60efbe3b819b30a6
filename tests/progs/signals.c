// SPDX-License-Identifier: MIT
/*
 * Signal state that a restore must bring back:
 *
 *   SIGUSR1  handler with SA_ONSTACK on a sigaltstack; the handler notes
 *            whether it ran on the alternate stack (address of a local)
 *   SIGUSR2  handler, but blocked until the first SIGUSR1 from another
 *            process (the "go"); a SIGUSR2 sent while blocked stays
 *            pending and must then be delivered exactly once, with the
 *            sender's si_code/si_pid/si_uid
 *   SIGHUP   ignored (SIG_IGN)
 *
 * Each tick it checks its alternate stack, dispositions and mask are
 * still as set, prints what arrived ("usr1 N altstack yes from pid P",
 * "usr2 delivered count 1 code C pid P uid U") and "tick N pid P". Any
 * mismatch: "FAIL ..." and exit 1.
 *
 *   signals [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ALT_SIZE (64 * 1024)
static char altstack[ALT_SIZE];

static volatile sig_atomic_t usr1_count, usr1_off_alt, usr1_pid;
static volatile sig_atomic_t usr2_count, usr2_code, usr2_pid, usr2_uid, usr2_early;
static volatile sig_atomic_t usr2_unblocked;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	char here;

	(void)sig;
	(void)uc;
	if (&here < altstack || &here >= altstack + ALT_SIZE)
		usr1_off_alt++;
	usr1_pid = si->si_pid;
	usr1_count++;
}

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (!usr2_unblocked)
		usr2_early = 1;
	usr2_code = si->si_code;
	usr2_pid = si->si_pid;
	usr2_uid = (sig_atomic_t)si->si_uid;
	usr2_count++;
}

static void fail(const char *what)
{
	printf("FAIL %s\n", what);
	fflush(stdout);
	exit(1);
}

static void set_handler(int sig, void (*fn)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa = { .sa_sigaction = fn, .sa_flags = SA_SIGINFO | flags };

	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		fail("sigaction");
}

/* Everything set up in main is still in place. */
static void check_state(void)
{
	struct sigaction sa;
	sigset_t mask;
	stack_t ss;

	if (sigaltstack(NULL, &ss) || ss.ss_sp != altstack || ss.ss_size != ALT_SIZE ||
	    ss.ss_flags != 0)
		fail("sigaltstack changed");
	sigaction(SIGUSR1, NULL, &sa);
	if (sa.sa_sigaction != on_usr1 || !(sa.sa_flags & SA_ONSTACK) ||
	    !(sa.sa_flags & SA_SIGINFO))
		fail("SIGUSR1 action changed");
	sigaction(SIGUSR2, NULL, &sa);
	if (sa.sa_sigaction != on_usr2 || !(sa.sa_flags & SA_SIGINFO))
		fail("SIGUSR2 action changed");
	sigaction(SIGHUP, NULL, &sa);
	if (sa.sa_handler != SIG_IGN)
		fail("SIGHUP is no longer ignored");
	sigprocmask(SIG_BLOCK, NULL, &mask);
	if (sigismember(&mask, SIGUSR2) != !usr2_unblocked)
		fail("SIGUSR2 blocked state changed");
	if (sigismember(&mask, SIGUSR1) || sigismember(&mask, SIGHUP))
		fail("SIGUSR1 or SIGHUP became blocked");
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	stack_t ss = { .ss_sp = altstack, .ss_size = ALT_SIZE };
	int seen1 = 0, seen2 = 0;
	sigset_t usr2;

	if (sigaltstack(&ss, NULL))
		fail("sigaltstack");
	set_handler(SIGUSR1, on_usr1, SA_ONSTACK | SA_RESTART);
	set_handler(SIGUSR2, on_usr2, SA_RESTART);
	signal(SIGHUP, SIG_IGN);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	sigprocmask(SIG_BLOCK, &usr2, NULL);

	/* The handler's own check must be able to say "yes" before we trust it. */
	raise(SIGUSR1);
	if (usr1_count != 1 || usr1_off_alt)
		fail("self-test: SIGUSR1 handler did not run on the alternate stack");
	printf("usr1 self-test on altstack\n");
	usr1_count = 0;

	for (long n = 0; ticks < 0 || n < ticks; n++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;	/* a handler ran: sleep the rest */
		check_state();
		if (usr1_off_alt)
			fail("SIGUSR1 handler ran off the alternate stack");
		if (usr1_count != seen1) {
			seen1 = usr1_count;
			printf("usr1 %d altstack yes from pid %d\n", seen1, (int)usr1_pid);
		}
		/* go: the first SIGUSR1 from someone else lets SIGUSR2 in */
		if (seen1 && !usr2_unblocked) {
			printf("unblocking SIGUSR2\n");
			fflush(stdout);
			usr2_unblocked = 1;
			sigprocmask(SIG_UNBLOCK, &usr2, NULL);
		}
		if (usr2_early)
			fail("SIGUSR2 was delivered while blocked");
		if (usr2_count > 1)
			fail("SIGUSR2 was delivered more than once");
		if (usr2_count != seen2) {
			seen2 = usr2_count;
			printf("usr2 delivered count %d code %d pid %d uid %d\n", seen2,
			       (int)usr2_code, (int)usr2_pid, (int)usr2_uid);
		}
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
	}
	printf("DONE pid %d usr1 %d usr2 %d\n", (int)getpid(), (int)usr1_count,
	       (int)usr2_count);
	return 0;
}
