/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the verbs test programs (RC over Soft-RoCE). */
#ifndef IBCR_TESTS_VERBS_COMMON_H
#define IBCR_TESTS_VERBS_COMMON_H

#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *prog = "test";

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define CHECK(cond, ...)                 \
	do {                             \
		if (!(cond))             \
			die(__VA_ARGS__); \
	} while (0)

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __attribute__((unused)) struct ibv_context *open_first(const char *want)
{
	struct ibv_device **l;
	struct ibv_context *c = NULL;
	int n, i;

	l = ibv_get_device_list(&n);
	CHECK(l && n > 0, "no RDMA device (%s)", strerror(errno));
	for (i = 0; i < n; i++)
		if (!want || !strcmp(ibv_get_device_name(l[i]), want))
			break;
	CHECK(i < n, "device %s not found", want);
	c = ibv_open_device(l[i]);
	CHECK(c, "ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(l);
	return c;
}

static __attribute__((unused)) struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
			      struct ibv_srq *srq, enum ibv_qp_type t, int depth)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *q;

	memset(&a, 0, sizeof a);
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.srq = srq;
	a.qp_type = t;
	a.cap.max_send_wr = (uint32_t)depth;
	a.cap.max_recv_wr = srq ? 0 : (uint32_t)depth;
	a.cap.max_send_sge = 2;
	a.cap.max_recv_sge = 2;
	q = ibv_create_qp(pd, &a);
	CHECK(q, "ibv_create_qp: %s", strerror(errno));
	return q;
}

struct dest {
	uint32_t qpn, psn, rkey;
	uint16_t lid;
	uint64_t addr;
	union ibv_gid gid;
};

static __attribute__((unused)) void qp_init(struct ibv_qp *q, int port)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_LOCAL_WRITE;
	CHECK(!ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS),
	      "modify to INIT failed");
}

static __attribute__((unused)) void qp_connect(struct ibv_qp *q, int port, int gidx, uint32_t my_psn,
		       const struct dest *d)
{
	struct ibv_qp_attr a;
	int r;

	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = d->qpn;
	a.rq_psn = d->psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = d->lid;
	a.ah_attr.port_num = (uint8_t)port;
	if (gidx >= 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = d->gid;
		a.ah_attr.grh.sgid_index = (uint8_t)gidx;
		a.ah_attr.grh.hop_limit = 1;
	}
	r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					IBV_QP_MIN_RNR_TIMER);
	CHECK(!r, "modify to RTR: %s", strerror(r));
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 4;
	r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(!r, "modify to RTS: %s", strerror(r));
}

static __attribute__((unused)) void my_dest(struct ibv_context *c, struct ibv_qp *q, int port, int gidx,
		    uint32_t psn, struct dest *d)
{
	struct ibv_port_attr pa;

	memset(d, 0, sizeof *d);
	CHECK(!ibv_query_port(c, (uint8_t)port, &pa), "ibv_query_port failed");
	d->lid = pa.lid;
	if (gidx >= 0)
		CHECK(!ibv_query_gid(c, (uint8_t)port, gidx, &d->gid), "ibv_query_gid failed");
	d->qpn = q->qp_num;
	d->psn = psn;
}

/* Polls one completion, yielding while the CQ is empty; dies after `tmo` s. */
static __attribute__((unused)) void poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double tmo, const char *what)
{
	double t0 = now_s();
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		CHECK(n >= 0, "%s: ibv_poll_cq failed", what);
		if (n == 1)
			break;
		if (now_s() - t0 > tmo)
			die("%s: no completion within %.0f s", what, tmo);
		sched_yield();
	}
	CHECK(wc->status == IBV_WC_SUCCESS, "%s: completion status %s (%d), wr_id %llu", what,
	      ibv_wc_status_str(wc->status), wc->status, (unsigned long long)wc->wr_id);
}

static __attribute__((unused)) void post_recv1(struct ibv_qp *q, uint64_t id, void *buf, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)buf, len, lkey };
	struct ibv_recv_wr w, *bad;

	memset(&w, 0, sizeof w);
	w.wr_id = id;
	w.sg_list = &s;
	w.num_sge = 1;
	CHECK(!ibv_post_recv(q, &w, &bad), "ibv_post_recv failed");
}

static __attribute__((unused)) void post_send1(struct ibv_qp *q, uint64_t id, enum ibv_wr_opcode op, void *buf,
		       uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		       uint32_t imm, int signaled)
{
	struct ibv_sge s = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr w, *bad;
	int r;

	memset(&w, 0, sizeof w);
	w.wr_id = id;
	w.sg_list = &s;
	w.num_sge = len ? 1 : 0;
	w.opcode = op;
	w.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	w.imm_data = htobe32(imm);
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	r = ibv_post_send(q, &w, &bad);
	CHECK(!r, "ibv_post_send (opcode %d): %s", op, strerror(r));
}

/* Deterministic contents: iteration, tag and position. */
static __attribute__((unused)) void fill(uint8_t *p, size_t n, uint32_t iter, uint8_t tag)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31u + iter * 7u + tag);
}

static __attribute__((unused)) int same(const uint8_t *p, size_t n, uint32_t iter, uint8_t tag)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 31u + iter * 7u + tag))
			return 0;
	return 1;
}

/* The shim's test hooks, when it is loaded. */
static __attribute__((unused)) uint32_t real_qpn(struct ibv_qp *q)
{
	uint32_t (*f)(struct ibv_qp *) = (uint32_t(*)(struct ibv_qp *))dlsym(RTLD_DEFAULT,
									 "ibcr_verbs_test_real_qpn");

	return f ? f(q) : q->qp_num;
}

static __attribute__((unused)) void real_mr(struct ibv_mr *m, uint32_t *lkey, uint32_t *rkey, void **addr, size_t *len)
{
	int (*f)(struct ibv_mr *, uint32_t *, uint32_t *, void **, size_t *) =
		(int (*)(struct ibv_mr *, uint32_t *, uint32_t *, void **, size_t *))dlsym(
			RTLD_DEFAULT, "ibcr_verbs_test_real_mr");

	if (!f || f(m, lkey, rkey, addr, len)) {
		*lkey = m->lkey;
		*rkey = m->rkey;
		*addr = m->addr;
		*len = m->length;
	}
}

#endif
