// SPDX-License-Identifier: MIT
/*
 * Unit tests of the attribute sections (PATTRS, TATTRS): a round trip,
 * and that every value the restore would act on is checked: a cgroup
 * path that leads elsewhere, values the kernel refuses, records that do
 * not name the process's threads in order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "image_io.h"

static struct ibcr_thread_state threads[2];

static void fill(struct ibcr_process_state *ps, const char *cgroup)
{
	memset(ps, 0, sizeof(*ps));
	memset(threads, 0, sizeof(threads));
	ps->rec.nthreads = 2;
	ps->threads = threads;
	threads[0].rec.tid = 100;
	threads[1].rec.tid = 101;
	ps->pattrs.oom_score_adj = -17;
	ps->pattrs.flags = IBCR_PATTRF_SUBREAPER;
	ps->pattrs.thp_disable = 3;
	ps->pattrs.membarrier = IBCR_MEMBARRIER_SYNC_CORE;
	ps->cgroup = (char *)cgroup;
	ps->tattrs = calloc(2, sizeof(struct ibcr_tattrs));
	ps->tattrs[0] = (struct ibcr_tattrs){ .tid = 100, .sched_policy = 1, .sched_priority = 10,
					      .sched_nice = -5, .pdeath_sig = 15 };
	ps->tattrs[1] = (struct ibcr_tattrs){ .tid = 101, .sched_policy = 3, .sched_nice = 7,
					      .timer_slack_ns = 200000 };
	ps->tattrs[1].affinity[0] = 2;
}

/* Encodes ps and decodes it into out (threads as in ps); the result. */
static int trip(struct ibcr_process_state *ps, struct ibcr_process_state *out,
		struct ibcr_err *e)
{
	struct buf b = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	out->rec.nthreads = ps->rec.nthreads;
	out->threads = threads;
	enc_pattrs(&b, ps);
	rc = dec_pattrs("img", 0, b.p, b.len, out, e);
	b.len = 0;
	enc_tattrs(&b, ps);
	if (!rc)
		rc = dec_tattrs("img", 0, b.p, b.len, out, e);
	buf_free(&b);
	free(ps->tattrs);
	return rc;
}

static void round_trip(void **state)
{
	struct ibcr_process_state ps, out;
	struct ibcr_err e;

	(void)state;
	fill(&ps, "/user.slice/app");
	assert_int_equal(trip(&ps, &out, &e), 0);
	assert_string_equal(out.cgroup, "/user.slice/app");
	assert_int_equal(out.pattrs.oom_score_adj, -17);
	assert_int_equal(out.pattrs.thp_disable, 3);
	assert_int_equal(out.tattrs[0].sched_priority, 10);
	assert_int_equal(out.tattrs[1].affinity[0], 2);
	assert_int_equal(out.tattrs[1].timer_slack_ns, 200000);
	free(out.cgroup);
	free(out.tattrs);
}

static void refused(void **state)
{
	static const char *const paths[] = { "/a/../../etc", "relative", "/a//b", "/.." };
	struct ibcr_process_state ps, out;
	struct ibcr_err e;

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		fill(&ps, paths[i]);
		assert_int_not_equal(trip(&ps, &out, &e), 0);
		assert_non_null(strstr(e.msg, "cgroup path is malformed"));
		free(out.cgroup);
		free(out.tattrs);
	}
	fill(&ps, "/");
	ps.pattrs.oom_score_adj = -1001;
	assert_int_not_equal(trip(&ps, &out, &e), 0);
	assert_non_null(strstr(e.msg, "PATTRS values out of range"));
	free(out.cgroup);
	fill(&ps, "/");
	ps.tattrs[1].tid = 100;		/* not the second thread */
	assert_int_not_equal(trip(&ps, &out, &e), 0);
	assert_non_null(strstr(e.msg, "thread 100: TATTRS record malformed"));
	free(out.cgroup);
	free(out.tattrs);
	fill(&ps, "/");
	ps.tattrs[0].sched_priority = 0;	/* FIFO needs a priority */
	assert_int_not_equal(trip(&ps, &out, &e), 0);
	free(out.cgroup);
	free(out.tattrs);
	fill(&ps, "/");
	ps.tattrs[1].sched_policy = 4;		/* no such policy */
	assert_int_not_equal(trip(&ps, &out, &e), 0);
	free(out.cgroup);
	free(out.tattrs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
