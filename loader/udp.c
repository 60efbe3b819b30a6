// SPDX-License-Identifier: MIT
/*
 * The datagrams that waited in a UDP socket (struct ibcr_dgram each, in
 * its FILEOBJS data), sent again from their senders, in their order,
 * once every object exists: by the image's socket bound to the sender's
 * address when there is one (no privilege needed), else written from
 * that address on a raw socket (inject.c, as root). Then counted: the
 * loopback delivers them a moment later, and a queue that ends up
 * otherwise (one dropped for lack of room, one from someone else in
 * between) fails the restore rather than leaving the program another
 * queue. The receive buffer is made large enough first (as root) and put
 * back as saved afterwards.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "loader.h"

/* Datagrams now in s, walked with the peek offset (which is put back). */
static int queued(int s, uint64_t *bytes)
{
	int zero = 0, off = -1, n = 0;
	static uint8_t buf[65536];

	*bytes = 0;
	if (setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)))
		return -1;
	for (;;) {
		ssize_t k = recv(s, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC);

		if (k < 0)
			break;
		*bytes += (uint64_t)k;
		n++;
	}
	setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off));
	return n;
}

static uint16_t port(const struct sockaddr_in6 *a)
{
	return a->sin6_port;	/* the same offset in a sockaddr_in */
}

/* Whether a socket bound to `bound` sends from `from`. */
static int sends_as(const struct sockaddr_in6 *bound, const struct sockaddr_in6 *from)
{
	static const uint8_t any4[4];

	if (port(bound) != port(from) || bound->sin6_family != from->sin6_family)
		return 0;
	if (bound->sin6_family == AF_INET) {
		const void *b = &((const struct sockaddr_in *)bound)->sin_addr;

		return !memcmp(b, any4, 4) ||
		       !memcmp(b, &((const struct sockaddr_in *)from)->sin_addr, 4);
	}
	return IN6_IS_ADDR_UNSPECIFIED(&bound->sin6_addr) ||
	       !memcmp(&bound->sin6_addr, &from->sin6_addr, 16);
}

/* The image's UDP socket that sends from `from`, or -1. */
static int sender_of(const struct ibcr_files *f, const int *fds, const struct sockaddr_in6 *from)
{
	for (uint32_t k = 0; k < f->nobjs; k++) {
		struct sockaddr_in6 b;

		if (f->objs[k].kind != IBCR_FD_INET || fobj_inet_type(&f->objs[k]) != SOCK_DGRAM ||
		    fds[k] < 0 || f->objs[k].data_len < sizeof(b))
			continue;
		memcpy(&b, f->data[k], sizeof(b));
		if (sends_as(&b, from))
			return fds[k];
	}
	return -1;
}

static int send_from(const struct ibcr_files *f, const int *fds, const struct sockaddr_in6 *local,
		     const struct sockaddr_in6 *from, const uint8_t *p, uint32_t len)
{
	int s = sender_of(f, fds, from);
	struct sockaddr_in6 to = *local;
	socklen_t tl = to.sin6_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(to);

	if (s < 0)
		return udp_send_again(local, from, p, len);
	/* bound to any address: the datagram comes to the loopback one */
	if (to.sin6_family == AF_INET &&
	    ((struct sockaddr_in *)&to)->sin_addr.s_addr == htonl(INADDR_ANY))
		((struct sockaddr_in *)&to)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (to.sin6_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&to.sin6_addr))
		to.sin6_addr = in6addr_loopback;
	return sendto(s, p, len, MSG_DONTWAIT, (struct sockaddr *)&to, tl) == (ssize_t)len ? 0 : -1;
}

/* Walks the saved datagrams: sends each (fds) or only counts them. */
static int walk(const struct ibcr_files *f, uint32_t i, const struct sockaddr_in6 *local,
		const int *fds, uint32_t *n, uint64_t *bytes, struct ibcr_err *e)
{
	const uint8_t *p = f->data[i] + 2 * sizeof(struct sockaddr_in6),
		      *end = f->data[i] + f->objs[i].data_len;

	*n = 0;
	*bytes = 0;
	while (p < end) {
		struct ibcr_dgram h;
		struct sockaddr_in6 from;

		if ((size_t)(end - p) < sizeof(h))
			return ibcr_fail(e, "socket %s: its datagrams are malformed", f->paths[i]);
		memcpy(&h, p, sizeof(h));
		p += sizeof(h);
		if (h.len > (size_t)(end - p))
			return ibcr_fail(e, "socket %s: its datagrams are malformed", f->paths[i]);
		memcpy(&from, h.from, sizeof(from));
		if (fds && send_from(f, fds, local, &from, p, h.len))
			return ibcr_fail_errno(e, errno, "socket %s: handing in again datagram %u "
					       "(%u bytes)", f->paths[i], *n, h.len);
		p += h.len + (8 - h.len % 8) % 8;
		*bytes += h.len;
		(*n)++;
	}
	return 0;
}

static int refill(int s, const struct ibcr_files *f, uint32_t i, const int *fds,
		  struct ibcr_err *e)
{
	struct sockaddr_in6 local;
	uint32_t n;
	uint64_t bytes, got = 0;
	int room, have = -1;
	struct timespec ms = { 0, 1000000 };

	memcpy(&local, f->data[i], sizeof(local));
	if (walk(f, i, &local, NULL, &n, &bytes, e))
		return -1;
	if (!n)
		return 0;
	/* each datagram takes its bytes and about a kilobyte of the buffer */
	room = (int)(bytes + 1024ull * n < (1u << 29) ? bytes + 1024ull * n : 1u << 29);
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &room, sizeof(room)) && errno != EPERM)
		return ibcr_fail_errno(e, errno, "socket %s: room for its %u datagrams",
				       f->paths[i], n);
	if (walk(f, i, &local, fds, &n, &bytes, e))
		return -1;
	for (int k = 0; k < 2000 && (have = queued(s, &got)) < (int)n; k++)
		nanosleep(&ms, NULL);
	if (have != (int)n || got != bytes)
		return ibcr_fail(e, "socket %s: %d datagram(s) of %llu bytes arrived again, %u "
				 "of %llu waited in it", f->paths[i], have,
				 (unsigned long long)got, n, (unsigned long long)bytes);
	/* the count moved the peek offset: the saved one again */
	return sockopt_buffers(s, i, f, e) || sockopt_apply(s, i, f, 1, e) ? -1 : 0;
}

int udp_refill(const struct ibcr_files *f, const int *fds, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < f->nobjs; i++) {
		const struct ibcr_fobj *o = &f->objs[i];

		if (o->kind == IBCR_FD_INET && fobj_inet_type(o) == SOCK_DGRAM &&
		    fds[i] >= 0 && o->data_len > 2 * sizeof(struct sockaddr_in6) &&
		    refill(fds[i], f, i, fds, e))
			return -1;
	}
	return 0;
}
