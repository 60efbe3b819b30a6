// SPDX-License-Identifier: MIT
/*
 * A netlink socket made again (IBCR_FD_NETLINK): its protocol, options,
 * port id (bound to it again: the original's is free once it is gone),
 * its multicast groups (the first 32 with the bind, the others one by
 * one) and its destination.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loader.h"

#define STATUS_FLAGS (O_NONBLOCK | O_ASYNC)

static int groups(int s, const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const uint32_t *g = (const uint32_t *)(uintptr_t)f->data[i];
	uint64_t words = f->objs[i].data_len / 4;

	for (uint64_t w = 1; g && w < words; w++)	/* word 0 went with the bind */
		for (uint32_t b = 0; b < 32; b++) {
			uint32_t group = (uint32_t)(w * 32 + b + 1);

			if ((g[w] >> b & 1) && setsockopt(s, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
							  &group, sizeof(group)))
				return ibcr_fail_errno(e, errno, "netlink socket: joining group %u",
						       group);
		}
	return 0;
}

int netlink_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	int type = fobj_netlink_type(o), proto = fobj_netlink_proto(o);
	struct sockaddr_nl self = { .nl_family = AF_NETLINK, .nl_pid = fobj_netlink_port(o) },
			   peer = { .nl_family = AF_NETLINK, .nl_pid = fobj_netlink_dport(o),
				    .nl_groups = fobj_netlink_dgroups(o) };
	int s = socket(AF_NETLINK, type | SOCK_CLOEXEC, proto);

	if (s < 0)
		return ibcr_fail_errno(e, errno, "creating a netlink socket (protocol %d)", proto);
	if (o->data_len >= 4 && f->data[i])
		memcpy(&self.nl_groups, f->data[i], 4);
	if (sockopt_apply(s, i, f, 0, e))
		goto fail;
	if ((self.nl_pid || self.nl_groups) &&
	    bind(s, (struct sockaddr *)&self, sizeof(self))) {
		ibcr_fail_errno(e, errno, "binding a netlink socket (protocol %d) to port id %u",
				proto, self.nl_pid);
		goto fail;
	}
	if (groups(s, f, i, e))
		goto fail;
	if ((peer.nl_pid || peer.nl_groups) &&
	    connect(s, (struct sockaddr *)&peer, sizeof(peer))) {
		ibcr_fail_errno(e, errno, "connecting a netlink socket again");
		goto fail;
	}
	if (sockopt_apply(s, i, f, 1, e) || fcntl(s, F_SETFL, o->flags & STATUS_FLAGS) < 0) {
		if (!e->msg[0])
			ibcr_fail_errno(e, errno, "netlink socket: its flags");
		goto fail;
	}
	return s;
fail:
	close(s);
	return -1;
}
