// SPDX-License-Identifier: MIT
/*
 * A socket's options, read through the saver's copy of its descriptor:
 * each option of lib/sockopt.c's table whose value differs from what a
 * new socket of the same family, type and protocol has, made here for
 * the comparison. Saving only what the program changed keeps the
 * kernel's own choices its own after a restore: a buffer the kernel
 * sizes by itself (SO_SNDBUF not locked) stays self-sizing, an option
 * left at the system default follows the restoring system's default.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "saver.h"
#include "sockopt.h"

#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK 72
#endif
#define BPF_MAX_INSNS 4096

/* SOH_BUFFER: the size, when the program fixed it (SO_BUF_LOCK). */
static void buffer(int fd, uint32_t obj, const struct sockopt_desc *d,
		   struct ibcr_sockopts *out)
{
	int lock = 0, v = 0;
	socklen_t l = sizeof(lock), vl = sizeof(v);
	int bit = d->name == SO_SNDBUF ? 1 : 2;	/* SOCK_SNDBUF_LOCK, SOCK_RCVBUF_LOCK */

	if (getsockopt(fd, SOL_SOCKET, SO_BUF_LOCK, &lock, &l) || !(lock & bit) ||
	    getsockopt(fd, SOL_SOCKET, d->name, &v, &vl))
		return;
	sockopts_add(out, obj, SOL_SOCKET, d->name, &v, sizeof(v));
}

/* SOH_FILTER: a classic BPF program is read back; an eBPF one is not. */
static int filter(int fd, uint32_t obj, const char *who, struct ibcr_sockopts *out,
		  struct ibcr_err *e)
{
	socklen_t n = 0;
	void *insns;

	if (getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, NULL, &n)) {
		if (errno == EACCES)
			return ibcr_fail(e, "%s: an eBPF socket filter is attached "
					 "(SO_ATTACH_BPF), which cannot be read back: not "
					 "supported", who);
		return 0;
	}
	if (!n)
		return 0;
	if (n > BPF_MAX_INSNS)
		return ibcr_fail(e, "%s: socket filter of %u instructions", who, n);
	insns = xmalloc((size_t)n * 8);
	if (getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, insns, &n)) {
		free(insns);
		return ibcr_fail_errno(e, errno, "%s: reading its socket filter", who);
	}
	sockopts_add(out, obj, SOL_SOCKET, SO_ATTACH_FILTER, insns, n * 8);
	free(insns);
	return 0;
}

/* One plain option: saved when it reads otherwise than on the fresh socket. */
static void plain(int fd, int fresh, uint32_t obj, const struct sockopt_desc *d,
		  struct ibcr_sockopts *out)
{
	uint8_t v[64], f[64];
	socklen_t vl = d->size, fl = d->size;

	memset(v, 0, sizeof(v));
	memset(f, 0, sizeof(f));
	if (getsockopt(fd, d->level, d->name, v, &vl))
		return;		/* not an option of this kind of socket */
	if (fresh >= 0 && !getsockopt(fresh, d->level, d->name, f, &fl) && fl == vl &&
	    !memcmp(v, f, vl))
		return;
	/* a string that reads empty on both is the same: no device bound */
	if (d->varlen && vl <= 1 && !v[0] && fresh >= 0 && fl <= 1 && !f[0])
		return;
	sockopts_add(out, obj, d->level, d->name, v, vl);
}

int sockopt_capture(int fd, uint32_t obj, int family, int type, int proto, int connected,
		    const char *who, struct ibcr_sockopts *out, struct ibcr_err *e)
{
	int fresh = socket(family, type | SOCK_CLOEXEC, family == AF_UNIX ? 0 : proto);

	if (fresh < 0)
		return ibcr_fail_errno(e, errno, "%s: making a socket of its kind to compare "
				       "its options with", who);
	for (size_t i = 0; i < sockopt_count; i++) {
		const struct sockopt_desc *d = &sockopt_table[i];

		if (d->how == SOH_BUFFER) {
			buffer(fd, obj, d, out);
		} else if (d->how == SOH_FILTER) {
			if (filter(fd, obj, who, out, e)) {
				close(fresh);
				return -1;
			}
		} else if ((d->how != SOH_UNCONNECTED || !connected) &&
			   !(d->dgram && type == SOCK_STREAM)) {
			plain(fd, fresh, obj, d, out);
		}
	}
	close(fresh);
	return 0;
}
