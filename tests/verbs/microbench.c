/* SPDX-License-Identifier: MIT */
/*
 * microbench: what one data-path call costs, measured in the process:
 * ibv_poll_cq on an empty CQ and ibv_post_recv of one WR. Run it without
 * and with the shim; with the shim it measures again after an in-process
 * rebuild (every WR then translated), as tests/verbs/selftest does one.
 *
 *   microbench [-n CALLS] [-d RENDEZVOUS_DIR]
 */
#include <getopt.h>
#include <sys/stat.h>

#include "common.h"
#include "verbs_abi.h"

#define DEPTH 128

static double ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void to_reset_init(struct ibv_qp *q)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RESET;
	CHECK(!ibv_modify_qp(q, &a, IBV_QP_STATE), "modify to RESET");
	qp_init(q, 1);
}

static void measure(const char *label, struct ibv_cq *cq, struct ibv_qp *qp, struct ibv_mr *mr,
		    void *buf, long n)
{
	struct ibv_wc wc[4];
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_recv_wr w, *bad;
	double t0, poll_ns, post_ns = 0;
	long i, posted = 0;

	for (i = 0; i < n / 10; i++)	/* warm up */
		ibv_poll_cq(cq, 4, wc);
	t0 = ns_now();
	for (i = 0; i < n; i++)
		CHECK(ibv_poll_cq(cq, 4, wc) == 0, "the CQ is not empty");
	poll_ns = (ns_now() - t0) / (double)n;

	memset(&w, 0, sizeof w);
	w.sg_list = &sge;
	w.num_sge = 1;
	while (posted < n / 4) {
		int k;

		t0 = ns_now();
		for (k = 0; k < DEPTH; k++) {
			w.wr_id = (uint64_t)k;
			CHECK(!ibv_post_recv(qp, &w, &bad), "post_recv");
		}
		post_ns += ns_now() - t0;
		posted += DEPTH;
		to_reset_init(qp);	/* drops the posted receives */
	}
	printf("microbench %-10s poll_cq(empty) %7.1f ns/call   post_recv %7.1f ns/WR\n", label,
	       poll_ns, post_ns / (double)posted);
}

int main(int argc, char **argv)
{
	const char *rdv = "/tmp/ibcr-microbench-rdv";
	struct ibcr_verbs_control *ctl;
	int (*teardown)(void);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	long n = 1000000;
	void *buf;
	int opt;

	prog = "microbench";
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "n:d:")) != -1) {
		if (opt == 'n')
			n = atol(optarg);
		else if (opt == 'd')
			rdv = optarg;
		else
			return 2;
	}
	ctx = open_first(NULL);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 2 * DEPTH, NULL, NULL, 0);
	CHECK(pd && cq, "pd/cq");
	qp = make_qp(pd, cq, cq, NULL, IBV_QPT_RC, DEPTH);
	buf = aligned_alloc(4096, 4096);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(buf && mr, "mr");
	qp_init(qp, 1);
	ctl = dlsym(RTLD_DEFAULT, IBCR_VERBS_SYMBOL);
	*(void **)&teardown = dlsym(RTLD_DEFAULT, "ibcr_verbs_test_teardown");
	measure(ctl ? "shim" : "plain", cq, qp, mr, buf, n);
	if (!ctl || !teardown)
		return 0;
	/* rebuild in-process: from now on every WR is translated */
	mkdir(rdv, 0777);
	ctl->cmd = IBCR_VCMD_QUIESCE_SENDS;
	while (ctl->state != IBCR_VSTATE_SENDS_DONE)
		usleep(1000);
	ctl->cmd = IBCR_VCMD_QUIESCE_DRAIN;
	while (ctl->state != IBCR_VSTATE_QUIESCED)
		usleep(1000);
	CHECK(!teardown(), "teardown");
	snprintf(ctl->rendezvous, sizeof ctl->rendezvous, "%s", rdv);
	ctl->cmd = IBCR_VCMD_RESTART;
	while (ctl->state != IBCR_VSTATE_RUNNING)
		usleep(1000);
	measure("shim-xlate", cq, qp, mr, buf, n);
	return 0;
}
