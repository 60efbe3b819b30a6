// SPDX-License-Identifier: MIT
/*
 * A process that changed its privileges, in two threads that differ:
 *
 *   creds root TICKS [MS]   as root: 40 supplementary groups, real,
 *                           effective, saved and filesystem ids all
 *                           different, the five capability sets all
 *                           different (inheritable holds a capability the
 *                           bounding set lacks, ambient two), securebits
 *                           with a lock, no_new_privs, loginuid 4242,
 *                           not dumpable; the second thread has its own
 *                           effective uid and effective capabilities, no
 *                           no_new_privs (set in the main thread after it
 *                           was created) and a seccomp filter it installed
 *                           with CAP_SYS_ADMIN (getcpu fails with errno 47),
 *                           then dropped from its effective set.
 *   creds user TICKS [MS]   as anyone: no_new_privs only, the rest as
 *                           it was given.
 *
 * Each tick both threads read their own credentials and compare them
 * with what they set ("FAIL thread N: what: got X, want Y" and exit 1),
 * and the main thread prints "tick N pid P".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NGROUPS 40
#define BIT(c) (1ull << (c))

struct priv {
	unsigned uid[4], gid[4];
	int ngroups;
	gid_t groups[NGROUPS + 8];
	uint64_t eff, prm, inh, bnd, amb;
	int securebits, nnp, dumpable;
	long loginuid;
	int filtered;		/* getcpu fails with errno 47 */
};

static struct priv want[2];	/* per thread, set up once */
static volatile int setup_done, stop, final_done;

static void fail(int th, const char *what, unsigned long long got, unsigned long long exp)
{
	printf("FAIL thread %d: %s: got %#llx, want %#llx\n", th, what, got, exp);
	fflush(stdout);
	_exit(1);
}

static void caps_get(uint64_t *eff, uint64_t *prm, uint64_t *inh)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		fail(-1, "capget", (unsigned)errno, 0);
	*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	*prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	*inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
}

static void caps_set(uint64_t eff, uint64_t prm, uint64_t inh)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)eff, (uint32_t)prm, (uint32_t)inh },
		{ (uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32) },
	};

	if (syscall(SYS_capset, &h, d))
		fail(-1, "capset", (unsigned)errno, 0);
}

static long read_loginuid(void)
{
	char buf[32] = "";
	int fd = open("/proc/thread-self/loginuid", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -2;
}

/* This thread's own credentials, read with per-thread system calls. */
static void read_priv(struct priv *p)
{
	memset(p, 0, sizeof(*p));
	if (syscall(SYS_getresuid, &p->uid[0], &p->uid[1], &p->uid[2]) ||
	    syscall(SYS_getresgid, &p->gid[0], &p->gid[1], &p->gid[2]))
		fail(-1, "getresuid", (unsigned)errno, 0);
	p->uid[3] = (unsigned)setfsuid((uid_t)-1);	/* -1 is refused: tells the current one */
	p->gid[3] = (unsigned)setfsgid((gid_t)-1);
	p->ngroups = (int)syscall(SYS_getgroups, NGROUPS + 8, p->groups);
	caps_get(&p->eff, &p->prm, &p->inh);
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			p->bnd |= BIT(c);
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1)
			p->amb |= BIT(c);
	}
	p->securebits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	p->nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	p->dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	p->loginuid = read_loginuid();
}

static void check(int th)
{
	const struct priv *w = &want[th];
	struct priv p;
	static const char *const ids[4] = { "real", "effective", "saved", "filesystem" };
	char what[64];

	read_priv(&p);
	for (int i = 0; i < 4; i++) {
		snprintf(what, sizeof(what), "%s uid", ids[i]);
		if (p.uid[i] != w->uid[i])
			fail(th, what, p.uid[i], w->uid[i]);
		snprintf(what, sizeof(what), "%s gid", ids[i]);
		if (p.gid[i] != w->gid[i])
			fail(th, what, p.gid[i], w->gid[i]);
	}
	if (p.ngroups != w->ngroups)
		fail(th, "number of supplementary groups", (unsigned)p.ngroups, (unsigned)w->ngroups);
	for (int i = 0; i < p.ngroups; i++)
		if (p.groups[i] != w->groups[i])
			fail(th, "a supplementary group", p.groups[i], w->groups[i]);
	if (p.eff != w->eff)
		fail(th, "effective capabilities", p.eff, w->eff);
	if (p.prm != w->prm)
		fail(th, "permitted capabilities", p.prm, w->prm);
	if (p.inh != w->inh)
		fail(th, "inheritable capabilities", p.inh, w->inh);
	if (p.bnd != w->bnd)
		fail(th, "bounding set", p.bnd, w->bnd);
	if (p.amb != w->amb)
		fail(th, "ambient capabilities", p.amb, w->amb);
	if (p.securebits != w->securebits)
		fail(th, "securebits", (unsigned)p.securebits, (unsigned)w->securebits);
	if (p.nnp != w->nnp)
		fail(th, "no_new_privs", (unsigned)p.nnp, (unsigned)w->nnp);
	if (p.dumpable != w->dumpable)
		fail(th, "dumpable", (unsigned)p.dumpable, (unsigned)w->dumpable);
	if (p.loginuid != w->loginuid)
		fail(th, "loginuid", (unsigned long long)p.loginuid,
		     (unsigned long long)w->loginuid);
	if (w->filtered && (syscall(SYS_getcpu, NULL, NULL, NULL) != -1 || errno != 47))
		fail(th, "getcpu under its seccomp filter: errno", (unsigned)errno, 47);
}

static void set_loginuid(const char *v)
{
	int fd = open("/proc/self/loginuid", O_WRONLY);

	if (fd < 0 || write(fd, v, strlen(v)) != (ssize_t)strlen(v))
		fail(0, "writing /proc/self/loginuid", (unsigned)errno, 0);
	close(fd);
}

/* As root: every kind of credential set to a value of its own. */
static void setup_root_ids(void)
{
	const uint64_t inh = BIT(CAP_CHOWN) | BIT(CAP_KILL) | BIT(CAP_NET_RAW) |
			     BIT(CAP_SYS_BOOT) | BIT(CAP_SYS_CHROOT);
	const int drop[] = { CAP_SYS_BOOT, CAP_SYS_MODULE, CAP_MKNOD, CAP_SYS_RAWIO };
	gid_t groups[NGROUPS];
	uint64_t e, p, i;

	set_loginuid("4242");
	if (prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
		  SECBIT_NOROOT, 0, 0, 0))
		fail(0, "PR_SET_SECUREBITS", (unsigned)errno, 0);
	/* inheritable first: it may then hold what the bounding set loses */
	caps_get(&e, &p, &i);
	caps_set(e, p, inh);
	for (size_t k = 0; k < sizeof(drop) / sizeof(drop[0]); k++)
		if (prctl(PR_CAPBSET_DROP, drop[k], 0, 0, 0))
			fail(0, "PR_CAPBSET_DROP", (unsigned)errno, (unsigned)drop[k]);
	for (int k = 0; k < NGROUPS; k++)
		groups[k] = (gid_t)(5000 + 7 * k);
	/* raw calls: this thread only, as a threaded program's own calls would be */
	if (syscall(SYS_setgroups, NGROUPS, groups) ||
	    syscall(SYS_setresgid, 2001, 2002, 2003))
		fail(0, "setgroups/setresgid", (unsigned)errno, 0);
	syscall(SYS_setfsgid, 2004);
	if (syscall(SYS_setresuid, 1001, 1002, 1003))
		fail(0, "setresuid", (unsigned)errno, 0);
	syscall(SYS_setfsuid, 1004);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_CHOWN, 0, 0) ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0))
		fail(0, "PR_CAP_AMBIENT_RAISE", (unsigned)errno, 0);
}

/* As root, once the second thread has its own: the main thread's last. */
static void setup_root_final(void)
{
	const uint64_t inh = BIT(CAP_CHOWN) | BIT(CAP_KILL) | BIT(CAP_NET_RAW) |
			     BIT(CAP_SYS_BOOT) | BIT(CAP_SYS_CHROOT);
	const uint64_t prm = BIT(CAP_CHOWN) | BIT(CAP_DAC_OVERRIDE) | BIT(CAP_KILL) |
			     BIT(CAP_NET_RAW) | BIT(CAP_SYS_CHROOT) | BIT(CAP_NET_BIND_SERVICE);
	const uint64_t eff = BIT(CAP_CHOWN) | BIT(CAP_KILL) | BIT(CAP_NET_BIND_SERVICE);

	caps_set(eff, prm, inh);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		fail(0, "PR_SET_NO_NEW_PRIVS", (unsigned)errno, 0);
	read_priv(&want[0]);
	/* what the calls above were meant to give, checked once */
	if (want[0].uid[0] != 1001 || want[0].uid[3] != 1004 || want[0].gid[1] != 2002 ||
	    want[0].gid[3] != 2004 || want[0].ngroups != NGROUPS || want[0].eff != eff ||
	    want[0].prm != prm || want[0].inh != inh ||
	    want[0].amb != (BIT(CAP_CHOWN) | BIT(CAP_NET_RAW)) ||
	    (want[0].bnd & BIT(CAP_SYS_BOOT)) || !want[0].nnp || want[0].loginuid != 4242 ||
	    want[0].dumpable)
		fail(0, "setting up", 0, 0);
}

static void *second(void *arg)
{
	const char *mode = arg;

	if (!strcmp(mode, "root")) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getcpu, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 47),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { 4, f };
		uint64_t e, p, i;

		/* without no_new_privs: CAP_SYS_ADMIN lets it install a filter */
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
			fail(1, "installing a filter", (unsigned)errno, 0);
		/* its own effective uid and capabilities, not the process's */
		if (syscall(SYS_setresuid, -1, 1003, -1))
			fail(1, "setresuid in the second thread", (unsigned)errno, 0);
		caps_get(&e, &p, &i);
		caps_set(BIT(CAP_KILL), p, i);
		setup_done = 1;
		while (!final_done)	/* dumpable and loginuid are the process's */
			usleep(1000);
	}
	read_priv(&want[1]);
	want[1].filtered = !strcmp(mode, "root");
	setup_done = 2;
	while (!stop) {
		struct timespec ts = { 0, 20 * 1000000 };

		check(1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "user";
	long ticks = argc > 2 ? atol(argv[2]) : 100;
	long ms = argc > 3 ? atol(argv[3]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	pthread_t th;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "root")) {
		setup_root_ids();
		if (pthread_create(&th, NULL, second, (void *)mode))
			fail(0, "pthread_create", 0, 0);
		while (!setup_done)
			usleep(1000);
		setup_root_final();
		final_done = 1;
	} else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		fail(0, "PR_SET_NO_NEW_PRIVS", (unsigned)errno, 0);
	} else {
		read_priv(&want[0]);
		if (pthread_create(&th, NULL, second, (void *)mode))
			fail(0, "pthread_create", 0, 0);
	}
	while (setup_done != 2)
		usleep(1000);
	if (!strcmp(mode, "root") && (want[1].uid[1] != 1003 || want[1].eff != BIT(CAP_KILL) ||
				      want[1].nnp))
		fail(1, "setting up", want[1].eff, BIT(CAP_KILL));
	for (long n = 0; n < ticks; n++) {
		check(0);
		printf("tick %ld pid %d\n", n, (int)getpid());
		nanosleep(&ts, NULL);
	}
	stop = 1;
	pthread_join(th, NULL);
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
