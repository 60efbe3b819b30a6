// SPDX-License-Identifier: MIT
/*
 * SysV semaphore sets and message queues, before any process is forked.
 * Each comes back with its saved id: the processes were killed, and such
 * objects outlive them, so one still there with its key is the same
 * object, given its saved values or messages again; a free id is created
 * again through kernel.{sem,msg}_next_id. Every id and key is checked
 * before anything changes, so a conflict stops the restore untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

/* What the checks and the restore need to know of one kind of object. */
struct kind {
	const char *name;	/* "semaphore set", "message queue" */
	const char *next_id;	/* /proc/sys/kernel/..._next_id */
	int (*stat)(int id, struct ipc_perm *p);	/* 0, or -1 and errno */
	int (*get)(int key, int flags);
};

static int sem_stat(int id, struct ipc_perm *p)
{
	struct semid_ds ds;
	union semun arg = { .buf = &ds };

	if (semctl(id, 0, IPC_STAT, arg))
		return -1;
	*p = ds.sem_perm;
	return 0;
}

static int msg_stat(int id, struct ipc_perm *p)
{
	struct msqid_ds ds;

	if (msgctl(id, IPC_STAT, &ds))
		return -1;
	*p = ds.msg_perm;
	return 0;
}

static int sem_get(int key, int flags)
{
	return semget(key, 0, flags);
}

static const struct kind SEM = { "semaphore set", "/proc/sys/kernel/sem_next_id",
				 sem_stat, sem_get };
static const struct kind MSG = { "message queue", "/proc/sys/kernel/msg_next_id",
				 msg_stat, msgget };

/*
 * 1: the id holds the object (same key), 0: the id is free and the key
 * too (unless private), -1: a conflict, said in e.
 */
static int check_one(const struct kind *k, int id, int key, struct ibcr_err *e)
{
	struct ipc_perm p;
	int other;

	if (k->stat(id, &p) == 0) {
		if (p.__key == key)
			return 1;
		return ibcr_fail(e, "SysV %s %d (key %#x) cannot be restored: id %d is "
				 "taken by another %s, key %#x", k->name, id, (unsigned)key,
				 id, k->name, (unsigned)p.__key);
	}
	if (errno != EINVAL && errno != EIDRM)
		return ibcr_fail_errno(e, errno, "SysV %s %d (key %#x): IPC_STAT", k->name,
				       id, (unsigned)key);
	if (key != IPC_PRIVATE && (other = k->get(key, 0)) >= 0)
		return ibcr_fail(e, "SysV %s %d (key %#x) cannot be restored: its key is "
				 "taken by %s %d", k->name, id, (unsigned)key, k->name, other);
	return 0;
}

static int check_all(const struct ibcr_sysvipc *s, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < s->nsets; i++) {
		const struct ibcr_sysv_sem *r = &s->sets[i];
		struct semid_ds ds = { 0 };
		union semun arg = { .buf = &ds };
		int rc = check_one(&SEM, r->id, r->key, e);

		if (rc < 0)
			return -1;
		if (rc && semctl(r->id, 0, IPC_STAT, arg))
			return ibcr_fail_errno(e, errno, "SysV semaphore set %d (key %#x): "
					       "IPC_STAT", r->id, (unsigned)r->key);
		if (rc && ds.sem_nsems != r->nsems)
			return ibcr_fail(e, "SysV semaphore set %d (key %#x) exists with %u "
					 "semaphores; it had %u", r->id, (unsigned)r->key,
					 (unsigned)ds.sem_nsems, r->nsems);
	}
	for (uint32_t i = 0; i < s->nqueues; i++)
		if (check_one(&MSG, s->queues[i].id, s->queues[i].key, e) < 0)
			return -1;
	return 0;
}

/* The id the kernel hands out next (once), or -1: the next free one. */
static int next_id(const struct kind *k, int id)
{
	char num[16];
	size_t len = (size_t)snprintf(num, sizeof(num), "%d", id);
	int fd = open(k->next_id, O_WRONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = write(fd, num, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	return rc;
}

/*
 * Makes the object with the saved id: the kernel hands out next_id once
 * (if that slot is free; else the next one, which is refused here).
 */
static int create(const struct kind *k, int id, int key, int nsems, struct ibcr_err *e)
{
	int got;

	if (next_id(k, id))
		return ibcr_fail_errno(e, errno, "SysV %s %d (key %#x): choosing its id (%s)",
				       k->name, id, (unsigned)key, k->next_id);
	/* owner-only until its contents are back; the saved mode comes last */
	got = k == &SEM ? semget(key, nsems, IPC_CREAT | IPC_EXCL | 0600) :
			  msgget(key, IPC_CREAT | IPC_EXCL | 0600);
	if (got < 0) {
		int err = errno;

		next_id(k, -1);	/* unused: it would go to whoever comes next */
		return ibcr_fail_errno(e, err, "SysV %s %d (key %#x): creating it", k->name,
				       id, (unsigned)key);
	}
	if (got == id)
		return 0;
	if (k == &SEM)
		semctl(got, 0, IPC_RMID);
	else
		msgctl(got, IPC_RMID, NULL);
	return ibcr_fail(e, "SysV %s %d (key %#x) came back as %d (its slot is taken by "
			 "another %s)", k->name, id, (unsigned)key, got, k->name);
}

/* Sets owner and mode as saved; 1 if that changes them (IPC_SET needed). */
static int change_owner(struct ipc_perm *p, uint32_t uid, uint32_t gid, uint32_t mode)
{
	int same = p->uid == uid && p->gid == gid && (p->mode & 0777) == mode;

	p->uid = uid;
	p->gid = gid;
	p->mode = mode;
	return !same;
}

static int restore_sem(const struct ibcr_sysvipc *s, const struct ibcr_sysv_sem *r,
		       int exists, struct ibcr_err *e)
{
	struct semid_ds ds;
	union semun arg = { .array = (unsigned short *)(s->values + r->first) };

	if (!exists && create(&SEM, r->id, r->key, (int)r->nsems, e))
		return -1;
	if (semctl(r->id, 0, SETALL, arg))
		return ibcr_fail_errno(e, errno, "SysV semaphore set %d (key %#x): SETALL",
				       r->id, (unsigned)r->key);
	arg.buf = &ds;
	if (semctl(r->id, 0, IPC_STAT, arg) ||
	    (change_owner(&ds.sem_perm, r->uid, r->gid, r->mode) &&
	     semctl(r->id, 0, IPC_SET, arg)))
		return ibcr_fail_errno(e, errno, "SysV semaphore set %d (key %#x): setting "
				       "its owner and mode", r->id, (unsigned)r->key);
	return 0;
}

/* Takes out whatever is queued; texts are truncated (MSG_NOERROR): unused. */
static int drain(const struct ibcr_sysv_msgq *q, struct ibcr_err *e)
{
	struct { long mtype; char text[64]; } m;

	while (msgrcv(q->id, &m, sizeof(m.text), 0, IPC_NOWAIT | MSG_NOERROR) >= 0)
		;
	if (errno != ENOMSG)
		return ibcr_fail_errno(e, errno, "SysV message queue %d (key %#x): emptying "
				       "it", q->id, (unsigned)q->key);
	return 0;
}

/*
 * final 0: at least `qbytes` of room, for the messages; final 1: the saved
 * size, owner and mode. IPC_SET only for a change (it needs owning).
 */
static int set_queue(const struct ibcr_sysv_msgq *q, uint64_t qbytes, int final,
		     struct ibcr_err *e)
{
	struct msqid_ds ds;
	int change;

	if (msgctl(q->id, IPC_STAT, &ds))
		return ibcr_fail_errno(e, errno, "SysV message queue %d (key %#x): IPC_STAT",
				       q->id, (unsigned)q->key);
	change = final ? ds.msg_qbytes != qbytes : ds.msg_qbytes < qbytes;
	if (final)
		change |= change_owner(&ds.msg_perm, q->uid, q->gid, q->mode);
	if (!change)
		return 0;
	ds.msg_qbytes = qbytes;
	if (msgctl(q->id, IPC_SET, &ds))
		return ibcr_fail_errno(e, errno, "SysV message queue %d (key %#x): setting "
				       "its %s (%llu bytes)", q->id, (unsigned)q->key,
				       final ? "owner, mode and size" : "size",
				       (unsigned long long)qbytes);
	return 0;
}

static int send_msgs(const struct ibcr_sysvipc *s, const struct ibcr_sysv_msgq *q,
		     struct ibcr_err *e)
{
	uint64_t longest = 0;
	struct { long mtype; char text[]; } *m;

	for (uint32_t i = q->first; i < q->first + q->nmsgs; i++)
		longest = s->msgs[i].len > longest ? s->msgs[i].len : longest;
	m = xmalloc(sizeof(long) + longest + 1);
	for (uint32_t i = q->first; i < q->first + q->nmsgs; i++) {
		const struct ibcr_sysv_msg *x = &s->msgs[i];

		m->mtype = (long)x->mtype;
		memcpy(m->text, s->data + x->data_off, x->len);
		if (msgsnd(q->id, m, x->len, IPC_NOWAIT)) {
			int err = errno;

			free(m);
			return ibcr_fail_errno(e, err, "SysV message queue %d (key %#x): "
					       "sending message %u of %u (%llu bytes) again",
					       q->id, (unsigned)q->key, i - q->first + 1,
					       q->nmsgs, (unsigned long long)x->len);
		}
	}
	free(m);
	return 0;
}

static int restore_msgq(const struct ibcr_sysvipc *s, const struct ibcr_sysv_msgq *q,
			int exists, struct ibcr_err *e)
{
	uint64_t total = 0;

	for (uint32_t i = q->first; i < q->first + q->nmsgs; i++)
		total += s->msgs[i].len;
	if (exists ? drain(q, e) : create(&MSG, q->id, q->key, 0, e))
		return -1;
	/* room for all of them, even if the queue was made smaller since */
	if (set_queue(q, total, 0, e) || send_msgs(s, q, e))
		return -1;
	return set_queue(q, q->qbytes, 1, e);
}

int sysvipc_prepare(const struct ibcr_sysvipc *s, struct ibcr_err *e)
{
	if (check_all(s, e))
		return -1;
	for (uint32_t i = 0; i < s->nsets; i++) {
		const struct ibcr_sysv_sem *r = &s->sets[i];
		int exists = check_one(&SEM, r->id, r->key, e);

		if (exists < 0 || restore_sem(s, r, exists, e))
			return -1;
	}
	for (uint32_t i = 0; i < s->nqueues; i++) {
		const struct ibcr_sysv_msgq *q = &s->queues[i];
		int exists = check_one(&MSG, q->id, q->key, e);

		if (exists < 0 || restore_msgq(s, q, exists, e))
			return -1;
	}
	return 0;
}
