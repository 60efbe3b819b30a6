/* SPDX-License-Identifier: MIT */
/*
 * The data path: post_send, post_recv, post_srq_recv, poll_cq and
 * req_notify_cq reached through the virtual context's ops, plus completion
 * and async events.
 *
 * Before any restart the shim passes the application's work requests to the
 * provider as they are (RC/UC), counting signaled sends and recording posted
 * receives. After a restart every WR is copied onto the stack with its
 * lkeys, rkeys, AH and remote QPN translated (small hash tables).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

HIDDEN struct ibv_context_ops shim_ops = {
	.poll_cq = shim_poll_cq,
	.req_notify_cq = shim_req_notify_cq,
	.post_srq_recv = shim_post_srq_recv,
	.post_send = shim_post_send,
	.post_recv = shim_post_recv,
};

#define CHUNK 32		/* WRs copied per real post call */
#define SGE_BUDGET 256		/* SGEs copied per real post call */

/* ------------------------------------------------------------ completions */

static inline struct rring *recv_ring(struct sqp *q)
{
	return q->srq ? &q->srq->ring : &q->ring;
}

/* Bookkeeping for completions taken from a real CQ; rewrites them into
 * what the application expects to see. */
void wc_account(struct scq *cq, struct ibv_wc *wc, int n)
{
	struct sctx *c = cq->ctx;
	int i, xl = S.translating;

	for (i = 0; i < n; i++) {
		struct ibv_wc *w = &wc[i];
		struct sqp *q;
		uint64_t v;

		if (unlikely(!ht_get(&c->qtab, w->qp_num, &v)))
			continue;
		q = (struct sqp *)(uintptr_t)v;
		if (likely(w->status == IBV_WC_SUCCESS)) {
			if (w->opcode & IBV_WC_RECV)
				ring_done_fast(recv_ring(q), w->wr_id, 0);
			else
				__atomic_fetch_add(&q->sends_done, 1, __ATOMIC_RELAXED);
		} else {
			/* The opcode is undefined in an error completion: a
			 * flushed receive is the head of its own queue. */
			q->errored = 1;
			if (q->srq || !ring_done(&q->ring, w->wr_id, 1))
				__atomic_fetch_add(&q->sends_done, 1, __ATOMIC_RELAXED);
		}
		if (unlikely(xl)) {
			w->qp_num = q->v.qp_num;
			if (q->v.qp_type == IBV_QPT_UD && (w->opcode & IBV_WC_RECV) &&
			    ht_get(&S.rev_qpn, w->src_qp, &v))
				w->src_qp = (uint32_t)v;
		}
	}
}

static int shadow_take(struct scq *cq, int n, struct ibv_wc *wc)
{
	int k = 0;

	while (k < n && cq->shadow_n) {
		wc[k++] = cq->shadow[cq->shadow_head];
		cq->shadow_head = (cq->shadow_head + 1) % cq->shadow_cap;
		cq->shadow_n--;
	}
	return k;
}

static int shadow_room(struct scq *cq)
{
	int cap, i;
	struct ibv_wc *n;

	if (cq->shadow_n < cq->shadow_cap)
		return 0;
	cap = cq->shadow_cap ? cq->shadow_cap * 2 : (cq->v.cqe > 15 ? cq->v.cqe + 1 : 16);
	n = malloc((size_t)cap * sizeof *n);
	if (!n)
		return ENOMEM;
	/* shadow_n <= shadow_cap: no entry to move while shadow_cap is 0 */
	for (i = 0; i < cq->shadow_n; i++)
		n[i] = cq->shadow[(cq->shadow_head + i) % cq->shadow_cap];	// NOLINT(clang-analyzer-core.DivideZero)
	free(cq->shadow);
	cq->shadow = n;
	cq->shadow_cap = cap;
	cq->shadow_head = 0;
	return 0;
}

/* Moves every completion of the real CQ into the shadow queue (cq->lock
 * held). Returns the number moved, or -1 when the real CQ failed. */
int cq_drain_locked(struct scq *cq)
{
	struct ibv_wc tmp[16];
	int total = 0, r, i;

	if (!cq->real)
		return 0;
	for (;;) {
		r = cq->rpoll(cq->real, 16, tmp);
		if (r < 0)
			return -1;
		if (r == 0)
			return total;
		wc_account(cq, tmp, r);
		for (i = 0; i < r; i++) {
			if (shadow_room(cq))
				return -1;
			cq->shadow[(cq->shadow_head + cq->shadow_n) % cq->shadow_cap] = tmp[i];
			cq->shadow_n++;
		}
		total += r;
	}
}

/* Quiescing, or completions drained at a checkpoint still wait: those
 * come first, in order, under the CQ lock. */
static __attribute__((noinline)) int poll_locked(struct scq *cq, int n, struct ibv_wc *wc)
{
	int got, r;

	spin_lock(&cq->lock);
	got = shadow_take(cq, n, wc);
	if (got < n) {
		r = cq->rpoll(cq->real, n - got, wc + got);
		if (r > 0) {
			wc_account(cq, wc + got, r);
			got += r;
		} else if (r < 0 && got == 0) {
			got = r;
		}
	}
	spin_unlock(&cq->lock);
	return got;
}

int shim_poll_cq(struct ibv_cq *vcq, int n, struct ibv_wc *wc)
{
	struct scq *cq = (struct scq *)vcq;
	int g = gate_enter(1), r;

	if (unlikely(g == GATE_SLOW || cq->shadow_n)) {
		r = poll_locked(cq, n, wc);
		gate_leave(g);
		return r;
	}
	r = cq->rpoll(cq->real, n, wc);
	if (r > 0)
		wc_account(cq, wc, r);
	gate_leave(g);
	return r;
}

int shim_req_notify_cq(struct ibv_cq *vcq, int solicited_only)
{
	struct scq *cq = (struct scq *)vcq;
	int g = gate_enter(1), r;

	r = cq->real->context->ops.req_notify_cq(cq->real, solicited_only);
	if (!r) {
		cq->armed = 1;
		cq->solicited = solicited_only;
	}
	gate_leave(g);
	return r;
}

/* ------------------------------------------------------------------ sends */

static inline void count_sends(struct sqp *q, struct ibv_send_wr *wr,
			       struct ibv_send_wr *stop)
{
	uint64_t n = 0;
	int all = q->init.sq_sig_all, unsig = -1;

	for (; wr && wr != stop; wr = wr->next) {
		if (all || (wr->send_flags & IBV_SEND_SIGNALED)) {
			n++;
			unsig = 0;
		} else {
			unsig = 1;
		}
	}
	if (n)
		__atomic_fetch_add(&q->sends_posted, n, __ATOMIC_RELAXED);
	if (unsig >= 0)
		q->tail_unsig = unsig;
}

static inline uint32_t xl_rkey(struct sqp *q, uint32_t k)
{
	uint64_t v;
	struct rdev *rd = q->rdev;

	return rd && ht_get(&rd->rkey, k, &v) ? (uint32_t)v : k;
}

/* Copies (and, after a restart, translates) the WR list chunk by chunk. */
static __attribute__((noinline)) int post_send_copy(struct sqp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct ibv_send_wr w[CHUNK], *orig[CHUNK], *b;
	struct ibv_sge sg[SGE_BUDGET];
	int xl = S.translating, r, n, ns, i, j;

	while (wr) {
		for (n = 0, ns = 0; wr && n < CHUNK; wr = wr->next, n++) {
			struct ibv_send_wr *d = &w[n];

			if (wr->num_sge < 0 || wr->num_sge > SGE_BUDGET - ns) {
				if (n)
					break;
				*bad = wr;
				return EINVAL;
			}
			*d = *wr;
			orig[n] = wr;
			if (wr->num_sge) {
				d->sg_list = &sg[ns];
				memcpy(d->sg_list, wr->sg_list, (size_t)wr->num_sge * sizeof *sg);
				if (xl && !(wr->send_flags & IBV_SEND_INLINE))
					for (j = 0; j < wr->num_sge; j++)
						sg[ns + j].lkey = xl_lkey(q->ctx, sg[ns + j].lkey);
				ns += wr->num_sge;
			}
			if (q->v.qp_type == IBV_QPT_UD) {
				struct ibv_ah *ah = wr->wr.ud.ah;

				if (IS_V(ah)) {
					struct sah *h = (struct sah *)ah;

					if (xl)
						d->wr.ud.remote_qpn = ud_remote_qpn(h, wr->wr.ud.remote_qpn);
					d->wr.ud.ah = ud_real_ah(h);
					if (!d->wr.ud.ah) {
						*bad = wr;
						return EINVAL;
					}
				}
			} else if (xl) {
				switch (wr->opcode) {
				case IBV_WR_RDMA_WRITE:
				case IBV_WR_RDMA_WRITE_WITH_IMM:
				case IBV_WR_RDMA_READ:
					d->wr.rdma.rkey = xl_rkey(q, wr->wr.rdma.rkey);
					break;
				case IBV_WR_ATOMIC_CMP_AND_SWP:
				case IBV_WR_ATOMIC_FETCH_AND_ADD:
					d->wr.atomic.rkey = xl_rkey(q, wr->wr.atomic.rkey);
					break;
				default:
					break;
				}
			}
		}
		for (i = 0; i < n; i++)
			w[i].next = i + 1 < n ? &w[i + 1] : NULL;
		b = NULL;
		r = q->rpost_send(q->real, w, &b);
		if (r) {
			count_sends(q, w, b);
			for (i = 0; i < n; i++)
				if (b == &w[i])
					break;
			*bad = i < n ? orig[i] : orig[0];
			return r;
		}
		count_sends(q, w, NULL);
	}
	return 0;
}

int shim_post_send(struct ibv_qp *vqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sqp *q = (struct sqp *)vqp;
	struct ibv_send_wr *b = NULL;
	int g = gate_enter(0), r;

	if (likely(!S.translating && q->v.qp_type != IBV_QPT_UD)) {
		r = q->rpost_send(q->real, wr, &b);
		count_sends(q, wr, r ? b : NULL);
		if (r)
			*bad = b;
	} else {
		r = post_send_copy(q, wr, bad);
	}
	gate_leave(g);
	return r;
}

/* --------------------------------------------------------------- receives */

typedef int (*rpost_fn)(void *obj, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

static int post_recv_real(void *real, int srq, void *fn, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	if (srq)
		return ((int (*)(struct ibv_srq *, struct ibv_recv_wr *,
				 struct ibv_recv_wr **))fn)(real, wr, bad);
	return ((int (*)(struct ibv_qp *, struct ibv_recv_wr *,
			 struct ibv_recv_wr **))fn)(real, wr, bad);
}

/* Posts a translated copy; *posted gets how many WRs went in. */
static int post_recv_copy(struct sctx *c, void *real, int srq, void *fn,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad, uint32_t *posted)
{
	struct ibv_recv_wr w[CHUNK], *orig[CHUNK], *b;
	struct ibv_sge sg[SGE_BUDGET];
	int r, n, ns, i, j;

	*posted = 0;
	while (wr) {
		for (n = 0, ns = 0; wr && n < CHUNK; wr = wr->next, n++) {
			if (wr->num_sge < 0 || wr->num_sge > SGE_BUDGET - ns) {
				if (n)
					break;
				*bad = wr;
				return EINVAL;
			}
			w[n] = *wr;
			orig[n] = wr;
			if (wr->num_sge) {
				w[n].sg_list = &sg[ns];
				for (j = 0; j < wr->num_sge; j++) {
					sg[ns + j] = wr->sg_list[j];
					sg[ns + j].lkey = xl_lkey(c, sg[ns + j].lkey);
				}
				ns += wr->num_sge;
			}
		}
		for (i = 0; i < n; i++)
			w[i].next = i + 1 < n ? &w[i + 1] : NULL;
		b = NULL;
		r = post_recv_real(real, srq, fn, w, &b);
		if (r) {
			for (i = 0; i < n; i++)
				if (b == &w[i])
					break;
			if (i == n)
				i = 0;
			*posted += (uint32_t)i;
			*bad = orig[i];
			return r;
		}
		*posted += (uint32_t)n;
	}
	return 0;
}

static int recv_common(struct rring *ring, struct sctx *c, void *real, int srq, void *fn,
		       struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr *w, *b = NULL;
	uint32_t start, posted = 0;
	int r;

	spin_lock(&ring->lock);
	start = ring->count;
	for (w = wr; w; w = w->next) {
		r = ring_push_fast(ring, w);
		if (r) {
			ring_truncate(ring, start);
			spin_unlock(&ring->lock);
			*bad = wr;
			return r;
		}
	}
	if (likely(!S.translating)) {
		r = post_recv_real(real, srq, fn, wr, &b);
		if (r) {
			for (w = wr; w && w != b; w = w->next)
				posted++;
			*bad = b ? b : wr;
		}
	} else {
		r = post_recv_copy(c, real, srq, fn, wr, bad, &posted);
	}
	if (r)
		ring_truncate(ring, start + posted);
	spin_unlock(&ring->lock);
	return r;
}

int shim_post_recv(struct ibv_qp *vqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sqp *q = (struct sqp *)vqp;
	int g = gate_enter(1), r;

	if (unlikely(q->srq)) {
		struct ibv_recv_wr *b = NULL;

		r = q->rpost_recv(q->real, wr, &b);	/* the provider refuses */
		if (r)
			*bad = b ? b : wr;
	} else {
		r = recv_common(&q->ring, q->ctx, q->real, 0, (void *)q->rpost_recv, wr, bad);
	}
	gate_leave(g);
	return r;
}

int shim_post_srq_recv(struct ibv_srq *vsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	struct ssrq *s = (struct ssrq *)vsrq;
	int g = gate_enter(1), r;

	r = recv_common(&s->ring, s->ctx, s->real, 1, (void *)s->rpost, wr, bad);
	gate_leave(g);
	return r;
}

/* Re-posts what a ring holds (rebuild; nothing else runs). */
int repost_ring(struct rring *r, void *obj, int srq)
{
	struct ibv_recv_wr w[CHUNK], *b;
	struct ibv_sge sg[SGE_BUDGET];
	struct sctx *c = srq ? ((struct ssrq *)obj)->ctx : ((struct sqp *)obj)->ctx;
	void *real = srq ? (void *)((struct ssrq *)obj)->real : (void *)((struct sqp *)obj)->real;
	void *fn = srq ? (void *)((struct ssrq *)obj)->rpost : (void *)((struct sqp *)obj)->rpost_recv;
	uint32_t i = 0, j;
	int n, ns, k, e;

	while (i < r->count) {
		for (n = 0, ns = 0; i < r->count && n < CHUNK; i++, n++) {
			struct rslot *s = ring_at(r, i);

			if ((int)s->num_sge > SGE_BUDGET - ns)
				break;
			memset(&w[n], 0, sizeof w[n]);
			w[n].wr_id = s->wr_id;
			w[n].num_sge = (int)s->num_sge;
			w[n].sg_list = &sg[ns];
			for (j = 0; j < s->num_sge; j++) {
				sg[ns + j] = s->sge[j];
				sg[ns + j].lkey = xl_lkey(c, s->sge[j].lkey);
			}
			ns += (int)s->num_sge;
		}
		for (k = 0; k < n; k++)
			w[k].next = k + 1 < n ? &w[k + 1] : NULL;
		b = NULL;
		e = post_recv_real(real, srq, fn, w, &b);
		if (e)
			return e;
	}
	return 0;
}

/* ------------------------------------------------------ completion events */

static void chan_switch(struct schan *ch)
{
	/* The restore's stand-in has served: the real channel takes the
	 * application's descriptor number. */
	if (dup2(ch->real->fd, ch->v.fd) < 0)
		warnx_("dup2 of completion channel fd %d: %m", ch->v.fd);
	else
		epoll_readd(ch->v.fd);
	if (ch->pend_wr >= 0)
		close(ch->pend_wr);
	ch->pend_wr = -1;
	ch->switch_pending = 0;
}

EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
			    void **cq_context)
{
	struct schan *ch = (struct schan *)channel;
	struct scq *c = NULL;

	if (!IS_V(channel))
		return R.get_cq_event(channel, cq, cq_context);
	for (;;) {
		struct ibv_comp_channel *rch;
		struct ibv_cq *rcq;
		struct pollfd p;
		void *rctx;
		int nb, r;

		if (g_mode == GATE_CLOSED) {
			futex_wait(&g_mode, GATE_CLOSED, 100);
			continue;
		}
		pthread_mutex_lock(&ch->rd_lock);
		if (g_mode == GATE_CLOSED) {
			pthread_mutex_unlock(&ch->rd_lock);
			continue;
		}
		if (ch->npend) {
			c = ch->pend[0];
			memmove(ch->pend, ch->pend + 1,
				(size_t)(ch->npend - 1) * sizeof *ch->pend);	// NOLINT(bugprone-sizeof-expression): of pointers
			ch->npend--;
			if (!ch->npend && ch->switch_pending)
				chan_switch(ch);
			pthread_mutex_unlock(&ch->rd_lock);
			break;
		}
		if (ch->switch_pending)
			chan_switch(ch);
		nb = fcntl(ch->v.fd, F_GETFL);
		nb = nb >= 0 && (nb & O_NONBLOCK);
		/* Wait with a timeout: a rebuild may replace the descriptor
		 * under us, and drained events may appear in ch->pend. */
		rch = ch->real;
		p.fd = rch->fd;
		p.events = POLLIN;
		p.revents = 0;
		r = poll(&p, 1, nb ? 0 : 100);
		if (r <= 0 || g_mode == GATE_CLOSED || rch != ch->real) {
			pthread_mutex_unlock(&ch->rd_lock);
			if (r == 0 && nb) {
				errno = EAGAIN;
				return -1;
			}
			continue;
		}
		r = R.get_cq_event(ch->real, &rcq, &rctx);
		pthread_mutex_unlock(&ch->rd_lock);
		if (r)
			return r;
		c = rctx;
		__atomic_fetch_add(&c->ev_got, 1, __ATOMIC_RELAXED);
		break;
	}
	c->armed = 0;
	*cq = &c->v;
	*cq_context = c->v.cq_context;
	return 0;
}

EXPORT void ibv_ack_cq_events(struct ibv_cq *vcq, unsigned int nevents)
{
	struct scq *c = (struct scq *)vcq;
	unsigned int k;
	int g;

	if (!IS_V(vcq)) {
		R.ack_cq_events(vcq, nevents);
		return;
	}
	g = gate_enter(1);
	spin_lock(&c->lock);
	/* Events taken from a real CQ that a restart replaced are not
	 * acknowledged to the new one. */
	k = nevents < c->ev_old ? nevents : c->ev_old;
	c->ev_old -= k;
	nevents -= k;
	c->ev_acked += nevents;
	spin_unlock(&c->lock);
	if (nevents)
		R.ack_cq_events(c->real, nevents);
	gate_leave(g);
}

/* ------------------------------------------------------------ async events */

static uint32_t *async_old_of(struct ibv_async_event *e, uint32_t **unacked)
{
	switch (e->event_type) {
	case IBV_EVENT_CQ_ERR:
		if (!IS_V(e->element.cq))
			return NULL;
		*unacked = &((struct scq *)e->element.cq)->async_unacked;
		return &((struct scq *)e->element.cq)->async_old;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		if (!IS_V(e->element.qp))
			return NULL;
		*unacked = &((struct sqp *)e->element.qp)->async_unacked;
		return &((struct sqp *)e->element.qp)->async_old;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		if (!IS_V(e->element.srq))
			return NULL;
		*unacked = &((struct ssrq *)e->element.srq)->async_unacked;
		return &((struct ssrq *)e->element.srq)->async_old;
	default:
		return NULL;
	}
}

EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sctx *c = container(context, struct sctx, vx.context);
	uint32_t *old, *unacked;

	if (!is_vctx(context))
		return R.get_async_event(context, event);
	for (;;) {
		struct ibv_context *rc;
		struct pollfd p;
		int nb, r;

		if (g_mode == GATE_CLOSED) {
			futex_wait(&g_mode, GATE_CLOSED, 100);
			continue;
		}
		pthread_mutex_lock(&c->async_lock);
		if (g_mode == GATE_CLOSED) {
			pthread_mutex_unlock(&c->async_lock);
			continue;
		}
		nb = fcntl(c->vx.context.async_fd, F_GETFL);
		nb = nb >= 0 && (nb & O_NONBLOCK);
		rc = c->real;
		p.fd = rc->async_fd;
		p.events = POLLIN;
		p.revents = 0;
		r = poll(&p, 1, nb ? 0 : 100);
		if (r <= 0 || g_mode == GATE_CLOSED || rc != c->real) {
			pthread_mutex_unlock(&c->async_lock);
			if (r == 0 && nb) {
				errno = EAGAIN;
				return -1;
			}
			continue;
		}
		r = R.get_async_event(c->real, event);
		pthread_mutex_unlock(&c->async_lock);
		if (r)
			return r;
		break;
	}
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		event->element.cq = &((struct scq *)event->element.cq->cq_context)->v;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		event->element.qp = &((struct sqp *)event->element.qp->qp_context)->v;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		event->element.srq = &((struct ssrq *)event->element.srq->srq_context)->v;
		/* the limit fired and is disarmed: a rebuild must not re-arm it */
		if (event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			((struct ssrq *)event->element.srq)->attr.srq_limit = 0;
		break;
	default:
		break;
	}
	old = async_old_of(event, &unacked);
	if (old)
		__atomic_fetch_add(unacked, 1, __ATOMIC_RELAXED);
	return 0;
}

EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct ibv_async_event e = *event;
	uint32_t *old, *unacked;

	old = async_old_of(event, &unacked);
	if (!old) {
		R.ack_async_event(event);
		return;
	}
	pthread_mutex_lock(&S.lock);
	if (*old) {
		/* An event of a real object a restart replaced. */
		(*old)--;
		pthread_mutex_unlock(&S.lock);
		return;
	}
	if (*unacked)
		(*unacked)--;
	pthread_mutex_unlock(&S.lock);
	switch (e.event_type) {
	case IBV_EVENT_CQ_ERR:
		e.element.cq = ((struct scq *)event->element.cq)->real;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		e.element.srq = ((struct ssrq *)event->element.srq)->real;
		break;
	default:
		e.element.qp = ((struct sqp *)event->element.qp)->real;
		break;
	}
	R.ack_async_event(&e);
}
