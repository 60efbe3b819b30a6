// SPDX-License-Identifier: MIT
/*
 * UNIX sockets (image.h, struct ibcr_unix), made in three steps:
 *
 *  unix_open     with the other objects: a pair once, both ends (a gone
 *                peer's end kept until the queues are refilled);
 *                listeners and bound sockets bound again (a stale socket
 *                file left by the killed process is replaced, a live one
 *                is not), datagram sockets reconnected by name;
 *  unix_pending  once every object exists: the clients of a listener's
 *                connections not accepted yet connect again, in the
 *                queue's order;
 *  unix_refill   once the processes exist (their pids are those of the
 *                credentials): every message that waited, sent again by
 *                its sender (the peer, the socket bound to the sender's
 *                name, or one made for it) with its descriptors in flight
 *                (SCM_RIGHTS: objects of the image) and its credentials
 *                (SCM_CREDENTIALS, as root: the restored pid); then the
 *                directions shut down are shut down again, and a bound
 *                file deleted at the checkpoint is removed again (unixq.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "loader.h"

#define STATUS_FLAGS (O_NONBLOCK | O_ASYNC)
#define GONE_MAX 64

int unix_layout(const struct ibcr_files *f, uint32_t i, struct unix_data *u)
{
	const uint8_t *d = f->data[i];
	uint64_t n = f->objs[i].data_len, off = sizeof(u->h);

	memset(u, 0, sizeof(*u));
	u->peer = "";
	if (!d || n < sizeof(u->h))
		return d ? -1 : 0;
	memcpy(&u->h, d, sizeof(u->h));
	if (u->h.peer_len > n - off || u->h.npending > (n - off) / 4)
		return -1;
	if (u->h.peer_len) {
		u->peer = (const char *)d + off;
		if (d[off + u->h.peer_len - 1])
			return -1;
	}
	off += (u->h.peer_len + 7) & ~7u;
	u->pending = (const uint32_t *)(uintptr_t)(d + off);
	off += ((uint64_t)u->h.npending * 4 + 7) & ~7ull;
	if (off > n)
		return -1;
	u->msgs = d + off;
	u->end = d + n;
	return 0;
}

socklen_t unix_address(const char *name, struct sockaddr_un *a)
{
	size_t n = strlen(name);

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (n >= sizeof(a->sun_path))
		n = sizeof(a->sun_path) - 1;
	memcpy(a->sun_path, name, n);
	if (name[0] == '@')
		a->sun_path[0] = 0;	/* abstract */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] != '@'));
}

/*
 * Binds to `name`; a socket file nobody listens on any more is replaced,
 * unless the socket's own had been deleted (deleted: what is there now
 * is someone else's).
 */
static int bind_unix(int s, const char *name, int deleted, struct ibcr_err *e)
{
	struct sockaddr_un a;
	socklen_t len = unix_address(name, &a);

	if (bind(s, (struct sockaddr *)&a, len) == 0)
		return 0;
	if (errno == EADDRINUSE && name[0] == '/' && !deleted) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int live = probe >= 0 && connect(probe, (struct sockaddr *)&a, len) == 0;

		if (probe >= 0)
			close(probe);
		if (!live && !unlink(name) && bind(s, (struct sockaddr *)&a, len) == 0)
			return 0;
	}
	return ibcr_fail_errno(e, errno, "binding UNIX socket %s", name);
}

long unix_peer_object(const struct ibcr_files *f, uint32_t i)
{
	for (uint32_t k = 0; k < f->nobjs; k++)
		if (k != i && f->objs[k].kind == IBCR_FD_UNIX &&
		    fobj_sock_ino(&f->objs[k]) == fobj_unix_peer(&f->objs[i]))
			return k;
	return -1;
}

/* Ends of pairs whose peer was gone: kept to refill from, then closed. */
static struct {
	uint32_t obj[GONE_MAX];
	int fd[GONE_MAX];
	uint32_t n;
} gone;

int unix_gone_end(uint32_t obj)
{
	for (uint32_t k = 0; k < gone.n; k++)
		if (gone.obj[k] == obj)
			return gone.fd[k];
	return -1;
}

void unix_gone_close(void)
{
	for (uint32_t k = 0; k < gone.n; k++)
		close(gone.fd[k]);
	gone.n = 0;
}

static int unix_pair(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e)
{
	int type = fobj_unix_type(&f->objs[i]), sv[2];
	long p = unix_peer_object(f, i);

	if (fds[i] >= 0)
		return fds[i];	/* made with its peer, which came first */
	if (p < 0 && gone.n == GONE_MAX)
		return ibcr_fail(e, "more than %d UNIX sockets whose peer is gone", GONE_MAX);
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv))
		return ibcr_fail_errno(e, errno, "creating a UNIX socket pair");
	/* options first: the buffer sizes bound what the queues may hold */
	if (sockopt_apply(sv[0], i, f, 0, e) ||
	    (p >= 0 && sockopt_apply(sv[1], (uint32_t)p, f, 0, e))) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (p >= 0) {
		fds[p] = sv[1];	/* picked up when the loop reaches it */
	} else {
		gone.obj[gone.n] = i;
		gone.fd[gone.n++] = sv[1];
	}
	return sv[0];
}

int unix_open(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	int type = fobj_unix_type(o), role = fobj_unix_role(o), s;
	struct unix_data u;

	if (unix_layout(f, i, &u))
		return ibcr_fail(e, "UNIX socket object %u is malformed", i);
	if (role == IBCR_SOCK_PAIR)
		return unix_pair(f, i, fds, e);
	if (role == IBCR_SOCK_PENDING)
		return UNIX_LATER;
	s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (s < 0)
		return ibcr_fail_errno(e, errno, "creating a UNIX socket");
	if (sockopt_apply(s, i, f, 0, e))
		goto fail;
	if (f->paths[i][0] && bind_unix(s, f->paths[i], u.h.flags & IBCR_UNIXF_DELETED, e))
		goto fail;
	if (role == IBCR_SOCK_LISTEN && listen(s, fobj_unix_backlog(o) ? (int)fobj_unix_backlog(o) : 128)) {
		ibcr_fail_errno(e, errno, "listening on %s", f->paths[i]);
		goto fail;
	}
	if (role == IBCR_SOCK_BOUND && u.peer[0]) {
		struct sockaddr_un a;
		socklen_t len = unix_address(u.peer, &a);

		if (connect(s, (struct sockaddr *)&a, len)) {
			ibcr_fail_errno(e, errno, "reconnecting a datagram socket to %s", u.peer);
			goto fail;
		}
	}
	return s;
fail:
	close(s);
	return -1;
}

/* A client of listener l, connected again (its fd placed above base). */
static int reconnect(const struct ibcr_files *f, uint32_t l, uint32_t c, int base, int *fds,
		     struct ibcr_err *e)
{
	struct sockaddr_un a;
	socklen_t len = unix_address(f->paths[l], &a);
	int type = fobj_unix_type(&f->objs[c]), s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (s < 0)
		return ibcr_fail_errno(e, errno, "creating a UNIX socket");
	if (sockopt_apply(s, c, f, 0, e) || connect(s, (struct sockaddr *)&a, len) ||
	    fcntl(s, F_SETFL, f->objs[c].flags & STATUS_FLAGS) < 0 ||
	    (fds[c] = fcntl(s, F_DUPFD_CLOEXEC, base)) < 0) {
		if (!e->msg[0])
			ibcr_fail_errno(e, errno, "connecting again to listener %s", f->paths[l]);
		close(s);
		return -1;
	}
	close(s);
	return 0;
}

int unix_pending(const struct ibcr_files *f, int *fds, int base, struct ibcr_err *e)
{
	e->msg[0] = 0;
	for (uint32_t i = 0; i < f->nobjs; i++) {
		struct unix_data u;

		if (f->objs[i].kind != IBCR_FD_UNIX || unix_layout(f, i, &u))
			continue;
		for (uint32_t k = 0; k < u.h.npending; k++) {
			uint32_t c = u.pending[k];

			if (c >= f->nobjs || f->objs[c].kind != IBCR_FD_UNIX || fds[c] >= 0)
				return ibcr_fail(e, "listener %s: its pending connection %u is "
						 "malformed", f->paths[i], k);
			if (reconnect(f, i, c, base, fds, e))
				return -1;
		}
	}
	return 0;
}
