// SPDX-License-Identifier: MIT
/*
 * Sockets, once every process is known (files.c marks them IBCR_FD_UNIX
 * with only their inode; here they get their final kind and state).
 * sock_diag tells each one's family, type, state, names, queue lengths
 * and shut down directions; a duplicate of the descriptor (pidfd_getfd)
 * lets the saver read the options (sockopt.c) and peek at what waits,
 * which the process still gets. UNIX sockets: unix.c; netlink: netlink.c.
 *
 * Here: the network lock over the TCP connections (netlock.c), taken
 * before the first is read; TCP listeners (refused with connections not
 * accepted yet), connections in any state repair mode can rebuild
 * (tcp.c), or given up (--tcp-close: restored as unconnected sockets);
 * UDP sockets with their datagrams and senders; raw and ICMP sockets
 * (refused with packets waiting); sockets never bound. A socket leading
 * outside the image is a std stream on fds 0-2, and refused elsewhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "saver.h"
#include "sockdiag.h"
#include "fdkinds.h"
#include "sockets.h"

#define TCP_ESTABLISHED_STATE 1
#define TCP_CLOSE_STATE 7
#define TCP_LISTEN_STATE 10

const struct sockdiag *sock_find(const struct socks *s, uint64_t ino)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->d[i].ino == ino)
			return &s->d[i];
	return NULL;
}

static int dump_all(struct socks *s, struct ibcr_err *e)
{
	static const int fam[][2] = { { AF_UNIX, 0 }, { AF_INET, IPPROTO_TCP },
				      { AF_INET6, IPPROTO_TCP }, { AF_INET, IPPROTO_UDP },
				      { AF_INET6, IPPROTO_UDP } };

	for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		struct sockdiag *d;
		size_t n;

		if (sockdiag_dump(fam[k][0], fam[k][1], &d, &n, e))
			return -1;
		s->d = xrealloc(s->d, sizeof(*s->d) * (s->n + n + 1));
		memcpy(s->d + s->n, d, sizeof(*d) * n);
		s->n += n;
		free(d);
	}
	return 0;
}

long sock_object(const struct fobjs *o, uint64_t ino)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++)
		if ((o->f.objs[i].kind == IBCR_FD_UNIX || o->f.objs[i].kind == IBCR_FD_INET) &&
		    fobj_sock_ino(&o->f.objs[i]) == ino)
			return i;
	return -1;
}

static void put(struct buf *b, const void *p, size_t n)
{
	buf_put(b, p, n);
}

/*
 * The datagrams waiting in a UDP socket, without taking them: MSG_PEEK,
 * with the socket's peek offset walking through them, put back as it was
 * afterwards; each with its sender (struct ibcr_dgram).
 */
static int peek_queue(int s, const struct sockdiag *d, struct buf *b, struct ibcr_err *e)
{
	int old = -1, start = -1;
	socklen_t ol = sizeof(old);
	static uint8_t msg[1 << 16];

	if (!d->rq)
		return 0;
	/*
	 * The first without a peek offset: a walk from offset 0 passes over
	 * an empty datagram peeked at before (a kernel rule), which an
	 * offset-less peek returns; peeking marks it, so the walk from its
	 * end then starts past it.
	 */
	getsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &old, &ol);
	if (setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &start, sizeof(start)))
		return ibcr_fail_errno(e, errno, "socket %llu: SO_PEEK_OFF",
				       (unsigned long long)d->ino);
	for (uint32_t m = 0; m < 1u << 24; m++) {
		struct ibcr_dgram h = { 0 };
		struct iovec v = { msg, sizeof(msg) };
		struct msghdr mh = { .msg_name = h.from, .msg_namelen = sizeof(h.from),
				     .msg_iov = &v, .msg_iovlen = 1 };
		ssize_t k = recvmsg(s, &mh, MSG_PEEK | MSG_DONTWAIT);

		if (k < 0)
			break;
		h.len = (uint32_t)k;
		put(b, &h, sizeof(h));
		put(b, msg, h.len);
		if (h.len % 8)
			put(b, (const uint8_t[8]){ 0 }, 8 - h.len % 8);
		if (m == 0 && setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &h.len, sizeof(h.len)))
			return ibcr_fail_errno(e, errno, "socket %llu: SO_PEEK_OFF",
					       (unsigned long long)d->ino);
	}
	setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &old, sizeof(old));
	return 0;
}

/* The states repair mode lets a restore rebuild (image.h, ibcr_tcp_state). */
static int repairable(int state)
{
	return state == IBCR_TCP_ESTABLISHED || state == IBCR_TCP_SYN_SENT ||
	       state == IBCR_TCP_FIN_WAIT1 || state == IBCR_TCP_FIN_WAIT2 ||
	       state == IBCR_TCP_CLOSE_WAIT || state == IBCR_TCP_LAST_ACK ||
	       state == IBCR_TCP_CLOSING;
}

static const char *state_words(int state)
{
	switch (state) {
	case 3: return "being opened by its peer (SYN-RECV, a TCP Fast Open connection "
		       "accepted before the handshake ended)";
	case 6: return "closed and waiting for its last packets (TIME-WAIT)";
	case 12: return "being accepted (NEW-SYN-RECV)";
	}
	return "in a state unknown to ibcr";
}

/* What a TCP or UDP socket becomes; -1 (refused) or the role. */
static int inet_role(const struct fobjs *o, uint32_t i, const struct sockdiag *d,
		     struct ibcr_err *e)
{
	int bound = ((const struct sockaddr_in *)&d->local)->sin_port != 0;

	if (d->proto == IPPROTO_TCP && d->state == TCP_LISTEN_STATE)
		return IBCR_SOCK_LISTEN;
	if (d->proto == IPPROTO_TCP && d->state != TCP_CLOSE_STATE && o->tcp_close)
		return IBCR_SOCK_CLOSED;
	if (d->proto == IPPROTO_TCP && repairable(d->state))
		return IBCR_SOCK_REPAIR;
	if (d->proto == IPPROTO_TCP && d->state != TCP_CLOSE_STATE)
		return ibcr_fail(e, "pid %d fd %d: TCP connection %s cannot be restored; saver "
				 "--tcp-close gives it up", (int)o->rep_pid[i], o->rep_fd[i],
				 state_words(d->state));
	return bound ? IBCR_SOCK_BOUND : IBCR_SOCK_FRESH;
}

static uint16_t port_of(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port :
					 ((const struct sockaddr_in6 *)a)->sin6_port;
}

/*
 * Connections a listener has not accepted yet cannot be put back in its
 * queue (only an accept takes one out, and only a handshake puts one in):
 * they would be reset after the restore. Half-open ones (the client's
 * last ACK not in yet) likewise. Refused; they last a moment.
 */
static int check_backlog(const struct fobjs *o, uint32_t i, const struct socks *s,
			 const struct sockdiag *d, struct ibcr_err *e)
{
	uint32_t half = 0;

	for (size_t k = 0; s->d && k < s->n; k++)
		if (s->d[k].proto == IPPROTO_TCP && (s->d[k].state == 3 || s->d[k].state == 12) &&
		    s->d[k].family == d->family && port_of(&s->d[k].local) == port_of(&d->local))
			half++;
	if (!d->rq && !half)
		return 0;
	return ibcr_fail(e, "pid %d fd %d: TCP listener on port %u has %u connection(s) not "
			 "accepted yet and %u being opened, which a restore cannot give back "
			 "to it (they would be reset): try again", (int)o->rep_pid[i],
			 o->rep_fd[i], ntohs(port_of(&d->local)), d->rq, half);
}

static int inet_socket(struct fobjs *o, uint32_t i, const struct socks *s,
		       const struct sockdiag *d, struct ibcr_err *e)
{
	struct ibcr_fobj *ob = &o->f.objs[i];
	struct sockaddr_in6 addr[2];
	struct buf b = { 0 };
	char who[64];
	int fd, rc = 0, role = inet_role(o, i, d, e);

	if (role < 0 || (role == IBCR_SOCK_LISTEN && check_backlog(o, i, s, d, e)))
		return -1;
	if ((fd = grab_fd(o->rep_pid[i], o->rep_fd[i], e)) < 0)
		return -1;
	snprintf(who, sizeof(who), "pid %d fd %d", (int)o->rep_pid[i], o->rep_fd[i]);
	/* d->wq: a listener's backlog */
	fobj_inet_set(ob, (uint64_t)d->family, (uint64_t)d->type, (uint64_t)role, d->wq,
		      d->shutdown);
	if (d->type == SOCK_RAW || (d->proto != IPPROTO_TCP && d->proto != IPPROTO_UDP)) {
		char one;

		fobj_inet_set_proto(ob, (uint64_t)d->proto);
		if (recv(fd, &one, 1, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC) >= 0) {
			close(fd);
			return ibcr_fail(e, "%s: %s socket (protocol %d) with packets waiting, "
					 "which a restore could not hand to it alone: try again",
					 who, d->type == SOCK_RAW ? "raw" : "ICMP", d->proto);
		}
	}
	if (role == IBCR_SOCK_CLOSED)
		o->given_up++;
	/* before repair mode, which changes SO_REUSEADDR */
	if (sockopt_capture(fd, i, d->family, d->type, d->proto,
			    d->state != TCP_CLOSE_STATE && d->state != TCP_LISTEN_STATE &&
			    d->proto == IPPROTO_TCP, who, &o->sockopts, e)) {
		close(fd);
		return -1;
	}
	memset(addr, 0, sizeof(addr));
	memcpy(&addr[0], &d->local, sizeof(addr[0]));
	memcpy(&addr[1], &d->remote, sizeof(addr[1]));
	buf_put(&b, addr, sizeof(addr));
	if (role == IBCR_SOCK_REPAIR && tcp_capture(o->rep_pid[i], o->rep_fd[i], fd, &b, e))
		rc = -1;
	if (!rc && d->proto == IPPROTO_UDP)
		rc = peek_queue(fd, d, &b, e);
	close(fd);
	o->f.data[i] = b.p;
	ob->data_len = b.len;
	return rc;
}

/*
 * The network lock, before any connection is captured: every connection
 * taken over in repair mode and, when they are killed, the listeners.
 */
static int lock_network(struct fobjs *o, const struct socks *s, struct ibcr_err *e)
{
	if (o->tcp_close)
		return 0;	/* given up: nothing to hold for a restore */
	for (uint32_t i = 0; i < o->f.nobjs; i++) {
		const struct ibcr_fobj *ob = &o->f.objs[i];
		const struct sockdiag *d;
		struct ibcr_err ignored;
		int role;

		if (ob->kind != IBCR_FD_UNIX || fobj_sock_settled(ob) ||
		    !(d = sock_find(s, fobj_sock_ino(ob))) ||
		    d->family == AF_UNIX || d->proto != IPPROTO_TCP)
			continue;
		role = inet_role(o, i, d, &ignored);	/* refused later, with the reason */
		if (role == IBCR_SOCK_REPAIR)
			netlock_conn(&d->local, &d->remote);
		else if (role == IBCR_SOCK_LISTEN)
			netlock_listener(&d->local);
	}
	return netlock_take(o->image ? o->image : "?", o->kill, e);
}

/*
 * A socket sock_diag does not list here: TCP and UDP sockets not bound
 * yet (in none of the kernel's tables), raw and ICMP ("ping") sockets,
 * netlink and packet ones. Its copy tells what it is; *domain says which
 * of the last two it is when NULL is returned.
 */
static const struct sockdiag *unlisted(const struct fobjs *o, uint32_t i, struct sockdiag *d,
				       int *domain)
{
	int v[3] = { 0, 0, 0 }, opt[3] = { SO_DOMAIN, SO_TYPE, SO_PROTOCOL };
	struct ibcr_err ignored;
	int fd = grab_fd(o->rep_pid[i], o->rep_fd[i], &ignored);
	socklen_t ll = sizeof(d->local), rl = sizeof(d->remote);

	*domain = -1;
	if (fd < 0)
		return NULL;
	for (int k = 0; k < 3; k++) {
		socklen_t l = sizeof(v[k]);

		if (getsockopt(fd, SOL_SOCKET, opt[k], &v[k], &l))
			v[0] = -1;
	}
	memset(d, 0, sizeof(*d));
	d->local.ss_family = d->remote.ss_family = (sa_family_t)v[0];
	if (v[0] == AF_INET || v[0] == AF_INET6) {
		getsockname(fd, (struct sockaddr *)&d->local, &ll);
		if (getpeername(fd, (struct sockaddr *)&d->remote, &rl))
			memset(&d->remote, 0, sizeof(d->remote));
		d->remote.ss_family = (sa_family_t)v[0];
		/* a raw socket's "port" is its protocol, which binds nothing */
		if (v[1] == SOCK_RAW)
			((struct sockaddr_in *)&d->local)->sin_port = 0;
	}
	close(fd);
	*domain = v[0];
	if (v[0] != AF_INET && v[0] != AF_INET6)
		return NULL;
	d->ino = fobj_sock_ino(&o->f.objs[i]);
	d->family = v[0];
	d->type = v[1];
	d->proto = v[2];
	d->state = TCP_CLOSE_STATE;
	return d;
}

int sockets_finish(struct fobjs *o, struct ibcr_err *e)
{
	struct socks s = { NULL, 0 };
	struct sockdiag fresh;
	int rc = 0, domain;

	for (uint32_t i = 0; i < o->f.nobjs && !s.d; i++)
		if (o->f.objs[i].kind == IBCR_FD_UNIX && dump_all(&s, e))
			return -1;
	if (s.d && lock_network(o, &s, e)) {
		sockdiag_free(s.d, s.n);
		return -1;
	}
	for (uint32_t i = 0; i < o->f.nobjs && !rc; i++) {
		struct ibcr_fobj *ob = &o->f.objs[i];
		const struct sockdiag *d;

		if (ob->kind != IBCR_FD_UNIX || fobj_sock_settled(ob))
			continue;
		d = sock_find(&s, fobj_sock_ino(ob));
		if (!d && !(d = unlisted(o, i, &fresh, &domain)) && domain == AF_NETLINK) {
			rc = netlink_socket(o, i, e);
			continue;
		}
		if (!d && domain == AF_PACKET) {
			rc = ibcr_fail(e, "pid %d fd %d: packet socket (AF_PACKET): not "
				       "supported", (int)o->rep_pid[i], o->rep_fd[i]);
			continue;
		}
		if (!d) {
			ob->kind = IBCR_FD_STDIO;	/* leads outside? see below */
			fobj_sock_set_settled(ob);
			continue;
		}
		if (d->family == AF_UNIX)
			rc = unix_socket(o, i, &s, d, e);
		else {
			ob->kind = IBCR_FD_INET;
			rc = inet_socket(o, i, &s, d, e);
		}
		if (rc > 0) {	/* leads outside: a std stream, if only on 0-2 */
			ob->kind = IBCR_FD_STDIO;
			rc = 0;
		}
	}
	sockdiag_free(s.d, s.n);
	return rc;
}
