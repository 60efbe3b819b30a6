/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SOCKDIAG_H
#define IBCR_SOCKDIAG_H

#include <stdint.h>
#include <sys/socket.h>

#include "err.h"

/* One socket as NETLINK_SOCK_DIAG describes it. */
struct sockdiag {
	uint64_t ino;
	int family, type, proto, state;
	/* AF_UNIX */
	uint64_t peer;		/* peer's inode, 0 none */
	char name[112];		/* bound name; "@..." abstract; "" none */
	uint32_t rq, wq;	/* queued: bytes (stream) or messages, and for a */
				/* listener pending connections / backlog */
	uint32_t npending;	/* listener: connections not accepted yet */
	uint32_t *pending;	/* their inodes, in the queue's order (malloc'd) */
	uint64_t vfs_ino, vfs_dev;	/* a bound one's file, as it was made */
	uint8_t shutdown;	/* directions shut down: IBCR_SHUT_RD | _WR */
	/* AF_INET, AF_INET6 */
	struct sockaddr_storage local, remote;
};

/* Every socket of the given family (AF_UNIX, AF_INET, AF_INET6); sockdiag_free. */
int sockdiag_dump(int family, int proto, struct sockdiag **out, size_t *n,
		  struct ibcr_err *e);
void sockdiag_free(struct sockdiag *d, size_t n);

/*
 * Drops the TCP connections of `family` in TIME_WAIT whose local port is
 * `port` (network order), which would keep a restored listener from
 * binding it (SOCK_DESTROY, CAP_NET_ADMIN). 0, or -1 with errno.
 */
int sockdiag_kill_timewait(int family, uint16_t port);

#endif
