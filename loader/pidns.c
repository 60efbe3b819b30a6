// SPDX-License-Identifier: MIT
/*
 * Original PIDs without privilege: a PID namespace of the restore's own
 * (restart-loader --pid-ns). clone3's set_tid needs CAP_CHECKPOINT_RESTORE
 * over the PID namespace; a user namespace gives an ordinary user every
 * capability over namespaces it makes. So the loader makes a user
 * namespace (unless it may make the others without one) in which its
 * own uid and gid map to themselves, a PID namespace and a mount
 * namespace; it forks the namespace's first process, which mounts a
 * /proc of its own (so that /proc/PID names its processes) and goes on
 * with the restore as its init; the outer loader waits and exits as it
 * does. The same as `unshare -cpf --keep-caps --mount-proc
 * restart-loader IMAGE`. Supplementary groups cannot be mapped without
 * privilege: inside, getgroups() shows them as the overflow gid, though
 * the kernel still checks access by the real ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader.h"

/* Whether this process has capability `cap` in effect (/proc/self/status). */
static int have_cap(int cap)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	if (f)
		fclose(f);
	return (eff >> cap) & 1;
}

static int write_file(const char *path, const char *text, struct ibcr_err *e)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? write(fd, text, strlen(text)) : -1;

	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)strlen(text))
		return ibcr_fail_errno(e, errno, "--pid-ns: writing %s", path);
	return 0;
}

static int map_ids(uid_t uid, gid_t gid, struct ibcr_err *e)
{
	char line[64];

	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/setgroups", "deny", e) ||
	    write_file("/proc/self/uid_map", line, e))
		return -1;
	snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", line, e);
}

static int refused(int err, int user, struct ibcr_err *e)
{
	if (user && err == ENOSPC)
		return ibcr_fail(e, "--pid-ns: the kernel refuses a new user namespace: "
				 "user.max_user_namespaces is reached (0 forbids them)");
	if (user && (err == EPERM || err == EACCES))
		return ibcr_fail(e, "--pid-ns: the kernel refuses an unprivileged user namespace "
				 "(kernel.unprivileged_userns_clone=0, or a seccomp filter, as "
				 "container runtimes install)");
	return ibcr_fail_errno(e, err, "--pid-ns: making a %s namespace",
			       user ? "user, PID and mount" : "PID and mount");
}

static pid_t inner;

static void pass_on(int sig)
{
	if (inner > 0)
		kill(inner, sig);
}

/* The outer loader: waits for the namespace's init, and ends as it did. */
static __attribute__((noreturn)) void outer(pid_t child)
{
	static const int sigs[] = { SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
	struct sigaction sa = { .sa_handler = pass_on, .sa_flags = SA_RESTART };
	int st = 0;

	inner = child;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGINT, SIG_IGN);	/* the terminal's reach the processes */
	signal(SIGQUIT, SIG_IGN);
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			_exit(1);
	exit_like(st);
}

int pidns_enter(struct ibcr_err *e)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	/* CLONE_NEWPID and CLONE_NEWNS need CAP_SYS_ADMIN; set_tid then holds too */
	int user = !have_cap(21 /* CAP_SYS_ADMIN */);
	pid_t child;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS | (user ? CLONE_NEWUSER : 0)))
		return refused(errno, user, e);
	if (user && map_ids(uid, gid, e))
		return -1;
	child = fork();
	if (child < 0)
		return ibcr_fail_errno(e, errno, "--pid-ns: forking the namespace's first process");
	if (child)
		outer(child);
	/* pid 1 of the new namespace: a /proc that shows it */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return ibcr_fail_errno(e, errno, "--pid-ns: mounting /proc for the new PID "
				       "namespace");
	return 0;
}

/* Whether id appears in a /proc/self/{uid,gid}_map. */
static int mapped(const char *map, uint32_t id)
{
	FILE *f = fopen(map, "re");
	unsigned long long in, out, n;
	int found = 0;

	while (f && !found && fscanf(f, "%llu %llu %llu", &in, &out, &n) == 3)
		found = id >= in && id - in < n;
	if (f)
		fclose(f);
	return found || !f;
}

int userns_check_creds(const struct ibcr_process_state *ps, struct ibcr_err *e)
{
	for (int i = 0; i < 4; i++) {
		const char *what = !mapped("/proc/self/uid_map", ps->rec.uid[i]) ? "uid" :
				   !mapped("/proc/self/gid_map", ps->rec.gid[i]) ? "gid" : NULL;

		if (what)
			return ibcr_fail(e, "pid %d ran as %s %u, which this user namespace does "
					 "not map: restore it where it is, as its own user with "
					 "restart-loader --pid-ns (or unshare -cpf --keep-caps "
					 "--mount-proc), not as the root of one (unshare -r)",
					 ps->rec.pid, what, !strcmp(what, "uid") ?
					 ps->rec.uid[i] : ps->rec.gid[i]);
	}
	return 0;
}
