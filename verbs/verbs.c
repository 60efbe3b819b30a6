/* SPDX-License-Identifier: MIT */
/*
 * Interposed control path of libibverbs: every creating and modifying call
 * is forwarded to the real library with the real objects, and recorded in
 * a virtual object the application gets instead.
 *
 * Each entry point also accepts real objects (libibverbs and providers call
 * some exported functions themselves) and forwards those untouched.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define SCTX(x) container((x), struct sctx, vx.context)
#define SPD(x) ((struct spd *)(x))
#define SMR(x) ((struct smr *)(x))
#define SCQ(x) ((struct scq *)(x))
#define SQP(x) ((struct sqp *)(x))
#define SSRQ(x) ((struct ssrq *)(x))
#define SAH(x) ((struct sah *)(x))
#define SCHAN(x) ((struct schan *)(x))

static inline struct ibv_qp *rqp(struct ibv_qp *q)
{
	return IS_V(q) ? SQP(q)->real : q;
}

/* --------------------------------------------------------------- devices */

EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	shim_init();
	return R.get_device_list(num_devices);
}

EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	R.free_device_list(list);
}

EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return R.get_device_name(device);
}

EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return R.get_device_guid(device);
}

EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *real;
	struct sctx *c;
	const char *name;
	int g;

	shim_init();
	g = gate_enter(0);
	real = R.open_device(device);
	if (!real)
		goto out;
	c = calloc(1, sizeof *c);
	if (!c) {
		R.close_device(real);
		real = NULL;
		errno = ENOMEM;
		goto out;
	}
	c->real = real;
	c->dev = device;
	name = R.get_device_name(device);
	snprintf(c->name, sizeof c->name, "%s", name ? name : "?");
	c->vx.context.device = device;
	c->vx.context.ops = shim_ops;
	c->vx.context.cmd_fd = real->cmd_fd;
	c->vx.context.async_fd = real->async_fd;
	c->vx.context.num_comp_vectors = real->num_comp_vectors;
	ext_context_init(c);
	pthread_mutex_init(&c->vx.context.mutex, NULL);
	pthread_mutex_init(&c->async_lock, NULL);
	c->extra_cmd_fd = c->extra_async_fd = -1;
	capture_ports(c, 1);
	pthread_mutex_lock(&S.lock);
	list_add_tail(&S.ctxs, &c->link);
	ctl_update_fds();
	pthread_mutex_unlock(&S.lock);
	helper_start();
	dbg("opened %s (cmd fd %d, async fd %d)", c->name, c->vx.context.cmd_fd,
	    c->vx.context.async_fd);
	gate_leave(g);
	return &c->vx.context;
out:
	gate_leave(g);
	return NULL;
}

EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct sctx *c = SCTX(context);
	int g, r;

	if (!is_vctx(context))
		return R.close_device(context);
	g = gate_enter(0);
	r = R.close_device(c->real);
	if (!r) {
		if (c->extra_cmd_fd >= 0)
			close(c->vx.context.cmd_fd);
		if (c->extra_async_fd >= 0)
			close(c->vx.context.async_fd);
		pthread_mutex_lock(&S.lock);
		list_del(&c->link);
		ctl_update_fds();
		pthread_mutex_unlock(&S.lock);
		ht_clear(&c->qtab);
		ht_clear(&c->lkey);
		free(c);
	}
	gate_leave(g);
	return r;
}

/* ---------------------------------------------------------------- queries */

#define QUERY_FWD(expr)                          \
	do {                                     \
		int g__ = gate_enter(1), r__;    \
		r__ = (expr);                    \
		gate_leave(g__);                 \
		return r__;                      \
	} while (0)

EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (!is_vctx(context))
		return R.query_device(context, attr);
	QUERY_FWD(R.query_device(SCTX(context)->real, attr));
}

EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			  struct _compat_ibv_port_attr *port_attr)
{
	if (!is_vctx(context))
		return R.query_port(context, port_num, port_attr);
	QUERY_FWD(R.query_port(SCTX(context)->real, port_num, port_attr));
}

EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			 union ibv_gid *gid)
{
	if (!is_vctx(context))
		return R.query_gid(context, port_num, index, gid);
	QUERY_FWD(R.query_gid(SCTX(context)->real, port_num, index, gid));
}

EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
			     uint32_t gid_index, struct ibv_gid_entry *entry,
			     uint32_t flags, size_t entry_size)
{
	if (!R.query_gid_ex)
		return EOPNOTSUPP;
	if (!is_vctx(context))
		return R.query_gid_ex(context, port_num, gid_index, entry, flags, entry_size);
	QUERY_FWD(R.query_gid_ex(SCTX(context)->real, port_num, gid_index, entry, flags,
				 entry_size));
}

EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
				    struct ibv_gid_entry *entries, size_t max_entries,
				    uint32_t flags, size_t entry_size)
{
	ssize_t r;
	int g;

	if (!R.query_gid_table)
		return -EOPNOTSUPP;
	if (!is_vctx(context))
		return R.query_gid_table(context, entries, max_entries, flags, entry_size);
	g = gate_enter(1);
	r = R.query_gid_table(SCTX(context)->real, entries, max_entries, flags, entry_size);
	gate_leave(g);
	return r;
}

EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
			      unsigned int index, void *type)
{
	if (!R.query_gid_type)
		return -1;
	if (!is_vctx(context))
		return R.query_gid_type(context, port_num, index, type);
	QUERY_FWD(R.query_gid_type(SCTX(context)->real, port_num, index, type));
}

EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
			  __be16 *pkey)
{
	if (!is_vctx(context))
		return R.query_pkey(context, port_num, index, pkey);
	QUERY_FWD(R.query_pkey(SCTX(context)->real, port_num, index, pkey));
}

EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!is_vctx(context))
		return R.get_pkey_index(context, port_num, pkey);
	QUERY_FWD(R.get_pkey_index(SCTX(context)->real, port_num, pkey));
}

EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
				       struct ibv_ah_attr *attr, uint8_t eth_mac[6],
				       uint16_t *vid)
{
	if (!R.resolve_eth_l2_from_gid)
		return -1;
	if (!is_vctx(context))
		return R.resolve_eth_l2_from_gid(context, attr, eth_mac, vid);
	QUERY_FWD(R.resolve_eth_l2_from_gid(SCTX(context)->real, attr, eth_mac, vid));
}

/* ------------------------------------------------------------------- PDs */

EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *real;
	struct spd *p = NULL;
	int g;

	if (!is_vctx(context))
		return R.alloc_pd(context);
	g = gate_enter(0);
	real = R.alloc_pd(SCTX(context)->real);
	if (real && !(p = calloc(1, sizeof *p))) {
		R.dealloc_pd(real);
		errno = ENOMEM;
	}
	if (p) {
		p->real = real;
		p->ctx = SCTX(context);
		p->v.context = context;
		p->v.handle = real->handle;
		pthread_mutex_lock(&S.lock);
		list_add_tail(&S.pds, &p->link);
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	return p ? &p->v : NULL;
}

EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct spd *p = SPD(pd);
	int g, r;

	if (!IS_V(pd))
		return R.dealloc_pd(pd);
	g = gate_enter(0);
	r = R.dealloc_pd(p->real);
	if (!r) {
		pthread_mutex_lock(&S.lock);
		list_del(&p->link);
		pthread_mutex_unlock(&S.lock);
		free(p);
	}
	gate_leave(g);
	return r;
}

/* ------------------------------------------------------------------- MRs */

static struct ibv_mr *reg_common(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t iova, unsigned int access, enum mr_how how)
{
	struct spd *p = SPD(pd);
	struct ibv_mr *real;
	struct smr *m = NULL;
	int g = gate_enter(0);

	if (how == MR_REG)
		real = R.reg_mr(p->real, addr, length, (int)access);
	else if (how == MR_IOVA)
		real = R.reg_mr_iova(p->real, addr, length, iova, (int)access);
	else
		real = R.reg_mr_iova2(p->real, addr, length, iova, access);
	if (real && !(m = calloc(1, sizeof *m))) {
		R.dereg_mr(real);
		errno = ENOMEM;
	}
	if (m) {
		m->real = real;
		m->pd = p;
		m->iova = iova;
		m->access = access;
		m->how = how;
		m->v = *real;
		m->v.context = pd->context;
		m->v.pd = pd;
		m->v.addr = addr;
		m->v.length = length;
		pthread_mutex_lock(&S.lock);
		if (S.translating) {
			/* A key handed out now must not alias an older one. */
			uint64_t v;
			if (ht_get(&p->ctx->lkey, real->lkey, &v) && v != real->lkey)
				warnx_("new MR lkey 0x%x aliases a pre-restart lkey", real->lkey);
		}
		list_add_tail(&S.mrs, &m->link);
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	return m ? &m->v : NULL;
}

EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	if (!IS_V(pd))
		return R.reg_mr(pd, addr, length, access);
	return reg_common(pd, addr, length, (uintptr_t)addr, (unsigned)access, MR_REG);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
				      uint64_t iova, int access)
{
	if (!IS_V(pd))
		return R.reg_mr_iova(pd, addr, length, iova, access);
	return reg_common(pd, addr, length, iova, (unsigned)access, MR_IOVA);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				       uint64_t iova, unsigned int access)
{
	if (!IS_V(pd))
		return R.reg_mr_iova2(pd, addr, length, iova, access);
	return reg_common(pd, addr, length, iova, access, MR_IOVA2);
}

EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct smr *m = SMR(mr);
	int g, r;

	if (!IS_V(mr))
		return R.dereg_mr(mr);
	g = gate_enter(0);
	r = R.dereg_mr(m->real);
	if (!r) {
		pthread_mutex_lock(&S.lock);
		list_del(&m->link);
		ht_del(&m->pd->ctx->lkey, m->v.lkey);
		pthread_mutex_unlock(&S.lock);
		free(m);
	}
	gate_leave(g);
	return r;
}

EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			size_t length, int access)
{
	if (!IS_V(mr) && !IS_V(pd))
		return R.rereg_mr(mr, flags, pd, addr, length, access);
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

/* Extended and import entry points: not on virtual objects. */
EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					uint64_t iova, int fd, int access)
{
	static struct ibv_mr *(*real)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int);

	if (IS_V(pd)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!real)
		*(void **)&real = dlvsym(RTLD_NEXT, "ibv_reg_dmabuf_mr", "IBVERBS_1.12");
	if (!real) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return real(pd, offset, length, iova, fd, access);
}

EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	static struct ibv_pd *(*real)(struct ibv_context *, uint32_t);

	if (is_vctx(context)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!real)
		*(void **)&real = dlvsym(RTLD_NEXT, "ibv_import_pd", "IBVERBS_1.10");
	return real ? real(context, pd_handle) : NULL;
}

EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	static struct ibv_mr *(*real)(struct ibv_pd *, uint32_t);

	if (IS_V(pd)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!real)
		*(void **)&real = dlvsym(RTLD_NEXT, "ibv_import_mr", "IBVERBS_1.10");
	return real ? real(pd, mr_handle) : NULL;
}

EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	static struct ibv_dm *(*real)(struct ibv_context *, uint32_t);

	if (is_vctx(context)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!real)
		*(void **)&real = dlvsym(RTLD_NEXT, "ibv_import_dm", "IBVERBS_1.13");
	return real ? real(context, dm_handle) : NULL;
}

EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (IS_V(qp)) {
		if (SQP(qp)->wrb)	/* made with send operations */
			return &SQP(qp)->vqx;
		errno = EOPNOTSUPP;
		return NULL;
	}
	return R.qp_to_qp_ex ? R.qp_to_qp_ex(qp) : NULL;
}

/* ------------------------------------------------------ completion channels */

EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *real;
	struct schan *ch = NULL;
	int g;

	if (!is_vctx(context))
		return R.create_comp_channel(context);
	g = gate_enter(0);
	real = R.create_comp_channel(SCTX(context)->real);
	if (real && !(ch = calloc(1, sizeof *ch))) {
		R.destroy_comp_channel(real);
		errno = ENOMEM;
	}
	if (ch) {
		ch->real = real;
		ch->ctx = SCTX(context);
		ch->v.context = context;
		ch->v.fd = real->fd;
		ch->v.refcnt = 0;
		ch->extra_fd = -1;
		ch->pend_wr = -1;
		pthread_mutex_init(&ch->rd_lock, NULL);
		pthread_mutex_lock(&S.lock);
		list_add_tail(&S.chans, &ch->link);
		ctl_update_fds();
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	return ch ? &ch->v : NULL;
}

EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct schan *ch = SCHAN(channel);
	int g, r;

	if (!IS_V(channel))
		return R.destroy_comp_channel(channel);
	g = gate_enter(0);
	r = R.destroy_comp_channel(ch->real);
	if (!r) {
		if (ch->extra_fd >= 0)
			close(ch->v.fd);
		if (ch->pend_wr >= 0)
			close(ch->pend_wr);
		pthread_mutex_lock(&S.lock);
		list_del(&ch->link);
		ctl_update_fds();
		pthread_mutex_unlock(&S.lock);
		free(ch->pend);
		free(ch);
	}
	gate_leave(g);
	return r;
}

/* ------------------------------------------------------------------- CQs */

EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
				    struct ibv_comp_channel *channel, int comp_vector)
{
	struct schan *ch = NULL;
	struct ibv_cq *real = NULL;
	struct scq *c;
	int g;

	if (!is_vctx(context))
		return R.create_cq(context, cqe, cq_context, channel, comp_vector);
	if (channel && !IS_V(channel)) {
		errno = EINVAL;
		return NULL;
	}
	ch = channel ? SCHAN(channel) : NULL;
	g = gate_enter(0);
	c = calloc(1, sizeof *c);
	if (c)
		real = R.create_cq(SCTX(context)->real, cqe, c, ch ? ch->real : NULL, comp_vector);
	else
		errno = ENOMEM;
	if (!real) {
		free(c);
		c = NULL;
	} else {
		c->real = real;
		c->ctx = SCTX(context);
		c->chan = ch;
		c->cqe_req = cqe;
		c->comp_vector = comp_vector;
		c->rpoll = real->context->ops.poll_cq;
		spin_init(&c->lock);
		c->v.context = context;
		c->v.channel = channel;
		c->v.cq_context = cq_context;
		c->v.handle = real->handle;
		c->v.cqe = real->cqe;
		pthread_mutex_init(&c->v.mutex, NULL);
		pthread_cond_init(&c->v.cond, NULL);
		pthread_mutex_lock(&S.lock);
		list_add_tail(&S.cqs, &c->link);
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	return c ? &c->v : NULL;
}

EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct scq *c = SCQ(cq);
	int g, r;

	if (!IS_V(cq))
		return R.resize_cq(cq, cqe);
	g = gate_enter(0);
	r = R.resize_cq(c->real, cqe);
	if (!r) {
		c->cqe_req = cqe;
		c->v.cqe = c->real->cqe;
	}
	gate_leave(g);
	return r;
}

EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct scq *c = SCQ(cq);
	struct list *p;
	int g, r, i, j;

	if (!IS_V(cq))
		return R.destroy_cq(cq);
	g = gate_enter(0);
	r = R.destroy_cq(c->real);
	if (!r) {
		pthread_mutex_lock(&S.lock);
		list_del(&c->link);
		list_for(p, &S.chans) {
			struct schan *ch = container(p, struct schan, link);

			pthread_mutex_lock(&ch->rd_lock);
			for (i = j = 0; i < ch->npend; i++)
				if (ch->pend[i] != c)
					ch->pend[j++] = ch->pend[i];
			ch->npend = j;
			pthread_mutex_unlock(&ch->rd_lock);
		}
		pthread_mutex_unlock(&S.lock);
		free(c->shadow);
		free(c);
	}
	gate_leave(g);
	return r;
}

/* ------------------------------------------------------------------ SRQs */

EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct ibv_srq_init_attr a;
	struct ibv_srq *real = NULL;
	struct ssrq *s;
	int g;

	if (!IS_V(pd))
		return R.create_srq(pd, init);
	g = gate_enter(0);
	s = calloc(1, sizeof *s);
	if (s) {
		a = *init;
		a.srq_context = s;
		real = R.create_srq(SPD(pd)->real, &a);
	} else {
		errno = ENOMEM;
	}
	if (real && ring_init(&s->ring, a.attr.max_wr, a.attr.max_sge)) {
		R.destroy_srq(real);
		real = NULL;
		errno = ENOMEM;
	}
	if (!real) {
		free(s);
		s = NULL;
	} else {
		init->attr = a.attr;	/* actual sizes, as libibverbs reports them */
		s->real = real;
		s->pd = SPD(pd);
		s->ctx = SPD(pd)->ctx;
		s->attr = a.attr;
		s->rpost = real->context->ops.post_srq_recv;
		s->v.context = pd->context;
		s->v.srq_context = init->srq_context;
		s->v.pd = pd;
		s->v.handle = real->handle;
		pthread_mutex_init(&s->v.mutex, NULL);
		pthread_cond_init(&s->v.cond, NULL);
		pthread_mutex_lock(&S.lock);
		list_add_tail(&S.srqs, &s->link);
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	return s ? &s->v : NULL;
}

EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct ssrq *s = SSRQ(srq);
	int g, r;

	if (!IS_V(srq))
		return R.modify_srq(srq, attr, mask);
	g = gate_enter(0);
	r = R.modify_srq(s->real, attr, mask);
	if (!r) {
		if (mask & IBV_SRQ_MAX_WR)
			s->attr.max_wr = attr->max_wr;
		if (mask & IBV_SRQ_LIMIT)
			s->attr.srq_limit = attr->srq_limit;
	}
	gate_leave(g);
	return r;
}

EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	if (!IS_V(srq))
		return R.query_srq(srq, attr);
	QUERY_FWD(R.query_srq(SSRQ(srq)->real, attr));
}

EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct ssrq *s = SSRQ(srq);
	int g, r;

	if (!IS_V(srq))
		return R.destroy_srq(srq);
	g = gate_enter(0);
	r = R.destroy_srq(s->real);
	if (!r) {
		pthread_mutex_lock(&S.lock);
		list_del(&s->link);
		pthread_mutex_unlock(&S.lock);
		ring_free(&s->ring);
		free(s);
	}
	gate_leave(g);
	return r;
}

/* ------------------------------------------------------------------- QPs */

EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *real = NULL;
	struct sqp *q;
	int g;

	if (!IS_V(pd))
		return R.create_qp(pd, init);
	if (!IS_V(init->send_cq) || !IS_V(init->recv_cq) || (init->srq && !IS_V(init->srq))) {
		errno = EINVAL;
		return NULL;
	}
	g = gate_enter(0);
	q = calloc(1, sizeof *q);
	if (q) {
		a = *init;
		a.qp_context = q;
		a.send_cq = SCQ(init->send_cq)->real;
		a.recv_cq = SCQ(init->recv_cq)->real;
		a.srq = init->srq ? SSRQ(init->srq)->real : NULL;
		real = R.create_qp(SPD(pd)->real, &a);
	} else {
		errno = ENOMEM;
	}
	if (real && !init->srq && ring_init(&q->ring, a.cap.max_recv_wr, a.cap.max_recv_sge)) {
		R.destroy_qp(real);
		real = NULL;
		errno = ENOMEM;
	}
	if (!real) {
		free(q);
		q = NULL;
		goto out;
	}
	init->cap = a.cap;
	q->real = real;
	q->ctx = SPD(pd)->ctx;
	q->pd = SPD(pd);
	q->scq = SCQ(init->send_cq);
	q->rcq = SCQ(init->recv_cq);
	q->srq = init->srq ? SSRQ(init->srq) : NULL;
	q->init = *init;
	q->rpost_send = real->context->ops.post_send;
	q->rpost_recv = real->context->ops.post_recv;
	q->cur_state = IBV_QPS_RESET;
	q->v.context = pd->context;
	q->v.qp_context = init->qp_context;
	q->v.pd = pd;
	q->v.send_cq = init->send_cq;
	q->v.recv_cq = init->recv_cq;
	q->v.srq = init->srq;
	q->v.handle = real->handle;
	q->v.qp_num = real->qp_num;
	q->v.state = real->state;
	q->v.qp_type = real->qp_type;
	pthread_mutex_init(&q->v.mutex, NULL);
	pthread_cond_init(&q->v.cond, NULL);
	pthread_mutex_lock(&S.lock);
	if (S.translating) {
		struct list *p;

		list_for(p, &S.qps)
			if (container(p, struct sqp, link)->v.qp_num == real->qp_num &&
			    container(p, struct sqp, link)->ctx == q->ctx)
				warnx_("new QP 0x%x has the number a pre-restart QP shows", real->qp_num);
	}
	ht_put(&q->ctx->qtab, real->qp_num, (uintptr_t)q);
	list_add_tail(&S.qps, &q->link);
	pthread_mutex_unlock(&S.lock);
out:
	gate_leave(g);
	return q ? &q->v : NULL;
}

EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct sqp *q = SQP(qp);
	struct ibv_qp_attr a;
	int g, r;

	if (!IS_V(qp))
		return R.modify_qp(qp, attr, mask);
	g = gate_enter(0);
	a = *attr;
	if (S.translating) {
		/* A connection made after a restart: addresses the application
		 * learnt before it are translated like in work requests. */
		struct rdev *rd = NULL;
		uint64_t v;

		if (mask & IBV_QP_AV)
			xl_ah_attr(&a.ah_attr, &rd);
		if (mask & IBV_QP_ALT_PATH)
			xl_ah_attr(&a.alt_ah_attr, NULL);
		if ((mask & IBV_QP_DEST_QPN) && rd && ht_get(&rd->qpn, a.dest_qp_num, &v))
			a.dest_qp_num = (uint32_t)v;
	}
	r = R.modify_qp(q->real, &a, mask);
	if (!r) {
		pthread_mutex_lock(&S.lock);
		qp_record_modify(q, attr, mask);
		pthread_mutex_unlock(&S.lock);
		if (mask & IBV_QP_STATE)
			qp->state = attr->qp_state;
	}
	gate_leave(g);
	return r;
}

EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct ibv_qp_init_attr *init)
{
	struct sqp *q = SQP(qp);
	int g, r;

	if (!IS_V(qp))
		return R.query_qp(qp, attr, mask, init);
	g = gate_enter(1);
	r = R.query_qp(q->real, attr, mask, init);
	if (!r) {
		/* Show what the application set, not the translated values. */
		if (q->has_remote) {
			attr->dest_qp_num = q->remote_qpn;
			if (q->rec[IBV_QPS_RTR].mask & IBV_QP_AV)
				attr->ah_attr = q->rec[IBV_QPS_RTR].attr.ah_attr;
		}
		if (init) {
			init->qp_context = q->v.qp_context;
			init->send_cq = q->v.send_cq;
			init->recv_cq = q->v.recv_cq;
			init->srq = q->v.srq;
		}
		if (mask & IBV_QP_STATE)
			qp->state = attr->qp_state;
	}
	gate_leave(g);
	return r;
}

EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct sqp *q = SQP(qp);
	uint32_t rqpn;
	int g, r;

	if (!IS_V(qp))
		return R.destroy_qp(qp);
	g = gate_enter(0);
	rqpn = q->real->qp_num;
	r = R.destroy_qp(q->real);
	if (!r) {
		pthread_mutex_lock(&S.lock);
		ht_del(&q->ctx->qtab, rqpn);
		list_del(&q->link);
		pthread_mutex_unlock(&S.lock);
		/* The real QP is gone; q->real is not touched again. */
		if (!q->srq)
			ring_free(&q->ring);
		wr_batch_free(q->wrb);
		free(q);
	}
	gate_leave(g);
	return r;
}

EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (!IS_V(qp))
		return R.attach_mcast(qp, gid, lid);
	QUERY_FWD(R.attach_mcast(SQP(qp)->real, gid, lid));
}

EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (!IS_V(qp))
		return R.detach_mcast(qp, gid, lid);
	QUERY_FWD(R.detach_mcast(SQP(qp)->real, gid, lid));
}

EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (!R.query_ece)
		return EOPNOTSUPP;
	if (!IS_V(qp))
		return R.query_ece(qp, ece);
	QUERY_FWD(R.query_ece(rqp(qp), ece));
}

EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (!R.set_ece)
		return EOPNOTSUPP;
	if (!IS_V(qp))
		return R.set_ece(qp, ece);
	QUERY_FWD(R.set_ece(rqp(qp), ece));
}

EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags)
{
	if (!R.query_qp_data_in_order)
		return 0;
	if (!IS_V(qp))
		return R.query_qp_data_in_order(qp, op, flags);
	QUERY_FWD(R.query_qp_data_in_order(rqp(qp), op, flags));
}

/* ------------------------------------------------------------------- AHs */

static struct ibv_ah *create_ah_common(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ibv_ah_attr a = *attr;
	struct ibv_ah *real = NULL;
	struct rdev *rd = NULL;
	struct sah *h;
	int g = gate_enter(0);

	if (S.translating)
		xl_ah_attr(&a, &rd);
	h = calloc(1, sizeof *h);
	if (h)
		real = R.create_ah(SPD(pd)->real, &a);
	else
		errno = ENOMEM;
	if (!real) {
		free(h);
		h = NULL;
	} else {
		h->real = real;
		h->pd = SPD(pd);
		h->attr = *attr;
		h->rdev = rd;
		h->v.context = pd->context;
		h->v.pd = pd;
		h->v.handle = real->handle;
		pthread_mutex_lock(&S.lock);
		list_add_tail(&S.ahs, &h->link);
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	return h ? &h->v : NULL;
}

EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	if (!IS_V(pd))
		return R.create_ah(pd, attr);
	return create_ah_common(pd, attr);
}

EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
			       struct ibv_wc *wc, struct ibv_grh *grh,
			       struct ibv_ah_attr *ah_attr)
{
	if (!is_vctx(context))
		return R.init_ah_from_wc(context, port_num, wc, grh, ah_attr);
	QUERY_FWD(R.init_ah_from_wc(SCTX(context)->real, port_num, wc, grh, ah_attr));
}

EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					    struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr a;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}

EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	struct sah *h = SAH(ah);
	int g, r = 0;

	if (!IS_V(ah))
		return R.destroy_ah(ah);
	g = gate_enter(0);
	if (h->real)
		r = R.destroy_ah(h->real);
	if (!r) {
		pthread_mutex_lock(&S.lock);
		list_del(&h->link);
		pthread_mutex_unlock(&S.lock);
		free(h);
	}
	gate_leave(g);
	return r;
}
