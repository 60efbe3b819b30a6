// SPDX-License-Identifier: MIT
/*
 * Sockets as the kernel's sock_diag netlink interface reports them: the
 * only way to learn a UNIX socket's peer, and every socket's state and
 * queue lengths, from outside the process that owns it.
 */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "sockdiag.h"

#define TCP_TIME_WAIT_STATE 6

static int request(int nl, int family, int proto, struct ibcr_err *e)
{
	struct {
		struct nlmsghdr h;
		union {
			struct unix_diag_req u;
			struct inet_diag_req_v2 i;
		} r;
	} msg;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	memset(&msg, 0, sizeof(msg));
	msg.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	if (family == AF_UNIX) {
		msg.h.nlmsg_len = NLMSG_LENGTH(sizeof(msg.r.u));
		msg.r.u.sdiag_family = AF_UNIX;
		msg.r.u.udiag_states = ~0u;
		msg.r.u.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN |
				     UDIAG_SHOW_ICONS | UDIAG_SHOW_VFS;
	} else {
		msg.h.nlmsg_len = NLMSG_LENGTH(sizeof(msg.r.i));
		msg.r.i.sdiag_family = (uint8_t)family;
		msg.r.i.sdiag_protocol = (uint8_t)proto;
		msg.r.i.idiag_states = ~0u;
	}
	if (sendto(nl, &msg, msg.h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return ibcr_fail_errno(e, errno, "sock_diag request");
	return 0;
}

static void parse_unix(const struct nlmsghdr *h, struct sockdiag *d)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	const struct rtattr *a = (const struct rtattr *)(m + 1);
	int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));

	d->ino = m->udiag_ino;
	d->family = AF_UNIX;
	d->type = m->udiag_type;
	d->state = m->udiag_state;
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		size_t n = RTA_PAYLOAD(a);

		if (a->rta_type == UNIX_DIAG_NAME && n && n < sizeof(d->name)) {
			memcpy(d->name, RTA_DATA(a), n);
			if (d->name[0] == 0)
				d->name[0] = '@';	/* abstract */
			d->name[n] = 0;
		} else if (a->rta_type == UNIX_DIAG_PEER && n >= 4) {
			d->peer = *(const uint32_t *)RTA_DATA(a);
		} else if (a->rta_type == UNIX_DIAG_RQLEN && n >= sizeof(struct unix_diag_rqlen)) {
			d->rq = ((const struct unix_diag_rqlen *)RTA_DATA(a))->udiag_rqueue;
			d->wq = ((const struct unix_diag_rqlen *)RTA_DATA(a))->udiag_wqueue;
		} else if (a->rta_type == UNIX_DIAG_ICONS && n >= 4) {
			d->npending = (uint32_t)(n / 4);
			d->pending = xmalloc(n);
			memcpy(d->pending, RTA_DATA(a), d->npending * 4);
		} else if (a->rta_type == UNIX_DIAG_VFS && n >= sizeof(struct unix_diag_vfs)) {
			const struct unix_diag_vfs *v = RTA_DATA(a);

			d->vfs_ino = v->udiag_vfs_ino;
			d->vfs_dev = v->udiag_vfs_dev;
		} else if (a->rta_type == UNIX_DIAG_SHUTDOWN && n >= 1) {
			d->shutdown = *(const uint8_t *)RTA_DATA(a) & 3;
		}
	}
}

static void parse_inet(const struct nlmsghdr *h, int proto, struct sockdiag *d)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	const struct rtattr *a = (const struct rtattr *)(m + 1);
	int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));

	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == INET_DIAG_SHUTDOWN && RTA_PAYLOAD(a) >= 1)
			d->shutdown = *(const uint8_t *)RTA_DATA(a) & 3;

	d->ino = m->idiag_inode;
	d->family = m->idiag_family;
	d->type = proto == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM;
	d->proto = proto;
	d->state = m->idiag_state;
	d->rq = m->idiag_rqueue;
	d->wq = m->idiag_wqueue;
	if (m->idiag_family == AF_INET) {
		struct sockaddr_in *l = (void *)&d->local, *r = (void *)&d->remote;

		l->sin_family = r->sin_family = AF_INET;
		l->sin_port = m->id.idiag_sport;
		r->sin_port = m->id.idiag_dport;
		memcpy(&l->sin_addr, m->id.idiag_src, 4);
		memcpy(&r->sin_addr, m->id.idiag_dst, 4);
	} else {
		struct sockaddr_in6 *l = (void *)&d->local, *r = (void *)&d->remote;

		l->sin6_family = r->sin6_family = AF_INET6;
		l->sin6_port = m->id.idiag_sport;
		r->sin6_port = m->id.idiag_dport;
		memcpy(&l->sin6_addr, m->id.idiag_src, 16);
		memcpy(&r->sin6_addr, m->id.idiag_dst, 16);
	}
}

int sockdiag_dump(int family, int proto, struct sockdiag **out, size_t *n,
		  struct ibcr_err *e)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), done = 0;
	static char buf[32768];
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (nl < 0)
		return ibcr_fail_errno(e, errno, "opening sock_diag (unix_diag/inet_diag missing?)");
	if (request(nl, family, proto, e)) {
		close(nl);
		return -1;
	}
	while (!done) {
		ssize_t len = recv(nl, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0) {
			close(nl);
			return ibcr_fail_errno(e, len ? errno : EIO, "reading sock_diag");
		}
		for (; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			if (*n == cap)
				*out = xrealloc(*out, sizeof(**out) * (cap = cap ? cap * 2 : 64));
			memset(&(*out)[*n], 0, sizeof(**out));
			if (family == AF_UNIX)
				parse_unix(h, &(*out)[*n]);
			else
				parse_inet(h, proto, &(*out)[*n]);
			(*n)++;
		}
	}
	close(nl);
	return 0;
}

void sockdiag_free(struct sockdiag *d, size_t n)
{
	for (size_t i = 0; d && i < n; i++)
		free(d[i].pending);
	free(d);
}

/* A TIME_WAIT request for TCP sockets of `family`: a dump, or one to destroy. */
static int tw_request(int nl, uint16_t type, uint16_t flags, int family,
		      const struct inet_diag_sockid *id)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} msg;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	memset(&msg, 0, sizeof(msg));
	msg.h.nlmsg_len = sizeof(msg);
	msg.h.nlmsg_type = type;
	msg.h.nlmsg_flags = NLM_F_REQUEST | flags;
	msg.r.sdiag_family = (uint8_t)family;
	msg.r.sdiag_protocol = IPPROTO_TCP;
	msg.r.idiag_states = 1u << TCP_TIME_WAIT_STATE;
	if (id)
		msg.r.id = *id;
	return sendto(nl, &msg, sizeof(msg), 0, (struct sockaddr *)&sa, sizeof(sa)) ==
	       (ssize_t)sizeof(msg) ? 0 : -1;
}

/* Asks the kernel to drop one TIME_WAIT socket (SOCK_DESTROY). */
static int destroy(int family, const struct inet_diag_sockid *id)
{
	struct {
		struct nlmsghdr h;
		struct nlmsgerr err;
	} ack;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), rc = -1;

	if (nl < 0)
		return -1;
	if (!tw_request(nl, SOCK_DESTROY, NLM_F_ACK, family, id) &&
	    recv(nl, &ack, sizeof(ack), 0) >= (ssize_t)sizeof(ack.h) &&
	    ack.h.nlmsg_type == NLMSG_ERROR) {
		rc = ack.err.error ? -1 : 0;
		errno = -ack.err.error;
	}
	close(nl);
	return rc;
}

int sockdiag_kill_timewait(int family, uint16_t port)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), done = 0;
	static char buf[32768];
	struct inet_diag_sockid *ids = NULL;
	size_t n = 0;
	int rc = 0;

	if (nl < 0)
		return -1;
	if (tw_request(nl, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, family, NULL))
		done = rc = -1;
	while (!done) {
		ssize_t len = recv(nl, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0) {
			rc = -1;
			break;
		}
		for (; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			if (m->id.idiag_sport != port)
				continue;
			ids = xrealloc(ids, sizeof(*ids) * (n + 1));
			ids[n++] = m->id;
		}
	}
	close(nl);
	for (size_t i = 0; i < n && !rc; i++)
		rc = destroy(family, &ids[i]);
	free(ids);
	return rc;
}
