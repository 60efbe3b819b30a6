/* SPDX-License-Identifier: MIT */
/*
 * extra_objs N: opens the first RDMA device, creates N RC QPs and N MRs and
 * keeps them until killed, so that objects created meanwhile (by a restart)
 * get other QPNs and keys than they had before. Prints one line when ready.
 */
#include <signal.h>

#include "common.h"

int main(int argc, char **argv)
{
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	uint32_t first = 0, last = 0;
	int n = argc > 1 ? atoi(argv[1]) : 4, i;

	prog = "extra_objs";
	setvbuf(stdout, NULL, _IOLBF, 0);
	c = open_first(NULL);
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 8, NULL, NULL, 0);
	CHECK(pd && cq, "pd/cq");
	for (i = 0; i < n; i++) {
		struct ibv_qp *q = make_qp(pd, cq, cq, NULL, IBV_QPT_RC, 1);
		void *m = malloc(4096);

		CHECK(m && ibv_reg_mr(pd, m, 4096, IBV_ACCESS_LOCAL_WRITE), "reg_mr");
		if (!i)
			first = q->qp_num;
		last = q->qp_num;
	}
	printf("extra_objs: %d QPs (0x%x..0x%x) and %d MRs ready\n", n, first, last, n);
	for (;;)
		pause();
}
