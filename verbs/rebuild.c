/* SPDX-License-Identifier: MIT */
/*
 * The rebuild after a restart: device, PDs, MRs at the same addresses,
 * channels, CQs, SRQs, QPs, the rendezvous with the peers, the state
 * replay, the receives re-posted, the AHs (docs/verbs.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"

static void move_fd(int newfd, int appfd, int *extra, const char *what)
{
	if (*extra >= 0 && *extra != newfd && *extra != appfd)
		close(*extra);	/* the previous real number: a stand-in now */
	*extra = -1;
	if (newfd == appfd)
		return;
	if (dup2(newfd, appfd) < 0)
		fatal(errno, "restart: dup2 of the new %s fd %d onto %d: %s", what, newfd, appfd,
		      strerror(errno));
	if (epoll_readd(appfd))
		fatal(errno, "restart: the program's epoll cannot watch its %s fd %d again",
		      what, appfd);
	*extra = newfd;
}

static struct ibv_device *find_device(const char *name, struct ibv_device ***list)
{
	int n = 0, i;
	struct ibv_device **l = R.get_device_list(&n);

	*list = l;
	if (!l)
		fatal(errno, "restart: no RDMA devices (ibv_get_device_list: %s); %s was in use",
		      strerror(errno), name);
	for (i = 0; i < n; i++)
		if (!strcmp(R.get_device_name(l[i]), name))
			return l[i];
	fatal(ENODEV, "restart: RDMA device %s not found (%d device%s present)", name, n,
	      n == 1 ? "" : "s");
}

static void replay_qp(struct sqp *q)
{
	static const int order[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD };
	int target = q->cur_state, i, r;

	if (target == IBV_QPS_RESET)
		return;
	for (i = 0; i < 4; i++) {
		int s = order[i];
		struct ibv_qp_attr a;
		int mask;

		if (target != IBV_QPS_ERR && target != IBV_QPS_SQE && s > target)
			break;
		if (target == IBV_QPS_SQE && s > IBV_QPS_RTS)
			break;
		if (!(q->rec[s].mask & IBV_QP_STATE))
			break;
		a = q->rec[s].attr;
		mask = q->rec[s].mask & ~IBV_QP_CUR_STATE;
		if (mask & IBV_QP_AV) {
			struct rdev *rd = NULL;

			xl_ah_attr(&a.ah_attr, &rd);
			if (rd)
				q->rdev = rd;
		}
		if (mask & IBV_QP_ALT_PATH)
			xl_ah_attr(&a.alt_ah_attr, NULL);
		if (mask & IBV_QP_DEST_QPN) {
			uint64_t v;

			if (!q->rdev || !ht_get(&q->rdev->qpn, a.dest_qp_num, &v))
				fatal(ENOENT, "restart: QP 0x%x: its peer did not publish QP 0x%x",
				      q->v.qp_num, a.dest_qp_num);
			a.dest_qp_num = (uint32_t)v;
		}
		r = R.modify_qp(q->real, &a, mask);
		if (r)
			fatal(r, "restart: QP 0x%x (now 0x%x): replaying the move to state %d: %s",
			      q->v.qp_num, q->real->qp_num, s, strerror(r));
	}
	if (target == IBV_QPS_ERR) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		R.modify_qp(q->real, &a, IBV_QP_STATE);
	}
	q->v.state = (enum ibv_qp_state)target;
}

/*
 * A channel whose drained events are still to be delivered keeps a pipe
 * at its number, readable while they wait. The restore's stand-in has
 * no writer: once read empty it reports EOF (EPOLLHUP) for ever, and
 * UCX, which watches its channels but never reads them, then spins in
 * epoll_wait. The shim's own pipe keeps its write end (pend_wr) until
 * the switch; it holds one event (the new real CQ) per drained one.
 */
static void chan_standin(struct schan *ch)
{
	int p[2], k;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		fatal(errno, "restart: completion channel fd %d: a pipe: %s", ch->v.fd,
		      strerror(errno));
	for (k = 0; k < ch->npend; k++) {
		uint64_t ev = (uintptr_t)ch->pend[k]->real;

		if (write(p[1], &ev, sizeof ev) != (ssize_t)sizeof ev)
			break;	/* full: readable all the same */
	}
	if (dup2(p[0], ch->v.fd) < 0)
		fatal(errno, "restart: dup2 onto completion channel fd %d: %s", ch->v.fd,
		      strerror(errno));
	close(p[0]);
	if (epoll_readd(ch->v.fd))
		fatal(errno, "restart: the program's epoll cannot watch its completion channel "
		      "fd %d again", ch->v.fd);
	ch->pend_wr = p[1];
}

/* Contexts: reopen by name, the new descriptors onto the old numbers. */
static void rebuild_contexts(void)
{
	struct list *p;

	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);
		struct ibv_device **l;
		struct ibv_device *d = find_device(c->name, &l);
		struct ibv_context *real = R.open_device(d);

		if (!real)
			fatal(errno, "restart: cannot open RDMA device %s: %s", c->name,
			      strerror(errno));
		R.free_device_list(l);
		move_fd(real->cmd_fd, c->vx.context.cmd_fd, &c->extra_cmd_fd, "device");
		move_fd(real->async_fd, c->vx.context.async_fd, &c->extra_async_fd, "async event");
		if (c->async_flags > 0)
			fcntl(c->vx.context.async_fd, F_SETFL, c->async_flags);
		c->real = real;
		c->vx.context.num_comp_vectors = real->num_comp_vectors;
		capture_ports(c, 0);
		ht_clear(&c->qtab);
		ht_clear(&c->lkey);
	}
}

/* PDs, and MRs at the same addresses and lengths (the memory is back). */
static void rebuild_pds_mrs(void)
{
	struct list *p;

	list_for(p, &S.pds) {
		struct spd *pd = container(p, struct spd, link);

		pd->real = R.alloc_pd(pd->ctx->real);
		if (!pd->real)
			fatal(errno, "restart: alloc_pd on %s: %s", pd->ctx->name, strerror(errno));
	}
	list_for(p, &S.mrs) {
		struct smr *m = container(p, struct smr, link);
		struct ibv_pd *pd = m->pd->real;

		if (m->how == MR_REG)
			m->real = R.reg_mr(pd, m->v.addr, m->v.length, (int)m->access);
		else
			m->real = R.reg_mr_iova2(pd, m->v.addr, m->v.length, m->iova, m->access);
		if (!m->real)
			fatal(errno, "restart: re-registering the MR at %p (%zu bytes): %s",
			      m->v.addr, m->v.length, strerror(errno));
		if (m->real->lkey != m->v.lkey)
			ht_put(&m->pd->ctx->lkey, m->v.lkey, m->real->lkey);
		dbg("mr %p+%zu lkey 0x%x->0x%x rkey 0x%x->0x%x", m->v.addr, m->v.length,
		    m->v.lkey, m->real->lkey, m->v.rkey, m->real->rkey);
	}
}

/* The new channel's descriptor at the old number, or a stand-in there. */
static void rebuild_channel(struct schan *ch)
{
	ch->real = R.create_comp_channel(ch->ctx->real);
	if (!ch->real)
		fatal(errno, "restart: create_comp_channel: %s", strerror(errno));
	if (ch->extra_fd >= 0 && ch->extra_fd != ch->real->fd && ch->extra_fd != ch->v.fd)
		close(ch->extra_fd);
	if (ch->pend_wr >= 0)
		close(ch->pend_wr);	/* the last restart's: a stand-in now */
	ch->pend_wr = -1;
	ch->extra_fd = ch->real->fd != ch->v.fd ? ch->real->fd : -1;
	if (ch->fd_flags > 0)
		fcntl(ch->real->fd, F_SETFL, ch->fd_flags);
	/* With drained events still to deliver, the stand-in (readable)
	 * stays at the application's number until they are taken. */
	ch->switch_pending = 1;
	if (!ch->npend && ch->extra_fd >= 0) {
		if (dup2(ch->real->fd, ch->v.fd) < 0)
			fatal(errno, "restart: dup2 onto completion channel fd %d: %s",
			      ch->v.fd, strerror(errno));
		if (epoll_readd(ch->v.fd))
			fatal(errno, "restart: the program's epoll cannot watch its "
			      "completion channel fd %d again", ch->v.fd);
		ch->switch_pending = 0;
	} else if (ch->extra_fd < 0) {
		ch->switch_pending = 0;
	}
}

/* CQs on their new channels, re-armed; then the channels' stand-ins. */
static void rebuild_cqs(void)
{
	struct list *p;

	list_for(p, &S.cqs) {
		struct scq *c = container(p, struct scq, link);

		c->real = R.create_cq(c->ctx->real, c->cqe_req, c, c->chan ? c->chan->real : NULL,
				      c->comp_vector);
		if (!c->real)
			fatal(errno, "restart: create_cq (%d entries): %s", c->cqe_req,
			      strerror(errno));
		c->rpoll = c->real->context->ops.poll_cq;
		c->v.handle = c->real->handle;
		c->ev_old += c->ev_got - c->ev_acked;
		c->ev_got = c->ev_acked = 0;
		c->async_old += c->async_unacked;
		c->async_unacked = 0;
		if (c->armed)
			c->real->context->ops.req_notify_cq(c->real, c->solicited);
	}
	list_for(p, &S.chans) {
		struct schan *ch = container(p, struct schan, link);

		if (ch->switch_pending)
			chan_standin(ch);
	}
}

/* SRQs (their limit is set once refilled) and QPs, still in RESET. */
static void rebuild_srqs_qps(void)
{
	struct list *p;

	list_for(p, &S.srqs) {
		struct ssrq *s = container(p, struct ssrq, link);
		struct ibv_srq_init_attr a = { .srq_context = s, .attr = s->attr };

		a.attr.srq_limit = 0;
		s->real = R.create_srq(s->pd->real, &a);
		if (!s->real)
			fatal(errno, "restart: create_srq: %s", strerror(errno));
		s->rpost = s->real->context->ops.post_srq_recv;
		s->v.handle = s->real->handle;
		s->async_old += s->async_unacked;
		s->async_unacked = 0;
	}
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);
		struct ibv_qp_init_attr a = q->init;

		a.qp_context = q;
		a.send_cq = q->scq->real;
		a.recv_cq = q->rcq->real;
		a.srq = q->srq ? q->srq->real : NULL;
		q->real = R.create_qp(q->pd->real, &a);
		if (!q->real)
			fatal(errno, "restart: create_qp for QP 0x%x: %s", q->v.qp_num,
			      strerror(errno));
		q->rpost_send = q->real->context->ops.post_send;
		q->rpost_recv = q->real->context->ops.post_recv;
		q->v.handle = q->real->handle;
		q->sends_posted = q->sends_done = 0;
		q->tail_unsig = 0;
		q->rdev = NULL;
		q->async_old += q->async_unacked;
		q->async_unacked = 0;
		ht_put(&q->ctx->qtab, q->real->qp_num, (uintptr_t)q);
		dbg("qp 0x%x -> 0x%x", q->v.qp_num, q->real->qp_num);
	}
}

/* Every QP's transitions replayed with translated attributes. */
static void replay_all(void)
{
	struct list *p;

	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);

		if (q->has_remote)
			q->rdev = rdev_find(&q->remote_addr);
		replay_qp(q);
	}
}

/* Receives posted before the checkpoint and not completed; then the AHs. */
static void repost_all(void)
{
	struct list *p;

	list_for(p, &S.srqs) {
		struct ssrq *s = container(p, struct ssrq, link);
		int r;

		if (s->attr.srq_limit) {
			struct ibv_srq_attr a = { .srq_limit = s->attr.srq_limit };

			R.modify_srq(s->real, &a, IBV_SRQ_LIMIT);
		}
		r = repost_ring(&s->ring, s, 1);
		if (r)
			fatal(r, "restart: re-posting %u SRQ receives: %s", s->ring.count,
			      strerror(r));
	}
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);
		int r;

		if (q->srq || q->cur_state < IBV_QPS_INIT || q->cur_state > IBV_QPS_SQD)
			continue;
		r = repost_ring(&q->ring, q, 0);
		if (r)
			fatal(r, "restart: QP 0x%x: re-posting %u receives: %s", q->v.qp_num,
			      q->ring.count, strerror(r));
		dbg("qp 0x%x: %u receives re-posted", q->v.qp_num, q->ring.count);
	}
	list_for(p, &S.ahs) {
		struct sah *h = container(p, struct sah, link);

		h->real = NULL;
		h->rdev = NULL;
		if (!ah_recreate(h))
			dbg("AH not recreated yet: %s", strerror(errno));
	}
}

/*
 * After a restore: every object again, in dependency order, then the two
 * rendezvous rounds with the peers around the replay (the replay needs the
 * peers' new QPNs; the peers must not send before this end has receives).
 */
void rebuild(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline;
	struct list *p;
	char why[300];

	S.restart_start_ns = now_ns(CLOCK_REALTIME);
	deadline = t0 + restart_timeout() * 1000000ull;
	membarrier_setup();
	rdv_prepare();
	pthread_mutex_lock(&S.lock);
	if (cm_rebuild(why, sizeof(why)))
		fatal(errno, "%s", why);
	rebuild_contexts();
	rebuild_pds_mrs();
	list_for(p, &S.chans)
		rebuild_channel(container(p, struct schan, link));
	rebuild_cqs();
	rebuild_srqs_qps();

	rdv_forget_peers();
	rdv_publish(RDV_RC);
	rdv_mark(RDV_RC);
	pthread_mutex_unlock(&S.lock);
	rdv_await(RDV_RC, deadline);
	pthread_mutex_lock(&S.lock);

	replay_all();
	repost_all();
	S.translating = 1;

	rdv_publish(RDV_READY);
	rdv_mark(RDV_READY);
	pthread_mutex_unlock(&S.lock);
	rdv_await(RDV_READY, deadline);
	pthread_mutex_lock(&S.lock);
	ctl_update_fds();
	S.epoch_rebuilt = CTL.epoch;
	pthread_mutex_unlock(&S.lock);
	dbg("rebuilt in %llu ms", (unsigned long long)((now_ns(CLOCK_MONOTONIC) - t0) / 1000000));
}
