// SPDX-License-Identifier: MIT
/*
 * restart-loader --check (as `criu check`): whether this machine can
 * checkpoint and restore, tried rather than guessed where it can be, one
 * line per capability: "NAME: ok|no|limited: what it means". Exit 0 when
 * checkpoint and restore work (ptrace and a [vdso]), 1 when not; what
 * is missing beyond that makes some restores refused (or need an option:
 * --pid-ns), and the line says which.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "options.h"
#include "proc_stat.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_userfaultfd
#define SYS_userfaultfd 323
#endif
#define UFFD_USER_MODE_ONLY 1

static void line(const char *name, const char *verdict, const char *fmt, const char *arg)
{
	printf("%-22s %-8s ", name, verdict);
	printf(fmt, arg);
	putchar('\n');
}

static long read_long(const char *path, long dflt)
{
	long long v = proc_key_num(path, "", 10);

	return v < 0 ? dflt : (long)v;
}

/* Attach to a child of ours as the saver attaches to a target. */
static int check_ptrace(void)
{
	long scope = read_long("/proc/sys/kernel/yama/ptrace_scope", -1);
	char why[160];
	pid_t c = fork();
	int st, ok = 0;

	if (c == 0) {
		pause();
		_exit(0);
	}
	if (c > 0 && !ptrace(PTRACE_SEIZE, c, NULL, NULL) &&
	    !ptrace(PTRACE_INTERRUPT, c, NULL, NULL) && waitpid(c, &st, __WALL) == c)
		ok = 1;
	snprintf(why, sizeof(why), "%s", strerror(errno));
	if (c > 0) {
		kill(c, SIGKILL);
		while (waitpid(c, &st, __WALL) > 0)
			;
	}
	if (ok && scope > 0)
		snprintf(why, sizeof(why), "kernel.yama.ptrace_scope is %ld: %s", scope,
			 scope == 1 ? "only ancestors or CAP_SYS_PTRACE may attach to a process"
				    : "only CAP_SYS_PTRACE may attach");
	else if (ok)
		snprintf(why, sizeof(why), "the saver can attach to the processes of its user");
	line("ptrace", ok ? (scope > 0 ? "limited" : "ok") : "no", "%s", why);
	return ok;
}

static int check_vdso(void)
{
	char buf[512], maps[256] = "";
	FILE *f = fopen("/proc/self/maps", "r");
	int vdso = 0;

	while (f && fgets(buf, sizeof(buf), f)) {
		char *name = strchr(buf, '[');

		if (!name || strncmp(name, "[v", 2))
			continue;	/* the special mappings: [vdso], [vvar]... */
		name[strcspn(name, "\n")] = 0;
		vdso |= !strcmp(name, "[vdso]");
		snprintf(maps + strlen(maps), sizeof(maps) - strlen(maps), "%s%s",
			 maps[0] ? " " : "", name);
	}
	if (f)
		fclose(f);
	line("vdso", vdso ? "ok" : "no", vdso ? "special mappings %s (a restore needs the same "
		"ones: the same kernel)" : "%s no [vdso]: system calls cannot be injected "
		"(booted with vdso=0?)", maps);
	return vdso;
}

static void check_uffd(void)
{
	long fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);

	if (fd >= 0)
		close((int)fd);
	line("userfaultfd", fd >= 0 ? "ok" : "limited", fd >= 0 ?
	     "%s" : "%s: memory is filled by populating and copying (slower)",
	     fd >= 0 ? "memory is filled without zeroing pages first" : strerror(errno));
}

/* A clone3 with a chosen pid, as the loader makes every restored process. */
static void check_set_tid(void)
{
	long max = read_long("/proc/sys/kernel/pid_max", 32768);
	struct clone_args ca = { .exit_signal = SIGCHLD };
	char path[64];
	pid_t want = (pid_t)max - 1;
	long pid;
	int st;

	for (; want > 300; want--) {
		snprintf(path, sizeof(path), "/proc/%d", (int)want);
		if (access(path, F_OK))
			break;
	}
	ca.set_tid = (uint64_t)(uintptr_t)&want;
	ca.set_tid_size = 1;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, &st, 0);
	line("clone3 set_tid", pid > 0 ? "ok" : "limited", pid > 0 ? "%s" :
	     "%s: the saved pids cannot be chosen (needs root or CAP_CHECKPOINT_RESTORE); "
	     "restore with --pid-ns, or --new-pids", pid > 0 ? "restored processes keep their pids" :
	     strerror(errno));
}

static void check_pidfd_getfd(void)
{
	long pfd = syscall(SYS_pidfd_open, getpid(), 0), fd = -1;

	if (pfd >= 0)
		fd = syscall(SYS_pidfd_getfd, (int)pfd, 0, 0);
	if (fd >= 0)
		close((int)fd);
	if (pfd >= 0)
		close((int)pfd);
	line("pidfd_getfd", fd >= 0 ? "ok" : "limited", fd >= 0 ? "%s" :
	     "%s: sockets, timerfds and epolls are refused at checkpoint",
	     fd >= 0 ? "the saver can read sockets' queues and descriptors' state" :
	     strerror(errno));
}

static void check_tcp_repair(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1, ok;

	ok = s >= 0 && !setsockopt(s, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on));
	line("tcp repair", ok ? "ok" : "limited", ok ? "%s" : "%s: established TCP "
	     "connections are refused (saver --tcp-close gives them up)",
	     ok ? "established TCP connections are taken over" : strerror(errno));
	if (s >= 0)
		close(s);
}

static void check_caps(void)
{
	static const struct { int bit; const char *name, *gives; } c[] = {
		{ 40, "CAP_CHECKPOINT_RESTORE", "original pids, /proc/PID/exe" },
		{ 21, "CAP_SYS_ADMIN", "the same, on kernels before 5.9; SysV and shm objects" },
		{ 12, "CAP_NET_ADMIN", "TCP repair mode" },
		{ 19, "CAP_SYS_PTRACE", "other users' processes" },
		{ 24, "CAP_SYS_RESOURCE", "resource limits above the hard limit" },
	};
	long long c_eff = proc_status_num(0, "CapEff:", 16);
	unsigned long long have = c_eff > 0 ? (unsigned long long)c_eff : 0;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char what[128];

		snprintf(what, sizeof(what), "%s: %s", (have >> c[i].bit) & 1 ? "held" : "not held",
			 c[i].gives);
		line(c[i].name, (have >> c[i].bit) & 1 ? "ok" : "limited", "%s", what);
	}
}

/* nft, for the network lock of TCP connections across a kill */
static void check_nft(void)
{
	static const char *const dirs[] = { "/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft" };
	const char *found = NULL;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !found; i++)
		if (!access(dirs[i], X_OK))
			found = dirs[i];
	line("nft", found ? "ok" : "limited", found ? "%s: packets of checkpointed "
	     "connections can be held back" : "%snot installed: connections are not locked "
	     "while the processes are away", found ? found : "");
}

int loader_check(void)
{
	int ptrace_ok, vdso_ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ptrace_ok = check_ptrace();
	vdso_ok = check_vdso();
	check_uffd();
	check_set_tid();
	check_pidfd_getfd();
	check_tcp_repair();
	check_caps();
	check_nft();
	if (ptrace_ok && vdso_ok) {
		printf("checkpoint and restore work here (what is limited above is said "
		       "when it matters)\n");
		return 0;
	}
	printf("checkpoint and restore do not work here: %s\n",
	       !ptrace_ok ? "no ptrace" : "no [vdso]");
	return 1;
}
