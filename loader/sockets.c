// SPDX-License-Identifier: MIT
/*
 * Sockets, opened by the loader with the other file objects: UNIX ones
 * by unix.c; TCP and UDP ones here: listeners and bound sockets are bound
 * (and listen) again, datagram sockets reconnected, connections taken
 * over by tcp.c, a TCP connection given up at checkpoint (--tcp-close)
 * is a fresh socket, unconnected.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "loader.h"
#include "sockdiag.h"

#define STATUS_FLAGS (O_NONBLOCK | O_ASYNC)

/*
 * The port was the process's; connections that it or others closed since
 * may hold it in TIME_WAIT, and those of a listener without SO_REUSEADDR
 * refuse any bind. They are the past of the port, which the restored
 * listener owns again: they are dropped (SOCK_DESTROY), and bind tried
 * once more.
 */
static int bind_port(int s, int type, const struct sockaddr_in6 *a, socklen_t len)
{
	if (!bind(s, (const struct sockaddr *)a, len))
		return 0;
	if (errno != EADDRINUSE || type != SOCK_STREAM)
		return -1;
	sockdiag_kill_timewait(AF_INET, a->sin6_port);
	sockdiag_kill_timewait(AF_INET6, a->sin6_port);
	errno = EADDRINUSE;
	return bind(s, (const struct sockaddr *)a, len);
}

static int inet_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	int family = fobj_inet_family(o), type = fobj_inet_type(o);
	int role = fobj_inet_role(o), s;
	struct sockaddr_in6 addr[2];
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(addr[0]);

	if (o->data_len < sizeof(addr) ||
	    (o->data_len != sizeof(addr) && role != IBCR_SOCK_REPAIR && type != SOCK_DGRAM))
		return ibcr_fail(e, "socket object %u is malformed", i);
	memcpy(addr, f->data[i], sizeof(addr));
	s = socket(family, type | SOCK_CLOEXEC, fobj_inet_proto(o));
	if (s < 0)
		return ibcr_fail_errno(e, errno, "creating a socket (family %d)", family);
	/* before repair mode, which forces SO_REUSEADDR on and must keep it so to bind */
	if (sockopt_apply(s, i, f, 0, e)) {
		close(s);
		return -1;
	}
	if (role == IBCR_SOCK_REPAIR && tcp_repair_on(s)) {
		close(s);
		return ibcr_fail_errno(e, errno, "TCP connection on port %u: repair mode (needs "
				       "CAP_NET_ADMIN)", ntohs(addr[0].sin6_port));
	}
	if (role == IBCR_SOCK_LISTEN || role == IBCR_SOCK_BOUND || role == IBCR_SOCK_REPAIR) {
		if (bind_port(s, type, &addr[0], len)) {
			char host[INET6_ADDRSTRLEN] = "?";
			const void *a = family == AF_INET ?
				(const void *)&((struct sockaddr_in *)&addr[0])->sin_addr :
				(const void *)&addr[0].sin6_addr;

			inet_ntop(family, a, host, sizeof(host));
			ibcr_fail_errno(e, errno, "binding a socket to %s port %u", host,
					ntohs(addr[0].sin6_port));
			close(s);
			return -1;
		}
	}
	if (role == IBCR_SOCK_LISTEN && listen(s, fobj_inet_backlog(o) ? (int)fobj_inet_backlog(o) : 128)) {
		ibcr_fail_errno(e, errno, "listening again");
		close(s);
		return -1;
	}
	if (role == IBCR_SOCK_REPAIR &&
	    tcp_restore(s, f->data[i] + sizeof(addr), o->data_len - sizeof(addr),
			(struct sockaddr *)&addr[1], len)) {
		ibcr_fail_errno(e, errno, "TCP connection from port %u to port %u: its state",
				ntohs(addr[0].sin6_port), ntohs(addr[1].sin6_port));
		close(s);
		return -1;
	}
	if (role == IBCR_SOCK_BOUND && type == SOCK_DGRAM &&
	    ((struct sockaddr_in *)&addr[1])->sin_port &&
	    connect(s, (struct sockaddr *)&addr[1], len)) {
		ibcr_fail_errno(e, errno, "reconnecting a datagram socket");
		close(s);
		return -1;
	}
	if (sockopt_apply(s, i, f, 1, e)) {
		close(s);
		return -1;
	}
	/* shut down by the program (a connection's own are replayed by tcp.c) */
	if (role != IBCR_SOCK_LISTEN && role != IBCR_SOCK_REPAIR && (fobj_inet_shut(o) & 3) &&
	    shutdown(s, (int)(fobj_inet_shut(o) & 3) - 1) && errno != ENOTCONN) {
		ibcr_fail_errno(e, errno, "socket %s: shutdown", f->paths[i]);
		close(s);
		return -1;
	}
	return s;
}

int sock_open(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e)
{
	int s = f->objs[i].kind == IBCR_FD_UNIX ? unix_open(f, i, fds, e) : inet_open(f, i, e);

	if (s == UNIX_LATER)
		return s;
	if (s >= 0 && fcntl(s, F_SETFL, f->objs[i].flags & STATUS_FLAGS) < 0) {
		close(s);
		return ibcr_fail_errno(e, errno, "socket %s: setting its flags", f->paths[i]);
	}
	return s;
}
