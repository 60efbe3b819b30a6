// SPDX-License-Identifier: MIT
/*
 * Eight threads, each spending its time in a different state, so that a
 * checkpoint catches them running, in futex waits, in nanosleep and in
 * sigwaitinfo:
 *
 *   compute0, compute1   tight loop, state in registers, checked
 *   condwait0, condwait1 pthread_cond_wait on a condvar broadcast by the
 *                        signaller
 *   sleep0, sleep1       nanosleep loops
 *   sigwait              sigwaitinfo on SIGRTMIN, queued by the signaller
 *                        with a sequence number (none lost or repeated)
 *   signaller            wakes the condvar and queues the signal
 *
 * Every thread advances its own counter; the main thread prints
 * "tick N pid P ..." and checks each tick that no counter stood still
 * for STALL_TICKS ticks (a thread left stopped after a restore is caught)
 * and that the data shared under the mutex is consistent (x == y ==
 * sum of per-thread updates). Any mismatch: "FAIL ..." and exit 1.
 *
 *   threads [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NTHREADS 8
/*
 * A thread that made no progress for this many ticks in a row is stuck
 * (never resumed, or deadlocked). A few ticks are too strict on a loaded
 * two-CPU machine, where a runnable thread was seen to wait half a second
 * for a CPU, without any checkpoint.
 */
#ifndef STALL_TICKS
#define STALL_TICKS 20
#endif
enum { COMPUTE0, COMPUTE1, CONDWAIT0, CONDWAIT1, SLEEP0, SLEEP1, SIGWAIT, SIGNALLER };
static const char *const names[NTHREADS] = {
	"compute0", "compute1", "condwait0", "condwait1",
	"sleep0", "sleep1", "sigwait", "signaller",
};

static uint64_t progress[NTHREADS];	/* each written by its own thread only */
static pid_t tids[NTHREADS];

/* Shared data: every update takes the mutex and keeps x == y == sum(upd). */
static struct {
	pthread_mutex_t m;
	pthread_cond_t cv;
	uint64_t gen;		/* bumped by the signaller, awaited by condwait */
	uint64_t x, y;
	uint64_t upd[NTHREADS];
} sh = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, { 0 } };

static pid_t start_pid;

static void fail(const char *fmt, ...)
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

/* "R", "S running/sleeping in syscall N...": for a FAIL message. */
static const char *thread_state(int i, char *buf, size_t size)
{
	char path[64], stat[512] = "", sc[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tids[i]);
	if ((f = fopen(path, "r"))) {
		if (!fgets(stat, sizeof(stat), f))
			stat[0] = 0;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tids[i]);
	if ((f = fopen(path, "r"))) {
		if (!fgets(sc, sizeof(sc), f))
			sc[0] = 0;
		fclose(f);
	}
	sc[strcspn(sc, " \n")] = 0;
	snprintf(buf, size, "tid %d state %c syscall %s", (int)tids[i],
		 strrchr(stat, ')') ? strrchr(stat, ')')[2] : '?', sc);
	return buf;
}

static void advance(int i)
{
	__atomic_add_fetch(&progress[i], 1, __ATOMIC_RELAXED);
}

/* Called with sh.m held. The gap between x++ and y++ makes a restore
 * that lost the lock (two holders at once) visible as x != y. */
static void update_locked(int i)
{
	sh.x++;
	for (volatile int k = 0; k < 200; k++)
		;
	sh.y++;
	sh.upd[i]++;
}

static void update(int i)
{
	pthread_mutex_lock(&sh.m);
	update_locked(i);
	pthread_mutex_unlock(&sh.m);
}

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	/* No handler is installed: EINTR here would be a restore artefact. */
	if (nanosleep(&ts, NULL))
		fail("nanosleep returned %s", strerror(errno));
}

/* sum = 0 + 1 + ... + (n-1), kept in registers and checked against n. */
static void *compute(void *arg)
{
	int i = (int)(intptr_t)arg;
	uint64_t n = 0, sum = 0;

	for (;;) {
		for (int k = 0; k < 65536; k++) {
			sum += n++;
			__asm__ volatile("" : "+r"(sum), "+r"(n));	/* no closed form */
		}
		if (sum != (n % 2 ? n * ((n - 1) / 2) : (n / 2) * (n - 1)))
			fail("%s: sum %llu wrong for n %llu", names[i],
			     (unsigned long long)sum, (unsigned long long)n);
		advance(i);
		if (n % (64 * 65536) == 0)
			update(i);
	}
	return NULL;
}

static void *condwait(void *arg)
{
	int i = (int)(intptr_t)arg;
	uint64_t seen;

	pthread_mutex_lock(&sh.m);
	seen = sh.gen;
	for (;;) {
		while (sh.gen == seen)
			pthread_cond_wait(&sh.cv, &sh.m);
		if (sh.gen < seen)
			fail("%s: generation went back from %llu to %llu", names[i],
			     (unsigned long long)seen, (unsigned long long)sh.gen);
		seen = sh.gen;
		update_locked(i);
		advance(i);
	}
	return NULL;
}

/* No mutex here: a checkpoint that stops its holder first would find the
 * sleepers queued on it rather than in nanosleep. */
static void *sleeper(void *arg)
{
	int i = (int)(intptr_t)arg;

	for (;;) {
		msleep(i == SLEEP0 ? 7 : 11);
		advance(i);
	}
	return NULL;
}

/* Queued signals carry 1, 2, 3...: each must arrive once and in order. */
static void *sigwaiter(void *arg)
{
	int i = (int)(intptr_t)arg;
	int expect = 1;
	sigset_t set;
	siginfo_t si;

	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	for (;;) {
		int sig = sigwaitinfo(&set, &si);

		/*
		 * signal(7): sigwaitinfo fails with EINTR after a stop, and so
		 * after a checkpoint that caught it waiting. Said once, so the
		 * test can tell where the thread was.
		 */
		if (sig < 0 && errno == EINTR) {
			printf("sigwait interrupted\n");
			fflush(stdout);
			continue;
		}
		if (sig != SIGRTMIN)
			fail("sigwaitinfo returned %d (%s)", sig, strerror(errno));
		if (si.si_code != SI_QUEUE || (si.si_pid != getpid() && si.si_pid != start_pid))
			fail("sigwait: si_code %d si_pid %d, want %d from pid %d", si.si_code,
			     (int)si.si_pid, SI_QUEUE, (int)getpid());
		if (si.si_value.sival_int != expect)
			fail("sigwait: got signal number %d, expected %d (lost or repeated)",
			     si.si_value.sival_int, expect);
		expect++;
		advance(i);
	}
	return NULL;
}

/*
 * pthread_sigqueue, portably (musl has none): a queued signal with a
 * value, to one thread. SI_QUEUE is what another thread may send.
 */
static int queue_to(pid_t tid, int sig, int value)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = value;
	return (int)syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, sig, &si);
}

static void *signaller(void *arg)
{
	int i = (int)(intptr_t)arg, seq = 1;

	for (;;) {
		msleep(10);
		pthread_mutex_lock(&sh.m);
		sh.gen++;
		pthread_cond_broadcast(&sh.cv);
		pthread_mutex_unlock(&sh.m);
		/* numbers start at 1 with the first signal actually sent */
		if (__atomic_load_n(&tids[SIGWAIT], __ATOMIC_ACQUIRE)) {
			if (queue_to(tids[SIGWAIT], SIGRTMIN, seq))
				fail("rt_tgsigqueueinfo: %s", strerror(errno));
			seq++;
		}
		advance(i);
	}
	return NULL;
}

static void *(*const fn[NTHREADS])(void *) = { compute, compute, condwait, condwait,
					       sleeper, sleeper, sigwaiter, signaller };

static void *thread_main(void *arg)
{
	__atomic_store_n(&tids[(intptr_t)arg], gettid(), __ATOMIC_RELEASE);
	return fn[(intptr_t)arg](arg);
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	uint64_t last[NTHREADS] = { 0 };
	int stalled[NTHREADS] = { 0 }, max_stall = 0;
	pthread_t th[NTHREADS];
	sigset_t set;

	start_pid = getpid();
	/* SIGRTMIN only ever arrives through sigwaitinfo: blocked everywhere. */
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < NTHREADS; i++) {
		if (pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i))
			fail("pthread_create %s", names[i]);
		pthread_setname_np(th[i], names[i]);
	}
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		uint64_t now[NTHREADS], sum = 0;

		msleep(ms);
		for (int i = 0; i < NTHREADS; i++) {
			now[i] = __atomic_load_n(&progress[i], __ATOMIC_RELAXED);
			stalled[i] = now[i] > last[i] ? 0 : stalled[i] + 1;
			if (stalled[i] > max_stall)
				max_stall = stalled[i];
			if (stalled[i] >= STALL_TICKS) {
				char st[128];

				fail("thread %s did not advance in %d ticks (%llu; %s)",
				     names[i], STALL_TICKS, (unsigned long long)now[i],
				     thread_state(i, st, sizeof(st)));
			}
		}
		pthread_mutex_lock(&sh.m);
		for (int i = 0; i < NTHREADS; i++)
			sum += sh.upd[i];
		if (sh.x != sh.y || sh.x != sum)
			fail("shared data inconsistent: x %llu y %llu updates %llu",
			     (unsigned long long)sh.x, (unsigned long long)sh.y,
			     (unsigned long long)sum);
		pthread_mutex_unlock(&sh.m);
		printf("tick %ld pid %d", n, (int)getpid());
		for (int i = 0; i < NTHREADS; i++)
			printf(" %s %llu", names[i], (unsigned long long)now[i]);
		printf("\n");
		fflush(stdout);
		memcpy(last, now, sizeof(last));
	}
	printf("DONE pid %d longest stall %d ticks\n", (int)getpid(), max_stall);
	fflush(stdout);
	_exit(0);	/* the threads never end on their own */
}
