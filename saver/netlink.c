// SPDX-License-Identifier: MIT
/*
 * Netlink sockets (IBCR_FD_NETLINK): what a program that talks to the
 * kernel keeps, its protocol, port id, the multicast groups it listens
 * to and where it is connected, read through the saver's copy; its
 * options go with the others (sockopt.c). A restore makes it again and
 * binds it to the same port id and groups. Messages waiting to be read,
 * or a dump the kernel is still producing for it (netlink_diag says so),
 * are answers to requests nothing could repeat: refused ("try again").
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/netlink_diag.h>
#include <linux/sock_diag.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "saver.h"
#include "fdkinds.h"
#include "sockets.h"

#define MAX_GROUP_WORDS 64

/* Whether the kernel is still producing a dump for socket ino. */
static int dump_running(uint64_t ino, int proto)
{
	struct {
		struct nlmsghdr h;
		struct netlink_diag_req r;
	} req;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	static char buf[32768];
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), running = 0;

	if (nl < 0)
		return 0;	/* no netlink_diag: cannot tell */
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.r.sdiag_family = AF_NETLINK;
	req.r.sdiag_protocol = (uint8_t)proto;
	req.r.ndiag_show = NDIAG_SHOW_FLAGS;
	if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(nl);
		return 0;
	}
	for (int done = 0; !done;) {
		ssize_t len = recv(nl, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (len <= 0)
			break;
		for (; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			const struct netlink_diag_msg *m = NLMSG_DATA(h);
			const struct nlattr *a = (const struct nlattr *)(m + 1);
			int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));

			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			if (m->ndiag_ino != ino)
				continue;
			for (; alen >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) &&
			       a->nla_len <= alen;
			     alen -= NLA_ALIGN(a->nla_len),
			     a = (const struct nlattr *)((const char *)a + NLA_ALIGN(a->nla_len)))
				if (a->nla_type == NETLINK_DIAG_FLAGS && a->nla_len >= sizeof(*a) + 4)
					running = *(const uint32_t *)(a + 1) & NDIAG_FLAG_CB_RUNNING;
		}
	}
	close(nl);
	return running;
}

int netlink_socket(struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_fobj *ob = &o->f.objs[i];
	struct sockaddr_nl self = { 0 }, peer = { 0 };
	socklen_t sl = sizeof(self), pl = sizeof(peer), gl = MAX_GROUP_WORDS * 4;
	uint32_t groups[MAX_GROUP_WORDS] = { 0 };
	int fd = grab_fd(o->rep_pid[i], o->rep_fd[i], e), type = 0, proto = 0, rc = 0;
	socklen_t tl = sizeof(type), prl = sizeof(proto);
	char who[64], one;

	if (fd < 0)
		return -1;
	snprintf(who, sizeof(who), "pid %d fd %d", (int)o->rep_pid[i], o->rep_fd[i]);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
	    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &prl) ||
	    getsockname(fd, (struct sockaddr *)&self, &sl) ||
	    getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, groups, &gl)) {
		rc = ibcr_fail_errno(e, errno, "%s: reading its netlink socket", who);
		goto out;
	}
	if (getpeername(fd, (struct sockaddr *)&peer, &pl))
		memset(&peer, 0, sizeof(peer));
	if (recv(fd, &one, 1, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC) >= 0 ||
	    dump_running(fobj_sock_ino(ob), proto)) {
		rc = ibcr_fail(e, "%s: netlink socket (protocol %d) with messages from the kernel "
			       "not read yet, which a restore could not ask for again: try again",
			       who, proto);
		goto out;
	}
	if (gl > MAX_GROUP_WORDS * 4)
		gl = MAX_GROUP_WORDS * 4;	/* groups past 2048: none known to use them */
	ob->kind = IBCR_FD_NETLINK;
	fobj_netlink_set(ob, (uint64_t)type, (uint64_t)proto, self.nl_pid, peer.nl_pid,
			 peer.nl_groups);
	o->f.data[i] = xmalloc(gl + 1);
	memcpy(o->f.data[i], groups, gl);
	ob->data_len = gl;
	rc = sockopt_capture(fd, i, AF_NETLINK, type, proto, 0, who, &o->sockopts, e);
out:
	close(fd);
	return rc;
}
