// SPDX-License-Identifier: MIT
/* The PTIMERS section: a process's POSIX timers (timer_create). */
#include <string.h>

#include "buf.h"
#include "image_io.h"

_Static_assert(sizeof(struct ibcr_ptimer) == 56, "docs/image-format.md says 56 bytes");

void enc_ptimers(struct buf *b, const struct ibcr_process_state *ps)
{
	buf_put(b, ps->ptimers, sizeof(struct ibcr_ptimer) * ps->nptimers);
}

int ptimer_clock_ok(int32_t clock)
{
	return clock == IBCR_CLOCK_REALTIME || clock == IBCR_CLOCK_MONOTONIC ||
	       clock == IBCR_CLOCK_BOOTTIME || clock == IBCR_CLOCK_TAI;
}

static int thread_of(const struct ibcr_process_state *ps, int32_t tid)
{
	for (uint32_t i = 0; i < ps->rec.nthreads; i++)
		if (ps->threads[i].rec.tid == tid)
			return (int)i;
	return -1;
}

static int ptimer_ok(const struct ibcr_ptimer *t, const struct ibcr_ptimer *prev,
		     const struct ibcr_process_state *ps)
{
	int kind = t->notify & ~IBCR_SIGEV_THREAD_ID;

	if (t->id < 0 || (prev && t->id <= prev->id) || !ptimer_clock_ok(t->clock) ||
	    t->value_ns < 0 || t->interval_ns < 0 || t->overrun < 0)
		return 0;
	if (kind != IBCR_SIGEV_SIGNAL && kind != IBCR_SIGEV_NONE && kind != IBCR_SIGEV_THREAD)
		return 0;
	if (kind != IBCR_SIGEV_NONE && (t->signo < 1 || t->signo > IBCR_NSIG))
		return 0;
	if (t->notify & IBCR_SIGEV_THREAD_ID)
		return kind == IBCR_SIGEV_SIGNAL && thread_of(ps, t->tid) >= 0;
	return 1;
}

int dec_ptimers(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
		struct ibcr_process_state *ps, struct ibcr_err *e)
{
	uint64_t k = n / sizeof(struct ibcr_ptimer);

	/* after every THREAD section: thread-directed timers name a thread */
	if (!ps->threads || ps->ptimers || !n || n % sizeof(struct ibcr_ptimer) ||
	    k > IBCR_MAX_PTIMERS)
		return ibcr_fail(e, "image %s: process %u: PTIMERS section out of place or "
				 "of the wrong size", path, proc);
	ps->ptimers = xcalloc(k, sizeof(struct ibcr_ptimer));
	memcpy(ps->ptimers, p, n);
	ps->nptimers = (uint32_t)k;
	for (uint32_t i = 0; i < ps->nptimers; i++)
		if (!ptimer_ok(&ps->ptimers[i], i ? &ps->ptimers[i - 1] : NULL, ps))
			return ibcr_fail(e, "image %s: process %u: POSIX timer %d: record "
					 "malformed", path, proc, ps->ptimers[i].id);
	return 0;
}
