// SPDX-License-Identifier: MIT
/*
 * Per-thread attributes that a restore must bring back: scheduling
 * policy, real-time priority, reset-on-fork, nice value (also under a
 * real-time class), utilisation clamps, CPU affinity, timer slack and
 * its default (what PR_SET_TIMERSLACK 0 goes back to: the creator's
 * slack at the thread's creation), parent-death signal. The main thread
 * and three others each get a different set at start; every tick each
 * thread checks its own and prints "FAIL thread N: what" and exits 1 on
 * any difference.
 *
 *   tattrs MODE [TICKS [MS]]
 *   root     FIFO 10 with reset-on-fork, RR 5 at nice -5, utilisation
 *            clamps where the kernel has them
 *   user     what an unprivileged user may: nice up, BATCH, IDLE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t prio;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

struct spec {
	int policy, prio, nice, reset, cpu;	/* cpu -1: all */
	unsigned long slack, default_slack;	/* default: the creator's slack then */
	int pdeath;
	int clamp_min, clamp_max;		/* -1: not set */
};

static struct spec specs[4];
static int nthreads = 4, cpus[2];
static atomic_int ready;

static __attribute__((noreturn)) void fail(int n, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL thread %d: ", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

static void get_attr(struct attr *a)
{
	memset(a, 0, sizeof(*a));
	if (syscall(SYS_sched_getattr, 0, a, sizeof(*a), 0))
		fail(-1, "sched_getattr: %s", strerror(errno));
}

static void set_mask(int n, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (int k = 0; k < 2; k++)
		if (specs[n].cpu < 0 || specs[n].cpu == k)
			CPU_SET(cpus[k], set);
}

static void apply(int n)
{
	const struct spec *s = &specs[n];
	struct attr a = { .size = sizeof(a), .policy = (uint32_t)s->policy,
			  .nice = s->nice, .prio = (uint32_t)s->prio };
	cpu_set_t set;

	set_mask(n, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fail(n, "sched_setaffinity: %s", strerror(errno));
	if (prctl(PR_SET_TIMERSLACK, s->slack, 0, 0, 0) || setpriority(PRIO_PROCESS, 0, s->nice))
		fail(n, "timer slack or nice: %s", strerror(errno));
	a.flags = s->reset ? SCHED_FLAG_RESET_ON_FORK : 0;
	if (s->clamp_min >= 0) {
		a.flags |= SCHED_FLAG_UTIL_CLAMP;
		a.util_min = (uint32_t)s->clamp_min;
		a.util_max = (uint32_t)s->clamp_max;
	}
	errno = 0;
	if (syscall(SYS_sched_setattr, 0, &a, 0) && errno == EOPNOTSUPP && s->clamp_min >= 0) {
		specs[n].clamp_min = specs[n].clamp_max = -1;	/* no CONFIG_UCLAMP_TASK */
		a.flags &= ~(uint64_t)SCHED_FLAG_UTIL_CLAMP;
		errno = 0;
		syscall(SYS_sched_setattr, 0, &a, 0);
	}
	if (errno)
		fail(n, "sched_setattr policy %d: %s", s->policy, strerror(errno));
	if (s->pdeath && prctl(PR_SET_PDEATHSIG, s->pdeath, 0, 0, 0))
		fail(n, "PR_SET_PDEATHSIG: %s", strerror(errno));
}

/* The default slack, seen by going back to it and setting ours again. */
static unsigned long default_slack(int n)
{
	unsigned long cur = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), def;

	prctl(PR_SET_TIMERSLACK, 0, 0, 0, 0);
	def = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	prctl(PR_SET_TIMERSLACK, cur, 0, 0, 0);
	if ((unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) != cur)
		fail(n, "timer slack not put back");
	return def;
}

static int is_rt(int policy)
{
	return policy == SCHED_FIFO || policy == SCHED_RR;
}

static void check(int n)
{
	const struct spec *s = &specs[n];
	int sig = -1;
	struct attr a;
	cpu_set_t set, now;

	get_attr(&a);
	errno = 0;
	if ((int)a.policy != s->policy || (int)a.prio != s->prio ||
	    !!(a.flags & SCHED_FLAG_RESET_ON_FORK) != s->reset)
		fail(n, "policy %u prio %u flags %#llx, set %d %d reset %d", a.policy, a.prio,
		     (unsigned long long)a.flags, s->policy, s->prio, s->reset);
	if (getpriority(PRIO_PROCESS, 0) != s->nice)
		fail(n, "nice %d, set %d", getpriority(PRIO_PROCESS, 0), s->nice);
	if (s->clamp_min >= 0 && ((int)a.util_min != s->clamp_min || (int)a.util_max != s->clamp_max))
		fail(n, "clamps %u-%u, set %d-%d", a.util_min, a.util_max, s->clamp_min,
		     s->clamp_max);
	set_mask(n, &set);
	sched_getaffinity(0, sizeof(now), &now);
	if (!CPU_EQUAL(&set, &now))
		fail(n, "affinity has %d CPUs, set %d", CPU_COUNT(&now), CPU_COUNT(&set));
	/* a real-time thread has no slack (Linux 6.7 on): the kernel keeps 0 */
	if (!is_rt(s->policy) && (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) != s->slack)
		fail(n, "timer slack %ld, set %lu", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), s->slack);
	if (!is_rt(s->policy) && default_slack(n) != s->default_slack)
		fail(n, "default timer slack %lu, was %lu", default_slack(n), s->default_slack);
	prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0);
	if (sig != s->pdeath)
		fail(n, "parent-death signal %d, set %d", sig, s->pdeath);
}

static atomic_int stop;

static void *thread_main(void *arg)
{
	int n = (int)(long)arg;
	struct timespec ms = { 0, 20000000 };

	specs[n].default_slack = default_slack(n);
	apply(n);
	ready++;
	while (!stop) {
		check(n);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

static void setup(const char *mode)
{
	int root = !strcmp(mode, "root");

	/* main: nice 3, all CPUs; A: BATCH nice 7 on the second CPU */
	specs[0] = (struct spec){ SCHED_OTHER, 0, 3, 0, -1, 123456, 0, SIGUSR1, -1, -1 };
	specs[1] = (struct spec){ SCHED_BATCH, 0, 7, 0, 1, 200000, 0, 0, -1, -1 };
	/* B: real-time on the first CPU, or IDLE at nice 9 */
	specs[2] = root ? (struct spec){ SCHED_FIFO, 10, 0, 1, 0, 50000, 0, SIGTERM, -1, -1 }
			: (struct spec){ SCHED_IDLE, 0, 9, 0, 0, 300000, 0, SIGTERM, -1, -1 };
	/* C: RR 5 at nice -5, or OTHER at nice 11 with a slack of 1 ns */
	specs[3] = root ? (struct spec){ SCHED_RR, 5, -5, 0, -1, 50000, 0, 0, -1, -1 }
			: (struct spec){ SCHED_OTHER, 0, 11, 0, 1, 1, 0, SIGHUP, -1, -1 };
	if (root)
		specs[1].clamp_min = 100, specs[1].clamp_max = 900;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "user";
	long ticks = argc > 2 ? atol(argv[2]) : -1;
	long msec = argc > 3 ? atol(argv[3]) : 100;
	struct timespec ts = { msec / 1000, (msec % 1000) * 1000000 };
	pthread_t th[4];
	cpu_set_t all;
	int k = 0;

	sched_getaffinity(0, sizeof(all), &all);
	for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &all))
			cpus[k++] = c;
	if (k < 2)
		fail(-1, "needs two CPUs");
	setup(mode);
	signal(SIGUSR1, SIG_IGN);
	specs[0].default_slack = default_slack(0);
	/* each thread's default slack: ours when it is created, a different one each */
	for (long i = 1; i < nthreads; i++) {
		prctl(PR_SET_TIMERSLACK, 70000 + 1000 * i, 0, 0, 0);
		pthread_create(&th[i], NULL, thread_main, (void *)i);
		while (ready < i)
			nanosleep(&ts, NULL);
	}
	apply(0);
	printf("set up, mode %s\n", mode);
	for (long t = 0; ticks < 0 || t < ticks; t++) {
		check(0);
		printf("tick %ld pid %d\n", t, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	stop = 1;
	for (int i = 1; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
