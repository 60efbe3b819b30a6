// SPDX-License-Identifier: MIT
/*
 * Established TCP connections taken over with repair mode (TCP_REPAIR,
 * needs CAP_NET_ADMIN): a new socket in repair mode gets the saved
 * sequence numbers, is bound and "connected" without a packet, gets its
 * options, the bytes received and not read, the bytes sent and not
 * acknowledged, its window and timestamp. Repair mode is left only once
 * every socket of the image exists (tcp_finish): leaving it sends a
 * window probe, and a probe to a loopback peer not made yet would be
 * answered with a reset. The bytes never sent are sent then, normally.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loader.h"

#define CHUNK (64u << 10)

/* The kernel's (linux/tcp.h), which musl's netinet/tcp.h leaves out. */
struct repair_opt {
	uint32_t code, val;
};

enum { QUEUE_RECV = 1, QUEUE_SEND = 2 };

#ifndef TCPI_OPT_TIMESTAMPS
#define TCPI_OPT_TIMESTAMPS 1
#define TCPI_OPT_SACK 2
#define TCPI_OPT_WSCALE 4
#endif

static int set(int s, int opt, const void *v, socklen_t n)
{
	return setsockopt(s, IPPROTO_TCP, opt, v, n);
}

static int set_seq(int s, int q, uint32_t seq)
{
	return set(s, TCP_REPAIR_QUEUE, &q, sizeof(q)) || set(s, TCP_QUEUE_SEQ, &seq, sizeof(seq));
}

/* In repair mode, bytes "sent" go straight into the queue selected. */
static int fill_queue(int s, int q, const uint8_t *p, uint32_t len)
{
	if (len && set(s, TCP_REPAIR_QUEUE, &q, sizeof(q)))
		return -1;
	while (len) {
		ssize_t k = send(s, p, len < CHUNK ? len : CHUNK, 0);

		if (k <= 0)
			return -1;
		p += k;
		len -= (uint32_t)k;
	}
	return 0;
}

static int set_options(int s, const struct ibcr_tcp *t)
{
	struct repair_opt o[4];
	int n = 0;

	o[n++] = (struct repair_opt){ TCPOPT_MAXSEG, t->mss };
	if (t->opts & TCPI_OPT_WSCALE)
		o[n++] = (struct repair_opt){ TCPOPT_WINDOW,
						  t->snd_wscale | (uint32_t)t->rcv_wscale << 16 };
	if (t->opts & TCPI_OPT_SACK)
		o[n++] = (struct repair_opt){ TCPOPT_SACK_PERMITTED, 0 };
	if (t->opts & TCPI_OPT_TIMESTAMPS)
		o[n++] = (struct repair_opt){ TCPOPT_TIMESTAMP, 0 };
	return set(s, TCP_REPAIR_OPTIONS, o, (socklen_t)(sizeof(o[0]) * (size_t)n));
}

static int set_window(int s, const struct ibcr_tcp *t)
{
	struct tcp_repair_window w = { t->snd_wl1, t->snd_wnd, t->max_window, t->rcv_wnd,
				       t->rcv_wup };

	return set(s, TCP_REPAIR_WINDOW, &w, sizeof(w));
}

int tcp_repair_on(int s)
{
	int on = TCP_REPAIR_ON;

	return set(s, TCP_REPAIR, &on, sizeof(on));
}

/*
 * Room for what the queues held: the kernel takes no more into a queue
 * than its buffer size, and a restored connection starts with a small
 * one. Raised past the limits (FORCE, CAP_NET_ADMIN as repair mode
 * itself), and put back as saved once the queues are refilled and the
 * unsent bytes handed over (sockopt_buffers).
 */
static int room(int s, int opt, uint32_t bytes)
{
	int v = (int)(bytes < (1u << 29) ? bytes : 1u << 29) + (256 << 10);

	return bytes ? setsockopt(s, SOL_SOCKET, opt, &v, sizeof(v)) : 0;
}

/* The connection's state, on socket s in repair mode, bound, not connected. */
int tcp_restore(int s, const uint8_t *data, uint64_t len, const struct sockaddr *peer,
		socklen_t plen)
{
	struct ibcr_tcp t;
	const uint8_t *inq = data + sizeof(t), *outq;

	if (len < sizeof(t))
		return errno = EINVAL, -1;
	memcpy(&t, data, sizeof(t));
	outq = inq + t.inq;
	if (len != sizeof(t) + (uint64_t)t.inq + t.outq || t.unsent > t.outq)
		return errno = EINVAL, -1;
	/* connecting: its SYN is sent again, by tcp_replay, with the same number */
	if (t.state == IBCR_TCP_SYN_SENT)
		return set_seq(s, QUEUE_SEND, t.snd_seq) ||
		       set(s, TCP_TIMESTAMP, &t.timestamp, sizeof(t.timestamp)) ? -1 : 0;
	if (set_seq(s, QUEUE_SEND, t.snd_seq - t.outq) ||
	    set_seq(s, QUEUE_RECV, t.rcv_seq - t.inq) || connect(s, peer, plen) ||
	    room(s, SO_RCVBUFFORCE, t.inq) || room(s, SO_SNDBUFFORCE, t.outq) ||
	    set_options(s, &t) || set(s, TCP_TIMESTAMP, &t.timestamp, sizeof(t.timestamp)) ||
	    fill_queue(s, QUEUE_RECV, inq, t.inq) ||
	    fill_queue(s, QUEUE_SEND, outq, t.outq - t.unsent) || set_window(s, &t))
		return -1;
	return 0;
}

static int send_unsent(int s, const uint8_t *p, uint32_t len)
{
	while (len) {
		ssize_t k = send(s, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k <= 0)
			return -1;
		p += k;
		len -= (uint32_t)k;
	}
	return 0;
}

int tcp_finish(const struct ibcr_files *f, const int *fds, struct ibcr_err *e)
{
	int off = TCP_REPAIR_OFF;

	for (uint32_t i = 0; i < f->nobjs; i++) {
		const struct ibcr_fobj *o = &f->objs[i];
		struct ibcr_tcp t;
		const uint8_t *d = f->data[i] + 2 * sizeof(struct sockaddr_in6);

		if (o->kind != IBCR_FD_INET || fobj_inet_role(o) != IBCR_SOCK_REPAIR ||
		    fds[i] < 0)
			continue;
		memcpy(&t, d, sizeof(t));
		if (tcp_fin_in_repair(fds[i], &t))
			return ibcr_fail_errno(e, errno, "TCP connection %s: putting back the end "
					       "it had sent", f->paths[i]);
		if (set(fds[i], TCP_REPAIR, &off, sizeof(off)))
			return ibcr_fail_errno(e, errno, "TCP connection %s: leaving repair mode",
					       f->paths[i]);
		if (sockopt_after_repair(fds[i], i, f, e))
			return -1;
		if (send_unsent(fds[i], d + sizeof(t) + t.inq + (t.outq - t.unsent), t.unsent))
			return ibcr_fail_errno(e, errno, "TCP connection %s: sending the %u bytes "
					       "it had not sent yet", f->paths[i], t.unsent);
		if (tcp_fin_after_data(fds[i], &t))
			return ibcr_fail_errno(e, errno, "TCP connection %s: its end, after the "
					       "bytes not sent yet", f->paths[i]);
		if ((t.inq || t.outq) && sockopt_buffers(fds[i], i, f, e))
			return -1;
	}
	return 0;
}

