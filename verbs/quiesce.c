/* SPDX-License-Identifier: MIT */
/*
 * The two-phase quiesce (docs/verbs.md): sends first (every signaled send
 * completed while receives go on), then the gate closed, the completion
 * queues and channels drained and the descriptors recorded for the saver.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>

#include "ckpt.h"

static int wait_gate(int slow_too, uint64_t deadline)
{
	while (gate_busy(slow_too)) {
		if (now_ns(CLOCK_MONOTONIC) > deadline)
			return -1;
		sched_yield();
		sleep_ms(1);
	}
	return 0;
}

static int drain_all_cqs(void)
{
	struct list *p;
	int n = 0, r;

	list_for(p, &S.cqs) {
		struct scq *c = container(p, struct scq, link);

		spin_lock(&c->lock);
		r = cq_drain_locked(c);
		spin_unlock(&c->lock);
		if (r < 0)
			return -1;
		n += r;
	}
	return n;
}

int quiesce_sends(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = t0 + S.quiesce_timeout_ms * 1000000ull;
	struct list *p;
	int tail = 0;
	char why[200];

	set_state(IBCR_VSTATE_BUSY);
	CTL.message[0] = 0;
	CTL.error = 0;
	pthread_mutex_lock(&S.lock);
	if (cm_check_idle(why, sizeof(why))) {
		pthread_mutex_unlock(&S.lock);
		set_failed(EBUSY, "%s", why);
		return -1;
	}
	pthread_mutex_unlock(&S.lock);
	__atomic_store_n(&g_mode, GATE_SENDS_HELD, __ATOMIC_SEQ_CST);
	heavy_barrier();
	if (wait_gate(0, deadline)) {
		set_failed(ETIMEDOUT, "quiesce: a thread stayed inside a verbs call for %llu ms",
			   (unsigned long long)S.quiesce_timeout_ms);
		return -1;
	}
	pthread_mutex_lock(&S.lock);
	for (;;) {
		struct sqp *late = NULL;

		if (drain_all_cqs() < 0) {
			pthread_mutex_unlock(&S.lock);
			set_failed(EIO, "quiesce: polling a completion queue failed");
			return -1;
		}
		tail = 0;
		list_for(p, &S.qps) {
			struct sqp *q = container(p, struct sqp, link);
			uint64_t posted = __atomic_load_n(&q->sends_posted, __ATOMIC_RELAXED);
			uint64_t done = __atomic_load_n(&q->sends_done, __ATOMIC_RELAXED);

			if (q->errored || q->cur_state == IBV_QPS_ERR)
				continue;
			if (done < posted)
				late = q;
			tail |= q->tail_unsig;
		}
		if (!late)
			break;
		if (now_ns(CLOCK_MONOTONIC) > deadline) {
			unsigned long long n = late->sends_posted - late->sends_done;

			pthread_mutex_unlock(&S.lock);
			set_failed(ETIMEDOUT,
				   "quiesce: QP 0x%x still has %llu signaled send(s) outstanding "
				   "after %llu ms", late->v.qp_num, n,
				   (unsigned long long)S.quiesce_timeout_ms);
			return -1;
		}
		pthread_mutex_unlock(&S.lock);
		sleep_ms(1);
		pthread_mutex_lock(&S.lock);
	}
	if (tail) {
		/* Unsignaled sends after the last signaled one cannot be
		 * observed: give them time to leave (see docs/verbs.md). */
		pthread_mutex_unlock(&S.lock);
		sleep_ms(50);
		pthread_mutex_lock(&S.lock);
		drain_all_cqs();
	}
	pthread_mutex_unlock(&S.lock);
	dbg("sends quiesced in %llu us",
	    (unsigned long long)((now_ns(CLOCK_MONOTONIC) - t0) / 1000));
	set_state(IBCR_VSTATE_SENDS_DONE);
	return 0;
}

static int chan_push(struct schan *ch, struct scq *c)
{
	if (ch->npend == ch->cappend) {
		int cap = ch->cappend ? ch->cappend * 2 : 8;
		struct scq **n = realloc(ch->pend,
					 (size_t)cap * sizeof *n);	// NOLINT(bugprone-sizeof-expression): of pointers

		if (!n)
			return -1;
		ch->pend = n;
		ch->cappend = cap;
	}
	ch->pend[ch->npend++] = c;
	return 0;
}

static int have_ud(void)
{
	struct list *p;

	list_for(p, &S.qps)
		if (container(p, struct sqp, link)->v.qp_type == IBV_QPT_UD)
			return 1;
	return 0;
}

/*
 * UD has no acknowledgement: a datagram whose send completed may still be
 * on its way to a receiver of this checkpoint (rxe hands it to a work
 * queue), and one that arrives after the capture is lost. So the receive
 * queues are drained until they have been quiet for UD_QUIET_MS, for at
 * most UD_SETTLE_MS: best effort, as UD itself (docs/verbs.md). S.lock
 * held on entry and exit.
 */
#define UD_QUIET_MS 20
#define UD_SETTLE_MS 250
static int settle_ud(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), quiet = t0, t = t0;
	int r;

	if (!have_ud())
		return 0;
	while (t - quiet < UD_QUIET_MS * 1000000ull && t - t0 < UD_SETTLE_MS * 1000000ull) {
		pthread_mutex_unlock(&S.lock);
		sleep_ms(2);
		pthread_mutex_lock(&S.lock);
		if ((r = drain_all_cqs()) < 0)
			return -1;
		t = now_ns(CLOCK_MONOTONIC);
		if (r)
			quiet = t;
	}
	dbg("UD receives settled in %llu us", (unsigned long long)((t - t0) / 1000));
	return 0;
}

int quiesce_drain(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = t0 + S.quiesce_timeout_ms * 1000000ull;
	struct list *p;
	uint32_t i;

	if (g_mode == GATE_OPEN && quiesce_sends())
		return -1;
	set_state(IBCR_VSTATE_BUSY);
	__atomic_store_n(&g_mode, GATE_CLOSED, __ATOMIC_SEQ_CST);
	heavy_barrier();
	if (wait_gate(1, deadline)) {
		set_failed(ETIMEDOUT, "quiesce: a thread stayed inside a verbs call for %llu ms",
			   (unsigned long long)S.quiesce_timeout_ms);
		return -1;
	}
	pthread_mutex_lock(&S.lock);
	cm_record_flags();
	/* Nobody may be inside a real call on an event fd from now on. */
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);

		pthread_mutex_lock(&c->async_lock);
		c->async_flags = fcntl(c->vx.context.async_fd, F_GETFL);
		pthread_mutex_unlock(&c->async_lock);
	}
	if (drain_all_cqs() < 0 || settle_ud() < 0)
		goto fail;
	list_for(p, &S.chans) {
		struct schan *ch = container(p, struct schan, link);

		pthread_mutex_lock(&ch->rd_lock);
		ch->fd_flags = fcntl(ch->v.fd, F_GETFL);
		for (;;) {
			struct pollfd pf = { ch->real->fd, POLLIN, 0 };
			struct ibv_cq *rcq;
			void *rctx;
			struct scq *c;

			if (poll(&pf, 1, 0) <= 0)
				break;
			if (R.get_cq_event(ch->real, &rcq, &rctx))
				break;
			c = rctx;
			__atomic_fetch_add(&c->ev_got, 1, __ATOMIC_RELAXED);
			c->armed = 0;
			if (chan_push(ch, c)) {
				pthread_mutex_unlock(&ch->rd_lock);
				goto fail;
			}
		}
		pthread_mutex_unlock(&ch->rd_lock);
	}
	/* A last look: nothing may arrive once every peer is quiet. */
	if (drain_all_cqs() < 0)
		goto fail;
	ctl_update_fds();
	for (i = 0; i < CTL.nfds; i++) {
		struct ibcr_verbs_fd *f = &CTL.fds[i];

		if (f->kind != IBCR_VFD_COMP_CHANNEL)
			continue;
		list_for(p, &S.chans) {
			struct schan *ch = container(p, struct schan, link);
			int k;

			if (ch->v.fd != f->fd)
				continue;
			for (k = 0; k < ch->npend && k < IBCR_VERBS_MAX_WAKE; k++)
				f->wake_cq[k] = (uintptr_t)ch->pend[k]->real;
			f->nwake = (uint32_t)k;
		}
	}
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);

		ht_reap(&c->qtab);
		ht_reap(&c->lkey);
	}
	CTL.epoch++;
	pthread_mutex_unlock(&S.lock);
	dbg("drained in %llu us, epoch %llu",
	    (unsigned long long)((now_ns(CLOCK_MONOTONIC) - t0) / 1000),
	    (unsigned long long)CTL.epoch);
	set_state(IBCR_VSTATE_QUIESCED);
	return 0;
fail:
	pthread_mutex_unlock(&S.lock);
	set_failed(EIO, "quiesce: draining completions failed");
	return -1;
}

void release(void)
{
	__atomic_store_n(&g_mode, GATE_OPEN, __ATOMIC_SEQ_CST);
	futex_wake_all(&g_mode);
	set_state(IBCR_VSTATE_RUNNING);
}

