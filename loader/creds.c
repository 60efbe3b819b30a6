// SPDX-License-Identifier: MIT
/*
 * Before anything changes: can this restart-loader give every thread of
 * the image exactly its credentials and sandbox? The restored process is
 * forked from the loader and starts with the loader's credentials; it can
 * only keep or lower what the loader has. So, for each thread:
 *
 * - ids and groups other than the loader's need CAP_SETUID, CAP_SETGID
 *   and CAP_SETPCAP (the capabilities must survive the uid change);
 * - its permitted set must lie within the loader's, its bounding set
 *   within the loader's (and lowering it needs CAP_SETPCAP), its
 *   inheritable set within what capset(2) allows from the loader's sets;
 *   ambient capabilities need ambient raising allowed by the securebits;
 * - securebits other than the loader's need CAP_SETPCAP and must keep
 *   the loader's locked bits as they are;
 * - no_new_privs cannot be taken back: the loader must not have it when
 *   the thread had not;
 * - seccomp: the loader must not be under seccomp itself (every restored
 *   process would inherit its filters), must be able to suspend seccomp
 *   for the hand-over (PTRACE_O_SUSPEND_SECCOMP: CAP_SYS_ADMIN), and
 *   installing filters needs no_new_privs or CAP_SYS_ADMIN;
 * - a loginuid other than the loader's needs CAP_AUDIT_CONTROL unless the
 *   loader's is unset; a root directory other than "/" needs
 *   CAP_SYS_CHROOT; dumpable 2 needs fs.suid_dumpable=2 here.
 *
 * A program whose privileges are a subset of the restorer's comes back;
 * anything else is refused here with one line, nothing made yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"
#include "proc_creds.h"

#define BIT(c) (1ull << (c))
#define LOGINUID_UNSET 0xffffffffu

/* The loader's own, as the restored process starts with them. */
struct self {
	struct ibcr_creds c;
	struct buf groups;
	uint32_t securebits;
	uint32_t last_cap;
	uint32_t suid_dumpable;
	int no_loginuid;	/* a kernel without audit */
};

static int read_self(struct self *s, struct ibcr_err *e)
{
	long sb = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

	memset(s, 0, sizeof(*s));
	if (sb < 0)
		return ibcr_fail_errno(e, errno, "reading restart-loader's own securebits");
	s->securebits = (uint32_t)sb;
	s->c.loginuid = LOGINUID_UNSET;
	s->no_loginuid = access("/proc/self/loginuid", F_OK) != 0;
	if (proc_creds("/proc/self/status", &s->c, &s->groups, e) ||
	    (!s->no_loginuid && proc_number("/proc/self/loginuid", &s->c.loginuid, e)) ||
	    proc_number("/proc/sys/kernel/cap_last_cap", &s->last_cap, e) ||
	    proc_number("/proc/sys/fs/suid_dumpable", &s->suid_dumpable, e))
		return -1;
	return 0;
}

static int has(const struct self *s, int cap)
{
	return !!(s->c.cap_prm & BIT(cap));
}

/* A thread that cannot come back: "pid P thread T: why" */
#define REFUSE(...) refuse(e, ps, i, __VA_ARGS__)

__attribute__((format(printf, 4, 5)))
static int refuse(struct ibcr_err *e, const struct ibcr_process_state *ps, uint32_t i,
		  const char *fmt, ...)
{
	char why[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return ibcr_fail(e, "pid %d thread %d: %s", ps->rec.pid, ps->threads[i].rec.tid, why);
}

static int same_ids(const struct ibcr_process_state *ps, uint32_t i, const struct self *s)
{
	const struct ibcr_creds *c = &ps->priv.creds[i];

	return !memcmp(c->uid, s->c.uid, sizeof(c->uid)) &&
	       !memcmp(c->gid, s->c.gid, sizeof(c->gid)) &&
	       c->ngroups == s->groups.len / 4 &&
	       (!c->ngroups || !memcmp(ps->priv.groups + c->group0, s->groups.p,
				       s->groups.len));
}

static int check_ids(const struct ibcr_process_state *ps, uint32_t i, const struct self *s,
		     struct ibcr_err *e)
{
	const struct ibcr_creds *c = &ps->priv.creds[i];

	if (same_ids(ps, i, s))
		return 0;
	if (!has(s, CAP_SETUID) || !has(s, CAP_SETGID) || !has(s, CAP_SETPCAP))
		return REFUSE("ran as uid %u/%u/%u/%u gid %u/%u/%u/%u with %u groups: giving "
			      "a process another identity needs root (CAP_SETUID, CAP_SETGID, "
			      "CAP_SETPCAP), not permitted to restart-loader (uid %u)",
			      c->uid[0], c->uid[1], c->uid[2], c->uid[3], c->gid[0], c->gid[1],
			      c->gid[2], c->gid[3], c->ngroups, s->c.uid[1]);
	if ((s->securebits & SECBIT_NO_SETUID_FIXUP_LOCKED) &&
	    !(s->securebits & SECBIT_NO_SETUID_FIXUP))
		return REFUSE("ran as another user, and restart-loader's securebits lock "
			      "SECBIT_NO_SETUID_FIXUP off (its capabilities would go with "
			      "the uid change)");
	return 0;
}

static int check_caps(const struct ibcr_process_state *ps, uint32_t i, const struct self *s,
		      struct ibcr_err *e)
{
	const struct ibcr_creds *c = &ps->priv.creds[i];
	uint64_t known = s->last_cap >= 63 ? ~0ull : BIT(s->last_cap + 1) - 1;
	uint64_t all = c->cap_eff | c->cap_prm | c->cap_inh | c->cap_bnd | c->cap_amb;

	if (all & ~known)
		return REFUSE("has capabilities this kernel does not know (%#llx; the last "
			      "here is %u)", (unsigned long long)(all & ~known), s->last_cap);
	if (c->cap_prm & ~s->c.cap_prm)
		return REFUSE("had capabilities %#llx that restart-loader does not have "
			      "(permitted %#llx, restart-loader's %#llx)",
			      (unsigned long long)(c->cap_prm & ~s->c.cap_prm),
			      (unsigned long long)c->cap_prm, (unsigned long long)s->c.cap_prm);
	if (c->cap_bnd & ~s->c.cap_bnd)
		return REFUSE("its bounding set holds %#llx, which restart-loader's lacks",
			      (unsigned long long)(c->cap_bnd & ~s->c.cap_bnd));
	if (c->cap_bnd != s->c.cap_bnd && !has(s, CAP_SETPCAP))
		return REFUSE("its bounding set is smaller than restart-loader's, which may "
			      "not lower it (no CAP_SETPCAP)");
	/* capset(2): new inheritable within old inheritable and bounding, and */
	/* without CAP_SETPCAP within old inheritable and permitted */
	if ((c->cap_inh & ~(s->c.cap_inh | s->c.cap_bnd)) ||
	    (!has(s, CAP_SETPCAP) && (c->cap_inh & ~(s->c.cap_inh | s->c.cap_prm))))
		return REFUSE("its inheritable capabilities %#llx cannot be set by "
			      "restart-loader", (unsigned long long)c->cap_inh);
	if (c->cap_amb && (s->securebits & SECBIT_NO_CAP_AMBIENT_RAISE))
		return REFUSE("had ambient capabilities, which restart-loader's securebits "
			      "forbid to raise");
	return 0;
}

static int check_securebits(const struct ibcr_process_state *ps, uint32_t i,
			    const struct self *s, struct ibcr_err *e)
{
	const struct ibcr_creds *c = &ps->priv.creds[i];
	uint32_t locks = s->securebits & SECURE_ALL_LOCKS;

	if (c->securebits == s->securebits)
		return 0;
	if (!has(s, CAP_SETPCAP))
		return REFUSE("had securebits %#x: setting them needs CAP_SETPCAP, not "
			      "permitted to restart-loader", c->securebits);
	/* a locked bit keeps its value, and its lock */
	if ((c->securebits & locks) != locks ||
	    ((c->securebits ^ s->securebits) & (locks >> 1)))
		return REFUSE("had securebits %#x, and restart-loader's (%#x) lock some "
			      "of them otherwise", c->securebits, s->securebits);
	return 0;
}

/*
 * Whether we may trace with seccomp suspended (PTRACE_O_SUSPEND_SECCOMP):
 * CAP_SYS_ADMIN, not under seccomp ourselves (refused before), and a
 * kernel with CONFIG_CHECKPOINT_RESTORE, which ns_last_pid shows. Not
 * tried on a child of ours: whoever watches the loader's children (a
 * test, ps) would take it for the restored process.
 */
static int can_suspend_seccomp(const struct self *s)
{
	return has(s, CAP_SYS_ADMIN) && !access("/proc/sys/kernel/ns_last_pid", F_OK);
}

/* Installing filters without no_new_privs needs CAP_SYS_ADMIN: its own last. */
static int late_caps(const struct ibcr_creds *c)
{
	return c->seccomp == IBCR_SECCOMP_FILTER && !(c->flags & IBCR_CREDF_NO_NEW_PRIVS) &&
	       !(c->cap_eff & BIT(CAP_SYS_ADMIN));
}

static int check_sandbox(const struct ibcr_process_state *ps, uint32_t i,
			 const struct self *s, struct ibcr_err *e)
{
	const struct ibcr_creds *c = &ps->priv.creds[i];
	int nnp = !!(c->flags & IBCR_CREDF_NO_NEW_PRIVS);

	if (!nnp && (s->c.flags & IBCR_CREDF_NO_NEW_PRIVS))
		return REFUSE("did not have no_new_privs, which restart-loader has (and "
			      "cannot be taken back)");
	if (!c->seccomp)
		return 0;
	if (!can_suspend_seccomp(s))
		return REFUSE("ran under seccomp (%s): restoring it needs restart-loader with "
			      "CAP_SYS_ADMIN, not under seccomp itself (PTRACE_O_SUSPEND_SECCOMP)",
			      c->seccomp == IBCR_SECCOMP_STRICT ? "strict mode" : "filters");
	if (c->seccomp == IBCR_SECCOMP_FILTER && !nnp && !has(s, CAP_SYS_ADMIN))
		return REFUSE("installed its seccomp filters with CAP_SYS_ADMIN, not "
			      "permitted to restart-loader");
	return 0;
}

/* What the process shares: root directory, loginuid, dumpable. */
static int check_process(const struct ibcr_process_state *ps, const struct self *s,
			 struct ibcr_err *e)
{
	const struct ibcr_priv *pv = &ps->priv;
	struct stat st;

	if (strcmp(pv->root, "/")) {
		if (stat(pv->root, &st) || !S_ISDIR(st.st_mode))
			return ibcr_fail(e, "pid %d: its root directory %s is not there",
					 ps->rec.pid, pv->root);
		if (!has(s, CAP_SYS_CHROOT))
			return ibcr_fail(e, "pid %d: ran chroot'ed in %s: changing the root "
					 "directory needs CAP_SYS_CHROOT, not permitted to "
					 "restart-loader", ps->rec.pid, pv->root);
	}
	if (pv->creds[0].loginuid != s->c.loginuid && s->no_loginuid)
		return ibcr_fail(e, "pid %d: had loginuid %u, and this kernel has none "
				 "(no audit)", ps->rec.pid, pv->creds[0].loginuid);
	if (pv->creds[0].loginuid != s->c.loginuid && s->c.loginuid != LOGINUID_UNSET &&
	    !has(s, CAP_AUDIT_CONTROL))
		return ibcr_fail(e, "pid %d: had loginuid %u: changing restart-loader's (%u) "
				 "needs CAP_AUDIT_CONTROL", ps->rec.pid, pv->creds[0].loginuid,
				 s->c.loginuid);
	if (pv->hdr.dumpable == 2 && (s->suid_dumpable != 2 || !has(s, CAP_SETUID)))
		return ibcr_fail(e, "pid %d: was dumpable by root only (fs.suid_dumpable=2 "
				 "when its credentials changed); here fs.suid_dumpable is %u%s",
				 ps->rec.pid, s->suid_dumpable,
				 has(s, CAP_SETUID) ? "" : " and restart-loader is not root");
	return 0;
}

int creds_preflight(struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	struct self s;
	int rc;

	if (read_self(&s, e))
		return -1;
	rc = s.c.seccomp ? ibcr_fail(e, "restart-loader runs under seccomp (mode %u): the "
				     "processes it restores would inherit its filters",
				     s.c.seccomp) : check_process(ps, &s, e);
	rs->cred_flags = xcalloc(ps->rec.nthreads, sizeof(uint32_t));
	for (uint32_t i = 0; i < ps->rec.nthreads && !rc; i++) {
		const struct ibcr_creds *c = &ps->priv.creds[i];

		rc = check_ids(ps, i, &s, e) || check_caps(ps, i, &s, e) ||
		     check_securebits(ps, i, &s, e) || check_sandbox(ps, i, &s, e);
		rs->cred_flags[i] = (same_ids(ps, i, &s) ? 0 : PLAN_CRED_IDS) |
				    ((c->flags & IBCR_CREDF_NO_NEW_PRIVS) ? PLAN_CRED_NNP : 0) |
				    (i == 0 && ps->priv.hdr.dumpable == 2 ? PLAN_CRED_DUMP_ROOT : 0) |
				    (late_caps(c) ? PLAN_CRED_LATE_CAPS : 0);
		if (c->seccomp)
			rs->seccomp = 1;
	}
	rs->loginuid_differs = ps->priv.creds[0].loginuid != s.c.loginuid;
	buf_free(&s.groups);
	return rc;
}

/* In the restored process, before the core: the loginuid, written by itself. */
int creds_child(const struct restore *rs, struct ibcr_err *e)
{
	char v[16];
	int fd, n;

	if (!rs->loginuid_differs)
		return 0;
	n = snprintf(v, sizeof(v), "%u", rs->ps->priv.creds[0].loginuid);
	fd = open("/proc/self/loginuid", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, v, (size_t)n) != n) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return ibcr_fail_errno(e, err, "setting loginuid %s", v);
	}
	close(fd);
	return 0;
}
