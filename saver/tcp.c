// SPDX-License-Identifier: MIT
/*
 * Established TCP connections, through the kernel's repair mode
 * (TCP_REPAIR, needs CAP_NET_ADMIN): with it a socket gives its sequence
 * numbers, both queues (what was received and not read, what was written
 * and not acknowledged, and of that what was not sent yet), options,
 * window and timestamp, and sends nothing meanwhile.
 *
 * Repair mode is a property of the socket, which the process shares: it
 * stays on until the saver lets the processes go (tcp_release). When
 * they are killed (--kill), the saver's copies are closed in repair mode
 * after them, so that no FIN or RST tells the peer the connection ended:
 * the restore takes it over where it was.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

/* The copies in repair mode, to release (a static list: one saver run). */
static int *repaired;
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
	return 0;
}

int tcp_capture(pid_t pid, int fd, int s, struct buf *b, struct ibcr_err *e)
{
	struct ibcr_tcp t = { 0 };
	int on = TCP_REPAIR_ON;

	guard_tcp(pid, fd, s);	/* it turns repair off should we die */
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: established TCP connection: "
				       "repair mode (needs CAP_NET_ADMIN; saver --tcp-close "
				       "gives the connection up instead)", (int)pid, fd);
	repaired = xrealloc(repaired, sizeof(int) * (nrepaired + 1));
	repaired[nrepaired++] = dup(s);
	if (repaired[nrepaired - 1] < 0 || state_of(s, &t))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: established TCP connection: "
				       "reading its state", (int)pid, fd);
	buf_put(b, &t, sizeof(t));
	if (peek(s, QUEUE_RECV, t.inq, b) || peek(s, QUEUE_SEND, t.outq, b))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: established TCP connection: "
				       "reading its queues (%u bytes received, %u to send)",
				       (int)pid, fd, t.inq, t.outq);
	return 0;
}

void tcp_release(int killed)
{
	int off = TCP_REPAIR_OFF;

	for (size_t i = 0; i < nrepaired; i++) {
		if (repaired[i] < 0)
			continue;
		/* a process that runs on sends again (and a window probe) */
		if (!killed)
			setsockopt(repaired[i], IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off));
		close(repaired[i]);
	}
	free(repaired);
	repaired = NULL;
	if (nrepaired)
		guard_tcp_released();
	nrepaired = 0;
}
