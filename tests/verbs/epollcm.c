/* SPDX-License-Identifier: MIT */
/*
 * What UCX does with a device besides verbs calls, checked from inside
 * across a checkpoint: an epoll watching the context's async event fd and
 * a completion channel (by data words), and a librdmacm event channel
 * (/dev/infiniband/rdma_cm) with no CM id alive.
 *
 * An RC QP connected to itself sends ITERS messages of 64 bytes; for each
 * the CQ is armed and the completion is found through the epoll (the
 * channel's data word, within 20 s), then ibv_get_cq_event, the receive
 * checked byte by byte. "iter N ok" every 10. At the end: the epoll still
 * has both entries with their events and data words (its fdinfo), a CM id
 * can be made and destroyed on the rdma_cm channel, "DONE". With -i a CM
 * id stays alive the whole run (a checkpoint must refuse it and the
 * program go on). Any failure: "FAIL ..." and exit 1.
 *
 *   epollcm [-i] ITERS MS
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>

#include "common.h"

#define D_ASYNC 0xa51c0000a51c0001ull
#define D_CHAN 0xc4a40000c4a40002ull

/* librdmacm, linked (not dlopen()ed) so that its calls meet the shim */
struct rdma_event_channel {
	int fd;
};
struct rdma_event_channel *rdma_create_event_channel(void);
int rdma_create_id(struct rdma_event_channel *ch, void **id, void *ctx, int ps);
int rdma_destroy_id(void *id);
#define RDMA_PS_TCP 0x0106

static struct {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int ep;
	struct rdma_event_channel *cm;
} s;

static void setup(void)
{
	struct ibv_pd *pd;
	struct dest d;
	struct epoll_event ev = { 0 };

	s.ctx = open_first(NULL);
	pd = ibv_alloc_pd(s.ctx);
	s.ch = ibv_create_comp_channel(s.ctx);
	CHECK(pd && s.ch, "pd/channel: %s", strerror(errno));
	s.cq = ibv_create_cq(s.ctx, 16, NULL, s.ch, 0);
	CHECK(s.cq, "ibv_create_cq: %s", strerror(errno));
	s.buf = calloc(1, 4096);
	s.mr = ibv_reg_mr(pd, s.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(s.buf && s.mr, "ibv_reg_mr: %s", strerror(errno));
	s.qp = make_qp(pd, s.cq, s.cq, NULL, IBV_QPT_RC, 8);
	qp_init(s.qp, 1);
	my_dest(s.ctx, s.qp, 1, 1, 77, &d);
	qp_connect(s.qp, 1, 1, 77, &d);
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(s.ep >= 0, "epoll_create1");
	ev.events = EPOLLIN;
	ev.data.u64 = D_ASYNC;
	CHECK(!epoll_ctl(s.ep, EPOLL_CTL_ADD, s.ctx->async_fd, &ev), "epoll on async fd %d: %s",
	      s.ctx->async_fd, strerror(errno));
	ev.data.u64 = D_CHAN;
	CHECK(!epoll_ctl(s.ep, EPOLL_CTL_ADD, s.ch->fd, &ev), "epoll on channel fd %d: %s",
	      s.ch->fd, strerror(errno));
	s.cm = rdma_create_event_channel();
	CHECK(s.cm, "rdma_create_event_channel: %s", strerror(errno));
}

/* One message to ourselves, its completion found through the epoll. */
static void iteration(uint32_t i)
{
	struct epoll_event ev;
	struct ibv_wc wc[2];
	struct ibv_cq *ecq;
	void *ectx;
	int got = 0, n;

	fill(s.buf, 64, i, 1);
	memset(s.buf + 1024, 0, 64);
	post_recv1(s.qp, 2 * i + 1, s.buf + 1024, 64, s.mr->lkey);
	CHECK(!ibv_req_notify_cq(s.cq, 0), "ibv_req_notify_cq");
	post_send1(s.qp, 2 * i, IBV_WR_SEND, s.buf, 64, s.mr->lkey, 0, 0, 0, 1);
	while (got < 2) {
		n = epoll_wait(s.ep, &ev, 1, 20000);
		if (n < 0 && errno == EINTR)
			continue;
		CHECK(n == 1, "iter %u: the epoll reported nothing within 20 s (%d)", i, n);
		CHECK(ev.data.u64 == D_CHAN, "iter %u: epoll data %#llx, want the channel's", i,
		      (unsigned long long)ev.data.u64);
		CHECK(!ibv_get_cq_event(s.ch, &ecq, &ectx) && ecq == s.cq, "ibv_get_cq_event");
		ibv_ack_cq_events(s.cq, 1);
		CHECK(!ibv_req_notify_cq(s.cq, 0), "ibv_req_notify_cq");
		while ((n = ibv_poll_cq(s.cq, 2, wc)) > 0)
			for (int k = 0; k < n; k++, got++)
				CHECK(wc[k].status == IBV_WC_SUCCESS, "iter %u: status %s", i,
				      ibv_wc_status_str(wc[k].status));
		CHECK(n >= 0, "ibv_poll_cq");
	}
	CHECK(same(s.buf + 1024, 64, i, 1), "iter %u: received bytes differ", i);
}

/* The epoll has an entry for fd with these events and data (its fdinfo). */
static void has_entry(int fd, uint64_t data)
{
	char path[64], line[256];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", s.ep);
	f = fopen(path, "r");
	CHECK(f, "%s", path);
	while (fgets(line, sizeof line, f)) {
		int tfd;
		unsigned ev;
		unsigned long long d;

		if (sscanf(line, "tfd: %d events: %x data: %llx", &tfd, &ev, &d) == 3 &&
		    tfd == fd && d == data && (ev & EPOLLIN))
			found = 1;
	}
	fclose(f);
	CHECK(found, "the epoll has no entry for fd %d with data %#llx", fd,
	      (unsigned long long)data);
}

int main(int argc, char **argv)
{
	int keep_id = argc > 1 && !strcmp(argv[1], "-i");
	uint32_t iters, ms, i;
	void *id = NULL;

	prog = "epollcm";
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(argc == 3 + keep_id, "usage: epollcm [-i] ITERS MS");
	iters = (uint32_t)atoi(argv[1 + keep_id]);
	ms = (uint32_t)atoi(argv[2 + keep_id]);
	setup();
	if (keep_id)
		CHECK(!rdma_create_id(s.cm, &id, NULL, RDMA_PS_TCP), "rdma_create_id: %s",
		      strerror(errno));
	printf("epollcm pid %d async fd %d channel fd %d rdma_cm fd %d\n", (int)getpid(),
	       s.ctx->async_fd, s.ch->fd, s.cm->fd);
	for (i = 1; i <= iters; i++) {
		iteration(i);
		if (i % 10 == 0)
			printf("iter %u ok\n", i);
		usleep(ms * 1000);
	}
	has_entry(s.ctx->async_fd, D_ASYNC);
	has_entry(s.ch->fd, D_CHAN);
	if (id)
		CHECK(!rdma_destroy_id(id), "rdma_destroy_id");
	CHECK(!rdma_create_id(s.cm, &id, NULL, RDMA_PS_TCP), "rdma_create_id on the rdma_cm "
	      "channel at the end: %s", strerror(errno));
	CHECK(!rdma_destroy_id(id), "rdma_destroy_id");
	printf("DONE %u iterations verified\n", iters);
	return 0;
}
