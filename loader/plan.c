// SPDX-License-Identifier: MIT
/*
 * Builds the restore plan in "the hole": an address range that overlaps
 * neither any saved region nor anything the loader has mapped. The hole
 * holds the core's code, the plan, the strings and tables it points to,
 * a stack and an rt_sigframe per thread, and room to park the kernel's
 * special mappings while they move.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"
#include "buf.h"
#include "lazy.h"
#include "loader.h"
#include "procfs.h"
#include "sigframe.h"

#define CORE_STACK (64ul << 10)	/* must match the core's thread.c */
#define BOUNCE (64ul << 10)	/* see the core's fill() */

static void *take(struct arena *a, size_t n, size_t align)
{
	size_t at = (a->used + align - 1) & ~(align - 1);
	void *p;

	if (at + n > a->size) {
		fprintf(stderr, "restart-loader: internal error: hole too small\n");
		abort();
	}
	p = a->base + at;
	a->used = at + n;
	return p;
}

void *arena_take(struct arena *a, size_t n, size_t align)
{
	return take(a, n, align);
}

static char *take_str(struct arena *a, const char *s)
{
	return strcpy(take(a, strlen(s) + 1, 1), s);
}

/* The core's bytes: the assembler's symbols at its two ends (blob.asm). */
static size_t blob_size(void)
{
	// cppcheck-suppress comparePointers
	return (size_t)(ibcr_core_blob_end - ibcr_core_blob);
}

/*
 * Every byte that build_plan takes, with each take's alignment padding
 * (at most 63 bytes), per record: an estimate that fell short by the
 * special-mapping slot and closed fd each region also takes aborted the
 * restore of a process with tens of thousands of regions ("hole too
 * small").
 */
#define PAD 64

static size_t hole_size(const struct restore *rs, size_t pg)
{
	const struct ibcr_process_state *ps = rs->ps;
	size_t n = blob_size() + pg + sizeof(struct plan) + CORE_STACK + BOUNCE + 32 * PAD;

	n += strlen(rs->r->path) + 1;
	n += (ps->nvmas + 1) * (sizeof(struct plan_vma) + sizeof(struct plan_special) +
				sizeof(int32_t) + PAD / 8) + (ps->nruns + 1) * sizeof(struct ibcr_run);
	n += ps->nvmas + 1 + 4 * PAD;	/* the fd list, the exe fd, the tables' padding */
	for (uint32_t i = 0; i < ps->nvmas; i++)
		n += strlen(ps->vma_names[i]) + 1;
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		const struct ibcr_thread_state *t = &ps->threads[i];

		n += sizeof(struct plan_thread) + CORE_STACK + 3 * PAD +
		     arch_frame_size(t->rec.fpregs_size) +
		     (size_t)(t->rec.nsiginfo + t->rec.nsiginfo_shared + 2) * IBCR_SIGINFO_SIZE;
	}
	n += sizeof(((struct ibcr_proc *)0)->auxv) + IBCR_NSIG * sizeof(struct ibcr_sigaction);
	n += (rs->nshm + 1) * sizeof(struct plan_range);	/* plan_shm */
	/* plan_unmap: what it keeps (hole, specials, shm objects, the places */
	/* cow.c built regions at) and the gaps */
	n += 2 * (3 + 2 * (size_t)ps->nvmas + rs->nshm) * sizeof(struct plan_range);
	n += creds_plan_size(rs) + timers_plan_size(rs);
	for (uint32_t i = 0; i < rs->npokes; i++)
		n += sizeof(struct plan_poke) + rs->pokes[i].len + PAD;
	n += sizeof(struct plan_poke);
	n += vdso_plan_size(rs);
	return (n + pg - 1) & ~(pg - 1);
}

static size_t count_park(const struct restore *rs)
{
	const struct ibcr_process_state *ps = rs->ps;
	size_t park = 0;

	if (rs->vdso)	/* this kernel's set moves, not the saved one */
		return vdso_park_size(rs);
	for (uint32_t i = 0; i < ps->nvmas; i++)
		if (ps->vmas[i].kind == IBCR_VMA_SPECIAL)
			park += ps->vmas[i].end - ps->vmas[i].start;
	return park;
}

static int plan_specials(struct plan *p, struct arena *a, const struct restore *rs,
			 uint64_t park, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	struct maps_entry *m;
	size_t n;

	if (maps_read(0, 0, &m, &n, e))
		return -1;
	p->special = take(a, sizeof(struct plan_special) * (ps->nvmas + n + 1), 8);
	if (rs->vdso) {	/* another kernel: vdso.c */
		maps_free(m, n);
		return vdso_plan(p, rs, take(a, vdso_plan_size(rs), 16), park, e);
	}
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];

		if (v->kind != IBCR_VMA_SPECIAL)
			continue;
		for (size_t k = 0; k < n; k++)
			if (!strcmp(m[k].path, ps->vma_names[i])) {
				struct plan_special *s = &p->special[p->nspecial++];

				s->cur = m[k].start;
				s->len = m[k].end - m[k].start;
				s->park = park;
				s->target = v->start;
				park += s->len;
			}
	}
	maps_free(m, n);
	return 0;
}

/*
 * Everything below the top except the hole, the special mappings and the
 * shared memory objects handed down by the loader (unmapped later, once
 * the regions that share them are in place).
 */
static void plan_unmap(struct plan *p, struct arena *a, const struct restore *rs)
{
	size_t nk = 0, max = 2 + p->nspecial + rs->nshm + rs->ps->nvmas;
	struct plan_range *keep = xmalloc(sizeof(*keep) * max);
	struct plan_range *r = take(a, sizeof(*r) * (max + 1), 8);

	keep[nk++] = (struct plan_range){ p->hole_start, p->hole_start + p->hole_len };
	for (uint64_t i = 0; i < p->nspecial; i++)
		keep[nk++] = (struct plan_range){ p->special[i].cur,
						  p->special[i].cur + p->special[i].len };
	for (uint32_t i = 0; i < rs->nshm; i++)
		keep[nk++] = (struct plan_range){ rs->shm[i].addr,
						  rs->shm[i].addr + rs->shm[i].size };
	for (uint32_t i = 0; i < rs->ps->nvmas; i++)
		if (cow_source(rs, i))	/* built before the fork, moved into place */
			keep[nk++] = (struct plan_range){ cow_source(rs, i), cow_source(rs, i) +
							  rs->ps->vmas[i].end -
							  rs->ps->vmas[i].start };
	p->unmap = r;
	p->nunmap = plan_gaps(keep, nk, ARCH_TASK_TOP, r);
	free(keep);
}

static void plan_vmas(struct plan *p, struct arena *a, struct restore *rs)
{
	const struct ibcr_process_state *ps = rs->ps;
	struct ibcr_run *runs = take(a, sizeof(*runs) * (ps->nruns + 1), 8);
	struct plan_vma *pv = take(a, sizeof(*pv) * (ps->nvmas + 1), 8);

	memcpy(runs, ps->runs, sizeof(*runs) * ps->nruns);
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];

		pv[i] = (struct plan_vma){
			.start = v->start, .end = v->end, .pgoff = v->pgoff,
			.prot = v->prot, .kind = v->kind,
			/* how it was built is no flag of the region's (could_merge) */
			.flags = v->flags & ~(uint32_t)(IBCR_VMAF_COW | IBCR_VMAF_COWSRC),
			.cow_src = cow_source(rs, i),
			.madv = v->madv, .fd = rs->map_fds[i], .data_crc = v->data_crc,
			.shm_src = shm_source(rs, v),
			.runs = runs + v->run0, .nruns = v->nruns,
			.data_off = ps->pages_off + v->data_off, .data_len = v->data_len,
			.name = take_str(a, ps->vma_names[i]),
			.lazy = (uint32_t)lazy_region(rs, i),
		};
	}
	p->vmas = pv;
	p->nvmas = ps->nvmas;
}

static void plan_thread(struct plan_thread *pt, struct arena *a,
			const struct ibcr_thread_state *t)
{
	const struct ibcr_thread *r = &t->rec;
	struct arch_thread_regs regs = {
		.gpregs = t->gpregs, .fpregs = t->fpregs, .fpregs_size = r->fpregs_size,
		.sigmask = r->sigmask, .altstack_sp = r->altstack_sp,
		.altstack_size = r->altstack_size, .altstack_flags = r->altstack_flags,
	};
	uint8_t *si;

	*pt = (struct plan_thread){
		.tid = r->tid, .ctid = r->clear_child_tid, .ctid_mode = r->ctid_mode,
		.rseq_len = r->rseq_len, .rseq_ptr = r->rseq_ptr, .rseq_sig = r->rseq_sig,
		.altstack_flags = r->altstack_flags, .altstack_sp = r->altstack_sp,
		.altstack_size = r->altstack_size, .robust_list = r->robust_list,
		.robust_len = r->robust_len, .nsiginfo = r->nsiginfo,
	};
	arch_thread_tls(t->gpregs, r->tls, pt->tls);
	memcpy(pt->comm, r->comm, sizeof(pt->comm));
	pt->stack_top = (uint64_t)(uintptr_t)take(a, CORE_STACK, 64) + CORE_STACK;
	pt->frame = arch_build_frame(take(a, arch_frame_size(r->fpregs_size), 64), &regs);
	pt->xstate_touch = (uint32_t)arch_frame_needs_touch(t->fpregs, r->fpregs_size);
	si = take(a, (size_t)r->nsiginfo * IBCR_SIGINFO_SIZE + 1, 8);
	memcpy(si, t->siginfo, (size_t)r->nsiginfo * IBCR_SIGINFO_SIZE);
	pt->siginfo = si;
}

static void plan_process(struct plan *p, struct arena *a, struct restore *rs)
{
	const struct ibcr_process_state *ps = rs->ps;
	const struct ibcr_proc *r = &ps->rec;
	const struct ibcr_thread_state *main_thread = &ps->threads[0];
	uint64_t *auxv = take(a, sizeof(r->auxv), 8);
	struct ibcr_sigaction *sa = take(a, sizeof(ps->sigact), 8);
	uint8_t *shared;

	memcpy(auxv, r->auxv, sizeof(r->auxv));
	p->mm = (struct plan_mm_map){
		.start_code = r->start_code, .end_code = r->end_code,
		.start_data = r->start_data, .end_data = r->end_data,
		.start_brk = r->start_brk, .brk = r->brk, .start_stack = r->start_stack,
		.arg_start = r->arg_start, .arg_end = r->arg_end,
		.env_start = r->env_start, .env_end = r->env_end,
		.auxv = auxv, .auxv_size = r->auxv_words * 8,
		.exe_fd = rs->exe_fd >= 0 ? (uint32_t)rs->exe_fd : (uint32_t)-1,
	};
	memcpy(sa, ps->sigact, sizeof(ps->sigact));
	p->sigact = sa;
	memcpy(p->rlim, r->rlim, sizeof(p->rlim));
	memcpy(p->itimer, r->itimer, sizeof(p->itimer));
	p->nthreads = r->nthreads;
	p->threads = take(a, sizeof(struct plan_thread) * r->nthreads, 8);
	for (uint32_t i = 0; i < r->nthreads; i++)
		plan_thread(&p->threads[i], a, &ps->threads[i]);
	p->nsiginfo_shared = main_thread->rec.nsiginfo_shared;
	shared = take(a, (size_t)p->nsiginfo_shared * IBCR_SIGINFO_SIZE + 1, 8);
	memcpy(shared, main_thread->siginfo +
	       (size_t)main_thread->rec.nsiginfo * IBCR_SIGINFO_SIZE,
	       (size_t)p->nsiginfo_shared * IBCR_SIGINFO_SIZE);
	p->siginfo_shared = shared;
}

static void plan_pokes(struct plan *p, struct arena *a, struct restore *rs)
{
	struct plan_poke *pk = take(a, sizeof(*pk) * (rs->npokes + 1), 8);

	for (uint32_t i = 0; i < rs->npokes; i++) {
		uint8_t *data = take(a, rs->pokes[i].len, 8);

		memcpy(data, rs->pokes[i].data, rs->pokes[i].len);
		pk[i] = (struct plan_poke){ rs->pokes[i].addr, rs->pokes[i].len, data };
	}
	p->pokes = pk;
	p->npokes = rs->npokes;
}

static void plan_shm(struct plan *p, struct arena *a, const struct restore *rs)
{
	struct plan_range *r = take(a, sizeof(*r) * (rs->nshm + 1), 8);

	for (uint32_t i = 0; i < rs->nshm; i++)
		r[i] = (struct plan_range){ rs->shm[i].addr, rs->shm[i].addr + rs->shm[i].size };
	p->shm = r;
	p->nshm = rs->nshm;
}

static void plan_fds(struct plan *p, struct arena *a, struct restore *rs)
{
	int32_t *fds = take(a, sizeof(int32_t) * (rs->ps->nvmas + 1), 4);

	p->nclose = plan_close_list(rs->map_fds, rs->ps->nvmas, rs->exe_fd, fds);
	p->close_fds = fds;
}

int build_plan(struct restore *rs, uint64_t *entry, struct plan **plan,
	       uint64_t *sp, struct ibcr_err *e)
{
	size_t pg = (size_t)getpagesize(), blob = blob_size();
	size_t park = count_park(rs), size = hole_size(rs, pg);
	const struct core_blob_head *head = (const void *)ibcr_core_blob;
	struct arena a;
	struct plan *p;
	uint64_t at = 0, park_at;
	void *hole;

	if (head->magic != CORE_BLOB_MAGIC)
		return ibcr_fail(e, "internal error: restore core blob is damaged");
	const struct ibcr_process_state *one = rs->ps;

	if (find_free(&one, 1, size + park, &at, e))
		return ibcr_fail(e, "no free address range of %zu bytes for the restore "
				 "code", size + park);
	hole = mmap((void *)(uintptr_t)at, size + park, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (hole == MAP_FAILED || (uint64_t)(uintptr_t)hole != at)
		return ibcr_fail_errno(e, errno, "mapping the restore area at %#llx",
				       (unsigned long long)at);
	/* parking space for the special mappings: unmapped, reserved */
	park_at = at + size;
	munmap((void *)(uintptr_t)park_at, park);
	a = (struct arena){ hole, size, 0 };
	/* whole pages: they become read+exec, the plan after them stays writable */
	memcpy(take(&a, (blob + pg - 1) & ~(pg - 1), pg), ibcr_core_blob, blob);
	/* aarch64 fetches instructions through its own cache */
	__builtin___clear_cache((char *)hole, (char *)hole + blob);
	p = take(&a, sizeof(*p), 64);
	memset(p, 0, sizeof(*p));
	p->magic = PLAN_MAGIC;
	p->hole_start = at;
	p->hole_len = size + park;
	p->page_size = (uint32_t)pg;
	p->img_fd = rs->r->fd;
	p->status_fd = rs->status_fd;
	p->control_fd = rs->control_fd;
	p->flags = (rs->exact_pid ? PLAN_EXACT_TIDS : 0) | (rs->new_ids ? PLAN_NEW_TIDS : 0) |
		   (trace_on() ? PLAN_TRACE : 0) |
		   (rs->ps->nblocks || rs->stream_fill ? PLAN_FILL_BY_LOADER : 0) |
		   (getenv("IBCR_NO_UFFD") ? PLAN_NO_UFFD : 0) |
		   (rs->lazy ? PLAN_LAZY : 0);
	p->image_path = take_str(&a, rs->r->path);
	p->bounce_len = BOUNCE;
	p->bounce = take(&a, BOUNCE, 64);
	if (plan_specials(p, &a, rs, park_at, e))
		return -1;
	plan_vmas(p, &a, rs);
	plan_process(p, &a, rs);
	plan_creds(p, &a, rs);
	plan_timers(p, &a, rs);
	attrs_plan(p, rs);
	plan_creds_shared(p, rs);
	plan_fds(p, &a, rs);
	plan_pokes(p, &a, rs);
	plan_shm(p, &a, rs);
	plan_unmap(p, &a, rs);
	*sp = (uint64_t)(uintptr_t)take(&a, CORE_STACK, 64) + CORE_STACK;
	if (mprotect(hole, (blob + pg - 1) & ~(pg - 1), PROT_READ | PROT_EXEC))
		return ibcr_fail_errno(e, errno, "protecting the restore code");
	*entry = at + head->entry;
	*plan = p;
	return 0;
}
