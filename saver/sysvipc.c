// SPDX-License-Identifier: MIT
/*
 * SysV semaphore sets and message queues. A process does not attach
 * them, so nothing in it says which it uses; what the kernel keeps is who
 * used each last: a semaphore's sempid (the last semop, SETVAL or
 * SETALL), a queue's lspid and lrpid (the last msgsnd and msgrcv). By
 * default the sets and queues that a process of the image used last are
 * saved: an image does not take, and its restore does not reset, objects
 * of programs outside it. With --sysv-ipc=all, every set and queue of the
 * namespace that the processes' credentials could use is saved (owner or
 * creator uid equal to a process's euid; all of them for euid 0), for a
 * program that made objects it has not touched yet. Semaphore values and
 * queued messages are saved; messages are read with MSG_COPY: the queue
 * keeps them.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "procfs.h"
#include "saver.h"

#ifndef MSG_COPY
#define MSG_COPY 040000		/* musl does not name it */
#endif

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

/* An object's common columns of /proc/sysvipc/{sem,msg}. */
struct ipc_obj {
	int key, id;
	unsigned mode, uid, gid, cuid, cgid;
};

/* The processes: their pids, and euids (root's may use everything). */
struct creds {
	uint32_t n;
	uint32_t *euid;
	pid_t *pid;
	int root;
	int all;		/* --sysv-ipc=all: what they may use, not what they used */
};

static void collect_creds(const struct target *t, uint32_t n, struct creds *c)
{
	c->euid = xcalloc(n + 1, sizeof(*c->euid));
	c->pid = xcalloc(n + 1, sizeof(*c->pid));
	for (uint32_t k = 0; k < n; k++) {
		if (t[k].zombie)	/* no credentials left */
			continue;
		c->pid[c->n] = t[k].pid;
		c->euid[c->n++] = t[k].ps.rec.uid[1];
		c->root |= t[k].ps.rec.uid[1] == 0;
	}
}

static int ours(const struct creds *c, int pid)
{
	for (uint32_t k = 0; k < c->n; k++)
		if (c->pid[k] == pid)
			return 1;
	return 0;
}

static int usable(const struct creds *c, const struct ipc_obj *o)
{
	for (uint32_t k = 0; k < c->n && !c->root; k++)
		if (c->euid[k] == o->uid || c->euid[k] == o->cuid)
			return 1;
	return c->root;
}

/* Did a process of the image use the set last (any of its semaphores)? */
static int sem_used(const struct creds *c, const struct ipc_obj *o, unsigned nsems)
{
	for (unsigned k = 0; k < nsems; k++)
		if (ours(c, semctl(o->id, (int)k, GETPID)))
			return 1;
	return 0;
}

/* The IPC namespace of every live process, which must be one. */
static int target_ns(const struct target *t, uint32_t n, struct stat *ns,
		     pid_t *pid, struct ibcr_err *e)
{
	char path[64];
	struct stat st;

	*pid = 0;
	for (uint32_t k = 0; k < n; k++) {
		if (t[k].zombie)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)t[k].pid);
		if (stat(path, &st))
			return ibcr_fail_errno(e, errno, "pid %d: its IPC namespace (%s)",
					       (int)t[k].pid, path);
		if (*pid && (st.st_ino != ns->st_ino || st.st_dev != ns->st_dev))
			return ibcr_fail(e, "pids %d and %d are in different IPC namespaces: "
					 "their SysV objects cannot be saved in one image",
					 (int)*pid, (int)t[k].pid);
		if (!*pid)
			*ns = st, *pid = t[k].pid;
	}
	return 0;
}

/*
 * /proc/sysvipc and the IPC calls are the caller's namespace: enter the
 * processes' one if it is not ours. *back is our own to return to, or -1.
 */
static int enter_ns(const struct target *t, uint32_t n, int *back, struct ibcr_err *e)
{
	struct stat ns, own;
	char path[64];
	pid_t pid;
	int fd;

	*back = -1;
	if (target_ns(t, n, &ns, &pid, e))
		return -1;
	if (!pid || stat("/proc/self/ns/ipc", &own))
		return 0;	/* no live process; or no namespaces: one for all */
	if (ns.st_ino == own.st_ino && ns.st_dev == own.st_dev)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)pid);
	*back = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*back < 0 || fd < 0 || setns(fd, CLONE_NEWIPC)) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		if (*back >= 0)
			close(*back);
		*back = -1;
		return ibcr_fail_errno(e, err, "pid %d is in another IPC namespace, whose "
				       "SysV semaphores and queues must be saved: entering it",
				       (int)pid);
	}
	close(fd);
	return 0;
}

static void leave_ns(int back)
{
	if (back < 0)
		return;
	if (setns(back, CLONE_NEWIPC))	/* we are about to exit anyway */
		perror("saver: returning to its IPC namespace");
	close(back);
}

static int save_sem(const struct ipc_obj *o, unsigned nsems, struct ibcr_sysvipc *s,
		    struct ibcr_err *e)
{
	struct ibcr_sysv_sem r = { o->id, o->key, o->mode & 0777, nsems, o->uid, o->gid,
				   o->cuid, o->cgid, s->nvalues, 0 };
	union semun arg;

	if (!nsems || nsems > 65535)
		return ibcr_fail(e, "SysV semaphore set %d (key %#x): %u semaphores?",
				 o->id, (unsigned)o->key, nsems);
	s->values = xrealloc(s->values, sizeof(uint16_t) * (s->nvalues + nsems));
	arg.array = s->values + s->nvalues;
	if (semctl(o->id, 0, GETALL, arg))
		return ibcr_fail_errno(e, errno, "SysV semaphore set %d (key %#x): GETALL",
				       o->id, (unsigned)o->key);
	s->nvalues += nsems;
	s->sets = xrealloc(s->sets, sizeof(r) * (s->nsets + 1));
	s->sets[s->nsets++] = r;
	return 0;
}

/* Copies of every message, oldest first; the queue keeps them. */
static int copy_msgs(const struct ipc_obj *o, const struct msqid_ds *ds,
		     struct ibcr_sysvipc *s, struct buf *data, struct ibcr_err *e)
{
	size_t max = ds->msg_cbytes ? ds->msg_cbytes : 1;	/* no message is longer */
	struct { long mtype; char text[]; } *m = xmalloc(sizeof(long) + max);
	uint64_t total = 0;

	for (unsigned long i = 0; i < ds->msg_qnum; i++) {
		ssize_t len = msgrcv(o->id, m, max, (long)i, IPC_NOWAIT | MSG_COPY);

		if (len < 0) {
			free(m);
			return ibcr_fail_errno(e, errno, "SysV message queue %d (key %#x): "
					       "copying message %lu of %lu", o->id,
					       (unsigned)o->key, i + 1,
					       (unsigned long)ds->msg_qnum);
		}
		s->msgs = xrealloc(s->msgs, sizeof(*s->msgs) * (s->nmsgs + 1));
		s->msgs[s->nmsgs++] = (struct ibcr_sysv_msg){ m->mtype, (uint64_t)len,
							       data->len };
		buf_put(data, m->text, (size_t)len);
		total += (uint64_t)len;
	}
	free(m);
	if (total != ds->msg_cbytes)
		return ibcr_fail(e, "SysV message queue %d (key %#x) changed while it was "
				 "read (%llu bytes read, %lu queued)", o->id, (unsigned)o->key,
				 (unsigned long long)total, (unsigned long)ds->msg_cbytes);
	return 0;
}

static int save_msgq(const struct ipc_obj *o, struct ibcr_sysvipc *s, struct buf *data,
		     struct ibcr_err *e)
{
	struct ibcr_sysv_msgq r = { o->id, o->key, o->mode & 0777, 0, o->uid, o->gid,
				    o->cuid, o->cgid, 0, s->nmsgs, 0 };
	struct msqid_ds ds;

	if (msgctl(o->id, IPC_STAT, &ds))
		return ibcr_fail_errno(e, errno, "SysV message queue %d (key %#x): IPC_STAT",
				       o->id, (unsigned)o->key);
	if (copy_msgs(o, &ds, s, data, e))
		return -1;
	r.nmsgs = s->nmsgs - r.first;
	r.qbytes = ds.msg_qbytes;
	s->queues = xrealloc(s->queues, sizeof(r) * (s->nqueues + 1));
	s->queues[s->nqueues++] = r;
	return 0;
}

/* Every usable object listed in `path`, each given to one of the savers. */
static int scan(const char *path, const struct creds *c, struct ibcr_sysvipc *s,
		struct buf *data, struct ibcr_err *e)
{
	char *text, *line, *save = NULL;
	int is_sem = strstr(path, "sem") != NULL, rc = 0;

	if (access(path, F_OK) && errno == ENOENT)
		return 0;	/* a kernel without SysV IPC: nothing to save */
	if (proc_read(path, &text, NULL, e))
		return -1;
	strtok_r(text, "\n", &save);	/* the column titles */
	for (line = strtok_r(NULL, "\n", &save); line && !rc;
	     line = strtok_r(NULL, "\n", &save)) {
		struct ipc_obj o;
		unsigned nsems;
		int lspid, lrpid;

		if (is_sem && sscanf(line, "%d %d %o %u %u %u %u %u", &o.key, &o.id, &o.mode,
				     &nsems, &o.uid, &o.gid, &o.cuid, &o.cgid) == 8)
			rc = (c->all ? usable(c, &o) : sem_used(c, &o, nsems)) ?
			     save_sem(&o, nsems, s, e) : 0;
		else if (!is_sem && sscanf(line, "%d %d %o %*u %*u %d %d %u %u %u %u",
					   &o.key, &o.id, &o.mode, &lspid, &lrpid, &o.uid, &o.gid,
					   &o.cuid, &o.cgid) == 9)
			rc = (c->all ? usable(c, &o) : ours(c, lspid) || ours(c, lrpid)) ?
			     save_msgq(&o, s, data, e) : 0;
		else
			rc = ibcr_fail(e, "%s: cannot read the line '%s'", path, line);
	}
	free(text);
	return rc;
}

int sysvipc_capture(const struct target *t, uint32_t n, int all, struct ibcr_sysvipc *out,
		    struct ibcr_err *e)
{
	struct creds c = { .all = all };
	struct buf data = { 0 };
	int back, rc;

	memset(out, 0, sizeof(*out));
	collect_creds(t, n, &c);
	rc = c.n ? enter_ns(t, n, &back, e) : 0;
	if (c.n && !rc) {
		rc = scan("/proc/sysvipc/sem", &c, out, &data, e) ||
		     scan("/proc/sysvipc/msg", &c, out, &data, e) ? -1 : 0;
		leave_ns(back);
	}
	out->data = data.p;
	out->data_size = data.len;
	free(c.euid);
	free(c.pid);
	return rc;
}
