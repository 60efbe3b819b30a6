// SPDX-License-Identifier: MIT
/*
 * Credentials and sandbox of every thread (credentials are per thread in
 * Linux): ids, supplementary groups, the five capability sets,
 * no_new_privs and the seccomp mode from /proc/PID/task/TID/status, the
 * root directory and the loginuid. Securebits and dumpable are read
 * inside the process (inject.c), seccomp filters with ptrace
 * (seccomp.c). This runs before anything is injected: a thread under
 * seccomp is killed, or stopped by its filter, by a system call it does
 * not allow, so the saver first suspends seccomp for its own calls
 * (PTRACE_O_SUSPEND_SECCOMP) or refuses, the process untouched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "buf.h"
#include "proc_creds.h"
#include "saver.h"

/* One thread's status lines; its groups into g. */
static int read_status(pid_t pid, pid_t tid, struct ibcr_creds *c, struct buf *g,
		       struct ibcr_err *e)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	return proc_creds(path, c, g, e);
}

/* A number from a /proc file of one thread (loginuid, sessionid). */
static int read_number(pid_t pid, pid_t tid, const char *name, uint32_t *v,
		       struct ibcr_err *e)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	/* a kernel without audit has neither: never set */
	if (access(path, F_OK) && errno == ENOENT) {
		*v = 0xffffffffu;
		return 0;
	}
	return proc_number(path, v, e);
}

static int read_link_of(pid_t pid, pid_t tid, const char *name, char *buf, size_t size,
			struct ibcr_err *e)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	n = readlink(path, buf, size - 1);
	if (n < 0)
		return ibcr_fail_errno(e, errno, "pid %d thread %d: reading %s", (int)pid,
				       (int)tid, path);
	buf[n] = 0;
	return 0;
}

/*
 * What the process shares among its threads (root, cwd, loginuid) must
 * be equal in all: the restore gives every thread the main thread's.
 */
static int check_shared(struct target *t, uint32_t i, char cwd0[4096], struct ibcr_err *e)
{
	char root[4096], cwd[4096];
	const struct ibcr_creds *c = &t->ps.priv.creds[i], *c0 = &t->ps.priv.creds[0];
	pid_t tid = t->tids[i];

	if (read_link_of(t->pid, tid, "root", root, sizeof(root), e) ||
	    read_link_of(t->pid, tid, "cwd", cwd, sizeof(cwd), e))
		return -1;
	if (i == 0) {
		t->ps.priv.root = xstrdup(root);
		memcpy(cwd0, cwd, sizeof(cwd));
		return 0;
	}
	if (strcmp(root, t->ps.priv.root) || strcmp(cwd, cwd0))
		return ibcr_fail(e, "pid %d thread %d: has a root or working directory of "
				 "its own (%s, %s; unshare(CLONE_FS)): not supported", (int)t->pid,
				 (int)tid, root, cwd);
	if (c->loginuid != c0->loginuid)
		return ibcr_fail(e, "pid %d thread %d: has a loginuid of its own (%u; the "
				 "process: %u): not supported", (int)t->pid, (int)tid,
				 c->loginuid, c0->loginuid);
	return 0;
}

/* Threads with the same groups share one list in the table. */
static void add_groups(struct ibcr_priv *pv, uint32_t i, const struct buf *g,
		       struct buf *table)
{
	uint32_t n = (uint32_t)(g->len / 4);

	pv->creds[i].ngroups = n;
	pv->creds[i].group0 = 0;
	if (!n)
		return;
	for (uint32_t k = 0; k < i; k++)
		if (pv->creds[k].ngroups == n && table->p &&
		    !memcmp(table->p + 4 * (size_t)pv->creds[k].group0, g->p, g->len)) {
			pv->creds[i].group0 = pv->creds[k].group0;
			return;
		}
	pv->creds[i].group0 = (uint32_t)(table->len / 4);
	buf_put(table, g->p, g->len);
}

/*
 * Our system calls in a thread under seccomp must not go through its
 * filter (or strict mode): PTRACE_O_SUSPEND_SECCOMP, which needs
 * CAP_SYS_ADMIN and a tracer not under seccomp itself.
 */
static int suspend_seccomp(struct target *t, struct ibcr_err *e)
{
	t->ptopts = PTRACE_O_TRACESYSGOOD | PTRACE_O_SUSPEND_SECCOMP;
	for (uint32_t i = 0; i < t->nthreads; i++) {
		const struct ibcr_creds *c = &t->ps.priv.creds[i];

		if (!ptrace(PTRACE_SETOPTIONS, t->tids[i], NULL, (void *)t->ptopts))
			continue;
		t->ptopts = PTRACE_O_TRACESYSGOOD;
		for (uint32_t k = 0; k < i; k++)	/* as they were */
			ptrace(PTRACE_SETOPTIONS, t->tids[k], NULL, (void *)t->ptopts);
		for (uint32_t k = 0; k < t->nthreads; k++)	/* name one under seccomp */
			if (t->ps.priv.creds[k].seccomp) {
				c = &t->ps.priv.creds[k];
				i = k;
				break;
			}
		return ibcr_fail_errno(e, errno, "pid %d thread %d: %s: a checkpoint must "
				       "run system calls in it%s, which needs CAP_SYS_ADMIN "
				       "and a saver not under seccomp itself (PTRACE_O_SUSPEND_"
				       "SECCOMP)", (int)t->pid, (int)t->tids[i],
				       c->seccomp == IBCR_SECCOMP_STRICT ?
				       "in seccomp strict mode" : "under seccomp filters",
				       c->seccomp == IBCR_SECCOMP_STRICT ? "" :
				       " and read its filters");
	}
	return 0;
}

int capture_creds(struct target *t, struct ibcr_err *e)
{
	struct ibcr_priv *pv = &t->ps.priv;
	struct buf table = { 0 }, g = { 0 };
	char cwd0[4096];
	int seccomp = 0, rc = 0;

	t->ptopts = PTRACE_O_TRACESYSGOOD;
	pv->hdr.nthreads = t->nthreads;
	pv->creds = xcalloc(t->nthreads, sizeof(*pv->creds));
	for (uint32_t i = 0; i < t->nthreads && !rc; i++) {
		struct ibcr_creds *c = &pv->creds[i];

		g.len = 0;
		rc = read_status(t->pid, t->tids[i], c, &g, e) ||
		     read_number(t->pid, t->tids[i], "loginuid", &c->loginuid, e) ||
		     read_number(t->pid, t->tids[i], "sessionid", &c->sessionid, e) ||
		     check_shared(t, i, cwd0, e) ? -1 : 0;
		add_groups(pv, i, &g, &table);
		seccomp |= c->seccomp != IBCR_SECCOMP_OFF;
	}
	buf_free(&g);
	pv->groups = (uint32_t *)table.p;
	pv->hdr.ngroups = (uint32_t)(table.len / 4);
	if (rc)
		return -1;
	if (!seccomp)
		return 0;
	t->ps.rec.flags |= IBCR_PROCF_SECCOMP;
	return suspend_seccomp(t, e) || capture_seccomp(t, e) ? -1 : 0;
}

int write_creds(struct target *t, uint32_t proc, struct img_writer *w, struct ibcr_err *e)
{
	struct buf b = { 0 };
	int rc;

	enc_creds(&b, &t->ps.priv);
	rc = imgw_section(w, IBCR_SEC_CREDS, proc, NULL, b.p, b.len, e);
	if (!rc && t->ps.priv.nfilters) {
		b.len = 0;
		enc_seccomp(&b, &t->ps.priv);
		rc = imgw_section(w, IBCR_SEC_SECCOMP, proc, NULL, b.p, b.len, e);
	}
	buf_free(&b);
	return rc;
}
