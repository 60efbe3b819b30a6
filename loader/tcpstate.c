// SPDX-License-Identifier: MIT
/*
 * A restored TCP connection brought from established (which is what
 * repair mode makes) to the state it was saved in, before the network
 * lock goes, so that a failure leaves its peer waiting for another try:
 *
 *   SYN-SENT     made unconnected at the saved sequence number, it
 *                connects again: the same SYN (the lock drops it; it is
 *                sent again a second later, once the lock is gone)
 *   a FIN sent   shutdown(SHUT_WR): in repair mode with the send queue
 *                chosen when the FIN had left (it counts as sent and is
 *                sent again when due), normally after the bytes not sent
 *                yet when it had not
 *   acknowledged (FIN-WAIT-2) the peer's ACK handed in again (inject.c)
 *   a FIN received  the peer's FIN handed in again (inject.c)
 *
 * in the order they happened (LAST-ACK: received, then sent; CLOSING:
 * sent, then received).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "loader.h"

#ifndef TCP_REPAIR_OFF_NO_WP
#define TCP_REPAIR_OFF_NO_WP -1
#endif

enum { QUEUE_SEND = 2 };

static int fin_out(int state)
{
	return state == IBCR_TCP_FIN_WAIT1 || state == IBCR_TCP_FIN_WAIT2 ||
	       state == IBCR_TCP_CLOSING || state == IBCR_TCP_LAST_ACK;
}

/* Its FIN, as sent: in repair mode, with the send queue chosen. */
static int fin_sent(int s)
{
	int q = QUEUE_SEND;

	return setsockopt(s, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ||
	       shutdown(s, SHUT_WR) ? -1 : 0;
}

int tcp_fin_in_repair(int s, const struct ibcr_tcp *t)
{
	/* LAST-ACK's comes after the peer's, in tcp_replay */
	if (!fin_out(t->state) || t->state == IBCR_TCP_LAST_ACK || t->unsent)
		return 0;
	return fin_sent(s);
}

int tcp_fin_after_data(int s, const struct ibcr_tcp *t)
{
	if (!fin_out(t->state) || t->state == IBCR_TCP_LAST_ACK || !t->unsent)
		return 0;
	return shutdown(s, SHUT_WR);
}

static int tcp_state(int s)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	return getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &l) ? -1 : ti.tcpi_state;
}

/*
 * The peer's FIN again, or its ACK of the FIN sent again (inject.c),
 * taken once the socket's state moves on. A FIN may have come in already,
 * with both ends in the image, from the other end's own replay: then
 * there is nothing to hand in.
 */
static int from_peer(int s, const struct sockaddr_in6 addr[2], const struct ibcr_tcp *t,
		     int fin)
{
	int before = tcp_state(s);
	struct timespec ms = { 0, 1000000 };
	uint32_t ack = t->snd_seq - t->outq + (fin ? 0 : 1);

	if (fin ? before != IBCR_TCP_ESTABLISHED && before != IBCR_TCP_FIN_WAIT1 :
		  before != IBCR_TCP_FIN_WAIT1)
		return 0;
	if (tcp_send_fin(&addr[0], &addr[1], t->rcv_seq, ack,
			 (uint16_t)(t->snd_wnd >> t->snd_wscale), fin))
		return -1;
	for (int k = 0; k < 2000; k++) {	/* the loopback delivers it at once, nearly */
		if (tcp_state(s) != before)
			return 0;
		nanosleep(&ms, NULL);
	}
	return errno = ETIMEDOUT, -1;
}

/* Connecting again, without blocking: the program's own connect() waits on. */
static int syn_again(int s, const struct sockaddr_in6 *peer)
{
	int fl = fcntl(s, F_GETFL);
	socklen_t len = peer->sin6_family == AF_INET ? sizeof(struct sockaddr_in) :
						       sizeof(*peer);

	if (fl < 0 || fcntl(s, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	if (connect(s, (const struct sockaddr *)peer, len) && errno != EINPROGRESS)
		return -1;
	return fcntl(s, F_SETFL, fl) < 0 ? -1 : 0;
}

/* LAST-ACK: the peer's FIN, then its own (as sent, if it had been). */
static int last_ack(int s, const struct sockaddr_in6 addr[2], const struct ibcr_tcp *t)
{
	int on = TCP_REPAIR_ON, off = TCP_REPAIR_OFF_NO_WP;

	if (from_peer(s, addr, t, 1))
		return -1;
	if (t->unsent)
		return shutdown(s, SHUT_WR);
	return setsockopt(s, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)) || fin_sent(s) ||
	       setsockopt(s, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off)) ? -1 : 0;
}

static int replay(int s, const struct sockaddr_in6 addr[2], const struct ibcr_tcp *t)
{
	switch (t->state) {
	case IBCR_TCP_SYN_SENT:
		return syn_again(s, &addr[1]);
	case IBCR_TCP_FIN_WAIT2:
		/*
		 * Its FIN had been acknowledged: the ACK is handed in again
		 * where the network lets it through; else the state is
		 * FIN-WAIT-1 until the peer acknowledges the FIN sent again.
		 */
		from_peer(s, addr, t, 0);
		return 0;
	case IBCR_TCP_CLOSE_WAIT:
	case IBCR_TCP_CLOSING:
		return from_peer(s, addr, t, 1);
	case IBCR_TCP_LAST_ACK:
		return last_ack(s, addr, t);
	}
	return 0;
}

int tcp_replay(const struct ibcr_files *f, const int *fds, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < f->nobjs; i++) {
		const struct ibcr_fobj *o = &f->objs[i];
		struct sockaddr_in6 addr[2];
		struct ibcr_tcp t;

		if (o->kind != IBCR_FD_INET || fobj_inet_role(o) != IBCR_SOCK_REPAIR ||
		    fds[i] < 0)
			continue;
		memcpy(addr, f->data[i], sizeof(addr));
		memcpy(&t, f->data[i] + sizeof(addr), sizeof(t));
		if (replay(fds[i], addr, &t) ||
		    (t.state == IBCR_TCP_LAST_ACK && sockopt_after_repair(fds[i], i, f, e)))
			return ibcr_fail_errno(e, errno, "TCP connection %s: putting back its %s",
					       f->paths[i], t.state == IBCR_TCP_SYN_SENT ?
					       "connect" : "closing");
		/* a side the program shut down itself, without a FIN */
		if ((fobj_inet_shut(o) & IBCR_SHUT_RD) && t.state != IBCR_TCP_CLOSE_WAIT &&
		    t.state != IBCR_TCP_LAST_ACK && t.state != IBCR_TCP_CLOSING &&
		    shutdown(fds[i], SHUT_RD))
			return ibcr_fail_errno(e, errno, "TCP connection %s: shutdown",
					       f->paths[i]);
	}
	return 0;
}
