// SPDX-License-Identifier: MIT
/*
 * Pending signals, real-time and standard, process-wide and per thread,
 * kept in their order and with their values across a restore, and not
 * delivered before the program unblocks them.
 *
 * The main thread blocks SIGUSR1, SIGUSR2 and SIGRTMIN..SIGRTMIN+2 (the
 * worker thread inherits the mask) and forks a sender, which queues:
 *   to the process:  RTMIN+1 v101, RTMIN v102, SIGUSR1 (kill), RTMIN+1
 *                    v103, RTMIN v104, SIGUSR1 again (merged)
 *   to the worker:   RTMIN+2 v201, RTMIN v203, SIGUSR2 (tgkill), RTMIN+2 v202
 * and exits. Each tick the program checks that nothing was delivered and
 * that all of them are still pending (sigpending, in each thread). On
 * SIGWINCH (the go) the main thread unblocks them, then the worker: the
 * kernel delivers standard signals first, then by number, each number in
 * the order queued, the thread's own before the process's (the handlers
 * block all of them while they run, so that each runs before the next is
 * taken: nested frames would run last first). The handlers
 * log signal, value, si_code, si_pid and si_uid; the program compares
 * with what the sender sent and prints "ORDER OK", or "FAIL ..." and
 * exits 1.
 *
 *   rtsig [TICKS [MS]]   TICKS counted after the go
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct got {
	int sig, value, code, pid, uid;
};

static struct got log_main[16], log_worker[16];
static atomic_int n_main, n_worker, go, worker_go, worker_done;
static pid_t worker_tid;
static __thread int is_worker;	/* not the TID: a restore may give new ones */

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	struct got g = { sig, si->si_value.sival_int, si->si_code, si->si_pid, (int)si->si_uid };

	(void)uc;
	if (is_worker) {
		int k = atomic_fetch_add(&n_worker, 1);

		if (k < 16)
			log_worker[k] = g;
	} else {
		int k = atomic_fetch_add(&n_main, 1);

		if (k < 16)
			log_main[k] = g;
	}
}

static void on_go(int sig)
{
	(void)sig;
	go = 1;
}

static __attribute__((noreturn)) void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	_exit(1);
}

static sigset_t tested(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGUSR2);
	for (int k = 0; k <= 2; k++)
		sigaddset(&s, SIGRTMIN + k);
	return s;
}

static void queue(pid_t pid, pid_t tid, int sig, int value)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = value;
	if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &si))
		_exit(3);
}

static void sender(pid_t pid, pid_t tid)
{
	union sigval v;

	v.sival_int = 101;
	sigqueue(pid, SIGRTMIN + 1, v);
	v.sival_int = 102;
	sigqueue(pid, SIGRTMIN, v);
	kill(pid, SIGUSR1);
	v.sival_int = 103;
	sigqueue(pid, SIGRTMIN + 1, v);
	v.sival_int = 104;
	sigqueue(pid, SIGRTMIN, v);
	kill(pid, SIGUSR1);
	queue(pid, tid, SIGRTMIN + 2, 201);
	queue(pid, tid, SIGRTMIN, 203);
	syscall(SYS_tgkill, pid, tid, SIGUSR2);
	queue(pid, tid, SIGRTMIN + 2, 202);
	_exit(0);
}

/* sigs[] still pending for the calling thread, and *delivered still 0. */
static void check_pending(const char *who, const int *sigs, int n, atomic_int *delivered)
{
	sigset_t p;

	sigpending(&p);
	for (int i = 0; i < n; i++)
		if (!sigismember(&p, sigs[i]))
			fail("%s: signal %d is no longer pending", who, sigs[i]);
	if (*delivered)
		fail("%s: a blocked signal was delivered", who);
}

static atomic_int sent;

/* Its own signals are its own to take: checked here, the shared ones by main. */
static void *worker(void *arg)
{
	const int mine[] = { SIGUSR2, SIGRTMIN + 2 };
	struct timespec ts = { 0, 20000000 };
	sigset_t s = tested();

	(void)arg;
	is_worker = 1;
	worker_tid = (pid_t)syscall(SYS_gettid);
	while (!worker_go) {
		if (sent)
			check_pending("worker", mine, 2, &n_worker);
		nanosleep(&ts, NULL);
	}
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	worker_done = 1;
	return NULL;
}

static void expect(const char *who, const struct got *log, int n, const struct got *want,
		   int nwant)
{
	if (n != nwant)
		fail("%s: %d signals delivered, %d were pending", who, n, nwant);
	for (int i = 0; i < n; i++)
		if (memcmp(&log[i], &want[i], sizeof(want[i])))
			fail("%s: signal %d was %d value %d code %d pid %d uid %d, expected %d "
			     "value %d code %d pid %d uid %d", who, i, log[i].sig, log[i].value,
			     log[i].code, log[i].pid, log[i].uid, want[i].sig, want[i].value,
			     want[i].code, want[i].pid, want[i].uid);
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 10;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	const int shared[] = { SIGUSR1, SIGRTMIN, SIGRTMIN + 1 };
	struct sigaction sa = { .sa_sigaction = on_sig, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigset_t s = tested();
	pthread_t th;
	pid_t child;
	int st, uid = (int)getuid();

	/* one handler at a time: nested frames would run in reverse order */
	sa.sa_mask = s;
	for (int sig = 1; sig < SIGRTMAX; sig++)
		if (sigismember(&s, sig))
			sigaction(sig, &sa, NULL);
	signal(SIGWINCH, on_go);
	sigprocmask(SIG_BLOCK, &s, NULL);
	pthread_create(&th, NULL, worker, NULL);
	while (!worker_tid)
		nanosleep(&ts, NULL);
	child = fork();
	if (child == 0)
		sender(getppid(), worker_tid);
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
		fail("sender failed (status %#x)", st);
	sent = 1;
	printf("sent from pid %d\n", (int)child);
	for (long n = 0, after = 0; !go || after < ticks; n++, after += go) {
		if (!go)
			check_pending("main", shared, 3, &n_main);
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
		if (go && !worker_go) {
			const struct got want[] = {
				{ SIGUSR1, 0, SI_USER, child, uid },
				{ SIGRTMIN, 102, SI_QUEUE, child, uid },
				{ SIGRTMIN, 104, SI_QUEUE, child, uid },
				{ SIGRTMIN + 1, 101, SI_QUEUE, child, uid },
				{ SIGRTMIN + 1, 103, SI_QUEUE, child, uid },
			}, wantw[] = {
				{ SIGUSR2, 0, SI_TKILL, child, uid },
				{ SIGRTMIN, 203, SI_QUEUE, child, uid },
				{ SIGRTMIN + 2, 201, SI_QUEUE, child, uid },
				{ SIGRTMIN + 2, 202, SI_QUEUE, child, uid },
			};

			sigprocmask(SIG_UNBLOCK, &s, NULL);
			expect("main", log_main, n_main, want, 5);
			worker_go = 1;
			pthread_join(th, NULL);
			expect("worker", log_worker, n_worker, wantw, 4);
			printf("ORDER OK\n");
		}
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
