// SPDX-License-Identifier: MIT
/*
 * Threads: create every saved thread, let each restore what only it can
 * set (TID address, robust list, rseq, name, altstack, TLS, credentials),
 * queue pending signals, tell the loader, and once the loader says go
 * enter its sandbox (creds.c) and resume through rt_sigreturn.
 */
#include <linux/futex.h>
#include <linux/prctl.h>
#include <linux/sched.h>

#include "core.h"
#include "sys.h"

#define SS_DISABLE 2
#define STACK_SIZE (64ul << 10)

static void futex_wait_ne(int32_t *w, int32_t want)
{
	int32_t v;

	while ((v = __atomic_load_n(w, __ATOMIC_ACQUIRE)) != want)
		sys_futex(w, FUTEX_WAIT, v);
}

static void setup_self(struct plan *p, struct plan_thread *t)
{
	long rc;

	/* the main thread stored it too, for the timers (timers.c) */
	__atomic_store_n(&t->new_tid, (int32_t)sys_gettid(), __ATOMIC_RELAXED);
	core_thread_attrs(p, t);
	SYS(__NR_set_tid_address, t->ctid, 0, 0, 0, 0, 0);
	if (t->ctid && t->ctid_mode == IBCR_CTID_CACHE)
		*(int32_t *)t->ctid = t->new_tid;
	if (t->robust_list) {
		rc = SYS(__NR_set_robust_list, t->robust_list, t->robust_len, 0, 0, 0, 0);
		if (rc)
			core_die(p, "thread %d: set_robust_list: error %ld", t->tid, -rc);
	}
	if (t->rseq_ptr) {
		rc = SYS(__NR_rseq, t->rseq_ptr, t->rseq_len, 0, t->rseq_sig, 0, 0);
		if (rc)
			core_die(p, "thread %d: registering rseq at %#lx: error %ld",
				 t->tid, (unsigned long)t->rseq_ptr, -rc);
	}
	sys_prctl(PR_SET_NAME, (uint64_t)t->comm, 0, 0, 0);
	if (t->altstack_sp || (t->altstack_flags & SS_DISABLE)) {
		struct {
			uint64_t sp;
			int32_t flags, pad;
			uint64_t size;
		} ss = { t->altstack_sp, (int32_t)(t->altstack_flags & ~1u), 0,
			 t->altstack_size };	/* ~SS_ONSTACK: not settable */

		rc = SYS(__NR_sigaltstack, &ss, 0, 0, 0, 0, 0);
		if (rc)
			core_die(p, "thread %d: sigaltstack: error %ld", t->tid, -rc);
	}
	if (!(p->flags & PLAN_CREDS_SHARED) || t != &p->threads[0])
		core_creds(p, t);	/* else set before the others were made */
	core_thread_attrs_late(p, t);	/* a change of credentials clears it */
	rc = arch_set_tls(t->tls);
	if (rc)
		core_die(p, "thread %d: setting TLS: error %ld", t->tid, -rc);
}

/*
 * Signals with si_code >= 0 (kill, the kernel's) or SI_TKILL (tgkill)
 * may be queued only by the thread they are queued to, naming itself:
 * each thread queues its own, the main thread (whose TID is the process
 * id) the process-wide ones. Queued in the order saved, which is the
 * kernel's order of delivery within each signal number; all signals are
 * blocked until each thread's own mask comes back with rt_sigreturn.
 */
static void queue_own(struct plan *p, const struct plan_thread *t)
{
	long pid = sys_getpid();

	for (uint32_t k = 0; k < t->nsiginfo; k++) {
		const uint8_t *si = t->siginfo + k * IBCR_SIGINFO_SIZE;
		long rc = SYS(__NR_rt_tgsigqueueinfo, pid, t->new_tid,
			      *(const int32_t *)si, si, 0, 0);

		if (rc)
			core_die(p, "thread %d: queueing pending signal %d: error %ld",
				 t->tid, *(const int32_t *)si, -rc);
	}
}

static void queue_shared(struct plan *p)
{
	long pid = sys_getpid();

	for (uint32_t k = 0; k < p->nsiginfo_shared; k++) {
		const uint8_t *si = p->siginfo_shared + k * IBCR_SIGINFO_SIZE;
		long rc = SYS(__NR_rt_sigqueueinfo, pid, *(const int32_t *)si, si,
			      0, 0, 0);

		if (rc)
			core_die(p, "queueing pending signal %d: error %ld",
				 *(const int32_t *)si, -rc);
	}
}

/* Main thread: all are ready; hand over to the loader, which says go. */
static void handover(struct plan *p)
{
	struct st_ready msg = { ST_READY, (uint64_t)(uintptr_t)p };
	char c = 0;

	futex_wait_ne(&p->ready, (int32_t)p->nthreads);
	queue_shared(p);
	core_late_limits(p);
	/* where the plan is: the loader reads the rest from here */
	if (sys_write(p->status_fd, &msg, sizeof(msg)) != sizeof(msg) ||
	    sys_read(p->control_fd, &c, 1) != 1)
		sys_exit_group(127);	/* the loader is gone: nobody to resume for */
	sys_close(p->status_fd);
	sys_close(p->control_fd);
	if (c == CT_GO) {
		__atomic_store_n(&p->go, 1, __ATOMIC_RELEASE);
		sys_futex(&p->go, FUTEX_WAKE, 0x7fffffff);
	}
}

static __attribute__((noreturn)) void finish(struct plan *p, long idx)
{
	struct plan_thread *t = &p->threads[idx];

	setup_self(p, t);
	if (idx)
		core_timers_arm(p, (uint32_t)idx);
	queue_own(p, t);
	__atomic_add_fetch(&p->ready, 1, __ATOMIC_ACQ_REL);
	sys_futex(&p->ready, FUTEX_WAKE, 1);
	if (idx == 0)
		handover(p);
	futex_wait_ne(&p->go, 1);
	core_sandbox(p, (uint32_t)idx);
	if (t->xstate_touch)
		arch_touch_xstate();
	ibcr_sigreturn(t->frame);
}

static void thread_entry(void *arg, long idx)
{
	finish(arg, idx);
}

static long clone_thread(struct plan *p, uint32_t i, int exact)
{
	struct plan_thread *t = &p->threads[i];
	int32_t tid = t->tid;
	struct clone_args ca = {
		.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
			 CLONE_THREAD | CLONE_SYSVSEM,
		.stack = t->stack_top - STACK_SIZE,
		.stack_size = STACK_SIZE,
	};

	if (exact) {
		ca.set_tid = (uint64_t)&tid;
		ca.set_tid_size = 1;
	}
	return ibcr_clone3(&ca, sizeof(ca), thread_entry, p, i);
}

void core_start_threads(struct plan *p)
{
	if (p->flags & PLAN_CREDS_SHARED)
		core_creds(p, &p->threads[0]);	/* the others inherit these */
	for (uint32_t i = 1; i < p->nthreads; i++) {
		long rc;

		core_slack_for_clone(p, i);
		rc = clone_thread(p, i, p->flags & PLAN_EXACT_TIDS);

		/*
		 * Someone took that TID since the loader's check: libc caches it
		 * (pthread_kill, robust mutexes), so only --new-pids accepts another.
		 */
		if (rc == -17 /* EEXIST */ && !(p->flags & PLAN_NEW_TIDS))
			core_die(p, "thread %d: its id is in use (free it, restore with --pid-ns, or "
				 "accept a new one with --new-pids)", p->threads[i].tid);
		if (rc == -17 /* EEXIST */) {
			p->exact_tids_failed = 1;
			rc = clone_thread(p, i, 0);
		}
		if (rc < 0)
			core_die(p, "creating thread %d: error %ld", p->threads[i].tid, -rc);
		__atomic_store_n(&p->threads[i].new_tid, (int32_t)rc, __ATOMIC_RELAXED);
	}
	core_timers_create(p);
	finish(p, 0);
}
