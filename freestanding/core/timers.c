// SPDX-License-Identifier: MIT
/*
 * POSIX timers: made by the main thread once every thread exists (a
 * SIGEV_THREAD_ID timer names its thread's new TID), each under its
 * saved id; armed by the thread that takes its signals, just before the
 * pending signals are queued. The overrun count of the last signal taken
 * (timer_getoverrun) cannot be set: the timer is armed that many
 * intervals in the past, its signal taken at once, and the kernel counts
 * the missed expirations itself, leaving the next one where it was.
 */
#include <linux/futex.h>
#include <linux/time.h>

#include "core.h"
#include "sys.h"

#define PR_TIMER_CREATE_RESTORE_IDS 77	/* Linux 6.17 */
#define SI_TIMER (-2)
#define NSEC 1000000000ll

struct k_sigevent {
	uint64_t value;
	int32_t signo, notify;
	int32_t tid, pad[11];
};

struct k_itimerspec {
	int64_t is, ins, vs, vns;
};

static long make_one(const struct plan *p, const struct plan_timer *pt, int32_t *id)
{
	struct k_sigevent ev = { pt->t.sigval, pt->t.signo, pt->t.notify, 0, { 0 } };

	if (pt->t.notify & IBCR_SIGEV_THREAD_ID)
		ev.tid = p->threads[pt->thread].new_tid;
	return SYS(__NR_timer_create, pt->t.clock, &ev, id, 0, 0, 0);
}

/* Without PR_TIMER_CREATE_RESTORE_IDS ids come in order: fill the gaps. */
static void make_in_order(struct plan *p, const struct plan_timer *pt, int32_t *next)
{
	struct k_sigevent none = { 0, 0, IBCR_SIGEV_NONE, 0, { 0 } };
	int32_t id = 0;
	long rc;

	while (*next < pt->t.id) {
		rc = SYS(__NR_timer_create, IBCR_CLOCK_MONOTONIC, &none, &id, 0, 0, 0);
		if (rc || id > pt->t.id)
			core_die(p, "POSIX timer %d: making the timers before it: error %ld, "
				 "id %d", pt->t.id, -rc, id);
		*next = id + 1;
	}
	rc = make_one(p, pt, &id);
	if (rc || id != pt->t.id)
		core_die(p, "POSIX timer %d: timer_create: error %ld, id %d (the kernel "
			 "hands ids in order here)", pt->t.id, -rc, id);
	*next = id + 1;
}

void core_timers_create(struct plan *p)
{
	int32_t next = 0, id;
	int by_id = 0;
	long rc;

	if (!p->ntimers)
		return;
	if (!(p->flags & PLAN_TIMER_FILL))
		by_id = !sys_prctl(PR_TIMER_CREATE_RESTORE_IDS, 1, 0, 0, 0);
	for (uint32_t i = 0; i < p->ntimers; i++) {
		const struct plan_timer *pt = &p->timers[i];

		if (!by_id) {
			make_in_order(p, pt, &next);
			continue;
		}
		id = pt->t.id;
		rc = make_one(p, pt, &id);
		if (rc)
			core_die(p, "POSIX timer %d: timer_create: error %ld", pt->t.id, -rc);
	}
	if (by_id)
		sys_prctl(PR_TIMER_CREATE_RESTORE_IDS, 0, 0, 0, 0);
	/* the fillers go; every id below the last made is one or a timer */
	for (int32_t f = 0, k = 0; f < next; f++) {
		while (k < (int32_t)p->ntimers && p->timers[k].t.id < f)
			k++;
		if (k < (int32_t)p->ntimers && p->timers[k].t.id == f)
			continue;
		rc = SYS(__NR_timer_delete, f, 0, 0, 0, 0, 0);
		if (rc)
			core_die(p, "deleting filler POSIX timer %d: error %ld", f, -rc);
	}
	/* the process's own first: no other thread may take their signals */
	core_timers_arm(p, 0);
	__atomic_store_n(&p->timers_made, 1, __ATOMIC_RELEASE);
	sys_futex(&p->timers_made, FUTEX_WAKE, 0x7fffffff);
}

static void set_time(struct plan *p, const struct plan_timer *pt, int flags,
		     int64_t value, int64_t interval)
{
	struct k_itimerspec its = { interval / NSEC, interval % NSEC, value / NSEC,
				    value % NSEC };
	long rc = SYS(__NR_timer_settime, pt->t.id, flags, &its, 0, 0, 0);

	if (rc)
		core_die(p, "POSIX timer %d: timer_settime: error %ld", pt->t.id, -rc);
}

/*
 * Armed `overrun + 1` intervals before an expiry G on its saved grid,
 * its signal taken at once: the kernel counts the expirations it
 * missed, `overrun` exactly when the signal is taken within the
 * interval before G. G is the grid point that puts the time the core
 * takes (about DELAY) nearest the middle of that interval; checked, and
 * done again if the core was slower or faster.
 */
#define DELAY (20 * 1000ll)

static long try_overrun(struct plan *p, const struct plan_timer *pt)
{
	const struct ibcr_ptimer *t = &pt->t;
	struct { int64_t s, ns; } now, wait = { 5, 0 };
	uint64_t set = 1ull << (t->signo - 1);
	uint8_t si[IBCR_SIGINFO_SIZE];
	int64_t next = t->value_ns, at, want = DELAY + t->interval_ns / 2;
	long rc = SYS(__NR_clock_gettime, t->clock, &now, 0, 0, 0, 0);

	if (rc)
		core_die(p, "POSIX timer %d: clock_gettime(%d): error %ld", t->id, t->clock,
			 -rc);
	if (next < want)	/* the grid point nearest to want */
		next += (want - next + t->interval_ns / 2) / t->interval_ns * t->interval_ns;
	at = now.s * NSEC + now.ns + next - ((int64_t)t->overrun + 1) * t->interval_ns;
	if (at <= 0)
		core_die(p, "POSIX timer %d: overrun count %d is more than clock %d has "
			 "run since its start", t->id, t->overrun, t->clock);
	set_time(p, pt, TIMER_ABSTIME, at, t->interval_ns);
	rc = SYS(__NR_rt_sigtimedwait, &set, si, &wait, 8, 0, 0);
	if (rc != t->signo || *(const int32_t *)(si + 8) != SI_TIMER ||
	    *(const int32_t *)(si + 16) != t->id)
		core_die(p, "POSIX timer %d: taking its signal %d to set its overrun count: "
			 "got %ld (another signal came in?)", t->id, t->signo, rc);
	return SYS(__NR_timer_getoverrun, t->id, 0, 0, 0, 0, 0);
}

static void arm_overrun(struct plan *p, const struct plan_timer *pt)
{
	long got = 0;

	for (int k = 0; k < 3; k++)
		if ((got = try_overrun(p, pt)) == pt->t.overrun)
			return;
	core_die(p, "POSIX timer %d: its overrun count %d could not be set (%ld three "
		 "times: the restore was preempted?)", pt->t.id, pt->t.overrun, got);
}

static void arm_one(struct plan *p, const struct plan_timer *pt)
{
	const struct ibcr_ptimer *t = &pt->t;

	if (t->overrun && t->interval_ns && t->value_ns &&
	    (t->notify & ~IBCR_SIGEV_THREAD_ID) != IBCR_SIGEV_NONE)
		arm_overrun(p, pt);
	else if (t->value_ns)
		set_time(p, pt, 0, t->value_ns, t->interval_ns);
}

/* Thread idx: the timers that signal it; the main thread also the process's. */
void core_timers_arm(struct plan *p, uint32_t idx)
{
	int32_t v;

	if (!p->ntimers)
		return;
	while (idx && (v = __atomic_load_n(&p->timers_made, __ATOMIC_ACQUIRE)) != 1)
		sys_futex(&p->timers_made, FUTEX_WAIT, v);
	for (uint32_t i = 0; i < p->ntimers; i++) {
		const struct plan_timer *pt = &p->timers[i];
		uint32_t to = (pt->t.notify & IBCR_SIGEV_THREAD_ID) ? pt->thread : 0;

		if (to == idx)
			arm_one(p, pt);
	}
}
