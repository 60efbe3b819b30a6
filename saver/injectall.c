// SPDX-License-Identifier: MIT
/*
 * Injected calls (inject.c) in every thread at once. Each injected call
 * costs two round trips to the traced thread (syscall entry, exit), and
 * on a busy machine each waits for that thread to get a CPU: the calls
 * one after another made a 24-thread process's freeze grow with its
 * threads (2 per thread, 62 for the signal actions). Here each thread
 * runs one call at a time but all threads run theirs together
 * (park_begin, then park_end), each into the scratch bytes of its own
 * parking (park.h): a round of calls costs about one round trip. Signal
 * actions are process-wide, so they are spread over the threads.
 */
#include <linux/prctl.h>
#include <string.h>
#include <sys/syscall.h>

#include "park.h"
#include "ptrace_util.h"
#include "saver.h"

#define SLOT 64		/* bytes a call may write (a parking has 256) */

struct call {
	uint32_t thread;
	long nr;
	uint64_t a[6];
};

/*
 * Runs calls c[0..n) (distinct threads) together; every result checked,
 * and kept in res[] when given.
 */
static int run_round(struct target *t, const struct call *c, uint32_t n, long *res,
		     struct ibcr_err *e)
{
	struct ibcr_err later;
	uint32_t begun = 0;
	int rc = 0;

	for (; begun < n && !rc; begun++)
		if (park_begin(&t->parks[c[begun].thread], c[begun].nr, c[begun].a, e))
			rc = -1;
	if (rc)
		begun--;	/* that one is not begun */
	for (uint32_t i = 0; i < begun; i++) {
		long r = 0;

		if (park_end(&t->parks[c[i].thread], &r, NULL, rc ? &later : e)) {
			rc = -1;
		} else if (r < 0 && r > -4096 && !rc) {
			rc = ibcr_fail(e, "pid %d thread %d: syscall %ld inside the process: %s",
				       (int)t->pid, t->tids[c[i].thread], c[i].nr,
				       strerror((int)-r));
		}
		if (res)
			res[i] = r;
	}
	return rc;
}

static uint32_t round_size(const struct target *t)
{
	return t->nthreads < SCRATCH_SLOTS ? t->nthreads : SCRATCH_SLOTS;
}

/* Where call i of a round writes: its thread's own scratch. */
static uint64_t slot(const struct target *t, const struct call *c)
{
	return t->parks[c->thread].scratch;
}

/* What each call of a round wrote, len bytes each, into got[i * SLOT]. */
static int read_slots(struct target *t, const struct call *c, uint32_t k, uint8_t *got,
		      size_t len, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < k; i++)
		if (read_target(t, slot(t, &c[i]), got + i * SLOT, len, e))
			return -1;
	return 0;
}

int read_sigactions_all(struct target *t, struct ibcr_err *e)
{
	struct call c[SCRATCH_SLOTS];
	int sigs[IBCR_NSIG], nsig = 0;

	for (int sig = 1; sig <= IBCR_NSIG; sig++)
		if (sig != 9 && sig != 19)	/* SIGKILL, SIGSTOP: always default */
			sigs[nsig++] = sig;
	for (int at = 0; at < nsig; ) {
		uint32_t k = 0;
		uint8_t got[SCRATCH_SLOTS * SLOT];

		for (; k < round_size(t) && at + (int)k < nsig; k++) {
			c[k] = (struct call){ k, SYS_rt_sigaction, { (uint64_t)sigs[at + k], 0 } };
			c[k].a[2] = slot(t, &c[k]);
			c[k].a[3] = 8;
		}
		if (run_round(t, c, k, NULL, e) ||
		    read_slots(t, c, k, got, sizeof(struct ibcr_sigaction), e))
			return -1;
		for (uint32_t i = 0; i < k; i++)
			memcpy(&t->ps.sigact[sigs[at + i] - 1], got + i * SLOT,
			       sizeof(struct ibcr_sigaction));
		at += (int)k;
	}
	return 0;
}

struct altstack {
	uint64_t sp;
	int32_t flags, pad;
	uint64_t size;
};

/* The alternate signal stack, clear_child_tid and securebits of threads [first, first + k). */
static int thread_round(struct target *t, uint32_t first, uint32_t k, struct ibcr_err *e)
{
	struct call c[SCRATCH_SLOTS];
	uint8_t ss[SCRATCH_SLOTS * SLOT], ct[SCRATCH_SLOTS * SLOT];
	long bits[SCRATCH_SLOTS];

	for (uint32_t i = 0; i < k; i++) {
		c[i] = (struct call){ first + i, SYS_sigaltstack, { 0 } };
		c[i].a[1] = slot(t, &c[i]);
	}
	if (run_round(t, c, k, NULL, e) || read_slots(t, c, k, ss, sizeof(struct altstack), e))
		return -1;
	for (uint32_t i = 0; i < k; i++) {
		c[i] = (struct call){ first + i, SYS_prctl, { PR_GET_TID_ADDRESS } };
		c[i].a[1] = slot(t, &c[i]);
	}
	if (run_round(t, c, k, NULL, e) || read_slots(t, c, k, ct, sizeof(uint64_t), e))
		return -1;
	/* securebits are per thread, and nowhere in /proc */
	for (uint32_t i = 0; i < k; i++)
		c[i] = (struct call){ first + i, SYS_prctl, { PR_GET_SECUREBITS } };
	if (run_round(t, c, k, bits, e))
		return -1;
	for (uint32_t i = 0; i < k; i++) {
		struct ibcr_thread *rec = &t->ps.threads[first + i].rec;
		struct altstack a;
		uint64_t ctid;
		int32_t cached = 0;

		memcpy(&a, ss + i * SLOT, sizeof(a));
		memcpy(&ctid, ct + i * SLOT, sizeof(ctid));
		rec->altstack_sp = a.sp;
		rec->altstack_flags = (uint32_t)a.flags;
		rec->altstack_size = a.size;
		rec->clear_child_tid = ctid;
		t->ps.priv.creds[first + i].securebits = (uint32_t)bits[i];
		/* glibc keeps the TID there, musl a lock word: written back only if cached */
		if (ctid && !read_target(t, ctid, &cached, sizeof(cached), e) &&
		    cached == t->tids[first + i])
			rec->ctid_mode = IBCR_CTID_CACHE;
	}
	return 0;
}

int read_threads_all(struct target *t, struct ibcr_err *e)
{
	for (uint32_t first = 0; first < t->nthreads; first += round_size(t)) {
		uint32_t k = t->nthreads - first < round_size(t) ? t->nthreads - first : round_size(t);

		if (thread_round(t, first, k, e))
			return -1;
	}
	return 0;
}
