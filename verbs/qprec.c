/* SPDX-License-Identifier: MIT */
/*
 * QP state records: every successful modify_qp merged into the record of
 * the state it moved to (or stayed in), for the replay after a restart.
 */
#include <string.h>

#include "ckpt.h"

static void merge(struct qrec *r, const struct ibv_qp_attr *a, int m)
{
	struct ibv_qp_attr *d = &r->attr;

	r->mask |= m;
	if (m & IBV_QP_STATE)
		d->qp_state = a->qp_state;
	if (m & IBV_QP_CUR_STATE)
		d->cur_qp_state = a->cur_qp_state;
	if (m & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		d->en_sqd_async_notify = a->en_sqd_async_notify;
	if (m & IBV_QP_ACCESS_FLAGS)
		d->qp_access_flags = a->qp_access_flags;
	if (m & IBV_QP_PKEY_INDEX)
		d->pkey_index = a->pkey_index;
	if (m & IBV_QP_PORT)
		d->port_num = a->port_num;
	if (m & IBV_QP_QKEY)
		d->qkey = a->qkey;
	if (m & IBV_QP_AV)
		d->ah_attr = a->ah_attr;
	if (m & IBV_QP_PATH_MTU)
		d->path_mtu = a->path_mtu;
	if (m & IBV_QP_TIMEOUT)
		d->timeout = a->timeout;
	if (m & IBV_QP_RETRY_CNT)
		d->retry_cnt = a->retry_cnt;
	if (m & IBV_QP_RNR_RETRY)
		d->rnr_retry = a->rnr_retry;
	if (m & IBV_QP_RQ_PSN)
		d->rq_psn = a->rq_psn;
	if (m & IBV_QP_MAX_QP_RD_ATOMIC)
		d->max_rd_atomic = a->max_rd_atomic;
	if (m & IBV_QP_ALT_PATH) {
		d->alt_ah_attr = a->alt_ah_attr;
		d->alt_pkey_index = a->alt_pkey_index;
		d->alt_port_num = a->alt_port_num;
		d->alt_timeout = a->alt_timeout;
	}
	if (m & IBV_QP_MIN_RNR_TIMER)
		d->min_rnr_timer = a->min_rnr_timer;
	if (m & IBV_QP_SQ_PSN)
		d->sq_psn = a->sq_psn;
	if (m & IBV_QP_MAX_DEST_RD_ATOMIC)
		d->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (m & IBV_QP_PATH_MIG_STATE)
		d->path_mig_state = a->path_mig_state;
	if (m & IBV_QP_CAP)
		d->cap = a->cap;
	if (m & IBV_QP_DEST_QPN)
		d->dest_qp_num = a->dest_qp_num;
	if (m & IBV_QP_RATE_LIMIT)
		d->rate_limit = a->rate_limit;
}

/* A successful modify_qp (S.lock held): what a replay needs. */
void qp_record_modify(struct sqp *q, struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_STATE) {
		int s = attr->qp_state;

		if (s == IBV_QPS_RESET) {
			/* RESET discards posted work without completions. */
			memset(q->rec, 0, sizeof q->rec);
			q->cur_state = s;
			q->has_remote = 0;
			q->errored = 0;
			q->sends_posted = q->sends_done = 0;
			q->tail_unsig = 0;
			if (!q->srq) {
				spin_lock(&q->ring.lock);
				q->ring.count = 0;
				spin_unlock(&q->ring.lock);
			}
			return;
		}
		if (s >= IBV_QPS_INIT && s <= IBV_QPS_SQD)
			merge(&q->rec[s], attr, mask);
		q->cur_state = s;
	} else if (q->cur_state >= IBV_QPS_INIT && q->cur_state <= IBV_QPS_SQD) {
		merge(&q->rec[q->cur_state], attr, mask);
	}
	if ((q->v.qp_type == IBV_QPT_RC || q->v.qp_type == IBV_QPT_UC) &&
	    (mask & (IBV_QP_AV | IBV_QP_DEST_QPN))) {
		const struct ibv_ah_attr *ah = &q->rec[IBV_QPS_RTR].attr.ah_attr;
		int port = ah->port_num ? ah->port_num : q->rec[IBV_QPS_INIT].attr.port_num;

		if (!(q->rec[IBV_QPS_RTR].mask & IBV_QP_AV) ||
		    !(q->rec[IBV_QPS_RTR].mask & IBV_QP_DEST_QPN))
			return;
		memset(&q->remote_addr, 0, sizeof q->remote_addr);
		q->remote_addr.port = (uint8_t)port;
		if (ah->is_global) {
			q->remote_addr.kind = VADDR_GID;
			q->remote_addr.gid = ah->grh.dgid;
		} else {
			q->remote_addr.kind = VADDR_LID;
			q->remote_addr.lid = ah->dlid;
		}
		q->remote_qpn = q->rec[IBV_QPS_RTR].attr.dest_qp_num;
		addr_of_port(q->ctx, port, ah->grh.sgid_index, ah->is_global, &q->my_addr);
		q->has_remote = 1;
	}
}

