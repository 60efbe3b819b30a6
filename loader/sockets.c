// SPDX-License-Identifier: MIT
/*
 * Sockets, opened by the loader with the other file objects: a UNIX pair
 * is made once, both ends, with what waited in each end written back
 * from the other (a gone peer's end is closed afterwards); listeners are
 * bound and listen again (a stale UNIX socket file left by the killed
 * process is replaced, a live one is not); bound and datagram sockets are
 * bound and reconnected by name; a TCP connection given up at checkpoint
 * (--tcp-close) is a fresh socket, unconnected.
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

static socklen_t unix_addr(const char *name, struct sockaddr_un *a)
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

/* Binds to `name`; a socket file nobody listens on any more is replaced. */
static int bind_unix(int s, const char *name, struct ibcr_err *e)
{
	struct sockaddr_un a;
	socklen_t len = unix_addr(name, &a);

	if (bind(s, (struct sockaddr *)&a, len) == 0)
		return 0;
	if (errno == EADDRINUSE && name[0] == '/') {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int live = probe >= 0 && connect(probe, (struct sockaddr *)&a, len) == 0;

		if (probe >= 0)
			close(probe);
		if (!live && !unlink(name) && bind(s, (struct sockaddr *)&a, len) == 0)
			return 0;
	}
	return ibcr_fail_errno(e, errno, "binding UNIX socket %s", name);
}

/* Data: u32 length, the peer's name; then the queue (see image.h). */
static const uint8_t *peer_name(const struct ibcr_files *f, uint32_t i, const char **name)
{
	const uint8_t *d = f->data[i];
	uint32_t len;

	*name = "";
	if (!d || f->objs[i].data_len < 4)
		return d;
	memcpy(&len, d, 4);
	if (len > f->objs[i].data_len - 4)
		return d + 4;
	*name = (const char *)d + 4;
	return d + 4 + len;
}

/* What waited in object i's receive queue, sent from the other end. */
static int refill(const struct ibcr_files *f, uint32_t i, int from, struct ibcr_err *e)
{
	const char *ignored;
	const uint8_t *q = peer_name(f, i, &ignored), *end;
	int type = (int)(f->objs[i].aux[1] & 0xff);

	if (!q)
		return 0;
	end = f->data[i] + f->objs[i].data_len;
	while (q < end) {
		uint32_t len = (uint32_t)(end - q);

		if (type != SOCK_STREAM) {
			memcpy(&len, q, 4);
			q += 4;
		}
		if (len > (uint64_t)(end - q) || send(from, q, len, MSG_DONTWAIT) != (ssize_t)len)
			return ibcr_fail_errno(e, errno, "socket %s: putting back its %u bytes",
					       f->paths[i], len);
		q += len;
	}
	return 0;
}

static long peer_index(const struct ibcr_files *f, uint32_t i)
{
	for (uint32_t k = 0; k < f->nobjs; k++)
		if (k != i && f->objs[k].kind == IBCR_FD_UNIX &&
		    f->objs[k].aux[0] == f->objs[i].aux[2])
			return k;
	return -1;
}

static int unix_pair(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e)
{
	int type = (int)(f->objs[i].aux[1] & 0xff), sv[2];
	long p = peer_index(f, i);

	if (fds[i] >= 0)
		return fds[i];	/* made with its peer, which came first */
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv))
		return ibcr_fail_errno(e, errno, "creating a UNIX socket pair");
	/* options first: the buffer sizes bound what the queues may hold */
	if (sockopt_apply(sv[0], i, f, 0, e) ||
	    (p >= 0 && sockopt_apply(sv[1], (uint32_t)p, f, 0, e)) ||
	    refill(f, i, sv[1], e) || (p >= 0 && refill(f, (uint32_t)p, sv[0], e)) ||
	    sockopt_apply(sv[0], i, f, 1, e) ||
	    (p >= 0 && sockopt_apply(sv[1], (uint32_t)p, f, 1, e)))
		return -1;
	if (p >= 0)
		fds[p] = sv[1];	/* picked up when the loop reaches it */
	else
		close(sv[1]);	/* its peer was gone at checkpoint */
	return sv[0];
}

static int unix_open(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e)
{
	const struct ibcr_fobj *o = &f->objs[i];
	int type = (int)(o->aux[1] & 0xff), role = (int)((o->aux[1] >> 8) & 0xff), s;
	const char *peer;

	if (role == IBCR_SOCK_PAIR)
		return unix_pair(f, i, fds, e);
	s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (s < 0)
		return ibcr_fail_errno(e, errno, "creating a UNIX socket");
	if (sockopt_apply(s, i, f, 0, e))
		goto fail;
	if (f->paths[i][0] && bind_unix(s, f->paths[i], e))
		goto fail;
	if (role == IBCR_SOCK_LISTEN && listen(s, o->aux[3] ? (int)o->aux[3] : 128)) {
		ibcr_fail_errno(e, errno, "listening on %s", f->paths[i]);
		goto fail;
	}
	peer_name(f, i, &peer);
	if (role == IBCR_SOCK_BOUND && peer[0]) {
		struct sockaddr_un a;
		socklen_t len = unix_addr(peer, &a);

		if (connect(s, (struct sockaddr *)&a, len)) {
			ibcr_fail_errno(e, errno, "reconnecting a datagram socket to %s", peer);
			goto fail;
		}
	}
	if (sockopt_apply(s, i, f, 1, e))
		goto fail;
	return s;
fail:
	close(s);
	return -1;
}

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
	int family = (int)(o->aux[1] & 0xff), type = (int)((o->aux[1] >> 8) & 0xff);
	int role = (int)((o->aux[1] >> 16) & 0xff), s;
	struct sockaddr_in6 addr[2];
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(addr[0]);

	if (o->data_len < sizeof(addr) ||
	    (o->data_len != sizeof(addr) && role != IBCR_SOCK_REPAIR && type != SOCK_DGRAM))
		return ibcr_fail(e, "socket object %u is malformed", i);
	memcpy(addr, f->data[i], sizeof(addr));
	s = socket(family, type | SOCK_CLOEXEC, 0);
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
	if (role == IBCR_SOCK_LISTEN && listen(s, o->aux[2] ? (int)o->aux[2] : 128)) {
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
	if (type == SOCK_DGRAM && udp_refill(s, f, i, &addr[0], e)) {
		close(s);
		return -1;
	}
	/* shut down by the program (a connection's own are replayed by tcp.c) */
	if (role != IBCR_SOCK_LISTEN && role != IBCR_SOCK_REPAIR && (o->aux[3] & 3) &&
	    shutdown(s, (int)(o->aux[3] & 3) - 1) && errno != ENOTCONN) {
		ibcr_fail_errno(e, errno, "socket %s: shutdown", f->paths[i]);
		close(s);
		return -1;
	}
	return s;
}

int sock_open(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e)
{
	int s = f->objs[i].kind == IBCR_FD_UNIX ? unix_open(f, i, fds, e) : inet_open(f, i, e);

	if (s >= 0 && fcntl(s, F_SETFL, f->objs[i].flags & STATUS_FLAGS) < 0) {
		close(s);
		return ibcr_fail_errno(e, errno, "socket %s: setting its flags", f->paths[i]);
	}
	return s;
}
