// SPDX-License-Identifier: MIT
/*
 * Each thread's credentials and sandbox, in an order that never needs a
 * privilege already given up and never gives the program more than it
 * had. Before the thread says it is ready (core_creds): groups and ids
 * (with SECBIT_NO_SETUID_FIXUP, so that the capabilities survive a uid
 * change), inheritable capabilities (before the bounding set shrinks: it
 * may hold more), ambient, the bounding set, securebits with their locks,
 * no_new_privs, then the three capability sets, read back and compared.
 * After the loader's go, as the last steps before rt_sigreturn
 * (core_sandbox): dumpable (main thread), seccomp strict mode or the
 * filters, and the capabilities last when installing the filters needed
 * CAP_SYS_ADMIN. Threads whose credentials are all the main thread's
 * (PLAN_CREDS_SHARED, loader/credplan.c) share them, as in the kernel
 * before the checkpoint: the main thread sets them before it makes the
 * others. The loader holds every thread at its rt_sigreturn until
 * all are done (finalize.c), so no program code runs beside a thread
 * that is not; it traces them with seccomp suspended, so the filters do
 * not apply to these last steps either. The root directory is changed
 * once the regions are in (/proc/self/mem fills them), before the
 * threads are made: they share it.
 */
#include <linux/capability.h>
#include <linux/prctl.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>

#include "core.h"
#include "sys.h"

struct cap_hdr {
	uint32_t version;
	int32_t pid;
};

struct cap_data {
	uint32_t eff, prm, inh;
};

/* struct sock_fprog */
struct fprog {
	uint16_t len;
	uint16_t pad[3];
	const void *filter;
};

static long caps_get(uint64_t c[3])
{
	struct cap_hdr h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct cap_data d[2];
	long rc = SYS(__NR_capget, &h, d, 0, 0, 0, 0);

	c[0] = d[0].eff | (uint64_t)d[1].eff << 32;
	c[1] = d[0].prm | (uint64_t)d[1].prm << 32;
	c[2] = d[0].inh | (uint64_t)d[1].inh << 32;
	return rc;
}

static long caps_set(uint64_t eff, uint64_t prm, uint64_t inh)
{
	struct cap_hdr h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct cap_data d[2] = {
		{ (uint32_t)eff, (uint32_t)prm, (uint32_t)inh },
		{ (uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32) },
	};

	return SYS(__NR_capset, &h, d, 0, 0, 0, 0);
}

static __attribute__((noreturn)) void fail(struct plan *p, const struct plan_thread *t,
					   const char *step, long rc)
{
	core_die(p, "thread %d: %s: error %ld", t->tid, step, -rc);
}

static void set_ids(struct plan *p, const struct plan_thread *t)
{
	const struct plan_creds *c = t->creds;
	long sb = sys_prctl(PR_GET_SECUREBITS, 0, 0, 0, 0), rc = sb < 0 ? sb : 0;

	if (!rc && !(sb & SECBIT_NO_SETUID_FIXUP))
		rc = sys_prctl(PR_SET_SECUREBITS, (uint64_t)sb | SECBIT_NO_SETUID_FIXUP, 0, 0, 0);
	if (rc)
		fail(p, t, "keeping its capabilities through the uid change", rc);
	rc = SYS(__NR_setgroups, c->ngroups, c->groups, 0, 0, 0, 0);
	if (rc)
		fail(p, t, "setting its supplementary groups", rc);
	rc = SYS(__NR_setresgid, c->gid[0], c->gid[1], c->gid[2], 0, 0, 0);
	if (!rc)
		rc = SYS(__NR_setresuid, c->uid[0], c->uid[1], c->uid[2], 0, 0, 0);
	if (rc)
		fail(p, t, "setting its uids and gids", rc);
	/* these return the old value, never an error: checked in check_ids */
	SYS(__NR_setfsgid, c->gid[3], 0, 0, 0, 0, 0);
	SYS(__NR_setfsuid, c->uid[3], 0, 0, 0, 0, 0);
}

static void set_ambient(struct plan *p, const struct plan_thread *t)
{
	long rc = 0;

	/* cap by cap, only what differs: each change is new credentials */
	for (int cap = 0; cap < 64 && !rc; cap++) {
		long has = sys_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, (uint64_t)cap, 0, 0);
		int want = t->creds->amb >> cap & 1;

		if (has == 1 && !want)
			rc = sys_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, (uint64_t)cap, 0, 0);
		else if (has == 0 && want)
			rc = sys_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, (uint64_t)cap, 0, 0);
	}
	if (rc)
		fail(p, t, "setting its ambient capabilities", rc);
}

static void set_bounding(struct plan *p, const struct plan_thread *t)
{
	for (int cap = 0; cap < 64; cap++) {
		long rc = 0;

		/* EINVAL beyond the kernel's last capability: not there, not to drop */
		if (!(t->creds->bnd >> cap & 1) && sys_prctl(PR_CAPBSET_READ, (uint64_t)cap, 0, 0, 0) == 1)
			rc = sys_prctl(PR_CAPBSET_DROP, (uint64_t)cap, 0, 0, 0);
		if (rc)
			fail(p, t, "dropping a capability from its bounding set", rc);
	}
}

/*
 * capset only when the sets differ: new credentials each time, and
 * threads that keep the very same ones as the loader gave them share
 * them, as they did before (see plan_creds_shared).
 */
static long caps_to(uint64_t eff, uint64_t prm, uint64_t inh)
{
	uint64_t cur[3];
	long rc = caps_get(cur);

	if (!rc && (cur[0] != eff || cur[1] != prm || cur[2] != inh))
		rc = caps_set(eff, prm, inh);
	return rc;
}

static void final_caps(struct plan *p, const struct plan_thread *t)
{
	const struct plan_creds *c = t->creds;
	uint64_t now[3];
	long rc = caps_to(c->eff, c->prm, c->inh);

	if (!rc)
		rc = caps_get(now);
	if (rc)
		fail(p, t, "setting its capabilities", rc);
	if (now[0] != c->eff || now[1] != c->prm || now[2] != c->inh)
		core_die(p, "thread %d: its capabilities came back as %#lx/%#lx/%#lx, not "
			 "%#lx/%#lx/%#lx (effective/permitted/inheritable)", t->tid,
			 (unsigned long)now[0], (unsigned long)now[1], (unsigned long)now[2],
			 (unsigned long)c->eff, (unsigned long)c->prm, (unsigned long)c->inh);
}

/* What the kernel now says equals the plan: a call that did not take is caught. */
static void check_creds(struct plan *p, const struct plan_thread *t)
{
	const struct plan_creds *c = t->creds;
	uint32_t u[3] = { 0 }, g[3] = { 0 };
	uint64_t bnd = 0, amb = 0;
	const char *what = 0;

	SYS(__NR_getresuid, &u[0], &u[1], &u[2], 0, 0, 0);
	SYS(__NR_getresgid, &g[0], &g[1], &g[2], 0, 0, 0);
	for (int cap = 0; cap < 64; cap++) {
		bnd |= (uint64_t)(sys_prctl(PR_CAPBSET_READ, (uint64_t)cap, 0, 0, 0) == 1) << cap;
		amb |= (uint64_t)(sys_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET,
					    (uint64_t)cap, 0, 0) == 1) << cap;
	}
	if (u[0] != c->uid[0] || u[1] != c->uid[1] || u[2] != c->uid[2] ||
	    (uint32_t)SYS(__NR_setfsuid, -1, 0, 0, 0, 0, 0) != c->uid[3])
		what = "uids";
	else if (g[0] != c->gid[0] || g[1] != c->gid[1] || g[2] != c->gid[2] ||
		 (uint32_t)SYS(__NR_setfsgid, -1, 0, 0, 0, 0, 0) != c->gid[3])
		what = "gids";
	else if (bnd != c->bnd)
		what = "bounding set";
	else if (amb != c->amb)
		what = "ambient capabilities";
	else if ((uint32_t)sys_prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) != c->securebits)
		what = "securebits";
	else if (sys_prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != !!(c->flags & PLAN_CRED_NNP))
		what = "no_new_privs";
	if (what)
		core_die(p, "thread %d: its %s came back different", t->tid, what);
}

void core_creds(struct plan *p, const struct plan_thread *t)
{
	const struct plan_creds *c = t->creds;
	uint64_t cur[3];
	long rc;

	if (!c)
		return;
	/* shared: the main thread set them before it made this one */
	if ((p->flags & PLAN_CREDS_SHARED) && t != &p->threads[0]) {
		check_creds(p, t);
		return;
	}
	/* every permitted capability effective, for the steps below */
	rc = caps_get(cur);
	if (!rc)
		rc = caps_to(cur[1], cur[1], cur[2]);
	if (rc)
		fail(p, t, "raising its capabilities", rc);
	if (c->flags & PLAN_CRED_IDS)
		set_ids(p, t);
	/* dumpable 2 is what a credential change sets with fs.suid_dumpable=2 */
	if (c->flags & PLAN_CRED_DUMP_ROOT) {
		SYS(__NR_setfsuid, c->uid[3] ^ 1, 0, 0, 0, 0, 0);
		SYS(__NR_setfsuid, c->uid[3], 0, 0, 0, 0, 0);
	}
	rc = caps_to(cur[1], cur[1], c->inh);
	if (rc)
		fail(p, t, "setting its inheritable capabilities", rc);
	set_ambient(p, t);
	set_bounding(p, t);
	if ((uint32_t)sys_prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) != c->securebits &&
	    (rc = sys_prctl(PR_SET_SECUREBITS, c->securebits, 0, 0, 0)))
		fail(p, t, "setting its securebits", rc);
	if ((c->flags & PLAN_CRED_NNP) && (rc = sys_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)))
		fail(p, t, "setting no_new_privs", rc);
	if (!(c->flags & PLAN_CRED_LATE_CAPS))
		final_caps(p, t);
	check_creds(p, t);
}

void core_sandbox(struct plan *p, uint32_t idx)
{
	const struct plan_thread *t = &p->threads[idx];
	const struct plan_creds *c = t->creds;
	long rc = 0;

	if (idx == 0 && p->dumpable != 2)
		rc = sys_prctl(PR_SET_DUMPABLE, p->dumpable, 0, 0, 0);
	if (rc)
		fail(p, t, "setting dumpable", rc);
	if (!c)
		return;
	if (c->seccomp == IBCR_SECCOMP_STRICT)
		rc = SYS(__NR_seccomp, SECCOMP_SET_MODE_STRICT, 0, 0, 0, 0, 0);
	for (uint32_t i = 0; i < c->nfilters && !rc; i++) {
		struct fprog prog = { (uint16_t)c->filters[i].len, { 0 }, c->filters[i].insns };

		/* with TSYNC, a positive result is the thread that could not follow */
		rc = SYS(__NR_seccomp, SECCOMP_SET_MODE_FILTER, c->filters[i].flags, &prog,
			 0, 0, 0);
	}
	if (rc)
		fail(p, t, "installing its seccomp filters", rc < 0 ? rc : -rc);
	if (c->flags & PLAN_CRED_LATE_CAPS)
		final_caps(p, t);
}

void core_chroot(struct plan *p)
{
	long rc;

	if (!p->root)
		return;
	rc = SYS(__NR_chroot, p->root, 0, 0, 0, 0, 0);
	if (rc)
		core_die(p, "changing the root directory to %s: error %ld", p->root, -rc);
}
