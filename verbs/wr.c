/* SPDX-License-Identifier: MIT */
/*
 * Extended QPs on the shim's virtual objects: ibv_create_qp_ex with send
 * operations, ibv_qp_to_qp_ex and the ibv_wr_* work request API.
 *
 * The virtual QP's ibv_qp_ex builds plain ibv_send_wr in the shim, one per
 * ibv_wr_<opcode> call, into an array of the QP's send depth made at its
 * creation; ibv_wr_complete posts the list through the shim's own
 * post_send. So nothing reaches the device before ibv_wr_complete, a
 * checkpoint meets only work requests that post_send counted (the
 * quiesce, the shadow queues and the translation of lkeys, rkeys, AHs and
 * QP numbers after a restart are those of ibv_post_send), and the cost
 * per request is bounded (no log grows with the requests). Inline data is
 * copied at once, as the API lets the caller reuse its buffer. The real QP
 * is a plain one (also when it is made again at a restart).
 *
 * Supported: SEND, SEND_WITH_IMM, RDMA_WRITE(_WITH_IMM), RDMA_READ and the
 * two atomics, with SGEs, inline data and UD addresses. Refused with
 * EOPNOTSUPP at creation: the other send operations (LOCAL_INV, BIND_MW,
 * SEND_WITH_INV, TSO, ATOMIC_WRITE), create flags, XRC, and any attribute
 * beyond the PD. More requests between start and complete than the send
 * queue holds, or more SGEs or inline bytes than its capacities, make
 * ibv_wr_complete fail with ENOMEM or EINVAL and post nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct wrbatch {
	pthread_mutex_t lock;	/* start .. complete or abort */
	struct ibv_send_wr *wr;	/* cap + 1: the last one takes an overflow */
	struct ibv_sge *sge;	/* max_sge per request */
	uint8_t *inl;		/* max_inline bytes per request */
	uint32_t cap, max_sge, max_inline, n;
	struct ibv_send_wr *cur;
	int err;
};

#define SQPX(x) ((struct sqp *)(x))

static const uint64_t WR_OPS = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			       IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			       IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

static size_t slot(const struct wrbatch *b, const struct ibv_send_wr *w)
{
	return (size_t)(w - b->wr);
}

/* A new request of opcode op, with the caller's wr_id and flags. */
static struct ibv_send_wr *next_wr(struct ibv_qp_ex *x, enum ibv_wr_opcode op)
{
	struct wrbatch *b = SQPX(x)->wrb;
	struct ibv_send_wr *w = &b->wr[b->n < b->cap ? b->n++ : b->cap];

	if (w == &b->wr[b->cap])
		b->err = ENOMEM;
	memset(w, 0, sizeof(*w));
	w->wr_id = x->wr_id;
	w->send_flags = x->wr_flags;
	w->opcode = op;
	w->sg_list = &b->sge[slot(b, w) * b->max_sge];
	b->cur = w;
	return w;
}

static void wr_send(struct ibv_qp_ex *x)
{
	next_wr(x, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	next_wr(x, IBV_WR_SEND_WITH_IMM)->imm_data = imm;
}

static void rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		 __be32 imm)
{
	struct ibv_send_wr *w = next_wr(x, op);

	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = addr;
	w->imm_data = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	rdma(x, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	rdma(x, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		   uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *w = next_wr(x, op);

	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = addr;
	w->wr.atomic.compare_add = compare_add;
	w->wr.atomic.swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
			      uint64_t compare, uint64_t swap)
{
	atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t add)
{
	atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

/* The current request, or NULL (the batch fails) when there is none. */
static struct ibv_send_wr *cur(struct wrbatch *b)
{
	if (!b->cur)
		b->err = EINVAL;
	return b->cur;
}

static void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct ibv_send_wr *w = cur(SQPX(x)->wrb);

	if (!w)
		return;
	w->wr.ud.ah = ah;
	w->wr.ud.remote_qpn = qpn;
	w->wr.ud.remote_qkey = qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *sg)
{
	struct wrbatch *b = SQPX(x)->wrb;
	struct ibv_send_wr *w = cur(b);

	if (!w)
		return;
	if (n > b->max_sge) {
		b->err = EINVAL;
		return;
	}
	if (n)
		memcpy(w->sg_list, sg, n * sizeof(*sg));
	w->num_sge = (int)n;
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t len)
{
	struct ibv_sge s = { .addr = addr, .length = len, .lkey = lkey };

	wr_set_sge_list(x, 1, &s);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *d)
{
	struct wrbatch *b = SQPX(x)->wrb;
	struct ibv_send_wr *w = cur(b);
	uint8_t *p;
	size_t len = 0;

	if (!w)
		return;
	p = b->inl + slot(b, w) * b->max_inline;
	for (size_t i = 0; i < n; i++) {
		if (d[i].length > b->max_inline - len) {
			b->err = EINVAL;
			return;
		}
		memcpy(p + len, d[i].addr, d[i].length);
		len += d[i].length;
	}
	w->sg_list[0] = (struct ibv_sge){ .addr = (uintptr_t)p, .length = (uint32_t)len };
	w->num_sge = 1;
	w->send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t len)
{
	struct ibv_data_buf d = { .addr = addr, .length = len };

	wr_set_inline_data_list(x, 1, &d);
}

static void wr_start(struct ibv_qp_ex *x)
{
	struct wrbatch *b = SQPX(x)->wrb;

	pthread_mutex_lock(&b->lock);
	b->n = 0;
	b->err = 0;
	b->cur = NULL;
}

static int wr_complete(struct ibv_qp_ex *x)
{
	struct wrbatch *b = SQPX(x)->wrb;
	struct ibv_send_wr *bad = NULL;
	int r = b->err;

	for (uint32_t i = 0; i < b->n; i++)
		b->wr[i].next = i + 1 < b->n ? &b->wr[i + 1] : NULL;
	if (!r && b->n)
		r = shim_post_send(&SQPX(x)->v, b->wr, &bad);
	b->n = 0;
	b->cur = NULL;
	pthread_mutex_unlock(&b->lock);
	return r;
}

static void wr_abort(struct ibv_qp_ex *x)
{
	struct wrbatch *b = SQPX(x)->wrb;

	b->n = 0;
	b->cur = NULL;
	pthread_mutex_unlock(&b->lock);
}

static struct wrbatch *batch_new(const struct ibv_qp_cap *cap)
{
	struct wrbatch *b = calloc(1, sizeof(*b));
	size_t n;

	if (!b)
		return NULL;
	b->cap = cap->max_send_wr;
	b->max_sge = cap->max_send_sge ? cap->max_send_sge : 1;	/* inline data takes one */
	b->max_inline = cap->max_inline_data;
	n = (size_t)b->cap + 1;
	b->wr = calloc(n, sizeof(*b->wr));
	b->sge = calloc(n * b->max_sge, sizeof(*b->sge));
	b->inl = b->max_inline ? calloc(n, b->max_inline) : NULL;
	if (!b->wr || !b->sge || (b->max_inline && !b->inl)) {
		wr_batch_free(b);
		return NULL;
	}
	pthread_mutex_init(&b->lock, NULL);
	return b;
}

void wr_batch_free(struct wrbatch *b)
{
	if (!b)
		return;
	free(b->wr);
	free(b->sge);
	free(b->inl);
	free(b);
}

static void qpx_init(struct ibv_qp_ex *x)
{
	x->comp_mask = 0;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
}

struct ibv_qp *shim_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *ax)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_qp_init_attr a = { 0 };
	struct ibv_qp *qp;
	struct sqp *q;

	if ((ax->comp_mask & ~known) || !(ax->comp_mask & IBV_QP_INIT_ATTR_PD) || !ax->pd ||
	    ax->pd->context != context ||
	    ((ax->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (ax->send_ops_flags & ~WR_OPS))) {
		dbg("create_qp_ex: comp_mask %#x, send_ops_flags %#llx: not supported",
		    ax->comp_mask, (unsigned long long)ax->send_ops_flags);
		errno = EOPNOTSUPP;
		return NULL;
	}
	a.qp_context = ax->qp_context;
	a.send_cq = ax->send_cq;
	a.recv_cq = ax->recv_cq;
	a.srq = ax->srq;
	a.cap = ax->cap;
	a.qp_type = ax->qp_type;
	a.sq_sig_all = ax->sq_sig_all;
	qp = ibv_create_qp(ax->pd, &a);
	if (!qp || !(ax->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		goto out;
	q = SQPX(qp);
	q->wrb = batch_new(&a.cap);
	if (!q->wrb) {
		ibv_destroy_qp(qp);
		errno = ENOMEM;
		return NULL;
	}
	qpx_init(&q->vqx);
out:
	if (qp)
		ax->cap = a.cap;
	return qp;
}
