// SPDX-License-Identifier: MIT
/*
 * The guardian (guard.h). Forked at the start of a checkpoint, before
 * any process is attached; it leaves the saver's session (a Ctrl-C or a
 * kill of the saver's process group does not reach it) and reads the
 * saver's notes from a SOCK_SEQPACKET socket until the saver says the
 * checkpoint ended. If the socket closes without that, the saver died:
 * the guardian waits until it is gone (its tracees are detached by then:
 * exit_ptrace runs before a pidfd reports the exit) and undoes what is
 * left, then says so in one line.
 *
 * A note is sent before the step it announces, so the guardian may
 * find less to undo than announced, never more: a socket not yet in
 * repair mode is switched off harmlessly, a snapshot not yet made is
 * looked for among the process's zombie children without exit signal
 * (only the saver makes such a child while the process is stopped), a
 * network lock not yet made is removed as one gone already (and again
 * while an orphaned nft of the saver could still make it).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "guard.h"
#include "netlock.h"
#include "proc_stat.h"
#include "saver.h"

enum { G_IMAGE = 1, G_SNAP, G_SNAP_REAPED, G_TCP, G_TCP_DONE, G_LOCK, G_LOCK_OVER, G_END,
       G_UNIX, G_UNIX_DONE };

struct gmsg {
	uint32_t type;
	int32_t pid, arg;	/* G_SNAP: the child (0: being made); G_TCP, G_UNIX: its fd */
	int32_t reuse;		/* G_TCP: its SO_REUSEADDR; G_UNIX: its SO_PASSCRED */
	int32_t peek_off;	/* G_UNIX: its SO_PEEK_OFF */
	uint64_t insn, gadget;	/* G_SNAP: how to inject into pid */
	uint64_t since;		/* G_SNAP: when it was sent, in /proc's start-time ticks */
	char path[4096];	/* G_IMAGE; G_LOCK: the table */
};

static int gsock = -1;
static pid_t gpid;

pid_t guard_pid(void)
{
	return gpid;
}

static void gsend(struct gmsg *m, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { m, len };
	struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (gsock < 0)
		return;
	if (fd >= 0) {
		struct cmsghdr *c;

		h.msg_control = cbuf;
		h.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (sendmsg(gsock, &h, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static void note(uint32_t type, pid_t pid, int arg, int fd)
{
	struct gmsg m = { .type = type, .pid = pid, .arg = arg };

	gsend(&m, offsetof(struct gmsg, path), fd);
}

/* Now, in the clock ticks of /proc/PID/stat's start times. */
static unsigned long long boot_ticks(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (unsigned long long)ts.tv_sec * (unsigned long long)hz +
	       (unsigned long long)ts.tv_nsec / (1000000000ull / (unsigned long long)hz);
}

void guard_snapshot(const struct target *t, pid_t child)
{
	struct gmsg m = { .type = G_SNAP, .pid = t->pid, .arg = child,
			  .insn = t->syscall_insn, .gadget = t->sigreturn_gadget,
			  .since = boot_ticks() };

	gsend(&m, offsetof(struct gmsg, path), -1);
}

void guard_snapshot_reaped(const struct target *t)
{
	note(G_SNAP_REAPED, t->pid, 0, -1);
}

void guard_tcp(pid_t pid, int fd, int s, int reuse)
{
	struct gmsg m = { .type = G_TCP, .pid = pid, .arg = fd, .reuse = reuse };

	gsend(&m, offsetof(struct gmsg, path), s);
}

void guard_unix(pid_t pid, int fd, int s, int peek_off, int passcred)
{
	struct gmsg m = { .type = G_UNIX, .pid = pid, .arg = fd, .reuse = passcred,
			  .peek_off = peek_off };

	gsend(&m, offsetof(struct gmsg, path), s);
}

void guard_unix_done(void)
{
	note(G_UNIX_DONE, 0, 0, -1);
}

/*
 * IBCR_SAVER_DIE_IN=WHERE (tests only, t_saverkill_tcp): the saver kills
 * itself with SIGKILL at that point ("tcp": a connection just put in
 * repair mode; "unix": a UNIX queue half read), once.
 */
void saver_die_at(const char *where)
{
	const char *v = getenv("IBCR_SAVER_DIE_IN");

	if (v && !strcmp(v, where))
		kill(getpid(), SIGKILL);
}

void guard_netlock(const char *table)
{
	struct gmsg m = { .type = G_LOCK };

	snprintf(m.path, sizeof(m.path), "%s", table);
	gsend(&m, offsetof(struct gmsg, path) + strlen(m.path), -1);
}

void guard_netlock_over(void)
{
	note(G_LOCK_OVER, 0, 0, -1);
}

void guard_tcp_released(void)
{
	note(G_TCP_DONE, 0, 0, -1);
}

/* ---- the guardian's side ------------------------------------------ */

struct snap {
	struct target t;	/* pid, syscall_insn, gadget: enough to inject */
	pid_t child;
	int reaped;
	unsigned long long since;	/* clock ticks since boot at its announcement */
};

struct gstate {
	pid_t saver;
	char image[4096];
	struct snap *snaps;
	size_t nsnaps;
	int *socks;		/* our copies, whose they are, their SO_REUSEADDR */
	pid_t *sock_pid;
	int *sock_reuse;
	size_t nsocks;
	int tcp_done, ended;
	char lock[64];		/* the network lock taken */
	int lock_over;		/* it is the image's, its processes killed */
	int usock;		/* the UNIX socket being read (a copy), or -1 */
	int upeek, upass;	/* its SO_PEEK_OFF and SO_PASSCRED before */
	char did[512];		/* what was undone, said at the end */
};

static struct snap *snap_of(struct gstate *g, pid_t pid)
{
	for (size_t i = 0; i < g->nsnaps; i++)
		if (g->snaps[i].t.pid == pid)
			return &g->snaps[i];
	g->snaps = xrealloc(g->snaps, (g->nsnaps + 1) * sizeof(*g->snaps));
	memset(&g->snaps[g->nsnaps], 0, sizeof(g->snaps[0]));
	g->snaps[g->nsnaps].t.pid = pid;
	g->snaps[g->nsnaps].t.memfd = -1;
	g->snaps[g->nsnaps].t.released = 1;	/* not ours: snapshot_reap seizes it */
	return &g->snaps[g->nsnaps++];
}

static void take(struct gstate *g, const struct gmsg *m, ssize_t len, int fd)
{
	struct snap *s;

	switch (m->type) {
	case G_IMAGE:
		snprintf(g->image, sizeof(g->image), "%.*s",
			 (int)(len - (ssize_t)offsetof(struct gmsg, path)), m->path);
		break;
	case G_SNAP:
		s = snap_of(g, m->pid);
		s->t.syscall_insn = m->insn;
		s->t.sigreturn_gadget = m->gadget;
		s->t.park_ready = 1;
		s->child = m->arg;
		s->reaped = 0;
		if (!m->arg)	/* the guardian may read it long after */
			s->since = m->since;
		break;
	case G_SNAP_REAPED:
		snap_of(g, m->pid)->reaped = 1;
		break;
	case G_TCP:
		g->socks = xrealloc(g->socks, (g->nsocks + 1) * sizeof(int));
		g->sock_pid = xrealloc(g->sock_pid, (g->nsocks + 1) * sizeof(pid_t));
		g->sock_reuse = xrealloc(g->sock_reuse, (g->nsocks + 1) * sizeof(int));
		g->socks[g->nsocks] = fd;
		g->sock_reuse[g->nsocks] = m->reuse;
		g->sock_pid[g->nsocks++] = m->pid;
		return;
	case G_TCP_DONE:
		g->tcp_done = 1;
		break;
	case G_UNIX:
		if (g->usock >= 0)
			close(g->usock);
		g->usock = fd;
		g->upeek = m->peek_off;
		g->upass = m->reuse;
		return;
	case G_UNIX_DONE:
		if (g->usock >= 0)
			close(g->usock);
		g->usock = -1;
		break;
	case G_LOCK:
		snprintf(g->lock, sizeof(g->lock), "%.*s",
			 (int)(len - (ssize_t)offsetof(struct gmsg, path)), m->path);
		break;
	case G_LOCK_OVER:
		g->lock_over = 1;
		break;
	case G_END:
		g->ended = 1;
		break;
	}
	if (fd >= 0)
		close(fd);
}

/* Reads notes until the end note or the saver's end; 1 if it died. */
static int listen_to(struct gstate *g, int sock)
{
	static struct gmsg m;

	while (!g->ended) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { &m, sizeof(m) };
		struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c;
		ssize_t n = recvmsg(sock, &h, MSG_CMSG_CLOEXEC);
		int fd = -1;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)offsetof(struct gmsg, path))
			return 1;
		c = CMSG_FIRSTHDR(&h);
		if (c && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
		take(g, &m, n, fd);
	}
	return 0;
}

/* state, parent and exit signal of pid; 0 when it is gone */
static int stat_of(pid_t pid, char *state, pid_t *ppid, int *exit_signal)
{
	struct proc_stat st;

	if (!proc_stat_of(pid, &st))
		return 0;
	*state = st.state;
	*ppid = st.ppid;
	*exit_signal = st.exit_signal;
	return 1;
}

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * The snapshot of pid the saver was making when it died: a child
 * without exit signal, started since the announcement, traced by
 * nobody (a live saver's snapshot is traced by it) or dead already.
 */
static pid_t find_snapshot(pid_t pid, unsigned long long since)
{
	char path[64], *s = NULL, *tok, *save = NULL;
	struct ibcr_err ignored;
	pid_t found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (proc_read(path, &s, NULL, &ignored))
		return 0;
	for (tok = strtok_r(s, " \n", &save); tok && !found; tok = strtok_r(NULL, " \n", &save)) {
		pid_t c = (pid_t)atoi(tok);
		struct proc_stat st;

		if (proc_stat_of(c, &st) && st.ppid == pid && st.exit_signal == 0 &&
		    st.start + 1 >= since &&
		    (st.state == 'Z' || proc_status_num(c, "TracerPid:", 10) == 0))
			found = c;
	}
	free(s);
	return found;
}

/*
 * pid's main thread may be in the clone the saver made it run: it is
 * there, or on a CPU (where /proc shows no system call, only "running").
 */
static int in_clone(pid_t pid)
{
	char path[64], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return !strncmp(buf, "running", 7) || (atol(buf) == SYS_clone && buf[0] != '-');
}

/*
 * The snapshot of s, announced but not named: the clone may still run
 * in the process (its tracer gone, it goes on alone, and its child exits
 * at once on its own stack). Looked for until that clone is over.
 */
static pid_t await_snapshot(pid_t pid, unsigned long long since)
{
	pid_t c = 0;

	for (int ms = 0; ms < 2000 && !c; ms += 2) {
		int cloning = in_clone(pid);

		c = find_snapshot(pid, since);
		if (!c && !cloning)
			return find_snapshot(pid, since);
		if (!c)
			pause_ms(2);
	}
	return c;
}

/* Kills (it is a copy that must not run) and reaps the snapshot of s. */
static int reap_snapshot(struct snap *s)
{
	int known = s->child != 0, sig = -1;
	char st = 0;
	pid_t pp = 0;

	if (!known)
		s->child = await_snapshot(s->t.pid, s->since);
	for (int ms = 0; ms < 2000 && s->child; ms += 5) {
		if (stat_of(s->child, &st, &pp, &sig) && st == 'Z')
			break;
		if (known && ms >= 1000)	/* ours for sure: it must not run */
			kill(s->child, SIGKILL);
		pause_ms(5);
	}
	if (!s->child || !stat_of(s->child, &st, &pp, &sig) || st != 'Z' ||
	    pp != s->t.pid || sig != 0)
		return 0;
	snapshot_reap(&s->t, s->child);
	return !stat_of(s->child, &st, &pp, &sig);
}

static void said(struct gstate *g, const char *what)
{
	size_t n = strlen(g->did);

	snprintf(g->did + n, sizeof(g->did) - n, ", %s", what);
}

/* pid never runs its own code again: gone, a zombie, exiting or killed. */
static int doomed(pid_t pid)
{
	struct proc_stat st;
	long long pending;

	if (!proc_stat_of(pid, &st) || st.state == 'Z' || st.state == 'X' ||
	    (st.flags & PROC_PF_EXITING))
		return 1;
	pending = proc_status_num(pid, "ShdPnd:", 16);
	return pending > 0 && (pending & (1ll << (SIGKILL - 1)));
}

static int in_repair(int fd)
{
	int on = 0;
	socklen_t l = sizeof(on);

	return !getsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &on, &l) && on;
}

/*
 * The moment the saver's end is read (the kernel closes a dying
 * process's descriptors before it lets its tracees go, and they are
 * held then: hold.c): what a thread would find on its sockets, put back.
 */
static void first_aid(struct gstate *g)
{
	int fixed = 0;

	for (size_t i = 0; i < g->nsocks && !g->tcp_done; i++)
		if (!doomed(g->sock_pid[i]) && in_repair(g->socks[i]) &&
		    !tcp_leave_repair(g->socks[i], g->sock_reuse[i]))
			fixed = 1;
	if (fixed)
		said(g, "TCP repair mode turned off");
	if (g->usock >= 0) {
		if (!setsockopt(g->usock, SOL_SOCKET, SO_PEEK_OFF, &g->upeek, sizeof(g->upeek)) &&
		    !setsockopt(g->usock, SOL_SOCKET, SO_PASSCRED, &g->upass, sizeof(g->upass)))
			said(g, "a UNIX socket's peek offset and SO_PASSCRED put back");
		close(g->usock);
		g->usock = -1;
	}
}

/*
 * The saver may have died while its nft was adding the lock: that nft,
 * orphaned, can still commit the table after a first removal (seen in
 * t_saverkill_tcp). So the lock is removed again while such an nft could
 * still be at work; removing a table that is gone is harmless.
 */
static int drop_lock(const char *table, struct ibcr_err *e)
{
	static const long pause_ms[] = { 0, 200, 500, 1300 };	/* at 0, 0.2, 0.7, 2 s */

	for (size_t i = 0; i < sizeof(pause_ms) / sizeof(pause_ms[0]); i++) {
		struct timespec ts = { pause_ms[i] / 1000, (pause_ms[i] % 1000) * 1000000 };

		if (pause_ms[i])
			nanosleep(&ts, NULL);
		if (netlock_drop(table, e))
			return -1;
	}
	return 0;
}

/*
 * The network lock of a saver that died: its connections' packets flow
 * again, unless the image is complete and holds the lock and their
 * processes are gone (--kill: the restore lets them go). A connection
 * whose process is gone is then closed in repair mode, as the saver
 * would: its peer hears nothing, the restore takes it over.
 */
static void unlock(struct gstate *g)
{
	int holds = g->lock_over || (g->lock[0] && netlock_image_holds(g->image, g->lock));
	int live = 0;
	struct ibcr_err e;
	char line[300];

	for (size_t i = 0; i < g->nsocks; i++) {
		if (!doomed(g->sock_pid[i]))
			live = 1;
		else if (holds && !in_repair(g->socks[i]) && !tcp_enter_repair(g->socks[i]) &&
			 !strstr(g->did, "closed in repair"))
			said(g, "the image's TCP connections closed in repair mode");
		close(g->socks[i]);
	}
	g->nsocks = 0;
	if (!g->lock[0] || g->lock_over)
		return;
	if (holds && !live)
		snprintf(line, sizeof(line), "the network lock %s kept for the image "
			 "(restart-loader --unlock-net lets it go)", g->lock);
	else if (!drop_lock(g->lock, &e))
		snprintf(line, sizeof(line), "the network lock %s removed", g->lock);
	else
		snprintf(line, sizeof(line), "%.200s", e.msg);
	said(g, line);
}

/* The saver died and is gone: undo what it left, and say so. */
static void repair(struct gstate *g)
{
	size_t n = strlen(g->image) + 32;

	if (g->image[0]) {
		char *tmp = xmalloc(n), line[sizeof(g->image) + 64];

		snprintf(tmp, n, "%s.tmp.%d", g->image, (int)g->saver);
		if (!unlink(tmp)) {
			snprintf(line, sizeof(line), "its temporary image %s removed", tmp);
			said(g, line);
		}
		free(tmp);
	}
	unlock(g);
	for (size_t i = 0; i < g->nsnaps; i++)
		if (!g->snaps[i].reaped && reap_snapshot(&g->snaps[i])) {
			char line[96];

			snprintf(line, sizeof(line), "the snapshot %d of pid %d reaped",
				 (int)g->snaps[i].child, (int)g->snaps[i].t.pid);
			said(g, line);
		}
	if (g->lock_over)	/* --kill: after the kill, the image complete */
		fprintf(stderr, "saver: the saver (pid %d) died once its processes were "
			"killed%s%s; its image %s is complete: restart-loader brings them back\n",
			(int)g->saver, g->did[0] ? ":" : "", g->did[0] ? g->did + 1 : "", g->image);
	else
		fprintf(stderr, "saver: the saver (pid %d) died during its checkpoint%s%s; the "
			"processes run on as before\n", (int)g->saver, g->did[0] ? ":" : "",
			g->did[0] ? g->did + 1 : "");
}

static __attribute__((noreturn)) void guardian(int sock, pid_t saver)
{
	static struct gstate g;
	int pidfd;

	setsid();	/* neither Ctrl-C nor a kill of the saver's group */
	prctl(PR_SET_NAME, "saver-guard", 0, 0, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	g.saver = saver;
	g.usock = -1;
	/* not our parent any more: it died before we ran (a loaded machine) */
	pidfd = getppid() == saver ? (int)syscall(SYS_pidfd_open, saver, 0) : -1;
	/* what it said before it died waits in the socket all the same */
	if (!listen_to(&g, sock))
		_exit(0);
	first_aid(&g);	/* before its threads run their own code */
	/* once it is gone its tracees are let go: only then can we attach */
	if (pidfd >= 0) {
		struct pollfd p = { pidfd, POLLIN, 0 };

		while (poll(&p, 1, 10000) < 0 && errno == EINTR)
			;
	}
	repair(&g);
	_exit(0);
}

void guard_start(const char *image)
{
	struct gmsg m = { .type = G_IMAGE };
	pid_t saver = getpid();
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return;
	fflush(NULL);
	gpid = fork();
	if (gpid == 0) {
		close(sv[0]);
		guardian(sv[1], saver);
	}
	close(sv[1]);
	if (gpid < 0) {
		fprintf(stderr, "saver: note: no guardian (fork: %s): a saver killed now "
			"could leave a snapshot or a temporary image\n", strerror(errno));
		close(sv[0]);
		gpid = 0;
		return;
	}
	gsock = sv[0];
	snprintf(m.path, sizeof(m.path), "%s", image);
	gsend(&m, offsetof(struct gmsg, path) + strlen(m.path), -1);
}

void guard_end(void)
{
	int st;

	if (gsock < 0)
		return;
	note(G_END, 0, 0, -1);
	close(gsock);
	gsock = -1;
	while (waitpid(gpid, &st, 0) < 0 && errno == EINTR)
		;
	gpid = 0;
}
