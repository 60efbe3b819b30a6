// SPDX-License-Identifier: MIT
/*
 * File kinds whose state must survive a checkpoint, each checked by what
 * the program sees afterwards:
 *
 *   eventfd   a semaphore (1000, EFD_SEMAPHORE|EFD_NONBLOCK) read once a
 *             tick: each read gives 1, and all reads give 1000 in all; a
 *             counter written 3 a tick and read only at the end: 3*TICKS
 *   timerfd   the tick clock (periodic, MS); a one-shot of 150 ms that
 *             expired long before and is read only at the end: exactly 1;
 *             a periodic one (BOOTTIME) read only at the end: about TICKS
 *             expirations; a one-shot of 600 s whose time left ("rel") is
 *             printed every tick; a REALTIME TFD_TIMER_ABSTIME deadline
 *             ABS_MS after the first SIGUSR2, which must fire on time,
 *             at most 1.5 s late, once ("abs fired late_ms N"); the
 *             tick timer must never have more than 20 expirations at once
 *   signalfd  SIGUSR1 through a signalfd (blocked, printed "sigfd USR1 #k"),
 *             SIGUSR2 through a handler ("handler USR2 #k")
 *   epoll     the main loop waits on an epoll (tick timer, deadline,
 *             signalfd, inotify), each known by its data word; a second
 *             epoll (an eventfd level-triggered, a pipe edge-triggered, an
 *             eventfd EPOLLONESHOT) is made ready at tick 2 and waited on
 *             only at the end: each event exactly once with its data word,
 *             then only the level-triggered one, and EPOLL_CTL_DEL by fd
 *             number works
 *   inotify   DIR/w (create, delete) as wd 1, DIR/w/file (modify) as wd 3,
 *             wd 2 removed: events printed "inotify wd W mask M name N";
 *             at the end wd 3 and 1 can be removed, 2 cannot
 *   deleted   DIR/del, 4096 bytes, deleted, at offset 1000: a record a
 *             tick at the offset, which must be where the last one ended;
 *             an O_TMPFILE in DIR appended to; a memfd with seals: all
 *             checked byte for byte every tick and at the end
 *
 * Any mismatch prints "FAIL ..." and exits 1; then "DONE pid P".
 *
 *   fdkinds DIR TICKS MS ABS_MS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define D_TICK 0xa1a1a1a1a1a1a1a1ull
#define D_ABS 0xa2a2a2a2a2a2a2a2ull
#define D_SIG 0xa3a3a3a3a3a3a3a3ull
#define D_INO 0xa4a4a4a4a4a4a4a4ull
#define D_LT 0xb1b1b1b1b1b1b1b1ull
#define D_ET 0xb2b2b2b2b2b2b2b2ull
#define D_ONE 0xb3b3b3b3b3b3b3b3ull
#define DEL_OFF 1000
#define DEL_SIZE 4096
#define MEMFD_SIZE 100

static struct {
	int esem, ecnt, ttick, tonce, tper, trel, tabs, sfd, ino;
	int ep, held, lt, et[2], one, del, tmp, mfd;
	long sem_reads, sigs, ticks;
	int abs_fired;
	uint64_t abs_deadline;
} s;
static volatile sig_atomic_t usr2;

static void fail(const char *what, long long got, long long want)
{
	printf("FAIL %s: got %lld, want %lld\n", what, got, want);
	fflush(stdout);
	exit(1);
}

static void ok(int cond, const char *what)
{
	if (!cond)
		fail(what, errno, 0);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static struct timespec ms_ts(long ms)
{
	return (struct timespec){ ms / 1000, (ms % 1000) * 1000000 };
}

static int timer(clockid_t c, int flags, long first_ms, long every_ms)
{
	struct itimerspec its = { ms_ts(every_ms), ms_ts(first_ms) };
	int fd = timerfd_create(c, flags);

	ok(fd >= 0 && timerfd_settime(fd, 0, &its, NULL) == 0, "timerfd");
	return fd;
}

static void watch(int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	ok(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl add");
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2++;
}

static char pattern(long i)
{
	return (char)('a' + i % 26);
}

static void setup_files(const char *dir)
{
	char p[4096], buf[DEL_SIZE];

	for (long i = 0; i < DEL_SIZE; i++)
		buf[i] = pattern(i);
	snprintf(p, sizeof(p), "%s/del", dir);
	s.del = open(p, O_RDWR | O_CREAT | O_TRUNC, 0640);
	ok(s.del >= 0 && write(s.del, buf, DEL_SIZE) == DEL_SIZE, "deleted file");
	ok(lseek(s.del, DEL_OFF, SEEK_SET) == DEL_OFF && unlink(p) == 0, "deleted file");
	s.tmp = open(dir, O_TMPFILE | O_RDWR | O_APPEND, 0600);
	ok(s.tmp >= 0, "O_TMPFILE");
	s.mfd = memfd_create("ibcr-test-memfd", MFD_ALLOW_SEALING);
	ok(s.mfd >= 0 && write(s.mfd, buf, MEMFD_SIZE) == MEMFD_SIZE, "memfd");
	ok(fcntl(s.mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0, "memfd seals");
}

static void setup_inotify(const char *dir)
{
	char w[4096], w2[4096], f[4200], buf[4096];

	snprintf(w, sizeof(w), "%s/w", dir);
	snprintf(w2, sizeof(w2), "%s/w2", dir);
	snprintf(f, sizeof(f), "%s/file", w);
	ok(mkdir(w, 0755) == 0 && mkdir(w2, 0755) == 0, "mkdir");
	ok(close(open(f, O_CREAT | O_WRONLY, 0644)) == 0, "creating the watched file");
	s.ino = inotify_init1(IN_NONBLOCK);
	ok(s.ino >= 0, "inotify_init1");
	if (inotify_add_watch(s.ino, w, IN_CREATE | IN_DELETE) != 1 ||
	    inotify_add_watch(s.ino, w2, IN_CREATE) != 2 ||
	    inotify_add_watch(s.ino, f, IN_MODIFY) != 3)
		fail("inotify watch descriptors", 0, 0);
	ok(inotify_rm_watch(s.ino, 2) == 0, "inotify_rm_watch 2");
	while (read(s.ino, buf, sizeof(buf)) > 0)	/* its IN_IGNORED */
		;
}

/* The deadline: ABS_MS from now on the wall clock. */
static void arm_abs(long abs_ms)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };

	s.abs_deadline = now_ns(CLOCK_REALTIME) + (uint64_t)abs_ms * 1000000u;
	its.it_value.tv_sec = (time_t)(s.abs_deadline / 1000000000u);
	its.it_value.tv_nsec = (long)(s.abs_deadline % 1000000000u);
	ok(timerfd_settime(s.tabs, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL) == 0,
	   "arming the absolute timerfd");
}

static void setup(const char *dir, long ms)
{
	sigset_t m;

	s.esem = eventfd(1000, EFD_SEMAPHORE | EFD_NONBLOCK);
	s.ecnt = eventfd(0, 0);
	ok(s.esem >= 0 && s.ecnt >= 0, "eventfd");
	s.ttick = timer(CLOCK_MONOTONIC, TFD_NONBLOCK, ms, ms);
	s.tonce = timer(CLOCK_MONOTONIC, 0, 150, 0);
	s.tper = timer(CLOCK_BOOTTIME, TFD_NONBLOCK, ms / 2, ms);
	s.trel = timer(CLOCK_MONOTONIC, 0, 600000, 0);
	s.tabs = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
	ok(s.tabs >= 0, "absolute timerfd");
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	ok(sigprocmask(SIG_BLOCK, &m, NULL) == 0, "sigprocmask");
	s.sfd = signalfd(-1, &m, SFD_NONBLOCK);
	ok(s.sfd >= 0 && signal(SIGUSR2, on_usr2) != SIG_ERR, "signalfd");
	setup_inotify(dir);
	setup_files(dir);
	s.ep = epoll_create1(0);
	watch(s.ep, s.ttick, EPOLLIN, D_TICK);
	watch(s.ep, s.tabs, EPOLLIN, D_ABS);
	watch(s.ep, s.sfd, EPOLLIN, D_SIG);
	watch(s.ep, s.ino, EPOLLIN, D_INO);
	s.held = epoll_create1(EPOLL_CLOEXEC);
	s.lt = eventfd(0, EFD_NONBLOCK);
	s.one = eventfd(0, EFD_NONBLOCK);
	ok(s.held >= 0 && s.lt >= 0 && s.one >= 0 && pipe2(s.et, O_NONBLOCK) == 0, "held epoll");
	watch(s.held, s.lt, EPOLLIN, D_LT);
	watch(s.held, s.et[0], EPOLLIN | EPOLLET, D_ET);
	watch(s.held, s.one, EPOLLIN | EPOLLONESHOT, D_ONE);
}

static void on_abs(void)
{
	uint64_t n, late = now_ns(CLOCK_REALTIME) - s.abs_deadline;

	ok(read(s.tabs, &n, 8) == 8, "reading the deadline timer");
	if (n != 1 || s.abs_fired)
		fail("deadline expirations", (long long)n, 1);
	s.abs_fired = 1;
	printf("abs fired late_ms %llu\n", (unsigned long long)(late / 1000000u));
	if (late > 1500000000u)	/* a restore that forgot it: 3 s, the time away */
		fail("deadline fired late (ms)", (long long)(late / 1000000u), 0);
}

static void on_sig(void)
{
	struct signalfd_siginfo si;

	while (read(s.sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo != SIGUSR1)
			fail("signal from the signalfd", si.ssi_signo, SIGUSR1);
		printf("sigfd USR1 #%ld\n", ++s.sigs);
	}
}

static void on_inotify(void)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n;

	while ((n = read(s.ino, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			printf("inotify wd %d mask %#x name %s\n", ev->wd, ev->mask,
			       ev->len ? ev->name : "-");
			p += sizeof(*ev) + ev->len;
		}
}

/* Waits for the tick timer, handling whatever else comes first. */
static void wait_tick(void)
{
	for (;;) {
		struct epoll_event ev[8];
		int n = epoll_wait(s.ep, ev, 8, 5000), ticked = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail("epoll_wait (no tick in 5 s)", n, 1);
		for (int i = 0; i < n; i++) {
			uint64_t c;

			if (ev[i].data.u64 == D_TICK) {
				ok(read(s.ttick, &c, 8) == 8, "reading the tick timer");
				if (c > 20)	/* a restore counting the time away: 30 */
					fail("tick timer expirations at once", (long long)c, 1);
				ticked = 1;
			} else if (ev[i].data.u64 == D_ABS) {
				on_abs();
			} else if (ev[i].data.u64 == D_SIG) {
				on_sig();
			} else if (ev[i].data.u64 == D_INO) {
				on_inotify();
			} else {
				fail("unknown epoll data word", (long long)ev[i].data.u64, 0);
			}
		}
		if (ticked)
			return;
	}
}

static void check_files(long n)
{
	char buf[DEL_SIZE], rec[24], want[24];
	struct stat st;

	if (lseek(s.del, 0, SEEK_CUR) != DEL_OFF + 8 * n)
		fail("deleted file offset", lseek(s.del, 0, SEEK_CUR), DEL_OFF + 8 * n);
	ok(fstat(s.del, &st) == 0 && st.st_nlink == 0 && st.st_size == DEL_SIZE, "deleted file");
	ok(pread(s.del, buf, DEL_SIZE, 0) == DEL_SIZE, "reading the deleted file");
	for (long i = 0; i < DEL_SIZE; i++) {
		long r = (i - DEL_OFF) / 8;

		if (i >= DEL_OFF && r < n) {
			snprintf(want, sizeof(want), "r%06ld\n", r);
			if (buf[i] != want[(i - DEL_OFF) % 8])
				fail("deleted file byte", i, r);
		} else if (buf[i] != pattern(i)) {
			fail("deleted file byte", i, pattern(i));
		}
	}
	ok(fstat(s.tmp, &st) == 0 && st.st_nlink == 0 && st.st_size == 8 * n, "O_TMPFILE size");
	for (long r = 0; r < n; r++) {
		snprintf(want, sizeof(want), "t%06ld\n", r);
		if (pread(s.tmp, rec, 8, r * 8) != 8 || memcmp(rec, want, 8))
			fail("O_TMPFILE record", r, r);
	}
	ok(pread(s.mfd, buf, MEMFD_SIZE + 1, 0) == MEMFD_SIZE, "memfd size");
	for (long i = 0; i < MEMFD_SIZE; i++)
		if (buf[i] != pattern(i))
			fail("memfd byte", i, pattern(i));
	if (fcntl(s.mfd, F_GET_SEALS) != (F_SEAL_SHRINK | F_SEAL_GROW))
		fail("memfd seals", fcntl(s.mfd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW);
}

static void tick_work(long n)
{
	struct itimerspec rel, abs;
	uint64_t v = 3, one = 1;
	char rec[24];

	if (read(s.esem, &v, 8) != 8 || v != 1)
		fail("semaphore eventfd read", (long long)v, 1);
	s.sem_reads++;
	v = 3;
	ok(write(s.ecnt, &v, 8) == 8, "writing the counter eventfd");
	check_files(n);
	snprintf(rec, sizeof(rec), "r%06ld\n", n);
	ok(write(s.del, rec, 8) == 8, "writing the deleted file");
	snprintf(rec, sizeof(rec), "t%06ld\n", n);
	ok(lseek(s.tmp, 0, SEEK_SET) == 0 && write(s.tmp, rec, 8) == 8, "appending");
	if (n == 2) {	/* the held epoll's events, waited for at the end */
		ok(write(s.lt, &one, 8) == 8 && write(s.one, &one, 8) == 8, "held eventfds");
		ok(write(s.et[1], "x", 1) == 1, "held pipe");
	}
	timerfd_gettime(s.trel, &rel);
	timerfd_gettime(s.tabs, &abs);
	printf("tick %ld pid %d rel %ld abs %ld\n", n, (int)getpid(),
	       (long)rel.it_value.tv_sec * 1000 + rel.it_value.tv_nsec / 1000000,
	       (long)abs.it_value.tv_sec * 1000 + abs.it_value.tv_nsec / 1000000);
	fflush(stdout);
}

/* What the held epoll reports now: a bit per data word. */
static int held_now(void)
{
	struct epoll_event ev[8];
	int n = epoll_wait(s.held, ev, 8, 0), got = 0;

	for (int i = 0; i < n; i++) {
		int bit = ev[i].data.u64 == D_LT ? 1 : ev[i].data.u64 == D_ET ? 2 :
			  ev[i].data.u64 == D_ONE ? 4 : 8;

		if ((got & bit) || !(ev[i].events & EPOLLIN))
			fail("held epoll event twice or without EPOLLIN", bit, 0);
		got |= bit;
	}
	return got;
}

static void check_held(void)
{
	uint64_t one = 1;
	int got;

	if ((got = held_now()) != 7)
		fail("held epoll: events (1 LT, 2 ET, 4 ONESHOT)", got, 7);
	if ((got = held_now()) != 1)
		fail("held epoll again: only the level-triggered one", got, 1);
	ok(epoll_ctl(s.held, EPOLL_CTL_DEL, s.lt, NULL) == 0, "EPOLL_CTL_DEL by fd number");
	ok(write(s.et[1], "y", 1) == 1 && write(s.one, &one, 8) == 8, "held writes");
	if ((got = held_now()) != 2)
		fail("held epoll: a new edge, and no more ONESHOT", got, 2);
}

static void check_end(long ticks)
{
	uint64_t v = 0;
	long more = 0, per;
	struct itimerspec its;

	while (read(s.esem, &v, 8) == 8)
		more++;
	if (s.sem_reads + more != 1000)
		fail("semaphore eventfd reads in all", s.sem_reads + more, 1000);
	/* blocking ones: they still are, and a lost count must not hang us */
	if ((fcntl(s.ecnt, F_GETFL) & O_NONBLOCK) || (fcntl(s.tonce, F_GETFL) & O_NONBLOCK) ||
	    (fcntl(s.esem, F_GETFL) & O_NONBLOCK) == 0)
		fail("O_NONBLOCK changed", 0, 0);
	ok(fcntl(s.ecnt, F_SETFL, O_NONBLOCK) == 0 && fcntl(s.tonce, F_SETFL, O_NONBLOCK) == 0,
	   "F_SETFL");
	v = 0;
	if (read(s.ecnt, &v, 8) != 8 || v != (uint64_t)(3 * ticks))
		fail("counter eventfd", (long long)v, 3 * ticks);
	v = 0;
	if (read(s.tonce, &v, 8) != 8 || v != 1)
		fail("one-shot timer expirations", (long long)v, 1);
	ok(timerfd_gettime(s.tonce, &its) == 0 && !its.it_value.tv_sec && !its.it_value.tv_nsec,
	   "one-shot timer disarmed");
	per = read(s.tper, &v, 8) == 8 ? (long)v : 0;
	if (per < ticks - 5 || per > ticks + 5)
		fail("periodic timer expirations", per, ticks);
	if (usr2 && !s.abs_fired)
		fail("the deadline timer did not fire", 0, 1);
	check_held();
	if (usr2 || s.sigs)
		printf("sigfd total %ld handler total %d\n", s.sigs, (int)usr2);
	if (inotify_rm_watch(s.ino, 3) || inotify_rm_watch(s.ino, 1) ||
	    inotify_rm_watch(s.ino, 2) == 0)
		fail("inotify: removing wd 3, 1 (and not 2)", errno, 0);
}

int main(int argc, char **argv)
{
	long ticks, ms, abs_ms, seen2 = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: fdkinds DIR TICKS MS ABS_MS\n");
		return 2;
	}
	ticks = atol(argv[2]);
	ms = atol(argv[3]);
	abs_ms = atol(argv[4]);
	setup(argv[1], ms);
	for (long n = 0; n < ticks; n++) {
		wait_tick();
		if (!seen2 && usr2)
			arm_abs(abs_ms);
		while (seen2 < usr2)
			printf("handler USR2 #%ld\n", ++seen2);
		tick_work(n);
	}
	check_end(ticks);
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
