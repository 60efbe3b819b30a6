/* SPDX-License-Identifier: MIT */
/*
 * Test hooks: a restart in one process, without saver or loader
 * (tests/verbs/selftest.c), and the real numbers behind the virtual ones.
 */
#include <fcntl.h>
#include <unistd.h>

#include "ckpt.h"

/*
 * For tests without a saver/loader: with the process QUIESCED, destroy
 * every real verbs object and put at each recorded descriptor what the
 * restart-loader would (/dev/null; a pipe holding the wake events for
 * completion channels). cmd = RESTART then rebuilds. Returns 0 or errno.
 */
EXPORT int ibcr_verbs_test_teardown(void)
{
	struct list *p;
	uint32_t i;

	if (CTL.state != IBCR_VSTATE_QUIESCED)
		return EBUSY;
	pthread_mutex_lock(&S.lock);
	list_for(p, &S.ahs) {
		struct sah *h = container(p, struct sah, link);

		if (h->real)
			R.destroy_ah(h->real);
		h->real = NULL;
	}
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);

		R.destroy_qp(q->real);
		q->real = NULL;
	}
	list_for(p, &S.srqs) {
		struct ssrq *s = container(p, struct ssrq, link);

		R.destroy_srq(s->real);
		s->real = NULL;
	}
	list_for(p, &S.cqs) {
		struct scq *c = container(p, struct scq, link);

		if (c->ev_got > c->ev_acked)
			R.ack_cq_events(c->real, c->ev_got - c->ev_acked);
		R.destroy_cq(c->real);
		c->real = NULL;
	}
	list_for(p, &S.chans) {
		struct schan *ch = container(p, struct schan, link);

		R.destroy_comp_channel(ch->real);
		ch->real = NULL;
	}
	list_for(p, &S.mrs) {
		struct smr *m = container(p, struct smr, link);

		R.dereg_mr(m->real);
		m->real = NULL;
	}
	list_for(p, &S.pds) {
		struct spd *pd = container(p, struct spd, link);

		R.dealloc_pd(pd->real);
		pd->real = NULL;
	}
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);

		R.close_device(c->real);
		c->real = NULL;
	}
	for (i = 0; i < CTL.nfds; i++) {
		struct ibcr_verbs_fd *f = &CTL.fds[i];
		int fd = -1, pp[2];
		uint32_t k;

		if (f->kind == IBCR_VFD_COMP_CHANNEL && pipe(pp) == 0) {
			for (k = 0; k < f->nwake; k++) {
				uint64_t ev = f->wake_cq[k];

				if (write(pp[1], &ev, sizeof ev) != sizeof ev)
					break;
			}
			close(pp[1]);
			fd = pp[0];
		} else {
			fd = open("/dev/null", O_RDWR);
		}
		if (fd >= 0 && fd != f->fd) {
			dup2(fd, f->fd);
			close(fd);
		}
	}
	pthread_mutex_unlock(&S.lock);
	return 0;
}

EXPORT uint32_t ibcr_verbs_test_real_qpn(struct ibv_qp *qp)
{
	/* IS_V also answers for NULL; qp never is */
	if (IS_V(qp) && ((struct sqp *)qp)->real)
		return ((struct sqp *)qp)->real->qp_num;
	return qp->qp_num;	// cppcheck-suppress nullPointerRedundantCheck
}

EXPORT int ibcr_verbs_test_real_mr(struct ibv_mr *mr, uint32_t *lkey, uint32_t *rkey,
				   void **addr, size_t *length)
{
	struct ibv_mr *r = IS_V(mr) ? ((struct smr *)mr)->real : mr;

	if (!r)
		return ENOENT;
	*lkey = r->lkey;
	*rkey = r->rkey;
	*addr = r->addr;
	*length = r->length;
	return 0;
}

