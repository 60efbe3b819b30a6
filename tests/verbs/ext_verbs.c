/* SPDX-License-Identifier: MIT */
/*
 * ext_verbs: the corners of the API on the shim's virtual objects. An
 * extended CQ (ibv_create_cq_ex) carries traffic read through the polling
 * API; a QP of ibv_create_qp_ex carries traffic posted with the ibv_wr_*
 * API; ibv_query_device_ex answers with the device's extended attributes;
 * every other extended verb must fail cleanly (EOPNOTSUPP), never crash;
 * queries must answer as without the shim; an async event (SRQ limit
 * reached) must arrive with the application's SRQ in it.
 * Runs with and without the shim: `ext_verbs [-g GIDX]`.
 */
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>

#include "common.h"

static int checks;
#define OK(...)                              \
	do {                                 \
		printf("  ok: " __VA_ARGS__); \
		printf("\n");                \
		checks++;                    \
	} while (0)

/* An RC QP made with ibv_create_qp_ex and send operations. */
static struct ibv_qp *make_qpx(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex qx;
	struct ibv_qp *q;

	memset(&qx, 0, sizeof qx);
	qx.send_cq = qx.recv_cq = cq;
	qx.qp_type = IBV_QPT_RC;
	qx.cap.max_send_wr = qx.cap.max_recv_wr = 8;
	qx.cap.max_send_sge = qx.cap.max_recv_sge = 2;
	qx.cap.max_inline_data = 64;
	qx.pd = pd;
	qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qx.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ;
	q = ibv_create_qp_ex(ctx, &qx);
	CHECK(q, "create_qp_ex with send operations: %s", strerror(errno));
	CHECK(qx.cap.max_inline_data >= 64, "create_qp_ex: %u inline bytes", qx.cap.max_inline_data);
	return q;
}

/*
 * The ibv_wr_* API: one batch of a SEND from an SGE, a SEND_WITH_IMM of
 * inline data (its buffer overwritten before ibv_wr_complete) and an RDMA
 * WRITE; then an RDMA READ back; an aborted batch posts nothing. Every
 * completion and every byte checked.
 */
static void wr_api(struct ibv_context *ctx, struct ibv_pd *pd, int gidx, uint8_t *buf,
		   struct ibv_mr *mr)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	struct dest da, db;
	struct ibv_wc wc;
	char inl[32];
	int i;

	CHECK(cq, "cq for the wr API");
	a = make_qpx(ctx, pd, cq);
	b = make_qpx(ctx, pd, cq);
	x = ibv_qp_to_qp_ex(a);
	CHECK(x, "qp_to_qp_ex: %s", strerror(errno));
	qp_init(a, 1);
	qp_init(b, 1);
	my_dest(ctx, a, 1, gidx, 50, &da);
	my_dest(ctx, b, 1, gidx, 60, &db);
	qp_connect(a, 1, gidx, 50, &db);
	qp_connect(b, 1, gidx, 60, &da);
	memset(buf, 0, 8192);
	fill(buf + 4096, 256, 1, 'S');	/* a's source */
	fill(buf + 6144, 512, 2, 'R');	/* what a reads back from b */
	post_recv1(b, 70, buf, 256, mr->lkey);
	post_recv1(b, 71, buf + 256, 256, mr->lkey);
	ibv_wr_start(x);
	x->wr_id = 80;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf + 4096, 256);
	x->wr_id = 81;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;	/* rxe's kernel half needs it */
	ibv_wr_send_imm(x, htobe32(0xabc));
	snprintf(inl, sizeof inl, "inline bytes of wr 81");
	ibv_wr_set_inline_data(x, inl, sizeof inl);
	memset(inl, 'X', sizeof inl);	/* the API lets it be reused at once */
	x->wr_id = 82;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, mr->rkey, (uintptr_t)buf + 1024);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf + 4096, 128);
	CHECK(!ibv_wr_complete(x), "wr_complete");
	for (i = 0; i < 5; i++) {
		poll_one(cq, &wc, 30, "wr API batch");
		if (wc.opcode == IBV_WC_RECV) {
			CHECK(wc.wr_id == 70 + (uint64_t)(wc.wc_flags & IBV_WC_WITH_IMM ? 1 : 0),
			      "receive wr_id %llu", (unsigned long long)wc.wr_id);
			if (wc.wr_id == 71)
				CHECK(wc.byte_len == sizeof inl && be32toh(wc.imm_data) == 0xabc &&
				      !strcmp((char *)buf + 256, "inline bytes of wr 81"),
				      "inline SEND_WITH_IMM: %u bytes '%.31s'", wc.byte_len,
				      (char *)buf + 256);
			else
				CHECK(wc.byte_len == 256 && same(buf, 256, 1, 'S'), "SEND data");
		} else {
			CHECK(wc.wr_id >= 80 && wc.wr_id <= 82 && wc.qp_num == a->qp_num,
			      "send completion wr_id %llu", (unsigned long long)wc.wr_id);
		}
	}
	CHECK(same(buf + 1024, 128, 1, 'S'), "RDMA WRITE data");
	ibv_wr_start(x);
	x->wr_id = 90;
	ibv_wr_send(x);
	ibv_wr_abort(x);
	ibv_wr_start(x);
	x->wr_id = 91;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, mr->rkey, (uintptr_t)buf + 6144);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf + 2048, 512);
	CHECK(!ibv_wr_complete(x), "wr_complete (read)");
	poll_one(cq, &wc, 30, "wr API read");
	CHECK(wc.wr_id == 91 && wc.opcode == IBV_WC_RDMA_READ, "read completion: wr_id %llu",
	      (unsigned long long)wc.wr_id);
	CHECK(same(buf + 2048, 512, 2, 'R'), "RDMA READ data");
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "a completion of the aborted batch");
	CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b) && !ibv_destroy_cq(cq), "wr API teardown");
	OK("create_qp_ex with send operations, wr_start/send/send_imm/rdma_write/rdma_read/"
	   "set_sge/set_inline_data/complete/abort: every completion and byte checked");
}

int main(int argc, char **argv)
{
	int gidx = 1, opt, shim = dlsym(RTLD_DEFAULT, "ibcr_verbs_control") != NULL;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	void *buf;

	prog = "ext_verbs";
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "g:")) != -1)
		if (opt == 'g')
			gidx = atoi(optarg);
	ctx = open_first(NULL);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(pd && cq, "pd/cq");
	qp = make_qp(pd, cq, cq, NULL, IBV_QPT_RC, 8);
	buf = aligned_alloc(4096, 8192);
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ);
	CHECK(buf && mr, "reg_mr");

	/* queries */
	{
		struct ibv_device_attr da;
		struct ibv_device_attr_ex dx;
		struct ibv_port_attr pa;
		struct ibv_gid_entry ge, tab[64];
		union ibv_gid g;
		__be16 pkey;
		ssize_t n;

		CHECK(!ibv_query_device(ctx, &da) && da.phys_port_cnt >= 1, "query_device");
		CHECK(!ibv_query_device_ex(ctx, NULL, &dx) &&
		      dx.orig_attr.max_qp == da.max_qp, "query_device_ex");
		CHECK(!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE, "query_port");
		CHECK(!ibv_query_gid(ctx, 1, gidx, &g), "query_gid");
		CHECK(!ibv_query_gid_ex(ctx, 1, (uint32_t)gidx, &ge, 0) &&
		      !memcmp(&ge.gid, &g, sizeof g), "query_gid_ex");
		n = ibv_query_gid_table(ctx, tab, 64, 0);
		CHECK(n > 0, "query_gid_table: %zd", n);
		CHECK(!ibv_query_pkey(ctx, 1, 0, &pkey), "query_pkey");
		CHECK(ibv_get_pkey_index(ctx, 1, pkey) == 0, "get_pkey_index");
		OK("query_device(_ex), query_port, query_gid(_ex), "
		   "query_gid_table (%zd entries), query_pkey, get_pkey_index", n);
		/* the extended part, compared by the check with and without the shim */
		printf("  device_ex: max_qp %d odp %#x timestamp_mask %#llx raw_packet %#x "
		       "max_wq %u\n", dx.orig_attr.max_qp, (unsigned)dx.odp_caps.general_caps,
		       (unsigned long long)dx.completion_timestamp_mask,
		       (unsigned)dx.raw_packet_caps, (unsigned)dx.rss_caps.max_rwq_indirection_tables);
	}
	/* an extended CQ: SENDs with immediate data between two QPs, read back */
	{
		struct ibv_cq_init_attr_ex cx = {
			.cqe = 32, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
					       IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP,
		};
		struct ibv_poll_cq_attr pa = { 0 };
		struct ibv_cq_ex *x = ibv_create_cq_ex(ctx, &cx);
		struct ibv_qp *a, *b;
		struct dest da, db;
		int i, got = 0, sends = 0, r;
		double t0 = now_s();

		CHECK(x, "create_cq_ex: %s", strerror(errno));
		a = make_qp(pd, ibv_cq_ex_to_cq(x), ibv_cq_ex_to_cq(x), NULL, IBV_QPT_RC, 8);
		b = make_qp(pd, ibv_cq_ex_to_cq(x), ibv_cq_ex_to_cq(x), NULL, IBV_QPT_RC, 8);
		qp_init(a, 1);
		qp_init(b, 1);
		my_dest(ctx, a, 1, gidx, 30, &da);
		my_dest(ctx, b, 1, gidx, 40, &db);
		qp_connect(a, 1, gidx, 30, &db);
		qp_connect(b, 1, gidx, 40, &da);
		for (i = 0; i < 4; i++)
			post_recv1(b, 200 + (uint64_t)i, (char *)buf + 64 * i, 64, mr->lkey);
		for (i = 0; i < 4; i++)
			post_send1(a, 300 + (uint64_t)i, IBV_WR_SEND_WITH_IMM, (char *)buf + 4096,
				   17 + (uint32_t)i, mr->lkey, 0, 0, 0x1000 + (uint32_t)i, 1);
		while (got + sends < 8) {
			CHECK(now_s() - t0 < 30, "extended CQ: %d of 8 completions in 30 s", got + sends);
			r = ibv_start_poll(x, &pa);
			if (r == ENOENT)
				continue;
			CHECK(!r, "start_poll: %s", strerror(r));
			do {
				CHECK(x->status == IBV_WC_SUCCESS, "extended CQ: status %d", x->status);
				if (ibv_wc_read_opcode(x) == IBV_WC_SEND) {
					CHECK(x->wr_id == 300 + (uint64_t)sends &&
					      ibv_wc_read_qp_num(x) == a->qp_num, "send completion");
					sends++;
				} else {
					CHECK(ibv_wc_read_opcode(x) == IBV_WC_RECV &&
					      x->wr_id == 200 + (uint64_t)got &&
					      ibv_wc_read_byte_len(x) == 17 + (uint32_t)got &&
					      (ibv_wc_read_wc_flags(x) & IBV_WC_WITH_IMM) &&
					      be32toh(ibv_wc_read_imm_data(x)) == 0x1000 + (uint32_t)got &&
					      ibv_wc_read_qp_num(x) == b->qp_num,
					      "receive completion %d: wr_id %llu, %u bytes, flags %#x, "
					      "imm %#x, qp 0x%x (want 0x%x)", got,
					      (unsigned long long)x->wr_id, ibv_wc_read_byte_len(x),
					      ibv_wc_read_wc_flags(x), be32toh(ibv_wc_read_imm_data(x)),
					      ibv_wc_read_qp_num(x), b->qp_num);
					/* src_qp: defined for UD only (read, not compared) */
					(void)ibv_wc_read_src_qp(x);
					got++;
				}
			} while (got + sends < 8 && !(r = ibv_next_poll(x)));
			CHECK(!r || r == ENOENT, "next_poll: %s", strerror(r));
			ibv_end_poll(x);
		}
		CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b) &&
		      !ibv_destroy_cq(ibv_cq_ex_to_cq(x)), "extended CQ teardown");
		OK("create_cq_ex: 4 SEND_WITH_IMM read through start/next/end_poll, byte_len, "
		   "imm_data, qp_num, wc_flags");
	}
	wr_api(ctx, pd, gidx, buf, mr);
	{
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		CHECK(!ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_CAP, &ia), "query_qp");
		CHECK(a.qp_state == IBV_QPS_RESET && ia.send_cq == cq && ia.recv_cq == cq,
		      "query_qp: state %d, cqs %p %p (want %p)", a.qp_state, (void *)ia.send_cq,
		      (void *)ia.recv_cq, (void *)cq);
		OK("query_qp answers with the application's objects");
	}

	/* extended verbs: refused cleanly on the virtual context */
	if (shim) {
		struct ibv_cq_init_attr_ex cx = { .cqe = 8 };
		struct ibv_qp_init_attr_ex qx;
		struct ibv_xrcd_init_attr xa = { 0 };
		struct ibv_td_init_attr ta = { 0 };
		struct ibv_values_ex vx = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
		struct ibv_modify_cq_attr mc = { 0 };
		struct ibv_counters_init_attr ci = { 0 };
		struct ibv_alloc_dm_attr dm = { .length = 64 };
		struct ibv_wq_init_attr wa;
		int r;

		cx.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
		errno = 0;
		CHECK(!ibv_create_cq_ex(ctx, &cx) && errno == EOPNOTSUPP,
		      "create_cq_ex with completion timestamps");
		memset(&qx, 0, sizeof qx);
		qx.send_cq = qx.recv_cq = cq;
		qx.qp_type = IBV_QPT_RC;
		qx.cap.max_send_wr = qx.cap.max_recv_wr = 1;
		qx.cap.max_send_sge = qx.cap.max_recv_sge = 1;
		qx.pd = pd;
		qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qx.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV;
		errno = 0;
		CHECK(!ibv_create_qp_ex(ctx, &qx) && errno == EOPNOTSUPP, "create_qp_ex (LOCAL_INV)");
		errno = 0;
		CHECK(!ibv_qp_to_qp_ex(qp) && errno == EOPNOTSUPP, "qp_to_qp_ex");
		errno = 0;
		CHECK(!ibv_open_xrcd(ctx, &xa) && errno == EOPNOTSUPP, "open_xrcd");
		errno = 0;
		CHECK(!ibv_alloc_td(ctx, &ta) && errno == EOPNOTSUPP, "alloc_td");
		CHECK(ibv_query_rt_values_ex(ctx, &vx) == EOPNOTSUPP, "query_rt_values_ex");
		CHECK(ibv_modify_cq(cq, &mc) == EOPNOTSUPP, "modify_cq");
		errno = 0;
		CHECK(!ibv_alloc_mw(pd, IBV_MW_TYPE_1) && errno == EOPNOTSUPP, "alloc_mw");
		errno = 0;
		CHECK(!ibv_create_counters(ctx, &ci) && errno == EOPNOTSUPP, "create_counters");
		errno = 0;
		CHECK(!ibv_alloc_dm(ctx, &dm) && errno == EOPNOTSUPP, "alloc_dm");
		memset(&wa, 0, sizeof wa);
		wa.wq_type = IBV_WQT_RQ;
		wa.max_wr = 1;
		wa.max_sge = 1;
		wa.pd = pd;
		wa.cq = cq;
		errno = 0;
		CHECK(!ibv_create_wq(ctx, &wa) && errno == EOPNOTSUPP, "create_wq");
		r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				 IBV_ACCESS_LOCAL_WRITE);
		CHECK(r != 0, "rereg_mr accepted");
		errno = 0;
		CHECK(!ibv_alloc_null_mr(pd) && errno == EOPNOTSUPP, "alloc_null_mr");
		OK("create_cq_ex (timestamps), create_qp_ex (LOCAL_INV), qp_to_qp_ex (a plain QP), "
		   "open_xrcd, alloc_td, "
		   "query_rt_values_ex, modify_cq, alloc_mw, create_counters, alloc_dm, "
		   "create_wq, rereg_mr, alloc_null_mr: refused with EOPNOTSUPP");
	}

	/* an async event: SRQ limit reached, with our SRQ in it */
	{
		struct ibv_srq_init_attr sa;
		struct ibv_srq_attr lim;
		struct ibv_srq *srq;
		struct ibv_qp *a, *b;
		struct ibv_cq *cq2;
		struct ibv_async_event ev;
		struct dest da, db;
		struct pollfd pf;
		struct ibv_wc wc;
		int i, k, got = 0;

		memset(&sa, 0, sizeof sa);
		sa.attr.max_wr = 16;
		sa.attr.max_sge = 1;
		sa.srq_context = (void *)0x5e0;
		srq = ibv_create_srq(pd, &sa);
		CHECK(srq, "create_srq");
		cq2 = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		a = make_qp(pd, cq2, cq2, NULL, IBV_QPT_RC, 8);
		b = make_qp(pd, cq2, cq2, srq, IBV_QPT_RC, 8);
		qp_init(a, 1);
		qp_init(b, 1);
		my_dest(ctx, a, 1, gidx, 10, &da);
		my_dest(ctx, b, 1, gidx, 20, &db);
		qp_connect(a, 1, gidx, 10, &db);
		qp_connect(b, 1, gidx, 20, &da);
		for (i = 0; i < 6; i++) {
			struct ibv_sge g = { (uintptr_t)buf + 64u * (unsigned)i, 64, mr->lkey };
			struct ibv_recv_wr w = { .wr_id = (uint64_t)i, .sg_list = &g, .num_sge = 1 }, *bad;

			CHECK(!ibv_post_srq_recv(srq, &w, &bad), "post_srq_recv");
		}
		lim.srq_limit = 3;
		CHECK(!ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT), "modify_srq limit");
		for (i = 0; i < 4; i++)
			post_send1(a, 100 + (uint64_t)i, IBV_WR_SEND, (char *)buf + 4096, 32, mr->lkey,
				   0, 0, 0, 1);
		for (k = 0; k < 8; k++)
			poll_one(cq2, &wc, 30, "srq traffic");
		pf.fd = ctx->async_fd;
		pf.events = POLLIN;
		CHECK(poll(&pf, 1, 10000) == 1, "no async event within 10 s");
		CHECK(!ibv_get_async_event(ctx, &ev), "get_async_event");
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
			CHECK(ev.element.srq == srq && ev.element.srq->srq_context == (void *)0x5e0,
			      "the event names another SRQ");
			got = 1;
		}
		ibv_ack_async_event(&ev);
		CHECK(got, "async event %s, want SRQ limit reached",
		      ibv_event_type_str(ev.event_type));
		OK("async event SRQ_LIMIT_REACHED with the application's SRQ, acknowledged");
		CHECK(!ibv_destroy_qp(a) && !ibv_destroy_qp(b) && !ibv_destroy_srq(srq) &&
		      !ibv_destroy_cq(cq2), "destroy after the event");
	}
	CHECK(!ibv_destroy_qp(qp) && !ibv_dereg_mr(mr) && !ibv_destroy_cq(cq) &&
	      !ibv_dealloc_pd(pd) && !ibv_close_device(ctx), "teardown");
	OK("every object destroyed, device closed");
	printf("ext_verbs: PASS (%d checks, %s)\n", checks, shim ? "shim" : "no shim");
	return 0;
}
