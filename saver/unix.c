// SPDX-License-Identifier: MIT
/*
 * A UNIX socket's role, options and what waits in it (image.h, struct
 * ibcr_unix), read through the saver's copy of its descriptor:
 *
 *  - its queue, without taking it: MSG_PEEK walking the peek offset, with
 *    SO_PASSCRED on for the walk (then back as it was), so that every
 *    message or stream run comes with its sender's credentials, its
 *    descriptors in flight (SCM_RIGHTS: peeking installs copies here,
 *    which become objects of the image, held by no process: files.c) and,
 *    for datagrams, its sender's name;
 *  - a listener's connections not accepted yet: their clients, in the
 *    queue's order, connected again at restore; one whose client sent
 *    bytes already is refused (only an accept could read them, and the
 *    program would lose the connection to the saver), as is one from a
 *    process outside the checkpoint;
 *  - its bound file: deleted (removed again after the restore's bind),
 *    or moved with its directory, or replaced (refused, naming it).
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "buf.h"
#include "guard.h"
#include "fdkinds.h"
#include "sockets.h"

#define LISTEN_STATE 10
#define ESTABLISHED_STATE 1
#define SCM_MAX 253
#define OUTSIDE (-1)

static int *held;	/* descriptors taken in flight, until unix_release */
static size_t nheld;

void unix_release(void)
{
	for (size_t i = 0; i < nheld; i++)
		close(held[i]);
	free(held);
	held = NULL;
	nheld = 0;
}

static void pad8(struct buf *b)
{
	static const uint8_t zero[8];

	if (b->len % 8)
		buf_put(b, zero, 8 - b->len % 8);
}

/* The listener (in sock_diag) whose queue holds client ino's connection, or NULL. */
static const struct sockdiag *listener_of(const struct socks *s, uint64_t ino)
{
	for (size_t i = 0; i < s->n; i++)
		for (uint32_t k = 0; s->d[i].pending && k < s->d[i].npending; k++)
			if (s->d[i].pending[k] == ino)
				return &s->d[i];
	return NULL;
}

/*
 * The clients of a listener's connections not accepted yet, as objects
 * (sock_diag names each connection in the queue by its client: the
 * connection itself has no inode before it is accepted). What a client
 * sent waits in the connection, charged to the client's send queue (its
 * wq): an accept alone could read it.
 */
static int pending_clients(const struct fobjs *o, uint32_t i, const struct socks *s,
			   const struct sockdiag *d, struct buf *b, struct ibcr_err *e)
{
	for (uint32_t k = 0; d->pending && k < d->npending; k++) {
		const struct sockdiag *c = sock_find(s, d->pending[k]);
		long client = c ? sock_object(o, c->ino) : -1;
		uint32_t obj = (uint32_t)client;

		if (client < 0)
			return ibcr_fail(e, "pid %d fd %d: listening socket %s has a connection "
					 "not accepted yet from a process outside the checkpoint "
					 "(or one gone)", (int)o->rep_pid[i], o->rep_fd[i], d->name);
		if (c->wq)
			return ibcr_fail(e, "pid %d fd %d: listening socket %s has a connection "
					 "not accepted yet whose client has sent bytes, which only "
					 "an accept could take: try again", (int)o->rep_pid[i],
					 o->rep_fd[i], d->name);
		buf_put(b, &obj, 4);
	}
	pad8(b);
	return 0;
}

/* Its bound file, as bind made it: still there, deleted, moved, replaced. */
static int bound_file(const struct fobjs *o, uint32_t i, const struct sockdiag *d,
		      uint32_t *flags, struct ibcr_err *e)
{
	char dir[sizeof(d->name)];
	struct stat st;

	if (d->name[0] != '/' || !d->vfs_ino)
		return 0;
	/* the kernel's own dev_t: major above bit 20 */
	if (!stat(d->name, &st) && st.st_ino == d->vfs_ino &&
	    major(st.st_dev) == d->vfs_dev >> 20 && minor(st.st_dev) == (d->vfs_dev & 0xfffff))
		return 0;
	memcpy(dir, d->name, sizeof(dir));
	if (!stat(d->name, &st))
		return ibcr_fail(e, "pid %d fd %d: UNIX socket bound to %s, where another file "
				 "is now: the restore could not bind it", (int)o->rep_pid[i],
				 o->rep_fd[i], d->name);
	if (stat(dirname(dir), &st))
		return ibcr_fail(e, "pid %d fd %d: UNIX socket bound to %s, whose directory is "
				 "gone (moved or deleted): the restore could not bind it there",
				 (int)o->rep_pid[i], o->rep_fd[i], d->name);
	*flags |= IBCR_UNIXF_DELETED;
	return 0;
}

/* One message's control data: credentials, descriptors (made objects). */
static int control(struct fobjs *o, struct msghdr *mh, struct ibcr_unix_msg *m,
		   struct buf *fds, const char *who, struct ibcr_err *e)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred u;

			memcpy(&u, CMSG_DATA(c), sizeof(u));
			m->pid = u.pid;
			m->uid = u.uid;
			m->gid = u.gid;
		} else if (c->cmsg_type == SCM_RIGHTS) {
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t k = 0; k < n; k++) {
				int fd;
				uint32_t obj;

				memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(fd));
				held = xrealloc(held, sizeof(int) * (nheld + 1));
				held[nheld++] = fd;
				if (files_add_held(o, fd, &obj, e))
					return ibcr_fail(e, "%s: a descriptor in flight in it: %.400s",
							 who, e->msg);
				buf_put(fds, &obj, 4);
				m->nfds++;
			}
		}
	}
	return 0;
}

/*
 * Every message (a datagram, or a stream's run up to where a read would
 * stop) with its credentials, descriptors and sender, without taking it.
 * The first datagram is peeked at without an offset: a walk from 0 passes
 * over an empty datagram peeked at before, as for UDP (sockets.c).
 */
static int peek_unix(int s, struct fobjs *o, const struct sockdiag *d, const char *who,
		     struct buf *out, uint32_t *nmsgs, struct ibcr_err *e)
{
	static uint8_t data[1 << 20];
	static uint8_t cbuf[CMSG_SPACE(SCM_MAX * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
	int pass = 0, on = 1, off = -1, start = d->type == SOCK_STREAM ? 0 : -1, rc = 0;
	socklen_t l = sizeof(pass), ol = sizeof(off);

	getsockopt(s, SOL_SOCKET, SO_PASSCRED, &pass, &l);
	getsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &off, &ol);
	guard_unix(0, 0, s, off, pass);	/* it puts them back should we die */
	if (setsockopt(s, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) ||
	    setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &start, sizeof(start)))
		return ibcr_fail_errno(e, errno, "%s: SO_PASSCRED/SO_PEEK_OFF", who);
	for (uint32_t k = 0; !rc && k < 1u << 24; k++) {
		struct ibcr_unix_msg m = { 0 };
		struct buf fds = { 0 };
		struct iovec v = { data, sizeof(data) };
		struct msghdr mh = { .msg_name = m.from, .msg_namelen = sizeof(m.from),
				     .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(s, &mh, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n < 0 || (n == 0 && d->type == SOCK_STREAM))
			break;
		if (mh.msg_flags & MSG_CTRUNC) {
			rc = ibcr_fail(e, "%s: a message in it carries more descriptors than a "
				       "process may receive", who);
			break;
		}
		m.len = (uint32_t)n;
		m.from_len = mh.msg_namelen > 2 ? mh.msg_namelen - 2 : 0;
		memmove(m.from, m.from + 2, sizeof(m.from) - 2);	/* past sun_family */
		rc = control(o, &mh, &m, &fds, who, e);
		buf_put(out, &m, sizeof(m));
		if (fds.len)
			buf_put(out, fds.p, fds.len);
		pad8(out);
		buf_put(out, data, m.len);
		pad8(out);
		buf_free(&fds);
		(*nmsgs)++;
		if (k == 0)
			saver_die_at("unix");
		if (k == 0 && d->type != SOCK_STREAM &&
		    setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &m.len, sizeof(m.len)))
			rc = ibcr_fail_errno(e, errno, "%s: SO_PEEK_OFF", who);
	}
	if (setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off)) ||
	    setsockopt(s, SOL_SOCKET, SO_PASSCRED, &pass, sizeof(pass)))
		rc = ibcr_fail_errno(e, errno, "%s: putting SO_PEEK_OFF and SO_PASSCRED back", who);
	else
		guard_unix_done();
	return rc;
}

/* The role; OUTSIDE when it is connected to a process outside the image. */
static int role_of(const struct fobjs *o, uint32_t i, const struct socks *s,
		   const struct sockdiag *d, long *listener)
{
	const struct sockdiag *peer = d->peer ? sock_find(s, d->peer) : NULL;
	const struct sockdiag *l = listener_of(s, d->ino);

	if (d->state == LISTEN_STATE)
		return IBCR_SOCK_LISTEN;
	if (l) {	/* it waits in a listener's queue */
		*listener = sock_object(o, l->ino);
		return *listener < 0 ? OUTSIDE : IBCR_SOCK_PENDING;
	}
	if (d->peer && sock_object(o, d->peer) >= 0)
		return IBCR_SOCK_PAIR;
	if (d->peer && d->type != SOCK_STREAM && peer && peer->name[0])
		return IBCR_SOCK_BOUND;	/* a datagram socket, reconnected by name */
	if (d->peer && peer)
		return OUTSIDE;
	if (d->state == ESTABLISHED_STATE && d->type != SOCK_DGRAM)
		return IBCR_SOCK_PAIR;	/* its peer is gone: restored closed */
	return d->name[0] ? IBCR_SOCK_BOUND : IBCR_SOCK_FRESH;
}

int unix_socket(struct fobjs *o, uint32_t i, const struct socks *s,
		const struct sockdiag *d, struct ibcr_err *e)
{
	const struct sockdiag *peer = d->peer ? sock_find(s, d->peer) : NULL;
	const char *peer_name = peer ? peer->name : "";
	struct ibcr_unix h = { (uint32_t)strlen(peer_name) + 1, 0, 0, 0 };
	struct buf head = { 0 }, queue = { 0 };
	long listener = -1;
	int role = role_of(o, i, s, d, &listener), fd, rc;
	char who[64];

	if (role == OUTSIDE)
		return 1;
	snprintf(who, sizeof(who), "pid %d fd %d", (int)o->rep_pid[i], o->rep_fd[i]);
	fobj_unix_set(&o->f.objs[i], (uint64_t)d->type, (uint64_t)role, (uint64_t)d->shutdown,
		      role == IBCR_SOCK_PAIR ? d->peer : 0,
		      role == IBCR_SOCK_PENDING ? (uint64_t)listener : d->wq);
	free(o->f.paths[i]);
	o->f.paths[i] = xstrdup(d->name);
	if (bound_file(o, i, d, &h.flags, e))
		return -1;
	if (role == IBCR_SOCK_LISTEN && pending_clients(o, i, s, d, &queue, e)) {
		buf_free(&queue);
		return -1;
	}
	h.npending = role == IBCR_SOCK_LISTEN ? d->npending : 0;
	if ((fd = grab_fd(o->rep_pid[i], o->rep_fd[i], e)) < 0)
		return -1;
	rc = sockopt_capture(fd, i, AF_UNIX, d->type, 0, 0, who, &o->sockopts, e);
	if (!rc && role != IBCR_SOCK_LISTEN && (d->rq || d->type != SOCK_STREAM))
		rc = peek_unix(fd, o, d, who, &queue, &h.nmsgs, e);
	close(fd);
	buf_put(&head, &h, sizeof(h));
	buf_put(&head, peer_name, h.peer_len);
	pad8(&head);
	if (queue.len)
		buf_put(&head, queue.p, queue.len);
	buf_free(&queue);
	o->f.data[i] = head.p;
	o->f.objs[i].data_len = head.len;
	return rc;
}
