/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_SOCKETS_H
#define IBCR_SAVER_SOCKETS_H

/* What sockets.c and unix.c share: the sock_diag picture of every socket. */
#include <stdint.h>
#include <sys/types.h>

#include "saver.h"
#include "sockdiag.h"

struct socks {
	struct sockdiag *d;
	size_t n;
};

const struct sockdiag *sock_find(const struct socks *s, uint64_t ino);
/* The object of socket inode ino, or -1. */
long sock_object(const struct fobjs *o, uint64_t ino);

/* unix.c: a UNIX socket's role, options and queue; 1: it leads outside */
int unix_socket(struct fobjs *o, uint32_t i, const struct socks *s,
		const struct sockdiag *d, struct ibcr_err *e);

#endif
