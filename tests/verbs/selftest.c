/* SPDX-License-Identifier: MIT */
/*
 * selftest: the shim's checkpoint/rebuild cycle inside one process, without
 * saver or restart-loader. Run under ibcr-launch:
 *
 *   selftest -d RENDEZVOUS_DIR [-g GIDX] [-c CYCLES] [-n ITERS]
 *
 * One process holds an RC pair A->B (B on its own receive queue), an RC
 * pair C->D (D on an SRQ), a UD pair U1->U2, a completion channel on B's CQ.
 * Each cycle: traffic with every iteration verified; then receives posted,
 * sends posted and not polled, B's CQ armed; the test drives the control
 * object (QUIESCE_SENDS, QUIESCE_DRAIN), opens a second real context with
 * extra QPs and MRs (so the rebuilt objects get other numbers), calls
 * ibcr_verbs_test_teardown() (every real object destroyed, stand-ins at the
 * recorded fds, as the restart-loader leaves them) and sets cmd = RESTART.
 * It then checks that real QPNs and keys changed while the application's
 * stayed, that MRs are at the same address and length, that the drained
 * completions come first and in order, that receives posted before were
 * re-posted, that the drained completion event is delivered, and that
 * SEND, RDMA WRITE, RDMA READ, SRQ and UD traffic flows with data verified.
 * A last cycle ends with RELEASE instead (checkpoint, process runs on).
 */
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include "common.h"
#include "verbs_abi.h"

#define SLOT 256
#define NSLOT 16
#define UD_QKEY 0x11111111u

static struct ibcr_verbs_control *ctl;
static int (*teardown)(void);
static int checks;

#define PASS(...)                            \
	do {                                 \
		printf("  ok: " __VA_ARGS__); \
		printf("\n");                \
		checks++;                    \
	} while (0)

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq *cqa, *cqb, *cqc, *cqu;
	struct ibv_qp *a, *b, *c, *d, *u1, *u2;
	struct ibv_srq *srq;
	struct ibv_ah *ah;
	struct ibv_mr *ma, *mb, *mc;
	uint8_t *bufa, *bufb, *bufc;
	int port, gidx;
	union ibv_gid gid;
	uint16_t lid;
};

static void to_state(struct ibv_qp *q, int st, int mask, struct ibv_qp_attr *a)
{
	int r;

	a->qp_state = (enum ibv_qp_state)st;
	r = ibv_modify_qp(q, a, mask | IBV_QP_STATE);
	CHECK(!r, "modify QP 0x%x to %d: %s", q->qp_num, st, strerror(r));
}

static void connect_pair(struct side *s, struct ibv_qp *x, struct ibv_qp *y)
{
	struct dest dx, dy;

	qp_init(x, s->port);
	qp_init(y, s->port);
	my_dest(s->ctx, x, s->port, s->gidx, 100, &dx);
	my_dest(s->ctx, y, s->port, s->gidx, 200, &dy);
	qp_connect(x, s->port, s->gidx, 100, &dy);
	qp_connect(y, s->port, s->gidx, 200, &dx);
}

static void ud_up(struct side *s, struct ibv_qp *q)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof a);
	a.port_num = (uint8_t)s->port;
	a.qkey = UD_QKEY;
	to_state(q, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, &a);
	memset(&a, 0, sizeof a);
	to_state(q, IBV_QPS_RTR, 0, &a);
	memset(&a, 0, sizeof a);
	a.sq_psn = 7;
	to_state(q, IBV_QPS_RTS, IBV_QP_SQ_PSN, &a);
}

static void setup(struct side *s)
{
	struct ibv_srq_init_attr sa;
	struct ibv_ah_attr aa;
	struct ibv_port_attr pa;

	s->ctx = open_first(NULL);
	s->pd = ibv_alloc_pd(s->ctx);
	CHECK(s->pd, "alloc_pd");
	s->chan = ibv_create_comp_channel(s->ctx);
	CHECK(s->chan, "create_comp_channel");
	s->cqa = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	s->cqb = ibv_create_cq(s->ctx, 64, (void *)0xb0b, s->chan, 0);
	s->cqc = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	s->cqu = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	CHECK(s->cqa && s->cqb && s->cqc && s->cqu, "create_cq");
	memset(&sa, 0, sizeof sa);
	sa.attr.max_wr = 32;
	sa.attr.max_sge = 1;
	s->srq = ibv_create_srq(s->pd, &sa);
	CHECK(s->srq, "create_srq: %s", strerror(errno));
	s->a = make_qp(s->pd, s->cqa, s->cqa, NULL, IBV_QPT_RC, 32);
	s->b = make_qp(s->pd, s->cqb, s->cqb, NULL, IBV_QPT_RC, 32);
	s->c = make_qp(s->pd, s->cqc, s->cqc, NULL, IBV_QPT_RC, 32);
	s->d = make_qp(s->pd, s->cqc, s->cqc, s->srq, IBV_QPT_RC, 32);
	s->u1 = make_qp(s->pd, s->cqu, s->cqu, NULL, IBV_QPT_UD, 32);
	s->u2 = make_qp(s->pd, s->cqu, s->cqu, NULL, IBV_QPT_UD, 32);
	s->bufa = aligned_alloc(4096, SLOT * NSLOT);
	s->bufb = aligned_alloc(4096, SLOT * NSLOT);
	s->bufc = aligned_alloc(4096, SLOT * NSLOT);
	CHECK(s->bufa && s->bufb && s->bufc, "memory");
	memset(s->bufa, 0, SLOT * NSLOT);
	memset(s->bufb, 0, SLOT * NSLOT);
	memset(s->bufc, 0, SLOT * NSLOT);
	s->ma = ibv_reg_mr(s->pd, s->bufa, SLOT * NSLOT, IBV_ACCESS_LOCAL_WRITE);
	s->mb = ibv_reg_mr(s->pd, s->bufb, SLOT * NSLOT, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	s->mc = ibv_reg_mr(s->pd, s->bufc, SLOT * NSLOT, IBV_ACCESS_LOCAL_WRITE);
	CHECK(s->ma && s->mb && s->mc, "reg_mr");
	connect_pair(s, s->a, s->b);
	connect_pair(s, s->c, s->d);
	ud_up(s, s->u1);
	ud_up(s, s->u2);
	CHECK(!ibv_query_port(s->ctx, (uint8_t)s->port, &pa), "query_port");
	s->lid = pa.lid;
	CHECK(!ibv_query_gid(s->ctx, (uint8_t)s->port, s->gidx, &s->gid), "query_gid");
	memset(&aa, 0, sizeof aa);
	aa.is_global = 1;
	aa.grh.dgid = s->gid;
	aa.grh.sgid_index = (uint8_t)s->gidx;
	aa.grh.hop_limit = 1;
	aa.dlid = s->lid;
	aa.port_num = (uint8_t)s->port;
	s->ah = ibv_create_ah(s->pd, &aa);
	CHECK(s->ah, "create_ah: %s", strerror(errno));
}

static void srq_recv(struct side *s, uint64_t id, int slot)
{
	struct ibv_sge g = { (uintptr_t)(s->bufc + slot * SLOT), SLOT, s->mc->lkey };
	struct ibv_recv_wr w, *bad;

	memset(&w, 0, sizeof w);
	w.wr_id = id;
	w.sg_list = &g;
	w.num_sge = 1;
	CHECK(!ibv_post_srq_recv(s->srq, &w, &bad), "post_srq_recv");
}

static void ud_send(struct side *s, uint32_t iter)
{
	struct ibv_sge g = { (uintptr_t)(s->bufa + 15 * SLOT), 64, s->ma->lkey };
	struct ibv_send_wr w, *bad;
	struct ibv_wc wc;
	int got_send = 0, got_recv = 0;

	/* U2 receives into bufc slot 15: 40 bytes of GRH, then the payload */
	post_recv1(s->u2, 900 + iter, s->bufc + 15 * SLOT, 40 + 64, s->mc->lkey);
	fill(s->bufa + 15 * SLOT, 64, iter, 'U');
	memset(&w, 0, sizeof w);
	w.wr_id = 800 + iter;
	w.sg_list = &g;
	w.num_sge = 1;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.ud.ah = s->ah;
	w.wr.ud.remote_qpn = s->u2->qp_num;
	w.wr.ud.remote_qkey = UD_QKEY;
	CHECK(!ibv_post_send(s->u1, &w, &bad), "UD post_send");
	while (!got_send || !got_recv) {
		poll_one(s->cqu, &wc, 30, "UD");
		if (wc.wr_id == 800 + iter)
			got_send = 1;
		else if (wc.wr_id == 900 + iter) {
			got_recv = 1;
			CHECK(wc.qp_num == s->u2->qp_num, "UD wc.qp_num 0x%x, want 0x%x", wc.qp_num,
			      s->u2->qp_num);
			CHECK(wc.src_qp == s->u1->qp_num, "UD wc.src_qp 0x%x, want 0x%x", wc.src_qp,
			      s->u1->qp_num);
		} else
			die("UD: unexpected wr_id %llu", (unsigned long long)wc.wr_id);
	}
	CHECK(same(s->bufc + 15 * SLOT + 40, 64, iter, 'U'), "UD payload differs (iter %u)", iter);
}

/* SEND, RDMA WRITE and RDMA READ A->B, SRQ C->D, UD U1->U2, verified. */
static void traffic(struct side *s, int iters, uint32_t base)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < iters; i++) {
		uint32_t it = base + (uint32_t)i;

		post_recv1(s->b, 10, s->bufb, SLOT, s->mb->lkey);
		fill(s->bufa, SLOT, it, 'S');
		post_send1(s->a, 11, IBV_WR_SEND, s->bufa, SLOT, s->ma->lkey, 0, 0, 0, 1);
		poll_one(s->cqa, &wc, 30, "A send");
		CHECK(wc.wr_id == 11, "A send wr_id %llu", (unsigned long long)wc.wr_id);
		poll_one(s->cqb, &wc, 30, "B recv");
		CHECK(wc.wr_id == 10 && wc.byte_len == SLOT, "B recv wr_id %llu len %u",
		      (unsigned long long)wc.wr_id, wc.byte_len);
		CHECK(wc.qp_num == s->b->qp_num, "B recv qp_num 0x%x", wc.qp_num);
		CHECK(same(s->bufb, SLOT, it, 'S'), "SEND data differs (iter %u)", it);

		fill(s->bufa + SLOT, SLOT, it, 'W');
		post_send1(s->a, 12, IBV_WR_RDMA_WRITE, s->bufa + SLOT, SLOT, s->ma->lkey,
			   (uintptr_t)(s->bufb + SLOT), s->mb->rkey, 0, 1);
		poll_one(s->cqa, &wc, 30, "A write");
		CHECK(wc.wr_id == 12 && wc.opcode == IBV_WC_RDMA_WRITE, "A write completion");
		CHECK(same(s->bufb + SLOT, SLOT, it, 'W'), "RDMA WRITE data differs (iter %u)", it);

		fill(s->bufb + 2 * SLOT, SLOT, it, 'R');
		post_send1(s->a, 13, IBV_WR_RDMA_READ, s->bufa + 2 * SLOT, SLOT, s->ma->lkey,
			   (uintptr_t)(s->bufb + 2 * SLOT), s->mb->rkey, 0, 1);
		poll_one(s->cqa, &wc, 30, "A read");
		CHECK(wc.wr_id == 13 && wc.opcode == IBV_WC_RDMA_READ, "A read completion");
		CHECK(same(s->bufa + 2 * SLOT, SLOT, it, 'R'), "RDMA READ data differs (iter %u)", it);

		srq_recv(s, 20, 0);
		fill(s->bufa + 3 * SLOT, SLOT, it, 'Q');
		post_send1(s->c, 21, IBV_WR_SEND, s->bufa + 3 * SLOT, SLOT, s->ma->lkey, 0, 0, 0, 1);
		{
			int got_s = 0, got_r = 0;

			while (!got_s || !got_r) {
				poll_one(s->cqc, &wc, 30, "SRQ");
				if (wc.wr_id == 21)
					got_s = 1;
				else if (wc.wr_id == 20) {
					got_r = 1;
					CHECK(wc.qp_num == s->d->qp_num, "SRQ wc.qp_num 0x%x", wc.qp_num);
				} else
					die("SRQ: wr_id %llu", (unsigned long long)wc.wr_id);
			}
		}
		CHECK(same(s->bufc, SLOT, it, 'Q'), "SRQ data differs (iter %u)", it);
		ud_send(s, it);
	}
}

static void wait_state(int want, const char *what)
{
	double t0 = now_s();

	while (ctl->state != want) {
		CHECK(ctl->state != IBCR_VSTATE_FAILED, "%s: shim FAILED: %s", what, ctl->message);
		if (now_s() - t0 > 60)
			die("%s: state %d after 60 s (want %d)", what, ctl->state, want);
		usleep(2000);
	}
}

struct snap {
	uint32_t qpn[6];
	uint32_t lkey[3], rkey[3];
};

static void snapshot(struct side *s, struct snap *n)
{
	struct ibv_qp *q[6] = { s->a, s->b, s->c, s->d, s->u1, s->u2 };
	struct ibv_mr *m[3] = { s->ma, s->mb, s->mc };
	int i;

	for (i = 0; i < 6; i++)
		n->qpn[i] = real_qpn(q[i]);
	for (i = 0; i < 3; i++) {
		void *a;
		size_t l;

		real_mr(m[i], &n->lkey[i], &n->rkey[i], &a, &l);
		CHECK(a == m[i]->addr && l == m[i]->length,
		      "MR %d is at %p+%zu, the application's at %p+%zu", i, a, l, m[i]->addr,
		      m[i]->length);
	}
}

/* Extra objects on a context the shim does not see (real libibverbs). */
static void make_extras(int n)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	struct ibv_device **(*gdl)(int *);
	struct ibv_context *(*open)(struct ibv_device *);
	struct ibv_pd *(*apd)(struct ibv_context *);
	struct ibv_cq *(*ccq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	struct ibv_qp *(*cqp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	struct ibv_mr *(*rmr)(struct ibv_pd *, void *, size_t, int);
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int i, nd;

	CHECK(h, "libibverbs not loaded");
	*(void **)&gdl = dlvsym(h, "ibv_get_device_list", "IBVERBS_1.1");
	*(void **)&open = dlvsym(h, "ibv_open_device", "IBVERBS_1.1");
	*(void **)&apd = dlvsym(h, "ibv_alloc_pd", "IBVERBS_1.1");
	*(void **)&ccq = dlvsym(h, "ibv_create_cq", "IBVERBS_1.1");
	*(void **)&cqp = dlvsym(h, "ibv_create_qp", "IBVERBS_1.1");
	*(void **)&rmr = dlvsym(h, "ibv_reg_mr", "IBVERBS_1.1");
	CHECK(gdl && open && apd && ccq && cqp && rmr, "real libibverbs symbols");
	c = open(gdl(&nd)[0]);
	CHECK(c, "extra context");
	pd = apd(c);
	cq = ccq(c, 8, NULL, NULL, 0);
	CHECK(pd && cq, "extra pd/cq");
	for (i = 0; i < n; i++) {
		struct ibv_qp_init_attr a;
		void *m = malloc(4096);

		memset(&a, 0, sizeof a);
		a.send_cq = a.recv_cq = cq;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = a.cap.max_recv_wr = 1;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		CHECK(cqp(pd, &a), "extra QP");
		CHECK(rmr(pd, m, 4096, IBV_ACCESS_LOCAL_WRITE), "extra MR");
	}
}

static void checkpoint(const char *why)
{
	ctl->cmd = IBCR_VCMD_QUIESCE_SENDS;
	wait_state(IBCR_VSTATE_SENDS_DONE, why);
	ctl->cmd = IBCR_VCMD_QUIESCE_DRAIN;
	wait_state(IBCR_VSTATE_QUIESCED, why);
}

static void cycle(struct side *s, int n, int iters, int restart, const char *rdv)
{
	struct snap before, after;
	struct ibv_wc wc;
	struct ibv_cq *ecq;
	void *ectx;
	uint32_t i, k, nfd;
	int chfd = s->chan->fd, found = 0;
	uint32_t app_qpn_a = s->a->qp_num, app_rkey_b = s->mb->rkey, app_lkey_a = s->ma->lkey;
	double t0;

	printf("cycle %d (%s)\n", n, restart ? "rebuild" : "release");
	traffic(s, iters, (uint32_t)n * 1000);
	PASS("%d iterations of SEND/WRITE/READ, SRQ and UD verified", iters);

	/* state a checkpoint must carry: 8 receives on B, 3 sends A->B not
	 * polled, B's CQ armed; 4 SRQ receives, 2 consumed */
	for (k = 0; k < 8; k++)
		post_recv1(s->b, 100 + k, s->bufb + (4 + k) * SLOT, SLOT, s->mb->lkey);
	for (k = 0; k < 4; k++)
		srq_recv(s, 300 + k, (int)(4 + k));
	CHECK(!ibv_req_notify_cq(s->cqb, 0), "req_notify_cq");
	for (k = 0; k < 8; k++)
		fill(s->bufa + (4 + k) * SLOT, SLOT, (uint32_t)n * 100 + k, 'P');
	for (k = 0; k < 3; k++)
		post_send1(s->a, 200 + k, IBV_WR_SEND, s->bufa + (4 + k) * SLOT, SLOT, s->ma->lkey,
			   0, 0, 0, 1);
	for (k = 0; k < 2; k++)
		post_send1(s->c, 400 + k, IBV_WR_SEND, s->bufa + (4 + k) * SLOT, SLOT, s->ma->lkey,
			   0, 0, 0, 1);
	snapshot(s, &before);

	t0 = now_s();
	checkpoint("checkpoint");
	printf("  quiesced in %.1f ms\n", (now_s() - t0) * 1e3);
	nfd = ctl->nfds;
	for (i = 0; i < nfd; i++)
		if (ctl->fds[i].fd == chfd && ctl->fds[i].kind == IBCR_VFD_COMP_CHANNEL) {
			found = 1;
			CHECK(ctl->fds[i].nwake >= 1, "channel fd %d: no wake event recorded", chfd);
		}
	CHECK(found, "channel fd %d not in fds[] (%u entries)", chfd, nfd);
	CHECK(ctl->ndevices == 1 && ctl->devices[0][0], "devices[] not filled");
	PASS("QUIESCED: %u fds recorded (channel fd %d with its wake event), device %s", nfd, chfd,
	     ctl->devices[0]);

	if (restart) {
		make_extras(3);
		CHECK(teardown() == 0, "teardown failed");
		snprintf(ctl->rendezvous, sizeof ctl->rendezvous, "%s", rdv);
		ctl->restart_timeout_ms = 30000;
		t0 = now_s();
		ctl->cmd = IBCR_VCMD_RESTART;
		wait_state(IBCR_VSTATE_RUNNING, "restart");
		printf("  rebuilt in %.1f ms\n", (now_s() - t0) * 1e3);
		snapshot(s, &after);
		for (i = 0; i < 6; i++)
			CHECK(after.qpn[i] != before.qpn[i], "QP %u kept its real number 0x%x", i,
			      after.qpn[i]);
		for (i = 0; i < 3; i++)
			CHECK(after.lkey[i] != before.lkey[i] &&
			      (!before.rkey[i] || after.rkey[i] != before.rkey[i]),
			      "MR %u kept its real keys", i);
		CHECK(s->a->qp_num == app_qpn_a && s->mb->rkey == app_rkey_b &&
		      s->ma->lkey == app_lkey_a, "the application's numbers changed");
		PASS("new real QPNs (A 0x%x -> 0x%x) and keys (B rkey 0x%x -> 0x%x); the application "
		     "still sees QPN 0x%x, rkey 0x%x; MRs at the same address and length",
		     before.qpn[0], after.qpn[0], before.rkey[1], after.rkey[1], s->a->qp_num,
		     s->mb->rkey);
		CHECK(s->chan->fd == chfd && fcntl(chfd, F_GETFD) >= 0, "channel fd changed");
	} else {
		ctl->cmd = IBCR_VCMD_RELEASE;
		wait_state(IBCR_VSTATE_RUNNING, "release");
	}

	/* the drained event comes first */
	CHECK(!ibv_get_cq_event(s->chan, &ecq, &ectx), "get_cq_event after %s",
	      restart ? "restart" : "release");
	CHECK(ecq == s->cqb && ectx == (void *)0xb0b, "event for the wrong CQ");
	ibv_ack_cq_events(ecq, 1);
	PASS("the completion event drained at the checkpoint is delivered (fd %d)", chfd);

	/* new sends before polling the old completions */
	for (k = 3; k < 8; k++)
		post_send1(s->a, 200 + k, IBV_WR_SEND, s->bufa + (4 + k) * SLOT, SLOT, s->ma->lkey,
			   0, 0, 0, 1);
	for (k = 0; k < 8; k++) {
		poll_one(s->cqa, &wc, 30, "A sends");
		CHECK(wc.wr_id == 200 + k, "A: completion %u has wr_id %llu", k,
		      (unsigned long long)wc.wr_id);
		CHECK(wc.qp_num == s->a->qp_num, "A: qp_num 0x%x", wc.qp_num);
	}
	for (k = 0; k < 8; k++) {
		poll_one(s->cqb, &wc, 30, "B receives");
		CHECK(wc.wr_id == 100 + k, "B: completion %u has wr_id %llu", k,
		      (unsigned long long)wc.wr_id);
		CHECK(same(s->bufb + (4 + k) * SLOT, SLOT, (uint32_t)n * 100 + k, 'P'),
		      "B: receive %u data differs", k);
	}
	PASS("3 drained send completions first, then 5 new ones, in order; 8 receives (5 "
	     "posted before the checkpoint%s) with data verified",
	     restart ? ", re-posted by the rebuild" : "");
	for (k = 2; k < 4; k++)
		post_send1(s->c, 400 + k, IBV_WR_SEND, s->bufa + (4 + k) * SLOT, SLOT, s->ma->lkey,
			   0, 0, 0, 1);
	{
		int sends = 0, recvs = 0;

		while (sends < 4 || recvs < 4) {
			poll_one(s->cqc, &wc, 30, "SRQ after");
			if (wc.wr_id >= 400 && wc.wr_id < 404) {
				CHECK(wc.wr_id == 400u + (unsigned)sends, "SRQ send order");
				sends++;
			} else {
				CHECK(wc.wr_id == 300u + (unsigned)recvs, "SRQ receive order: %llu",
				      (unsigned long long)wc.wr_id);
				CHECK(same(s->bufc + (4 + recvs) * SLOT, SLOT,
					   (uint32_t)n * 100 + (uint32_t)recvs, 'P'),
				      "SRQ receive %d data differs", recvs);
				recvs++;
			}
		}
	}
	PASS("SRQ: 2 drained receive completions, then 2 on receives posted before the checkpoint");
	traffic(s, iters, (uint32_t)n * 1000 + 500);
	PASS("%d more iterations verified after the %s", iters, restart ? "rebuild" : "release");
}

int main(int argc, char **argv)
{
	const char *rdv = "/tmp/ibcr-selftest-rdv";
	struct side s;
	int cycles = 2, iters = 20, opt, n;

	prog = "selftest";
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&s, 0, sizeof s);
	s.port = 1;
	s.gidx = 1;
	while ((opt = getopt(argc, argv, "d:g:c:n:")) != -1) {
		switch (opt) {
		case 'd': rdv = optarg; break;
		case 'g': s.gidx = atoi(optarg); break;
		case 'c': cycles = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: selftest [-d DIR] [-g GIDX] [-c CYCLES] [-n ITERS]\n");
			return 2;
		}
	}
	ctl = dlsym(RTLD_DEFAULT, IBCR_VERBS_SYMBOL);
	*(void **)&teardown = dlsym(RTLD_DEFAULT, "ibcr_verbs_test_teardown");
	CHECK(ctl && teardown, "the shim is not loaded (run under ibcr-launch)");
	CHECK(ctl->magic == IBCR_VERBS_MAGIC && ctl->abi == IBCR_VERBS_ABI &&
	      ctl->size == sizeof *ctl, "control object: bad magic/abi/size");
	mkdir(rdv, 0777);
	setup(&s);
	for (n = 1; n <= cycles; n++)
		cycle(&s, n, iters, 1, rdv);
	cycle(&s, cycles + 1, iters, 0, rdv);
	printf("selftest: PASS (%d checks, %d rebuilds)\n", checks, cycles);
	return 0;
}
