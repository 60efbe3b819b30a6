// SPDX-License-Identifier: MIT
/*
 * Lazy restore, the fill (restart-loader --lazy; the core's part is
 * core/lazy.c, the fork holding lazyhold.c). The core hands us its
 * userfaultfd (ST_LAZY); a thread of ours then puts the lazy regions' pages
 * in while the threads are made and after they resume: the pages the
 * program (or the kernel for it) faults on first, the rest in address
 * order between its faults. What is still to come is a table of extents
 * (an address range, the region and where in its data it starts), which
 * follows the program's own changes: UFFD_EVENT_REMAP moves extents,
 * REMOVE and UNMAP drop them. Events are read before every copy (the
 * kernel answers EAGAIN meanwhile), so no copy lands in a range dropped
 * after we read that it was. A fault outside every extent gets a zero
 * page: the page never had data, or the program dropped it.
 *
 * Integrity: every 64 KiB chunk of a region's data is checked against
 * its PAGESUMS sum before any of it goes in, so no wrong page is ever
 * handed to the program. A damaged chunk found once the program runs can
 * no longer refuse the restore: the process is killed, with the reason.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "buf.h"
#include "image_io.h"
#include "lazy.h"
#include "lazyfill.h"
#include "loader.h"
#include "rt/xxh64.h"
#include "stream.h"

#define LAZY_MIN (1u << 20)	/* smaller regions: filled before the resume */
#define PIECE (1u << 20)	/* a background copy, at most */
#define COW_FLAGS (IBCR_VMAF_COW | IBCR_VMAF_COWSRC)
#define NO_FLAGS (IBCR_VMAF_SHARED | COW_FLAGS | IBCR_VMAF_DROPPABLE)

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Region i fits a lazy fill, the flags in no_flags aside. */
static int fits(const struct restore *rs, uint32_t i, uint32_t no_flags)
{
	const struct ibcr_process_state *ps = rs->ps;
	const struct ibcr_vma *v = &ps->vmas[i];
	uint32_t no_madv = IBCR_MADV_LOCKED | IBCR_MADV_WIPEONFORK;

	/* mlock faults all in at once; WIPEONFORK and the rest: eager, as designed */
	if (!rs->lazy || !ps->sums || ps->nblocks || v->kind != IBCR_VMA_ANON ||
	    (v->flags & no_flags) || (v->madv & no_madv) || !(v->prot & PROT_WRITE) ||
	    ((v->flags & IBCR_VMAF_THP) && (v->madv & IBCR_MADV_HUGEPAGE)) ||
	    v->data_len < LAZY_MIN || (ps->pages_off + v->data_off) % (uint64_t)getpagesize())
		return 0;
	return 1;
}

int lazy_region(const struct restore *rs, uint32_t i)
{
	return fits(rs, i, NO_FLAGS);
}

/*
 * A tree: the regions that would be lazy but share pages copy-on-write
 * with a parent or children (cow.c) are filled before the resume, with
 * the pages, by fork: a page not yet there would be a zero page in
 * whichever process the region came from. Says how many; -v names them.
 */
void lazy_tree_note(const struct job *j, uint32_t n, const char *image, int verbose)
{
	uint64_t bytes = 0;
	uint32_t count = 0;

	for (uint32_t k = 0; n > 1 && k < n; k++) {
		const struct ibcr_process_state *ps = &j[k].ps;

		for (uint32_t i = 0; i < ps->nvmas; i++) {
			const struct ibcr_vma *v = &ps->vmas[i];

			if (!fits(&j[k].rs, i, NO_FLAGS & ~COW_FLAGS) || fits(&j[k].rs, i, NO_FLAGS))
				continue;
			count++;
			bytes += v->data_len;
			if (verbose)
				fprintf(stderr, "restart-loader: pid %d: region %#llx-%#llx (%s): "
					"shared copy-on-write with its %s: filled before it runs\n",
					(int)ps->rec.pid, (unsigned long long)v->start,
					(unsigned long long)v->end, ibcr_vma_label(ps, i),
					(v->flags & IBCR_VMAF_COW) ? "parent" : "children");
		}
	}
	if (count)
		fprintf(stderr, "restart-loader: --lazy: image %s holds %u processes: %u of their "
			"regions (%llu MiB), shared copy-on-write between them, are filled before "
			"they run; the rest comes in while they run\n", image, n, count,
			(unsigned long long)(bytes >> 20));
	else if (n > 1 && verbose)
		fprintf(stderr, "restart-loader: --lazy: image %s holds %u processes: no region "
			"of theirs is shared copy-on-write\n", image, n);
}

/* The extents of the lazy regions' data, from the runs (lazyfill.c keeps them). */
static void build_extents(struct lazy *lz)
{
	const struct ibcr_process_state *ps = lz->ps;
	uint64_t page = (uint64_t)getpagesize(), base = 0;

	lz->sumbase = xcalloc(ps->nvmas + 1, sizeof(*lz->sumbase));
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];
		uint64_t doff = 0;

		lz->sumbase[i] = base;
		base += pagesums_of(v, ps->sum_chunk);
		if (!lz->is_lazy[i])
			continue;
		for (uint64_t r = v->run0; r < v->run0 + v->nruns; r++) {
			uint64_t len = ps->runs[r].npages * page;

			ext_add(lz, ps->runs[r].addr, len, doff, i);
			doff += len;
		}
	}
}

/*
 * The background fill reads through stream.c, as the eager fill does: a
 * cold image with its direct reads, at the disk's speed, a cached one
 * by its threads (the fill thread only sums and copies: 256 MiB all in
 * in 0.25-0.53 s against 0.47-0.92 s reading it itself). Faults outside
 * the stream's reach read their chunk themselves. Opened once the
 * program runs: its reads would delay the core's.
 */
void lazy_open_stream(struct lazy *lz)
{
	const struct ibcr_process_state *ps = lz->ps;
	struct stream_ext *ext;
	struct ibcr_err e = { "" };
	size_t n = 0;

	ext = xcalloc(ps->nvmas + 1, sizeof(*ext));
	for (uint32_t i = 0; i < ps->nvmas; i++)
		if (lz->is_lazy[i])
			ext[n++] = (struct stream_ext){ ps->pages_off + ps->vmas[i].data_off,
							ps->vmas[i].data_len, i };
	lz->stream = stream_open(lz->img_fd, ext, n, 1, NULL, &e);
	if (!lz->stream)	/* then through the page cache, only slower */
		fprintf(stderr, "restart-loader: pid %d: %s: read through the page cache\n",
			lz->pid, e.msg);
	free(ext);
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/*
 * Every process of the image, by a pidfd once all are ready (before,
 * none runs the program: none can have been reaped). A damaged chunk
 * found while they run kills them all (lazy_kill_tree), and by then a
 * pid a restored parent reaped could be another process's.
 * job.pidfd: -1 not pinned yet, -2 gone before it could be.
 */
void lazy_pin(struct job *j, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		int fd = -2;

		if (j[k].child > 0 && !j[k].exited)
			fd = (int)syscall(SYS_pidfd_open, j[k].child, 0);
		__atomic_store_n(&j[k].pidfd, fd < 0 ? -2 : fd, __ATOMIC_RELEASE);
	}
}

void lazy_unpin(struct job *j, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		if (j[k].pidfd >= 0)
			close(j[k].pidfd);
		j[k].pidfd = -1;
	}
}

unsigned lazy_kill_tree(const struct lazy *lz)
{
	unsigned killed = 0;

	for (uint32_t k = 0; k < lz->njobs; k++) {
		const struct job *x = &lz->jobs[k];
		int fd = __atomic_load_n(&x->pidfd, __ATOMIC_ACQUIRE);
		pid_t pid = __atomic_load_n(&x->child, __ATOMIC_ACQUIRE);

		if (fd >= 0)
			killed += !syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
		else if (fd == -1 && pid > 0)
			killed += !kill(pid, SIGKILL);
	}
	return killed;
}

static void *fill_main(void *arg)
{
	struct lazy *lz = arg;

	lz->t_start = mono_ms();
	lazy_fill(lz);
	close(lz->ufd);		/* the regions are plain memory from now on */
	lz->ufd = -1;
	lz->t_end = mono_ms();
	/*
	 * lazy_hold_all may be blocked in waitpid: tell it, until it has
	 * heard. Not before it holds (holder 0: its handler may not be set
	 * yet, and it looks at `over` before it waits; seq_cst both sides).
	 */
	__atomic_store_n(&lz->over, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&lz->heard, __ATOMIC_ACQUIRE)) {
		pid_t holder = __atomic_load_n(&lz->holder, __ATOMIC_SEQ_CST);

		if (!holder)
			break;
		syscall(SYS_tgkill, getpid(), holder, LAZY_WAKE_SIG);
		usleep(2000);
	}
	return NULL;
}

static char start_fill(struct job *j, int32_t num)
{
	struct lazy *lz = xcalloc(1, sizeof(*lz));
	const char *slow = getenv("IBCR_LAZY_SLOW_MS");

	lz->ps = &j->ps;
	lz->child = j->child;
	lz->img_fd = j->rs.r->fd;
	lz->path = j->rs.r->path;
	lz->pid = j->ps.rec.pid;
	lz->jobs = j->rs.jobs;
	lz->njobs = j->rs.njobs;
	lz->slow_ms = slow ? atoi(slow) : 0;
	lz->is_lazy = xcalloc(j->ps.nvmas + 1, 1);
	for (uint32_t i = 0; i < j->ps.nvmas; i++)
		lz->is_lazy[i] = (uint8_t)lazy_region(&j->rs, i);
	lz->pages.child = j->child;
	lz->go = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	lz->ufd = pages_take_fd(&lz->pages, num);
	if (lz->ufd < 0 || lz->go < 0) {
		lazy_free(lz);
		return CT_CANNOT;
	}
	build_extents(lz);
	lz->buf = xmalloc(PIECE + 2 * (size_t)j->ps.sum_chunk);
	if (pthread_create(&lz->th, NULL, fill_main, lz)) {
		lazy_free(lz);
		return CT_CANNOT;
	}
	lz->started = 1;
	j->lazy = lz;
	return CT_DONE;
}

int lazy_serve(struct job *j, const struct st_lazy *m, int verbose)
{
	int32_t num = m->uffd, err = m->err;
	char reply;

	if (num < 0) {
		if (verbose)
			fprintf(stderr, "restart-loader: pid %d: no lazy restore (%s): its memory "
				"is filled before it runs\n", (int)j->ps.rec.pid,
				err == ENOENT ? "no region fits" : strerror(err));
		return 0;
	}
	reply = start_fill(j, num);
	if (reply == CT_CANNOT && verbose)
		fprintf(stderr, "restart-loader: pid %d: cannot take its userfaultfd (%s): its "
			"memory is filled before it runs\n", (int)j->ps.rec.pid, strerror(errno));
	return write(j->control_fd, &reply, 1) == 1 ? 0 : -1;
}

int lazy_done(const struct lazy *lz)
{
	return !lz || __atomic_load_n(&lz->over, __ATOMIC_SEQ_CST);
}

double lazy_fill_ms(const struct lazy *lz)
{
	return lz->t_end - lz->t_start;
}

uint64_t lazy_direct_bytes(const struct lazy *lz)
{
	return stream_direct_bytes(lz->stream);
}

unsigned long long lazy_faults(const struct lazy *lz)
{
	return lz->faults;
}

void lazy_resumed(struct lazy *lz)
{
	uint64_t one = 1;

	__atomic_store_n(&lz->resumed, 1, __ATOMIC_RELEASE);
	if (write(lz->go, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		perror("restart-loader: waking the lazy fill");	/* cannot be: an eventfd */
}

void lazy_free(struct lazy *lz)
{
	if (!lz)
		return;
	if (lz->started) {
		lazy_resumed(lz);	/* a fill still waiting for the resume ends too */
		pthread_join(lz->th, NULL);
	}
	if (lz->go >= 0)
		close(lz->go);
	if (lz->ufd >= 0)
		close(lz->ufd);
	stream_close(lz->stream);
	free(lz->ext);
	free(lz->sumbase);
	free(lz->is_lazy);
	free(lz->buf);
	free(lz->pend);
	free(lz);
}
