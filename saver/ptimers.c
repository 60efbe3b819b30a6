// SPDX-License-Identifier: MIT
/*
 * POSIX timers (timer_create): /proc/PID/timers names each timer's id,
 * signal and sigev_value ("signal: N/PTR", the value printed raw),
 * notification and target, and clock; its time left, interval and
 * overrun count are read by injected timer_gettime and timer_getoverrun,
 * as the program's own calls would read them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "buf.h"
#include "image_io.h"
#include "procfs.h"
#include "saver.h"

/* One "ID:" block of /proc/PID/timers; 0 at its end, -1 when malformed. */
static int parse_one(char **pos, struct ibcr_ptimer *t, int32_t *target)
{
	char kind[16], who[8];
	unsigned long long val;
	int n = 0;

	if (!**pos)
		return 0;
	memset(t, 0, sizeof(*t));
	if (sscanf(*pos, "ID: %d\nsignal: %d/%llx\nnotify: %15[a-z]/%7[a-z].%d\n"
		   "ClockID: %d\n%n", &t->id, &t->signo, &val, kind, who, target,
		   &t->clock, &n) != 7 || !n)
		return -1;
	*pos += n;
	t->sigval = val;
	t->notify = !strcmp(kind, "signal") ? IBCR_SIGEV_SIGNAL :
		    !strcmp(kind, "none") ? IBCR_SIGEV_NONE :
		    !strcmp(kind, "thread") ? IBCR_SIGEV_THREAD : -1;
	if (t->notify < 0 || (strcmp(who, "tid") && strcmp(who, "pid")))
		return -1;
	if (!strcmp(who, "tid"))
		t->notify |= IBCR_SIGEV_THREAD_ID;
	return 1;
}

static const char *clock_name(int32_t c)
{
	/* glibc makes CLOCK_*_CPUTIME_ID timers on the kernel's CPU clocks */
	if (c < 0)
		return (c & 4) ? "a thread's CPU-time clock" : "a process's CPU-time clock";
	return c == 2 ? "CLOCK_PROCESS_CPUTIME_ID" : c == 3 ? "CLOCK_THREAD_CPUTIME_ID" :
	       c == 8 ? "CLOCK_REALTIME_ALARM" : c == 9 ? "CLOCK_BOOTTIME_ALARM" :
	       "an unknown clock";
}

/* Whom it signals: the process itself, or one of its threads. */
static int check_target(struct target *t, struct ibcr_ptimer *pt, int32_t target,
			struct ibcr_err *e)
{
	if (!ptimer_clock_ok(pt->clock))
		return ibcr_fail(e, "pid %d: POSIX timer %d runs on %s (clock id %d): not "
				 "supported", (int)t->pid, pt->id, clock_name(pt->clock),
				 pt->clock);
	if (!(pt->notify & IBCR_SIGEV_THREAD_ID)) {
		if (target != t->pid)
			return ibcr_fail(e, "pid %d: POSIX timer %d signals process %d, not "
					 "itself", (int)t->pid, pt->id, (int)target);
		return 0;
	}
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (t->tids[i] == target) {
			pt->tid = target;
			return 0;
		}
	return ibcr_fail(e, "pid %d: POSIX timer %d signals thread %d, which is not one "
			 "of its threads (exited?)", (int)t->pid, pt->id, (int)target);
}

/* Its value, interval and overrun count, read inside the process. */
static int read_state(struct target *t, struct ibcr_ptimer *pt, uint64_t scratch,
		      struct ibcr_err *e)
{
	int64_t its[4];	/* interval s, ns, value s, ns */
	long r;

	if (inject_call(t, 0, SYS_timer_gettime, (uint64_t)pt->id, scratch, 0, 0, &r, e))
		return -1;
	if (r)
		return ibcr_fail(e, "pid %d: timer_gettime of POSIX timer %d inside the "
				 "process: %s", (int)t->pid, pt->id, strerror((int)-r));
	if (read_target(t, scratch, its, sizeof(its), e))
		return -1;
	pt->interval_ns = its[0] * 1000000000 + its[1];
	pt->value_ns = its[2] * 1000000000 + its[3];
	if (inject_call(t, 0, SYS_timer_getoverrun, (uint64_t)pt->id, 0, 0, 0, &r, e))
		return -1;
	if (r < 0)
		return ibcr_fail(e, "pid %d: timer_getoverrun of POSIX timer %d inside the "
				 "process: %s", (int)t->pid, pt->id, strerror((int)-r));
	pt->overrun = (int32_t)r;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct ibcr_ptimer *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

int capture_ptimers(struct target *t, uint64_t scratch, struct ibcr_err *e)
{
	char path[64], *s, *pos;
	struct ibcr_ptimer pt;
	int32_t target;
	int rc = 0, got = 0;

	free(t->ps.ptimers);	/* read again: a capture tried again */
	t->ps.ptimers = NULL;
	t->ps.nptimers = 0;
	snprintf(path, sizeof(path), "/proc/%d/timers", (int)t->pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	pos = s;
	while (!rc && (got = parse_one(&pos, &pt, &target)) > 0) {
		if (t->ps.nptimers >= IBCR_MAX_PTIMERS)
			rc = ibcr_fail(e, "pid %d: more than %d POSIX timers", (int)t->pid,
				       IBCR_MAX_PTIMERS);
		else if (!check_target(t, &pt, target, e) && !read_state(t, &pt, scratch, e)) {
			t->ps.ptimers = xrealloc(t->ps.ptimers,
						 sizeof(pt) * (t->ps.nptimers + 1));
			t->ps.ptimers[t->ps.nptimers++] = pt;
		} else {
			rc = -1;
		}
	}
	if (!rc && got < 0)
		rc = ibcr_fail(e, "%s: unexpected format near \"%.40s\"", path, pos);
	free(s);
	if (!rc && t->ps.nptimers)	/* the kernel lists the newest first */
		qsort(t->ps.ptimers, t->ps.nptimers, sizeof(pt), by_id);
	return rc;
}
