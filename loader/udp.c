// SPDX-License-Identifier: MIT
/*
 * The datagrams that waited in a UDP socket (struct ibcr_dgram each, in
 * its FILEOBJS data), handed in again from their senders (inject.c), in
 * their order, then counted: the loopback delivers them a moment later,
 * and a queue that ends up otherwise (one dropped for lack of room, one
 * from someone else in between) fails the restore rather than leaving the
 * program another queue. The receive buffer is made large enough first
 * and put back as saved afterwards.
 */
#include <errno.h>
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

/* Walks the saved datagrams: sends each (send) or only counts them. */
static int walk(const struct ibcr_files *f, uint32_t i, const struct sockaddr_in6 *local, int send,
		 uint32_t *n, uint64_t *bytes, struct ibcr_err *e)
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
		if (send && udp_send_again(local, &from, p, h.len))
			return ibcr_fail_errno(e, errno, "socket %s: handing in again datagram %u "
					       "(%u bytes)", f->paths[i], *n, h.len);
		p += h.len + (8 - h.len % 8) % 8;
		*bytes += h.len;
		(*n)++;
	}
	return 0;
}

int udp_refill(int s, const struct ibcr_files *f, uint32_t i, const struct sockaddr_in6 *local,
	       struct ibcr_err *e)
{
	uint32_t n;
	uint64_t bytes, got = 0;
	int room, have = -1;
	struct timespec ms = { 0, 1000000 };

	if (walk(f, i, local, 0, &n, &bytes, e))
		return -1;
	if (!n)
		return 0;
	/* each datagram takes its bytes and about a kilobyte of the buffer */
	room = (int)(bytes + 1024ull * n < (1u << 29) ? bytes + 1024ull * n : 1u << 29);
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &room, sizeof(room)) ||
	    walk(f, i, local, 1, &n, &bytes, e))
		return ibcr_fail_errno(e, errno, "socket %s: room for its %u datagrams",
				       f->paths[i], n);
	for (int k = 0; k < 2000 && (have = queued(s, &got)) < (int)n; k++)
		nanosleep(&ms, NULL);
	if (have != (int)n || got != bytes)
		return ibcr_fail(e, "socket %s: %d datagram(s) of %llu bytes arrived again, %u "
				 "of %llu waited in it", f->paths[i], have,
				 (unsigned long long)got, n, (unsigned long long)bytes);
	return sockopt_buffers(s, i, f, e);
}
