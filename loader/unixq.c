// SPDX-License-Identifier: MIT
/*
 * What waited in the image's UNIX sockets, sent again once the processes
 * exist (unix.c says why then): every message by its sender, with its
 * descriptors in flight and its credentials, in its order; then the late
 * options (the peek offset), the directions shut down, and the bound
 * files deleted at the checkpoint removed again.
 *
 * The sender: a pair's other end (or the end kept for a peer that was
 * gone); for a datagram, the image's socket bound to the sender's name,
 * a socket bound to that name for the moment, or an unnamed one. The
 * credentials are sent as root may (SCM_CREDENTIALS with the sender's
 * pid, restored or mapped to its new one, uid and gid); where the kernel
 * will not take them (no privilege, the sender is gone), the message
 * carries the loader's own, as it would without ibcr.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "loader.h"

#define SCM_MAX 253

static int32_t map_pid(const struct pidmap *m, int32_t pid)
{
	for (uint32_t k = 0; m && k < m->n; k++)
		if (m->old[k] == pid)
			return m->now[k];
	return pid;
}

/* The image's socket bound to name (as received: abstract with a NUL first). */
static long named(const struct ibcr_files *f, const int *fds, const char *from, uint32_t len)
{
	char name[sizeof(((struct ibcr_unix_msg *)0)->from) + 1];

	if (!len || len >= sizeof(name))
		return -1;
	memcpy(name, from, len);
	name[len] = 0;
	if (!from[0])
		name[0] = '@';
	for (uint32_t k = 0; k < f->nobjs; k++)
		if (f->objs[k].kind == IBCR_FD_UNIX && fds[k] >= 0 && !strcmp(f->paths[k], name))
			return k;
	return -1;
}

/* A socket to send as from (bound to it for the moment), or -1. */
static int stand_in(int type, const char *from, uint32_t len, struct ibcr_err *e)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (s < 0)
		return ibcr_fail_errno(e, errno, "a UNIX socket to send from");
	if (len && len <= sizeof(a.sun_path)) {
		memcpy(a.sun_path, from, len);
		if (bind(s, (struct sockaddr *)&a,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len))) {
			close(s);
			return ibcr_fail_errno(e, errno, "binding a UNIX socket to %.*s, the sender "
					       "of a waiting message", (int)len, from);
		}
	}
	return s;
}

static void forget_name(const char *from, uint32_t len)
{
	char path[sizeof(((struct ibcr_unix_msg *)0)->from) + 1];

	if (len && from[0] == '/' && len < sizeof(path)) {
		memcpy(path, from, len);
		path[len] = 0;
		unlink(path);
	}
}

/* One message: its bytes, descriptors and credentials, to receiver i. */
static int send_one(int s, const struct ibcr_files *f, uint32_t i, int pair,
		    const struct ibcr_unix_msg *m, const uint32_t *objs, const uint8_t *bytes,
		    const int *fds, const struct pidmap *pm, struct ibcr_err *e)
{
	char cbuf[CMSG_SPACE(SCM_MAX * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
	struct sockaddr_un to;
	struct iovec v = { (void *)(uintptr_t)bytes, m->len };
	struct msghdr mh = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf };
	struct cmsghdr *c;
	struct ucred u = { map_pid(pm, m->pid), m->uid, m->gid };
	ssize_t k;

	memset(cbuf, 0, sizeof(cbuf));
	if (!pair) {
		mh.msg_name = &to;
		mh.msg_namelen = unix_address(f->paths[i], &to);
	}
	mh.msg_controllen = (m->nfds ? CMSG_SPACE(m->nfds * sizeof(int)) : 0) +
			    (m->pid ? CMSG_SPACE(sizeof(u)) : 0);
	c = mh.msg_controllen ? CMSG_FIRSTHDR(&mh) : NULL;
	if (m->nfds && c) {
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(m->nfds * sizeof(int));
		for (uint32_t n = 0; n < m->nfds; n++)
			memcpy(CMSG_DATA(c) + n * sizeof(int), &fds[objs[n]], sizeof(int));
		c = CMSG_NXTHDR(&mh, c);
	}
	if (m->pid && c) {
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_CREDENTIALS;
		c->cmsg_len = CMSG_LEN(sizeof(u));
		memcpy(CMSG_DATA(c), &u, sizeof(u));
	}
	k = sendmsg(s, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (k < 0 && m->pid && (errno == EPERM || errno == ESRCH)) {
		mh.msg_controllen -= CMSG_SPACE(sizeof(u));	/* the loader's own, then */
		if (!mh.msg_controllen)
			mh.msg_control = NULL;
		k = sendmsg(s, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	/* a stream may take it in parts; the descriptors went with the first */
	while (k >= 0 && (uint32_t)k < m->len) {
		ssize_t more = send(s, bytes + k, m->len - (uint32_t)k, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (more <= 0) {
			k = -1;
			break;
		}
		k += more;
	}
	if (k < 0)
		return ibcr_fail_errno(e, errno, "socket %s: putting back a message of %u bytes%s",
				       f->paths[i], m->len, m->nfds ? " with descriptors" : "");
	return 0;
}

/* The sender of message m to receiver i; *temp when made for it. */
static int sender(const struct ibcr_files *f, uint32_t i, const int *fds,
		  const struct ibcr_unix_msg *m, int *pair, int *temp, struct ibcr_err *e)
{
	int role = fobj_unix_role(&f->objs[i]), type = fobj_unix_type(&f->objs[i]);
	long k;

	*temp = 0;
	*pair = role == IBCR_SOCK_PAIR;
	if (*pair) {
		long p = unix_peer_object(f, i);
		int s = p >= 0 ? fds[p] : unix_gone_end(i);

		if (s < 0)
			return ibcr_fail(e, "socket %s: no end to send its waiting messages from",
					 f->paths[i]);
		return s;
	}
	if ((k = named(f, fds, m->from, m->from_len)) >= 0)
		return fds[k];
	*temp = 1;
	return stand_in(type, m->from, m->from_len, e);
}

static int refill_one(const struct ibcr_files *f, uint32_t i, const int *fds,
		      const struct pidmap *pm, struct ibcr_err *e)
{
	struct unix_data u;
	const uint8_t *p;

	if (unix_layout(f, i, &u))
		return ibcr_fail(e, "UNIX socket object %u is malformed", i);
	p = u.msgs;
	for (uint32_t n = 0; n < u.h.nmsgs; n++) {
		struct ibcr_unix_msg m;
		const uint32_t *objs;
		int s, pair, temp, rc;

		if ((size_t)(u.end - p) < sizeof(m))
			return ibcr_fail(e, "socket %s: its messages are malformed", f->paths[i]);
		memcpy(&m, p, sizeof(m));
		p += sizeof(m);
		objs = (const uint32_t *)(uintptr_t)p;
		p += ((uint64_t)m.nfds * 4 + 7) & ~7ull;
		if (m.nfds > SCM_MAX || m.from_len > sizeof(m.from) || p > u.end ||
		    m.len > (size_t)(u.end - p))
			return ibcr_fail(e, "socket %s: its messages are malformed", f->paths[i]);
		for (uint32_t k = 0; k < m.nfds; k++)
			if (objs[k] >= f->nobjs || fds[objs[k]] < 0)
				return ibcr_fail(e, "socket %s: a descriptor in flight names object "
						 "%u, which was not made", f->paths[i], objs[k]);
		if ((s = sender(f, i, fds, &m, &pair, &temp, e)) < 0)
			return -1;
		rc = send_one(s, f, i, pair, &m, objs, p, fds, pm, e);
		if (temp) {
			close(s);
			forget_name(m.from, m.from_len);
		}
		if (rc)
			return -1;
		p += (m.len + 7) & ~7u;
	}
	return 0;
}

int unix_refill(const struct ibcr_files *f, const int *fds, const struct pidmap *pm,
		struct ibcr_err *e)
{
	for (uint32_t i = 0; i < f->nobjs; i++)
		if (f->objs[i].kind == IBCR_FD_UNIX && fds[i] >= 0 && refill_one(f, i, fds, pm, e))
			return -1;
	unix_gone_close();
	for (uint32_t i = 0; i < f->nobjs; i++) {
		const struct ibcr_fobj *o = &f->objs[i];
		int shut = fobj_unix_shut(o), role = fobj_unix_role(o);
		struct unix_data u;

		if (o->kind != IBCR_FD_UNIX || fds[i] < 0)
			continue;
		if (sockopt_apply(fds[i], i, f, 1, e))
			return -1;
		if (shut && role != IBCR_SOCK_LISTEN && shutdown(fds[i], shut - 1) &&
		    errno != ENOTCONN)
			return ibcr_fail_errno(e, errno, "socket %s: shutdown", f->paths[i]);
		if (!unix_layout(f, i, &u) && (u.h.flags & IBCR_UNIXF_DELETED) &&
		    unlink(f->paths[i]))
			return ibcr_fail_errno(e, errno, "removing %s again (deleted at the "
					       "checkpoint)", f->paths[i]);
	}
	return 0;
}
