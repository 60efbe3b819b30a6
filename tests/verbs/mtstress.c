/* SPDX-License-Identifier: MIT */
/*
 * mtstress: checkpoints and in-process rebuilds while several threads are
 * busy in verbs calls. Run under ibcr-launch:
 *
 *   mtstress -d RENDEZVOUS_DIR [-t THREADS] [-c CYCLES] [-g GIDX]
 *
 * Each thread owns an RC pair (A->B, loopback) and loops: SEND with data
 * verified, RDMA WRITE verified, RDMA READ verified. Thread 0 waits for its
 * completions through a completion channel (ibv_get_cq_event), the others
 * busy-poll. The main thread meanwhile drives the control object: quiesce
 * (the threads are caught anywhere: in post_send, in poll_cq, blocked in
 * get_cq_event), then alternately RELEASE or teardown + RESTART, and waits
 * until every thread has verified more iterations before the next cycle.
 */
#include <getopt.h>
#include <pthread.h>
#include <sys/stat.h>

#include "common.h"
#include "verbs_abi.h"

#define SZ 512

struct worker {
	int id, events;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
	struct ibv_mr *ma, *mb;
	uint8_t *ba, *bb;
	volatile unsigned long iters;
	pthread_t th;
};

static struct ibcr_verbs_control *ctl;
static volatile int stop;
static int gidx = 1;

static void wait_one(struct worker *w, struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	if (!w->events) {
		poll_one(cq, wc, 120, what);
		return;
	}
	for (;;) {
		struct ibv_cq *ecq;
		void *ectx;
		int n = ibv_poll_cq(cq, 1, wc);

		CHECK(n >= 0, "%s: poll", what);
		if (n)
			break;
		CHECK(!ibv_req_notify_cq(cq, 0), "%s: notify", what);
		n = ibv_poll_cq(cq, 1, wc);
		CHECK(n >= 0, "%s: poll", what);
		if (n)
			break;
		CHECK(!ibv_get_cq_event(w->chan, &ecq, &ectx), "%s: get_cq_event", what);
		CHECK(ecq == w->cqa || ecq == w->cqb, "%s: event for a foreign CQ", what);
		ibv_ack_cq_events(ecq, 1);
	}
	CHECK(wc->status == IBV_WC_SUCCESS, "thread %d %s: status %s", w->id, what,
	      ibv_wc_status_str(wc->status));
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct ibv_wc wc;
	uint32_t it;

	for (it = 0; !stop; it++) {
		post_recv1(w->b, 1, w->bb, SZ, w->mb->lkey);
		fill(w->ba, SZ, it, (uint8_t)w->id);
		post_send1(w->a, 2, IBV_WR_SEND, w->ba, SZ, w->ma->lkey, 0, 0, 0, 1);
		wait_one(w, w->cqa, &wc, "send");
		CHECK(wc.wr_id == 2, "thread %d: send wr_id %llu", w->id, (unsigned long long)wc.wr_id);
		wait_one(w, w->cqb, &wc, "recv");
		CHECK(wc.wr_id == 1, "thread %d: recv wr_id %llu", w->id, (unsigned long long)wc.wr_id);
		CHECK(same(w->bb, SZ, it, (uint8_t)w->id), "thread %d: SEND data, iteration %u",
		      w->id, it);
		fill(w->ba + SZ, SZ, it, (uint8_t)(w->id + 100));
		post_send1(w->a, 3, IBV_WR_RDMA_WRITE, w->ba + SZ, SZ, w->ma->lkey,
			   (uintptr_t)(w->bb + SZ), w->mb->rkey, 0, 1);
		wait_one(w, w->cqa, &wc, "write");
		CHECK(same(w->bb + SZ, SZ, it, (uint8_t)(w->id + 100)),
		      "thread %d: WRITE data, iteration %u", w->id, it);
		fill(w->bb + 2 * SZ, SZ, it, (uint8_t)(w->id + 50));
		post_send1(w->a, 4, IBV_WR_RDMA_READ, w->ba + 2 * SZ, SZ, w->ma->lkey,
			   (uintptr_t)(w->bb + 2 * SZ), w->mb->rkey, 0, 1);
		wait_one(w, w->cqa, &wc, "read");
		CHECK(same(w->ba + 2 * SZ, SZ, it, (uint8_t)(w->id + 50)),
		      "thread %d: READ data, iteration %u", w->id, it);
		w->iters = it + 1;
	}
	return NULL;
}

static void setup(struct worker *w, struct ibv_context *ctx)
{
	struct dest da, db;

	w->ctx = ctx;
	w->pd = ibv_alloc_pd(ctx);
	if (w->events)
		w->chan = ibv_create_comp_channel(ctx);
	w->cqa = ibv_create_cq(ctx, 16, NULL, w->chan, 0);
	w->cqb = ibv_create_cq(ctx, 16, NULL, w->chan, 0);
	CHECK(w->pd && w->cqa && w->cqb && (!w->events || w->chan), "thread %d setup", w->id);
	w->a = make_qp(w->pd, w->cqa, w->cqa, NULL, IBV_QPT_RC, 8);
	w->b = make_qp(w->pd, w->cqb, w->cqb, NULL, IBV_QPT_RC, 8);
	w->ba = aligned_alloc(4096, 4096);
	w->bb = aligned_alloc(4096, 4096);
	CHECK(w->ba && w->bb, "memory");
	w->ma = ibv_reg_mr(w->pd, w->ba, 4096, IBV_ACCESS_LOCAL_WRITE);
	w->mb = ibv_reg_mr(w->pd, w->bb, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	CHECK(w->ma && w->mb, "reg_mr");
	qp_init(w->a, 1);
	qp_init(w->b, 1);
	my_dest(ctx, w->a, 1, gidx, 1000, &da);
	my_dest(ctx, w->b, 1, gidx, 2000, &db);
	qp_connect(w->a, 1, gidx, 1000, &db);
	qp_connect(w->b, 1, gidx, 2000, &da);
}

static void wait_state(int want, const char *what)
{
	double t0 = now_s();

	while (ctl->state != want) {
		CHECK(ctl->state != IBCR_VSTATE_FAILED, "%s: %s", what, ctl->message);
		CHECK(now_s() - t0 < 120, "%s: state %d after 120 s", what, ctl->state);
		usleep(1000);
	}
}

int main(int argc, char **argv)
{
	const char *rdv = "/tmp/ibcr-mtstress-rdv";
	int nth = 4, cycles = 6, opt, i, c;
	int (*teardown)(void);
	struct ibv_context *ctx;
	struct worker *w;

	prog = "mtstress";
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:t:c:g:")) != -1) {
		switch (opt) {
		case 'd': rdv = optarg; break;
		case 't': nth = atoi(optarg); break;
		case 'c': cycles = atoi(optarg); break;
		case 'g': gidx = atoi(optarg); break;
		default: return 2;
		}
	}
	ctl = dlsym(RTLD_DEFAULT, IBCR_VERBS_SYMBOL);
	*(void **)&teardown = dlsym(RTLD_DEFAULT, "ibcr_verbs_test_teardown");
	CHECK(ctl && teardown, "the shim is not loaded (run under ibcr-launch)");
	mkdir(rdv, 0777);
	ctx = open_first(NULL);
	w = calloc((size_t)nth, sizeof *w);
	CHECK(w, "memory");
	for (i = 0; i < nth; i++) {
		w[i].id = i;
		w[i].events = i == 0;
		setup(&w[i], ctx);
	}
	for (i = 0; i < nth; i++)
		CHECK(!pthread_create(&w[i].th, NULL, run, &w[i]), "pthread_create");
	for (c = 1; c <= cycles; c++) {
		unsigned long before[64];
		int restart = c % 2;
		double t0;

		/* every thread busy first */
		for (i = 0; i < nth && i < 64; i++) {
			unsigned long n = w[i].iters;

			t0 = now_s();
			while (w[i].iters < n + 20) {
				CHECK(now_s() - t0 < 120, "thread %d makes no progress", i);
				usleep(1000);
			}
		}
		ctl->cmd = IBCR_VCMD_QUIESCE_SENDS;
		wait_state(IBCR_VSTATE_SENDS_DONE, "quiesce sends");
		ctl->cmd = IBCR_VCMD_QUIESCE_DRAIN;
		wait_state(IBCR_VSTATE_QUIESCED, "drain");
		for (i = 0; i < nth && i < 64; i++)
			before[i] = w[i].iters;
		usleep(50000);
		for (i = 0; i < nth && i < 64; i++)
			CHECK(w[i].iters <= before[i] + 1,
			      "thread %d went on while quiesced (%lu -> %lu)", i, before[i],
			      w[i].iters);
		if (restart) {
			CHECK(!teardown(), "teardown");
			snprintf(ctl->rendezvous, sizeof ctl->rendezvous, "%s", rdv);
			ctl->restart_timeout_ms = 30000;
			ctl->cmd = IBCR_VCMD_RESTART;
		} else {
			ctl->cmd = IBCR_VCMD_RELEASE;
		}
		wait_state(IBCR_VSTATE_RUNNING, restart ? "restart" : "release");
		for (i = 0; i < nth && i < 64; i++) {
			t0 = now_s();
			while (w[i].iters < before[i] + 20) {
				CHECK(now_s() - t0 < 120, "thread %d stuck after the %s", i,
				      restart ? "rebuild" : "release");
				usleep(1000);
			}
		}
		printf("cycle %d (%s): %d threads went on, data verified\n", c,
		       restart ? "rebuild" : "release", nth);
	}
	stop = 1;
	for (i = 0; i < nth; i++)
		pthread_join(w[i].th, NULL);
	printf("mtstress: PASS (%d threads, %d cycles)\n", nth, cycles);
	return 0;
}
