/* SPDX-License-Identifier: MIT */
/*
 * rc_pp: two processes over one RC connection, every iteration verified.
 *
 *   rc_pp -r server|client -d DIR [-n ITERS] [-s SIZE] [-g GIDX] [-D DEV]
 *         [-w DELAY_US] [-p EVERY] [-e] [-T] [-x] [-W]
 *
 * The two exchange their QPN, PSN, GID and buffer address/rkey through
 * files in DIR (no sockets, so both can be checkpointed). Iteration i:
 *   client SENDs pattern(i,'C')                    server verifies it
 *   server fills its window with pattern(i,'R'), RDMA WRITEs pattern(i,'W')
 *   into the client's window (unsignaled) then SEND_WITH_IMM(i), or, on odd
 *   iterations, one RDMA_WRITE_WITH_IMM(i)         client verifies both
 *   client RDMA READs the server's window          client verifies it
 * -e waits for completions through a completion channel; -x makes the CQ
 * with ibv_create_cq_ex and polls it with ibv_start_poll/ibv_end_poll,
 * checking that every completion's QP number (ibv_wc_read_qp_num) is the
 * one the application knows and a receive's byte count and immediate
 * data are right; -W makes the QP with ibv_create_qp_ex and posts every
 * send with the ibv_wr_* API (ibv_wr_start ... ibv_wr_complete). Progress lines
 * ("iter N ok ...") carry the QPN/rkey the application sees and, with the
 * shim, the real ones; with -T also " t_ns=" and the CLOCK_REALTIME of the
 * iteration's end (make bench: the stall a checkpoint caused, when the
 * pair ran again after a restart).
 */
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include "common.h"

static int use_events;
static int stamps;
static struct ibv_cq_ex *cqx;	/* -x */
static uint32_t my_qpn;
static struct ibv_comp_channel *chan;

static void write_file(const char *dir, const char *name, const char *text)
{
	char tmp[512], dst[512];
	FILE *f;

	snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
	snprintf(dst, sizeof dst, "%s/%s", dir, name);
	f = fopen(tmp, "w");
	CHECK(f, "cannot write %s", tmp);
	fputs(text, f);
	CHECK(!fclose(f), "write %s", tmp);
	CHECK(!rename(tmp, dst), "rename %s", dst);
}

static char *wait_file(const char *dir, const char *name, double tmo)
{
	static char buf[1024];
	char path[512];
	double t0 = now_s();
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	while (!(f = fopen(path, "r"))) {
		if (now_s() - t0 > tmo)
			die("the peer's %s did not appear within %.0f s", path, tmo);
		usleep(10000);
	}
	buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
	fclose(f);
	return buf;
}

static void gid_hex(const union ibv_gid *g, char *out)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g->raw[i]);
}

static void hex_gid(const char *s, union ibv_gid *g)
{
	int i;

	for (i = 0; i < 16; i++) {
		unsigned v;

		CHECK(sscanf(s + 2 * i, "%2x", &v) == 1, "bad gid in peer file");
		g->raw[i] = (uint8_t)v;
	}
}

/* One completion through the extended CQ's polling API (-x). */
static void wait_wc_ex(struct ibv_wc *wc, const char *what)
{
	struct ibv_poll_cq_attr attr = { 0 };
	double t0 = now_s();
	int r;

	while ((r = ibv_start_poll(cqx, &attr)) == ENOENT) {
		if (now_s() - t0 > 60)
			die("%s: no completion within 60 s", what);
		sched_yield();
	}
	CHECK(r == 0, "%s: ibv_start_poll: %s", what, strerror(r));
	memset(wc, 0, sizeof *wc);
	wc->wr_id = cqx->wr_id;
	wc->status = cqx->status;
	wc->opcode = ibv_wc_read_opcode(cqx);
	wc->qp_num = ibv_wc_read_qp_num(cqx);
	wc->wc_flags = ibv_wc_read_wc_flags(cqx);
	if (wc->opcode & IBV_WC_RECV) {
		wc->byte_len = ibv_wc_read_byte_len(cqx);
		if (wc->wc_flags & IBV_WC_WITH_IMM)
			wc->imm_data = ibv_wc_read_imm_data(cqx);
	}
	ibv_end_poll(cqx);
	CHECK(wc->status == IBV_WC_SUCCESS, "%s: completion status %s (%d)", what,
	      ibv_wc_status_str(wc->status), wc->status);
	CHECK(wc->qp_num == my_qpn, "%s: the completion reads QP %#x, not the QP %#x the "
	      "application knows", what, wc->qp_num, my_qpn);
}

/* One completion; with -e waits for an event first when the CQ is empty. */
static void wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	double t0 = now_s();
	int n;

	if (cqx) {
		wait_wc_ex(wc, what);
		return;
	}
	if (!use_events) {
		poll_one(cq, wc, 60, what);
		return;
	}
	for (;;) {
		struct ibv_cq *ecq;
		void *ectx;

		n = ibv_poll_cq(cq, 1, wc);
		CHECK(n >= 0, "%s: poll failed", what);
		if (n == 1)
			break;
		CHECK(!ibv_req_notify_cq(cq, 0), "req_notify_cq failed");
		n = ibv_poll_cq(cq, 1, wc);	/* raced with the arming */
		CHECK(n >= 0, "%s: poll failed", what);
		if (n == 1)
			break;
		CHECK(!ibv_get_cq_event(chan, &ecq, &ectx), "%s: ibv_get_cq_event failed", what);
		CHECK(ecq == cq, "%s: event for another CQ", what);
		ibv_ack_cq_events(ecq, 1);
		if (now_s() - t0 > 60)
			die("%s: no completion within 60 s", what);
	}
	CHECK(wc->status == IBV_WC_SUCCESS, "%s: completion status %s (%d)", what,
	      ibv_wc_status_str(wc->status), wc->status);
}

enum { WR_SEND = 1, WR_RECV, WR_WRITE, WR_READ, WR_IMM };

/*
 * Completions that came before the one waited for (the peer's next SEND
 * may arrive before our last send's acknowledgement): kept in order.
 */
static struct ibv_wc early[8];
static int nearly;

static void wait_id(struct ibv_cq *cq, struct ibv_wc *wc, uint64_t id, const char *what)
{
	int i;

	for (i = 0; i < nearly; i++)
		if (early[i].wr_id == id) {
			*wc = early[i];
			memmove(early + i, early + i + 1, (size_t)(nearly - i - 1) * sizeof *early);
			nearly--;
			return;
		}
	for (;;) {
		wait_wc(cq, wc, what);
		if (wc->wr_id == id)
			return;
		CHECK(nearly < 8, "%s: too many unexpected completions", what);
		early[nearly++] = *wc;
	}
}

static struct ibv_qp_ex *qpx;	/* -W */

/* make_qp's QP, made by ibv_create_qp_ex with the send operations rc_pp posts */
static struct ibv_qp *make_qp_wr(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *q;

	memset(&a, 0, sizeof a);
	a.send_cq = a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = a.cap.max_recv_sge = 2;
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			   IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			   IBV_QP_EX_WITH_RDMA_READ;
	q = ibv_create_qp_ex(ctx, &a);
	CHECK(q, "ibv_create_qp_ex: %s", strerror(errno));
	return q;
}

/* post_send1, through the ibv_wr_* API with -W */
static void psend(struct ibv_qp *q, uint64_t id, enum ibv_wr_opcode op, void *buf, uint32_t len,
		  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm, int signaled)
{
	int r;

	if (!qpx) {
		post_send1(q, id, op, buf, len, lkey, raddr, rkey, imm, signaled);
		return;
	}
	ibv_wr_start(qpx);
	qpx->wr_id = id;
	qpx->wr_flags = signaled ? IBV_SEND_SIGNALED : 0;
	switch (op) {
	case IBV_WR_SEND: ibv_wr_send(qpx); break;
	case IBV_WR_SEND_WITH_IMM: ibv_wr_send_imm(qpx, htobe32(imm)); break;
	case IBV_WR_RDMA_WRITE: ibv_wr_rdma_write(qpx, rkey, raddr); break;
	case IBV_WR_RDMA_WRITE_WITH_IMM: ibv_wr_rdma_write_imm(qpx, rkey, raddr, htobe32(imm)); break;
	case IBV_WR_RDMA_READ: ibv_wr_rdma_read(qpx, rkey, raddr); break;
	default: die("psend: opcode %d", op);
	}
	if (len)
		ibv_wr_set_sge(qpx, lkey, (uintptr_t)buf, len);
	else
		ibv_wr_set_sge_list(qpx, 0, NULL);
	r = ibv_wr_complete(qpx);
	CHECK(!r, "ibv_wr_complete (opcode %d): %s", op, strerror(r));
}

int main(int argc, char **argv)
{
	const char *role = NULL, *dir = NULL, *devname = NULL;
	int iters = 1000, size = 4096, gidx = 1, every = 100, delay = 0, port = 1, opt;
	int server;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mmsg, *mwin, *mrd;
	uint8_t *msg, *win, *rd;
	struct dest me, peer;
	char text[512], gh[40], name[64];
	uint32_t psn, i;
	struct ibv_wc wc;
	double t0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	int use_ex = 0, use_wr = 0;

	while ((opt = getopt(argc, argv, "r:d:n:s:g:D:w:p:eTxW")) != -1) {
		switch (opt) {
		case 'r': role = optarg; break;
		case 'd': dir = optarg; break;
		case 'n': iters = atoi(optarg); break;
		case 's': size = atoi(optarg); break;
		case 'g': gidx = atoi(optarg); break;
		case 'D': devname = optarg; break;
		case 'w': delay = atoi(optarg); break;
		case 'p': every = atoi(optarg); break;
		case 'e': use_events = 1; break;
		case 'T': stamps = 1; break;
		case 'x': use_ex = 1; break;
		case 'W': use_wr = 1; break;
		default:
			fprintf(stderr, "usage: rc_pp -r server|client -d DIR [-n ITERS] [-s SIZE] "
					"[-g GIDX] [-D DEV] [-w DELAY_US] [-p EVERY] [-e] [-T] [-x] [-W]\n");
			return 2;
		}
	}
	CHECK(role && dir, "-r and -d are required");
	server = !strcmp(role, "server");
	prog = server ? "rc_pp server" : "rc_pp client";
	if (every < 1)
		every = 1;

	snprintf(text, sizeof text, "%d\n", (int)getpid());
	write_file(dir, server ? "server.pid" : "client.pid", text);
	ctx = open_first(devname);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "ibv_alloc_pd failed");
	if (use_events) {
		chan = ibv_create_comp_channel(ctx);
		CHECK(chan, "ibv_create_comp_channel failed");
	}
	if (use_ex) {
		struct ibv_cq_init_attr_ex cx = {
			.cqe = 64, .channel = chan,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM,
		};

		cqx = ibv_create_cq_ex(ctx, &cx);
		CHECK(cqx, "ibv_create_cq_ex failed: %s", strerror(errno));
		cq = ibv_cq_ex_to_cq(cqx);
	} else {
		cq = ibv_create_cq(ctx, 64, NULL, chan, 0);
	}
	CHECK(cq, "ibv_create_cq failed");
	if (use_wr) {
		qp = make_qp_wr(ctx, pd, cq);
		qpx = ibv_qp_to_qp_ex(qp);
		CHECK(qpx, "ibv_qp_to_qp_ex: %s", strerror(errno));
	} else {
		qp = make_qp(pd, cq, cq, NULL, IBV_QPT_RC, 16);
	}
	my_qpn = qp->qp_num;
	msg = aligned_alloc(4096, 2 * (size_t)size);
	win = aligned_alloc(4096, (size_t)size);
	rd = aligned_alloc(4096, (size_t)size);
	CHECK(msg && win && rd, "out of memory");
	memset(msg, 0, 2 * (size_t)size);
	memset(win, 0, (size_t)size);
	memset(rd, 0, (size_t)size);
	mmsg = ibv_reg_mr(pd, msg, 2 * (size_t)size, IBV_ACCESS_LOCAL_WRITE);
	mwin = ibv_reg_mr(pd, win, (size_t)size, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	mrd = ibv_reg_mr(pd, rd, (size_t)size, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mmsg && mwin && mrd, "ibv_reg_mr: %s", strerror(errno));

	qp_init(qp, port);
	/* receives first: the peer may send as soon as both are connected */
	for (i = 0; i < 4; i++)
		post_recv1(qp, WR_RECV, msg, (uint32_t)size, mmsg->lkey);

	srand((unsigned)getpid());
	psn = (uint32_t)rand() & 0xffffff;
	my_dest(ctx, qp, port, gidx, psn, &me);
	gid_hex(&me.gid, gh);
	snprintf(text, sizeof text, "%x %x %x %llx %x %s\n", me.qpn, me.psn, me.lid,
		 (unsigned long long)(uintptr_t)win, mwin->rkey, gh);
	write_file(dir, server ? "server.info" : "client.info", text);
	{
		unsigned q, p, l, k;
		unsigned long long a;
		char pg[40];

		CHECK(sscanf(wait_file(dir, server ? "client.info" : "server.info", 60),
			     "%x %x %x %llx %x %39s", &q, &p, &l, &a, &k, pg) == 6,
		      "bad peer info");
		peer.qpn = q;
		peer.psn = p;
		peer.lid = (uint16_t)l;
		peer.addr = a;
		peer.rkey = k;
		hex_gid(pg, &peer.gid);
	}
	qp_connect(qp, port, gidx, psn, &peer);
	write_file(dir, server ? "server.ready" : "client.ready", "ready\n");
	wait_file(dir, server ? "client.ready" : "server.ready", 60);
	printf("%s: connected qpn 0x%x to 0x%x, %d iterations of %d bytes\n", prog, qp->qp_num,
	       peer.qpn, iters, size);

	t0 = now_s();
	for (i = 0; i < (uint32_t)iters; i++) {
		uint8_t *rx = msg, *tx = msg + size;

		if (!server) {
			fill(tx, (size_t)size, i, 'C');
			psend(qp, WR_SEND, IBV_WR_SEND, tx, (uint32_t)size, mmsg->lkey, 0, 0, 0, 1);
			/* the send's completion and the notice of the write, in
			 * whatever order they come */
			{
				int got_send = 0, got_notice = 0;

				while (!got_send || !got_notice) {
					wait_wc(cq, &wc, "client send/notice");
					if (wc.wr_id == WR_SEND && !got_send) {
						got_send = 1;
						continue;
					}
					CHECK(wc.wr_id == WR_RECV && !got_notice,
					      "iteration %u: unexpected completion wr_id %llu", i,
					      (unsigned long long)wc.wr_id);
					got_notice = 1;
					CHECK(wc.wc_flags & IBV_WC_WITH_IMM,
					      "iteration %u: no immediate data", i);
					CHECK(be32toh(wc.imm_data) == i, "iteration %u: immediate %u", i,
					      be32toh(wc.imm_data));
				}
			}
			CHECK(same(win, (size_t)size, i, 'W'), "iteration %u: RDMA WRITE data differs", i);
			post_recv1(qp, WR_RECV, rx, (uint32_t)size, mmsg->lkey);
			psend(qp, WR_READ, IBV_WR_RDMA_READ, rd, (uint32_t)size, mrd->lkey,
				   peer.addr, peer.rkey, 0, 1);
			wait_wc(cq, &wc, "client read");
			CHECK(wc.wr_id == WR_READ && wc.opcode == IBV_WC_RDMA_READ,
			      "iteration %u: expected the read completion", i);
			CHECK(same(rd, (size_t)size, i, 'R'), "iteration %u: RDMA READ data differs", i);
		} else {
			wait_id(cq, &wc, WR_RECV, "server receive");
			CHECK(wc.byte_len == (uint32_t)size, "iteration %u: %u bytes", i, wc.byte_len);
			CHECK(same(rx, (size_t)size, i, 'C'), "iteration %u: SEND data differs", i);
			post_recv1(qp, WR_RECV, rx, (uint32_t)size, mmsg->lkey);
			fill(win, (size_t)size, i, 'R');
			fill(tx, (size_t)size, i, 'W');
			if (i & 1) {
				psend(qp, WR_IMM, IBV_WR_RDMA_WRITE_WITH_IMM, tx, (uint32_t)size,
					   mmsg->lkey, peer.addr, peer.rkey, i, 1);
				wait_id(cq, &wc, WR_IMM, "server write-with-imm");
			} else {
				psend(qp, WR_WRITE, IBV_WR_RDMA_WRITE, tx, (uint32_t)size,
					   mmsg->lkey, peer.addr, peer.rkey, 0, 0);
				psend(qp, WR_IMM, IBV_WR_SEND_WITH_IMM, tx, 0, mmsg->lkey, 0, 0,
					   i, 1);
				wait_id(cq, &wc, WR_IMM, "server send-with-imm");
			}
		}
		if ((i + 1) % (uint32_t)every == 0 || i + 1 == (uint32_t)iters) {
			uint32_t lk, rk;
			void *a;
			size_t l;

			real_mr(mwin, &lk, &rk, &a, &l);
			snprintf(name, sizeof name, "%s", server ? "server" : "client");
			printf("%s iter %u ok qpn 0x%x real 0x%x rkey 0x%x real 0x%x mr %p+%zu real %p+%zu",
			       name, i + 1, qp->qp_num, real_qpn(qp), mwin->rkey, rk, mwin->addr,
			       mwin->length, a, l);
			if (stamps) {
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				printf(" t_ns=%lld", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
			}
			putchar('\n');
		}
		if (delay)
			usleep((useconds_t)delay);
	}
	printf("%s: %d iterations verified in %.2f s\n", prog, iters, now_s() - t0);
	/* let the peer see our last completions before tearing down */
	write_file(dir, server ? "server.done" : "client.done", "done\n");
	wait_file(dir, server ? "client.done" : "server.done", 60);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mmsg);
	ibv_dereg_mr(mwin);
	ibv_dereg_mr(mrd);
	ibv_destroy_cq(cq);
	if (chan)
		ibv_destroy_comp_channel(chan);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
