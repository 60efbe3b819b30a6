// SPDX-License-Identifier: MIT
/*
 * POSIX timers (timer_create) of every kind come back with their ids,
 * clocks, notifications, values and overrun counts. The program makes:
 *   A  CLOCK_MONOTONIC, SIGRTMIN to the process, value 0xa11ce, every 50 ms
 *   B  CLOCK_REALTIME, SIGRTMIN+1, value 0xb0b, absolute one-shot 1000 s on
 *   C  CLOCK_BOOTTIME, SIGEV_NONE, value 0xc, 10000 s then every 1 s
 *   D  CLOCK_MONOTONIC, SIGRTMIN+2 to the worker thread (SIGEV_THREAD_ID),
 *      value 0xd00d, every 70 ms
 *   E  CLOCK_MONOTONIC, SIGRTMIN+3 (blocked), value 0xe, every 1 ms: its
 *      first signal is taken after 200 ms, so timer_getoverrun says ~199,
 *      and the next one stays pending
 *   F  CLOCK_MONOTONIC, a one-shot of 20 ms that has fired: disarmed
 *   G  CLOCK_REALTIME, no sigevent (SIGALRM, value = its id), 1000 s
 *   H  CLOCK_MONOTONIC, SIGEV_THREAD (glibc: a signal to its helper
 *      thread, which runs the function in a new thread), every 60 ms
 * and deletes a timer made between them, so that the ids have a gap.
 * Every tick it checks each timer through its id: value and interval
 * (within a tolerance that covers a restore), overrun count, that A and
 * D keep firing with their values and D only in the worker, that E's
 * signal is pending. On SIGUSR1 it checks that A, D and H fire again
 * and says DONE. "FAIL ..." and exit 1 otherwise.
 *
 *   ptimers TICKS-MS [cpu]   cpu: also a CLOCK_PROCESS_CPUTIME_ID timer,
 *                            which the saver refuses
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ll
#define SEC(x) ((int64_t)(x) * NS)
#define MS(x) ((int64_t)(x) * 1000000)

static timer_t ta, tb, tc, td, te, tf, tg, th_;
static int64_t b_deadline, overrun_e;
static atomic_int fired_a, fired_d, fired_h, bad, go_done;
static __thread int is_worker;
static pid_t worker_tid;

#define FAIL(...) do { printf("FAIL " __VA_ARGS__); printf("\n"); fflush(stdout); exit(1); } while (0)

static int64_t now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * NS + ts.tv_nsec;
}

static int64_t ns(struct timespec t) { return t.tv_sec * NS + t.tv_nsec; }

static void on_timer(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (si->si_code != SI_TIMER)
		bad = 1;
	if (sig == SIGRTMIN) {
		if (si->si_value.sival_ptr != (void *)0xa11ce || si->si_timerid != (int)(intptr_t)ta)
			bad = 2;
		fired_a++;
	} else if (sig == SIGRTMIN + 2) {
		if (si->si_value.sival_ptr != (void *)0xd00d || !is_worker)
			bad = 3;
		fired_d++;
	} else {
		bad = 4;
	}
}

static void on_usr1(int sig) { (void)sig; go_done = 1; }

static void on_h(union sigval v)
{
	if (v.sival_ptr != (void *)0x4a)
		bad = 5;
	fired_h++;
}

static void *worker(void *arg)
{
	(void)arg;
	is_worker = 1;
	worker_tid = (pid_t)syscall(SYS_gettid);
	for (;;)
		pause();
	return NULL;
}

static timer_t make(clockid_t clk, int notify, int sig, uintptr_t val)
{
	struct sigevent ev;
	timer_t t;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = notify;
	ev.sigev_signo = sig;
	ev.sigev_value.sival_ptr = (void *)val;
	if (notify == SIGEV_THREAD_ID)
#ifdef sigev_notify_thread_id	/* musl */
		ev.sigev_notify_thread_id = worker_tid;
#else				/* glibc before 2.35 */
		ev._sigev_un._tid = worker_tid;
#endif
	if (timer_create(clk, &ev, &t))
		FAIL("timer_create clock %d: %m", (int)clk);
	return t;
}

static void arm(timer_t t, int flags, int64_t value, int64_t interval)
{
	struct itimerspec its = { { interval / NS, interval % NS }, { value / NS, value % NS } };

	if (timer_settime(t, flags, &its, NULL))
		FAIL("timer_settime: %m");
}

static struct itimerspec get(timer_t t, const char *name)
{
	struct itimerspec its;

	if (timer_gettime(t, &its))
		FAIL("timer %s (id %ld) is gone: %m", name, (long)(intptr_t)t);
	return its;
}

static void setup(void)
{
	struct sigaction sa;
	sigset_t set;
	pthread_t th;
	timer_t gap;
	siginfo_t si;
	struct timespec wait = { 2, 0 };

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_timer;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGRTMIN, &sa, NULL);
	sigaction(SIGRTMIN + 2, &sa, NULL);
	signal(SIGUSR1, on_usr1);
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 3);
	sigaddset(&set, SIGRTMIN + 1);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);	/* the worker inherits it */
	pthread_create(&th, NULL, worker, NULL);
	while (!__atomic_load_n(&worker_tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	ta = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGRTMIN, 0xa11ce);
	gap = make(CLOCK_MONOTONIC, SIGEV_NONE, 0, 0);
	tb = make(CLOCK_REALTIME, SIGEV_SIGNAL, SIGRTMIN + 1, 0xb0b);
	tc = make(CLOCK_BOOTTIME, SIGEV_NONE, SIGRTMIN + 5, 0xc);
	td = make(CLOCK_MONOTONIC, SIGEV_THREAD_ID, SIGRTMIN + 2, 0xd00d);
	te = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGRTMIN + 3, 0xe);
	tf = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGRTMIN + 1, 0xf);
	if (timer_create(CLOCK_REALTIME, NULL, &tg))
		FAIL("timer_create without sigevent: %m");
	{
		struct sigevent ev;

		memset(&ev, 0, sizeof(ev));
		ev.sigev_notify = SIGEV_THREAD;
		ev.sigev_notify_function = on_h;
		ev.sigev_value.sival_ptr = (void *)0x4a;
		if (timer_create(CLOCK_MONOTONIC, &ev, &th_))
			FAIL("timer_create SIGEV_THREAD: %m");
	}
	timer_delete(gap);
	arm(ta, 0, MS(50), MS(50));
	b_deadline = now(CLOCK_REALTIME) + SEC(1000);
	arm(tb, TIMER_ABSTIME, b_deadline, 0);
	arm(tc, 0, SEC(10000), SEC(1));
	arm(td, 0, MS(70), MS(70));
	arm(tf, 0, MS(20), 0);
	arm(tg, 0, SEC(1000), 0);
	arm(th_, 0, MS(60), MS(60));
	arm(te, 0, MS(1), MS(1));
	{	/* A's and D's signals come meanwhile: sleep to a deadline */
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 200 * 1000000;
		until.tv_sec += until.tv_nsec / NS;
		until.tv_nsec %= NS;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL))
			;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 3);
	if (sigtimedwait(&set, &si, &wait) != SIGRTMIN + 3 || si.si_value.sival_ptr != (void *)0xe)
		FAIL("E's first signal: %m");
	overrun_e = timer_getoverrun(te);
	if (overrun_e < 100)
		FAIL("E's overrun count is only %lld", (long long)overrun_e);
	/* F's signal: taken, so that only E's stays pending */
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 1);
	if (sigtimedwait(&set, &si, &wait) != SIGRTMIN + 1 || si.si_value.sival_ptr != (void *)0xf)
		FAIL("F did not fire");
	for (int i = 0; i < 1000; i++) {	/* E's next one, 1 ms on */
		sigpending(&set);
		if (sigismember(&set, SIGRTMIN + 3))
			return;
		usleep(1000);
	}
	FAIL("E's second signal did not come");
}

static void in_range(const char *name, int64_t v, int64_t lo, int64_t hi)
{
	if (v < lo || v > hi)
		FAIL("timer %s: %lld ns, not in [%lld, %lld]", name, (long long)v,
		     (long long)lo, (long long)hi);
}

static int64_t c_left0, c_boot0;
/* Time the program did not run beyond its ticks (the checkpoints and
 * restores among them): a timer that comes back as time left is late by
 * as much, and a loaded machine makes that far more than a second. */
static int64_t away;

static void check_all(void)
{
	struct itimerspec a = get(ta, "A"), b = get(tb, "B"), c = get(tc, "C"),
			  d = get(td, "D"), e = get(te, "E"), f = get(tf, "F"),
			  g = get(tg, "G");
	sigset_t pend;

	in_range("A interval", ns(a.it_interval), MS(50), MS(50));
	in_range("A value", ns(a.it_value), 1, MS(50));
	in_range("B interval", ns(b.it_interval), 0, 0);
	/* restored as time left: off by the time it was away, at most */
	in_range("B deadline", now(CLOCK_REALTIME) + ns(b.it_value), b_deadline - SEC(1),
		 b_deadline + away + SEC(1));
	in_range("C interval", ns(c.it_interval), SEC(1), SEC(1));
	in_range("C value", ns(c.it_value), 1,
		 c_left0 - (now(CLOCK_BOOTTIME) - c_boot0) + away + SEC(1));
	in_range("D interval", ns(d.it_interval), MS(70), MS(70));
	in_range("D value", ns(d.it_value), 1, MS(70));
	in_range("E interval", ns(e.it_interval), MS(1), MS(1));
	in_range("F value", ns(f.it_value) + ns(f.it_interval), 0, 0);
	in_range("G value", ns(g.it_value), SEC(900), SEC(1000));
	if (timer_getoverrun(te) != overrun_e)
		FAIL("timer E: overrun count %d, was %lld", timer_getoverrun(te),
		     (long long)overrun_e);
	if (timer_getoverrun(ta) < 0 || timer_getoverrun(tf) != 0)
		FAIL("overrun counts of A %d, F %d", timer_getoverrun(ta), timer_getoverrun(tf));
	sigpending(&pend);
	if (!sigismember(&pend, SIGRTMIN + 3))
		FAIL("timer E's signal is not pending");
	if (bad)
		FAIL("a timer signal came with the wrong value, code or thread (%d)", (int)bad);
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 100;
	timer_t cpu;
	struct timespec tick = { ms / 1000, (ms % 1000) * 1000000 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	setup();
	if (argc > 2 && !strcmp(argv[2], "cpu")) {
		cpu = make(CLOCK_PROCESS_CPUTIME_ID, SIGEV_NONE, 0, 0);
		arm(cpu, 0, SEC(100), 0);
	}
	c_left0 = ns(get(tc, "C").it_value);
	c_boot0 = now(CLOCK_BOOTTIME);
	printf("ids A %ld B %ld C %ld D %ld E %ld F %ld G %ld overrun %lld\n",
	       (long)(intptr_t)ta, (long)(intptr_t)tb, (long)(intptr_t)tc,
	       (long)(intptr_t)td, (long)(intptr_t)te, (long)(intptr_t)tf,
	       (long)(intptr_t)tg, (long long)overrun_e);
	for (long n = 0, last = now(CLOCK_REALTIME);; n++) {
		int64_t t = now(CLOCK_REALTIME);

		if (t - last > MS(ms))
			away += t - last - MS(ms);
		last = t;
		check_all();
		printf("tick %ld pid %d fired A %d D %d\n", n, (int)getpid(), (int)fired_a,
		       (int)fired_d);
		if (go_done) {	/* each fires again, within 5 s on a loaded machine */
			int a = fired_a, d = fired_d, h = fired_h;

			for (int i = 0; i < 500 && (fired_a == a || fired_d == d || fired_h == h); i++)
				usleep(10000);
			if (fired_a == a || fired_d == d || fired_h == h)
				FAIL("A, D or H stopped firing (A %d, D %d, H %d)", (int)fired_a,
				     (int)fired_d, (int)fired_h);
			break;
		}
		while (nanosleep(&tick, &tick))
			;
		tick = (struct timespec){ ms / 1000, (ms % 1000) * 1000000 };
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
