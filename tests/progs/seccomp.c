// SPDX-License-Identifier: MIT
/*
 * Seccomp filters shared the ways the kernel shares them, each with an
 * action the program can see (a system call that fails with an errno
 * the filter chose):
 *
 *   F1  getppid -> errno 42; prctl(PR_GET_TID_ADDRESS) kills the process
 *       (what a checkpoint must not run unprotected); installed by the
 *       main thread alone, then inherited by a forked child and by the
 *       two threads created after it
 *   F2  getuid -> errno 43, with SECCOMP_FILTER_FLAG_LOG: the child's own
 *   F3  getpgid -> errno 44, every munmap -> errno 45 (what the
 *       restore's removal of its own code must get past); installed by
 *       the main thread with TSYNC: the three threads share F1 and F3
 *   F4  getsid -> errno 46: the second thread's own, on top of F3
 *
 *   seccomp TICKS [MS]
 *
 * Each tick every thread of both processes checks which calls fail with
 * which errno, and its Seccomp_filters count; the main thread prints
 * "tick N pid P". After the last tick the first thread ends and the
 * second installs an allow-all filter with TSYNC: that succeeds only if
 * the main thread's filters are the very ones below its own (shared, not
 * equal copies: the kernel compares them by identity), and then the main
 * thread has the second's four and getsid fails for it too. The child
 * prints "child tick N" and stops with its parent. Any difference:
 * "FAIL ..." and exit 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

#define NR_OFF offsetof(struct seccomp_data, nr)
#define ARG0_OFF offsetof(struct seccomp_data, args[0])
#define ARCH_OFF offsetof(struct seccomp_data, arch)
#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define IS(k, skip_if_not) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), 0, (skip_if_not))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define ERRNO(n) RET(SECCOMP_RET_ERRNO | (n))

static char *probe;		/* a page never really unmapped: F3 refuses */
static volatile int stop[2], t2_ready, tsync_now, tsync_done;
static pthread_t threads[2];

static void fail(const char *who, const char *fmt, long a, long b)
{
	printf("FAIL %s: ", who);
	printf(fmt, a, b);
	printf("\n");
	fflush(stdout);
	_exit(1);
}

static void install(const char *who, struct sock_filter *f, unsigned short n, unsigned flags)
{
	struct sock_fprog prog = { n, f };
	long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);

	/* TSYNC fails with the id of a thread whose filters are not below ours */
	if (rc > 0)
		fail(who, "installing a filter with TSYNC: thread %ld cannot follow%.0ld", rc, 0);
	if (rc)
		fail(who, "installing a filter: errno %ld%.0ld", errno, 0);
}

static void install_f1(void)
{
	struct sock_filter f[] = {
		LD(ARCH_OFF), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		LD(NR_OFF),
		IS(SYS_getppid, 1), ERRNO(42),
		IS(SYS_prctl, 3), LD(ARG0_OFF), IS(PR_GET_TID_ADDRESS, 1),
		RET(SECCOMP_RET_KILL_PROCESS),
		RET(SECCOMP_RET_ALLOW),
	};

	install("main", f, sizeof(f) / sizeof(f[0]), 0);
}

static void install_f3(void)
{
	struct sock_filter f[] = {
		LD(NR_OFF),
		IS(SYS_getpgid, 1), ERRNO(44),
		IS(SYS_munmap, 1), ERRNO(45),
		RET(SECCOMP_RET_ALLOW),
	};

	install("main", f, sizeof(f) / sizeof(f[0]), SECCOMP_FILTER_FLAG_TSYNC);
}

/* The errno a call gets, or 0 when it succeeds. */
static long err_of(long rc)
{
	return rc < 0 ? errno : 0;
}

static int own_filters(void)
{
	char buf[4096], *p;
	int fd = open("/proc/thread-self/status", O_RDONLY), n = -1;
	ssize_t k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (k > 0) {
		buf[k] = 0;
		p = strstr(buf, "Seccomp_filters:");
		n = p ? atoi(p + 16) : -1;
	}
	return n;
}

/* which: bit 0 F1, 1 F2, 2 F3, 3 F4; extra: filters installed after the last tick */
static void check(const char *who, unsigned which, int extra)
{
	int nf = __builtin_popcount(which) + extra;
	long e;

	if ((e = err_of(syscall(SYS_getppid))) != ((which & 1) ? 42 : 0))
		fail(who, "getppid: errno %ld, want %ld", e, (which & 1) ? 42 : 0);
	if ((e = err_of(syscall(SYS_getuid))) != ((which & 2) ? 43 : 0))
		fail(who, "getuid: errno %ld, want %ld", e, (which & 2) ? 43 : 0);
	if ((e = err_of(syscall(SYS_getpgid, 0))) != ((which & 4) ? 44 : 0))
		fail(who, "getpgid: errno %ld, want %ld", e, (which & 4) ? 44 : 0);
	if ((e = err_of(syscall(SYS_getsid, 0))) != ((which & 8) ? 46 : 0))
		fail(who, "getsid: errno %ld, want %ld", e, (which & 8) ? 46 : 0);
	if ((which & 4) && (e = err_of(munmap(probe, 4096))) != 45)
		fail(who, "munmap of the probe page: errno %ld, want %ld", e, 45);
	if (own_filters() != nf)
		fail(who, "Seccomp_filters %ld, want %ld", own_filters(), nf);
}

static void *thread_main(void *arg)
{
	long idx = (long)arg;
	const char *who = idx ? "thread2" : "thread1";
	unsigned which = 1 | 4;

	while (!t2_ready && idx == 0)
		usleep(1000);
	if (idx == 1) {
		/* waits for F3 from the main thread, then adds its own */
		while (own_filters() != 2)
			usleep(1000);
		struct sock_filter f[] = {
			LD(NR_OFF), IS(SYS_getsid, 1), ERRNO(46), RET(SECCOMP_RET_ALLOW),
		};

		install(who, f, 4, 0);
		which |= 8;
		t2_ready = 1;
	}
	while (!stop[idx]) {
		check(who, which, 0);
		usleep(20000);
	}
	if (idx == 1) {
		struct sock_filter allow[] = { RET(SECCOMP_RET_ALLOW) };

		while (!tsync_now)
			usleep(1000);
		install(who, allow, 1, SECCOMP_FILTER_FLAG_TSYNC);
		tsync_done = 1;
	}
	return NULL;
}

static void run_child(long ticks, long ms)
{
	struct sock_filter f[] = {
		LD(NR_OFF), IS(SYS_getuid, 1), ERRNO(43), RET(SECCOMP_RET_ALLOW),
	};
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	install("child", f, 4, SECCOMP_FILTER_FLAG_LOG);
	for (long n = 0; n < ticks * 4; n++) {
		check("child", 1 | 2, 0);
		printf("child tick %ld\n", n);
		nanosleep(&ts, NULL);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 100;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	pid_t child;

	setvbuf(stdout, NULL, _IOLBF, 0);
	probe = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (probe == MAP_FAILED || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		fail("main", "setting up: errno %ld%.0ld", errno, 0);
	install_f1();
	child = fork();
	if (child < 0)
		fail("main", "fork: errno %ld%.0ld", errno, 0);
	if (child == 0)
		run_child(ticks, ms);
	for (long i = 0; i < 2; i++)
		if (pthread_create(&threads[i], NULL, thread_main, (void *)i))
			fail("main", "pthread_create %ld%.0ld", i, 0);
	install_f3();
	while (!t2_ready)
		usleep(1000);
	for (long n = 0; n < ticks; n++) {
		check("main", 1 | 4, 0);
		printf("tick %ld pid %d\n", n, (int)getpid());
		nanosleep(&ts, NULL);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	stop[0] = 1;
	pthread_join(threads[0], NULL);
	stop[1] = 1;
	tsync_now = 1;
	pthread_join(threads[1], NULL);
	if (!tsync_done)
		fail("main", "thread2's TSYNC did not happen%.0ld%.0ld", 0, 0);
	check("main", 1 | 4 | 8, 1);
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
