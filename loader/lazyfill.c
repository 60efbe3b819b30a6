// SPDX-License-Identifier: MIT
/*
 * The lazy fill's thread (lazy.c says what and why): the table of what
 * is still to come, the program's faults and events, and the copies.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "buf.h"
#include "lazyfill.h"
#include "rt/xxh64.h"
#include "stream.h"

#define PIECE (1u << 20)
#define NMSG 64

enum { CP_OK, CP_EVENTS, CP_GONE };

void ext_add(struct lazy *lz, uint64_t addr, uint64_t len, uint64_t doff, uint32_t region)
{
	if (!len)
		return;
	if (lz->n == lz->cap) {
		lz->cap = lz->cap ? lz->cap * 2 : 64;
		lz->ext = xrealloc(lz->ext, lz->cap * sizeof(*lz->ext));
	}
	lz->ext[lz->n++] = (struct lz_ext){ addr, len, doff, region, 0 };
}

/* The extent holding addr, or -1 (extents are sorted, disjoint; some empty). */
static long ext_find(const struct lazy *lz, uint64_t addr)
{
	size_t lo = 0, hi = lz->n;

	if (!lz->ext)
		return -1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (lz->ext[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		const struct lz_ext *x = &lz->ext[i];

		if (x->len)
			return addr < x->addr + x->len ? (long)i : -1;
	}
	return -1;
}

/* Drops [a, b) from every extent, and the empty ones. */
static void ext_cut(struct lazy *lz, uint64_t a, uint64_t b)
{
	struct lz_ext *old = lz->ext;
	size_t n = lz->n;

	lz->ext = NULL;
	lz->n = lz->cap = 0;
	for (size_t i = 0; i < n; i++) {
		struct lz_ext x = old[i];
		uint64_t end = x.addr + x.len;

		if (end <= a || x.addr >= b) {
			ext_add(lz, x.addr, x.len, x.doff, x.region);
			continue;
		}
		if (x.addr < a)
			ext_add(lz, x.addr, a - x.addr, x.doff, x.region);
		if (end > b)
			ext_add(lz, b, end - b, x.doff + (b - x.addr), x.region);
	}
	free(old);
}

static int by_addr(const void *a, const void *b)
{
	const struct lz_ext *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* mremap moved [from, from + len) to `to`: what was to come there follows. */
static void ext_move(struct lazy *lz, uint64_t from, uint64_t to, uint64_t len)
{
	struct lz_ext *moved = xcalloc(lz->n + 1, sizeof(*moved));
	size_t k = 0;

	for (size_t i = 0; i < lz->n; i++) {
		struct lz_ext x = lz->ext[i];
		uint64_t a = x.addr > from ? x.addr : from;
		uint64_t b = x.addr + x.len < from + len ? x.addr + x.len : from + len;

		if (a < b)
			moved[k++] = (struct lz_ext){ a - from + to, b - a, x.doff + (a - x.addr),
						      x.region, 0 };
	}
	ext_cut(lz, from, from + len);
	ext_cut(lz, to, to + len);
	for (size_t i = 0; i < k; i++)
		ext_add(lz, moved[i].addr, moved[i].len, moved[i].doff, moved[i].region);
	if (lz->ext)
		qsort(lz->ext, lz->n, sizeof(*lz->ext), by_addr);
	free(moved);
}

/* What lazy_kill_tree did, for the message: one process, or the image's. */
static const char *killed_what(struct lazy *lz, char *buf, size_t size)
{
	unsigned n = lazy_kill_tree(lz);

	if (lz->njobs < 2)
		return "the restored process was killed";
	snprintf(buf, size, "the %u restored processes of the image were killed", n);
	return buf;
}

/* A damaged chunk: the program cannot be given it, nor run on without it. */
static int corrupt(struct lazy *lz, const struct ibcr_vma *v, uint32_t region, uint64_t at)
{
	char what[80];

	fprintf(stderr, "restart-loader: pid %d: image %s: region %#llx-%#llx (%s): page data "
		"at %llu is corrupt (checksum mismatch), found after the resume: %s\n", lz->pid,
		lz->path, (unsigned long long)v->start, (unsigned long long)v->end,
		ibcr_vma_label(lz->ps, region), (unsigned long long)at,
		killed_what(lz, what, sizeof(what)));
	return CP_GONE;
}

/*
 * The region's data [c0, c1) (whole chunks) read and checked, at *at:
 * the stream's buffer when it has read it ahead, else lz->buf.
 */
static int read_checked(struct lazy *lz, uint32_t region, uint64_t c0, uint64_t c1,
			int fault, const uint8_t **at_)
{
	const struct ibcr_process_state *ps = lz->ps;
	const struct ibcr_vma *v = &ps->vmas[region];
	uint64_t chunk = ps->sum_chunk, page = (uint64_t)getpagesize();
	uint64_t off = ps->pages_off + v->data_off + c0;
	const uint8_t *buf = NULL;
	ssize_t got = (ssize_t)(c1 - c0);
	int err = 0;

	/* a fault waits for no read ahead: only what the stream has read */
	if (lz->stream)
		buf = fault ? stream_peek(lz->stream, region, c0, c1)
			    : stream_take(lz->stream, region, c0, c1, &err);
	if (!buf) {
		got = pread(lz->img_fd, lz->buf, c1 - c0, (off_t)off);
		buf = lz->buf;
	}
	*at_ = buf;
	if (got != (ssize_t)(c1 - c0)) {
		char what[80];
		const char *why = got < 0 ? strerror(errno) : "the image ends early";

		fprintf(stderr, "restart-loader: pid %d: image %s: reading region %#llx-%#llx's "
			"data at %llu: %s, after the resume: %s\n", lz->pid, lz->path,
			(unsigned long long)v->start, (unsigned long long)v->end,
			(unsigned long long)c0, why, killed_what(lz, what, sizeof(what)));
		return CP_GONE;
	}
	for (uint64_t at = c0; at < c1; at += chunk) {
		uint64_t len = c1 - at < chunk ? c1 - at : chunk;

		if (page_sum(0, buf + (at - c0), len, page, at / page) !=
		    ps->sums[lz->sumbase[region] + at / chunk])
			return corrupt(lz, v, region, at);
	}
	return CP_OK;
}

/* Consumes [addr, addr + k) from the front part of extent i. */
static void consume(struct lazy *lz, size_t i, uint64_t addr, uint64_t k)
{
	struct lz_ext *x = &lz->ext[i];

	if (addr == x->addr) {
		x->addr += k;
		x->doff += k;
		x->len -= k;
	} else {
		ext_cut(lz, addr, addr + k);
	}
}

/*
 * [addr, addr + len) of extent i in: its chunks read and checked, then
 * UFFDIO_COPY. CP_EVENTS: events wait to be read first (EAGAIN) or the
 * range went away (ENOENT, its event unread); CP_GONE: the mm is.
 */
static int copy_piece(struct lazy *lz, size_t i, uint64_t addr, uint64_t len, int fault)
{
	const struct lz_ext x = lz->ext[i];
	uint64_t chunk = lz->ps->sum_chunk, dlen = lz->ps->vmas[x.region].data_len;
	uint64_t d0 = x.doff + (addr - x.addr), c0 = d0 / chunk * chunk;
	uint64_t c1 = (d0 + len + chunk - 1) / chunk * chunk;
	struct uffdio_copy c = { .dst = addr, .len = len };
	const uint8_t *src;
	int rc = read_checked(lz, x.region, c0, c1 < dlen ? c1 : dlen, fault, &src);

	if (rc != CP_OK)
		return rc;
	c.src = (uint64_t)(uintptr_t)(src + (d0 - c0));
	rc = ioctl(lz->ufd, UFFDIO_COPY, &c);
	if (c.copy > 0) {
		lz->copied += (uint64_t)c.copy;
		consume(lz, i, addr, (uint64_t)c.copy);
		return CP_OK;
	}
	if (c.copy == -EEXIST) {
		/* put there by nobody else: only a page we copied; counted done */
		consume(lz, i, addr, (uint64_t)getpagesize());
		return CP_OK;
	}
	if (rc && (errno == EAGAIN || errno == ENOENT))
		return CP_EVENTS;
	return CP_GONE;		/* ESRCH: the process exited or called execve */
}

/* A page outside every extent: zero, as the program would find it. */
static int zero_page(struct lazy *lz, uint64_t addr)
{
	uint64_t page = (uint64_t)getpagesize();
	struct uffdio_zeropage z = { .range = { addr, page } };
	struct uffdio_range w = { addr, page };

	if (!ioctl(lz->ufd, UFFDIO_ZEROPAGE, &z)) {
		lz->zeroed += page;
		return CP_OK;
	}
	if (errno == EAGAIN)
		return CP_EVENTS;
	if (errno == ESRCH)
		return CP_GONE;
	/* EEXIST: copied since the fault; ENOENT: unmapped. Wake it in any case. */
	ioctl(lz->ufd, UFFDIO_WAKE, &w);
	return CP_OK;
}

/* A fault at addr: the rest of its chunk (within its extent) in, or a zero page. */
static int serve_fault(struct lazy *lz, uint64_t addr)
{
	uint64_t page = (uint64_t)getpagesize(), chunk = lz->ps->sum_chunk, end, d, pend;
	int ahead = 0;
	long i;

	addr &= ~(page - 1);
	lz->faults++;
	/* the program walks its memory: fill ahead of it, not behind */
	if (addr > lz->last_fault && addr - lz->last_fault <= 4 * chunk)
		lz->hint = addr;
	lz->last_fault = addr;
	i = ext_find(lz, addr);
	if (i < 0 || !lz->ext)	/* ext_find says so; the analyzer cannot see it */
		return zero_page(lz, addr);
	d = lz->ext[i].doff + (addr - lz->ext[i].addr);
	/*
	 * the stream reads it now or soon: wait for it, all of its piece
	 * (a program walking its memory faults once a piece, not a chunk)
	 */
	if (lz->stream && stream_ahead(lz->stream, lz->ext[i].region, d, &pend))
		ahead = 1, end = addr + (pend - d);
	else
		end = addr + (chunk - d % chunk);
	if (end > lz->ext[i].addr + lz->ext[i].len)
		end = lz->ext[i].addr + lz->ext[i].len;
	return copy_piece(lz, (size_t)i, addr, end - addr, !ahead);
}

static void pend_add(struct lazy *lz, uint64_t addr)
{
	if (lz->npend == lz->cappend) {
		lz->cappend = lz->cappend ? lz->cappend * 2 : 64;
		lz->pend = xrealloc(lz->pend, lz->cappend * sizeof(*lz->pend));
	}
	lz->pend[lz->npend++] = addr;
}

/* The faults waiting, served; those the kernel refuses for now wait again. */
static int serve_pending(struct lazy *lz)
{
	uint64_t *was = lz->pend;
	size_t n = lz->npend;
	int rc = CP_OK;

	lz->pend = NULL;
	lz->npend = lz->cappend = 0;
	for (size_t k = 0; k < n && rc != CP_GONE; k++) {
		int r = serve_fault(lz, was[k]);

		if (r == CP_EVENTS)
			pend_add(lz, was[k]);
		if (r != CP_OK)
			rc = r;
	}
	free(was);
	return rc;
}

/*
 * Reads what waits on the descriptor: events applied to the table at
 * once, then the faults served (one the kernel refuses with EAGAIN waits
 * for the next round: the events that caused it are read by then).
 * CP_GONE ends; CP_EVENTS: something came or still waits.
 */
static int drain(struct lazy *lz, int wait_ms)
{
	struct uffd_msg m[NMSG];
	struct pollfd pfd = { lz->ufd, POLLIN, 0 };
	ssize_t got;
	size_t n = 0;

	if (wait_ms && poll(&pfd, 1, wait_ms) < 0 && errno != EINTR)
		return CP_GONE;
	got = read(lz->ufd, m, sizeof(m));
	if (got < 0 && errno != EAGAIN && errno != EINTR)
		return CP_GONE;
	if (got > 0)
		n = (size_t)got / sizeof(m[0]);
	for (size_t k = 0; k < n; k++) {
		const struct uffd_msg *x = &m[k];

		if (x->event == UFFD_EVENT_REMAP)
			ext_move(lz, x->arg.remap.from, x->arg.remap.to, x->arg.remap.len);
		else if (x->event == UFFD_EVENT_REMOVE || x->event == UFFD_EVENT_UNMAP)
			ext_cut(lz, x->arg.remove.start, x->arg.remove.end);
		else if (x->event == UFFD_EVENT_PAGEFAULT)
			pend_add(lz, x->arg.pagefault.address);
	}
	if (!lz->npend)
		return n ? CP_EVENTS : CP_OK;
	return serve_pending(lz) == CP_GONE ? CP_GONE : CP_EVENTS;
}

/* The first extent left from the hint on, then from the start; lz->n: none. */
static size_t next_extent(const struct lazy *lz)
{
	size_t lo = 0, hi = lz->n;

	while (lo < hi) {	/* the first that ends past the hint */
		size_t mid = (lo + hi) / 2;

		if (lz->ext[mid].addr + lz->ext[mid].len <= lz->hint)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = 0; k < lz->n; k++) {
		size_t i = (lo + k) % lz->n;

		if (lz->ext[i].len)
			return i;
	}
	return lz->n;
}

/*
 * The next piece still to come in: in address order from where the
 * program last walked (else from the start); 0 when none is left.
 */
static int background(struct lazy *lz)
{
	size_t i = next_extent(lz);
	const struct lz_ext *x;
	uint64_t len;

	if (i >= lz->n || !lz->ext)
		return 0;
	x = &lz->ext[i];
	/* up to the next PIECE of the data: the stream's pieces end there */
	len = PIECE - x->doff % PIECE;
	if (len > x->len)
		len = x->len;
	return copy_piece(lz, i, x->addr, len, 0) == CP_GONE ? -1 : 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * IBCR_LAZY_SLOW_MS (tests): a background piece every so many ms at
 * most, faults served meanwhile, so that a test's events land during
 * the fill.
 */
static int pace(struct lazy *lz, double *next)
{
	double t;

	while (lz->slow_ms && (t = now_ms()) < *next) {
		int wait = (int)(*next - t) + 1;

		if (drain(lz, lz->npend ? 0 : wait) == CP_GONE)
			return CP_GONE;
	}
	*next = now_ms() + lz->slow_ms;
	return CP_OK;
}

/*
 * Until the program runs, only its faults (and the core's for it) are
 * served: the core's work is what "running again" waits for, and the
 * background copies would take CPUs and the mm's lock from it.
 */
static int until_resumed(struct lazy *lz)
{
	struct pollfd p[2] = { { lz->ufd, POLLIN, 0 }, { lz->go, POLLIN, 0 } };

	while (!__atomic_load_n(&lz->resumed, __ATOMIC_ACQUIRE)) {
		if (poll(p, 2, lz->npend ? 1 : -1) < 0 && errno != EINTR)
			return CP_GONE;
		if (drain(lz, 0) == CP_GONE)
			return CP_GONE;
	}
	return CP_OK;
}

void lazy_fill(struct lazy *lz)
{
	double next = 0;

	if (until_resumed(lz) == CP_GONE)
		return;
	lazy_open_stream(lz);
	for (;;) {
		int rc = drain(lz, 0);

		if (rc == CP_GONE)
			return;
		if (rc == CP_EVENTS && !lz->npend)
			continue;	/* faults first, events before any copy */
		if (pace(lz, &next) == CP_GONE || background(lz) <= 0)
			return;
	}
}
