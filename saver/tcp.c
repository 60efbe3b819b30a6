// SPDX-License-Identifier: MIT
/*
 * Established TCP connections, through the kernel's repair mode
 * (TCP_REPAIR, needs CAP_NET_ADMIN): with it a socket gives its sequence
 * numbers, both queues (what was received and not read, what was written
 * and not acknowledged, and of that what was not sent yet), options,
 * window and timestamp, and sends nothing meanwhile.
 *
 * Repair mode is a property of the socket, which the process shares: a
 * process running with it on fails to read (EPERM) or write (EINVAL) and
 * ends its connection. So it is on only while the socket is read, its
 * threads held (hold.c), and left at once (the network lock keeps the
 * peer's packets away until the processes run again, so what was read
 * stays their state). When they are killed (--kill), the saver's copies
 * enter it again once the processes are gone and are closed so, that no
 * FIN or RST tells the peer the connection ended: the restore takes it
 * over where it was.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "buf.h"
#include "guard.h"
#include "saver.h"

/* The kernel's queue numbers (linux/tcp.h), which musl's headers leave out. */
enum { QUEUE_RECV = 1, QUEUE_SEND = 2 };

#ifndef TCP_REPAIR_OFF_NO_WP
#define TCP_REPAIR_OFF_NO_WP -1
#endif

/*
 * The copies in repair mode, to release (a static list: one saver run),
 * with what entering repair mode changed: it forces SO_REUSEADDR on
 * (leaving it, off), which the original gets back as it was.
 */
static struct repaired {
	int fd, reuse;
} *repaired;
static size_t nrepaired;

static int get(int s, int opt, void *v, socklen_t n)
{
	socklen_t l = n;

	return getsockopt(s, IPPROTO_TCP, opt, v, &l);
}

static int queue_seq(int s, int q, uint32_t *seq)
{
	return setsockopt(s, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ||
	       get(s, TCP_QUEUE_SEQ, seq, sizeof(*seq));
}

/* A repair-mode MSG_PEEK reads the queue TCP_REPAIR_QUEUE selects, whole. */
static int peek(int s, int q, uint32_t len, struct buf *b)
{
	uint8_t *p;
	ssize_t k;

	if (!len)
		return 0;
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)))
		return -1;
	p = xmalloc(len);
	k = recv(s, p, len, MSG_PEEK | MSG_DONTWAIT);
	if (k == (ssize_t)len)
		buf_put(b, p, len);
	free(p);
	if (k != (ssize_t)len) {
		errno = k < 0 ? errno : EIO;
		return -1;
	}
	return 0;
}

/*
 * The SYN or FIN a connection sent, and the FIN it received, are taken
 * out of its numbers (image.h): the restore makes it established at
 * these and replays them. A FIN not acknowledged yet counts in the send
 * queue (SIOCOUTQ) and, not sent yet, in the unsent bytes; the receive
 * queue's length leaves a received FIN out already. The receive window
 * keeps its right edge.
 */
static void without_flags(struct ibcr_tcp *t)
{
	int fin_out = t->state == IBCR_TCP_FIN_WAIT1 || t->state == IBCR_TCP_FIN_WAIT2 ||
		      t->state == IBCR_TCP_LAST_ACK || t->state == IBCR_TCP_CLOSING;
	int fin_in = t->state == IBCR_TCP_CLOSE_WAIT || t->state == IBCR_TCP_LAST_ACK ||
		     t->state == IBCR_TCP_CLOSING;

	if (t->state == IBCR_TCP_SYN_SENT) {
		t->snd_seq--;	/* the SYN */
		t->inq = t->outq = t->unsent = 0;
	}
	if (fin_out) {
		t->snd_seq--;
		if (t->state != IBCR_TCP_FIN_WAIT2 && t->outq)
			t->outq--;
		if (t->unsent)
			t->unsent--;
	}
	if (fin_in) {
		t->rcv_seq--;
		t->rcv_wup--;
		t->rcv_wnd++;
	}
}

static int state_of(int s, struct ibcr_tcp *t)
{
	struct tcp_repair_window w;
	struct tcp_info ti;
	int inq = 0, outq = 0, unsent = 0, mss = 0;

	if (ioctl(s, SIOCINQ, &inq) || ioctl(s, SIOCOUTQ, &outq) ||
	    ioctl(s, SIOCOUTQNSD, &unsent) || get(s, TCP_MAXSEG, &mss, sizeof(mss)) ||
	    get(s, TCP_INFO, &ti, sizeof(ti)) || get(s, TCP_REPAIR_WINDOW, &w, sizeof(w)) ||
	    get(s, TCP_TIMESTAMP, &t->timestamp, sizeof(t->timestamp)) ||
	    queue_seq(s, QUEUE_SEND, &t->snd_seq) || queue_seq(s, QUEUE_RECV, &t->rcv_seq))
		return -1;
	t->inq = (uint32_t)inq;
	t->outq = (uint32_t)outq;
	t->unsent = (uint32_t)unsent;
	t->mss = (uint32_t)mss;
	t->opts = ti.tcpi_options;
	t->snd_wscale = ti.tcpi_snd_wscale;
	t->rcv_wscale = ti.tcpi_rcv_wscale;
	t->snd_wl1 = w.snd_wl1;
	t->snd_wnd = w.snd_wnd;
	t->max_window = w.max_window;
	t->rcv_wnd = w.rcv_wnd;
	t->rcv_wup = w.rcv_wup;
	t->state = ti.tcpi_state;
	without_flags(t);
	return 0;
}

int tcp_capture(pid_t pid, int fd, int s, struct buf *b, struct ibcr_err *e)
{
	struct ibcr_tcp t = { 0 };
	int on = TCP_REPAIR_ON, reuse = 0;
	socklen_t rl = sizeof(reuse);

	if (getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &reuse, &rl))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: TCP connection: reading "
				       "SO_REUSEADDR", (int)pid, fd);
	guard_tcp(pid, fd, s, reuse);	/* it turns repair off should we die */
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: TCP connection: repair mode "
				       "(needs CAP_NET_ADMIN; saver --tcp-close gives the "
				       "connection up instead)", (int)pid, fd);
	repaired = xrealloc(repaired, sizeof(*repaired) * (nrepaired + 1));
	repaired[nrepaired++] = (struct repaired){ dup(s), reuse };
	if (repaired[nrepaired - 1].fd < 0 || state_of(s, &t)) {
		ibcr_fail_errno(e, errno, "pid %d fd %d: TCP connection: reading its state",
				(int)pid, fd);
		tcp_leave_repair(s, reuse);	/* at once: the hold ends with this failure */
		return -1;
	}
	buf_put(b, &t, sizeof(t));
	saver_die_at("tcp");
	if (peek(s, QUEUE_RECV, t.inq, b) || peek(s, QUEUE_SEND, t.outq, b)) {
		ibcr_fail_errno(e, errno, "pid %d fd %d: TCP connection: reading its queues "
				"(%u bytes received, %u to send)", (int)pid, fd, t.inq, t.outq);
		tcp_leave_repair(s, reuse);
		return -1;
	}
	if (tcp_leave_repair(s, reuse))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: TCP connection: leaving "
				       "repair mode", (int)pid, fd);
	return 0;
}

/*
 * Out of repair mode, as the original was: without the window probe
 * leaving it sends (nothing changed that the peer must hear of), and
 * with its SO_REUSEADDR back.
 */
int tcp_leave_repair(int fd, int reuse)
{
	int off = TCP_REPAIR_OFF_NO_WP, plain = TCP_REPAIR_OFF;

	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off)) &&
	    setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &plain, sizeof(plain)))
		return -1;
	return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
}

/* In repair mode again, the connection's process gone: closed, it sends nothing. */
int tcp_enter_repair(int fd)
{
	int on = TCP_REPAIR_ON;

	return setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on));
}

void tcp_release(int killed)
{
	for (size_t i = 0; i < nrepaired; i++) {
		if (repaired[i].fd < 0)
			continue;
		/* left already, unless a failure came between */
		if (!killed)
			tcp_leave_repair(repaired[i].fd, repaired[i].reuse);
		else if (tcp_enter_repair(repaired[i].fd))
			fprintf(stderr, "saver: note: a TCP connection of the image could not "
				"enter repair mode again (%s): closing it may reach its peer\n",
				strerror(errno));
		close(repaired[i].fd);
	}
	free(repaired);
	repaired = NULL;
	if (nrepaired)
		guard_tcp_released();
	nrepaired = 0;
}
