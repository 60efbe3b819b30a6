// SPDX-License-Identifier: MIT
/*
 * The page data of an uncompressed image read at the disk's speed. An
 * image that is not in the page cache (written past it, on another
 * machine, after a reboot) read through the cache comes in by readahead,
 * 128 KiB at a time: ~150 MB/s on the build machine, against ~0.6-1.2
 * GB/s for large direct reads, several in flight. So the regions the
 * loader fills are read in pieces of PIECE bytes with O_DIRECT (a piece
 * the cache holds whole with plain pread), by NREAD threads, into a ring
 * of NSLOT buffers, ahead of the core's requests; each thread also sums
 * the pieces it read and puts them in place once their region is asked
 * for, so reading, summing and copying run on every CPU at once. A
 * thread reads first while fewer than QD reads are in flight: when all
 * put (CPU-bound, on two CPUs here), the disk stood idle. The buffers
 * are ours alone: the bytes summed are the bytes put in.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "lazy.h"
#include "loader.h"
#include "pagecache.h"
#include "stream.h"
#include "rt/xxh64.h"

#define PIECE (1u << 20)
#define NSLOT 16
#define NREAD 6	/* threads: QD reading, the others summing and copying */
#define QD 3

struct piece {
	uint64_t off;		/* in the file */
	uint32_t len;
	uint32_t region;
	uint64_t index;		/* its first page's index in the region's data */
	uint8_t cached;		/* every page of it in the page cache */
};

enum { SLOT_FREE, SLOT_READING, SLOT_READ, SLOT_PUTTING };

struct pslot {
	uint64_t piece;
	int state, err;		/* err: errno of the read, or 0 */
	uint8_t *buf;
};

struct stream {
	int fd, dfd;		/* the image; the same file O_DIRECT, or -1 */
	struct stream_sink sink;
	struct piece *pieces;
	uint64_t npieces;
	uint64_t next;		/* the next piece to read */
	uint32_t open;		/* pieces of regions below it may be put in; */
	int opened;		/* ... of it too, once opened */
	uint64_t left;		/* bytes of the open region not yet put in */
	uint32_t sum;		/* of those put in */
	int err;		/* the first error of the open region */
	struct pslot slot[NSLOT];
	uint8_t *bufs;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th[NREAD];
	int nth, stop;
	uint64_t direct_bytes;
	uint64_t take;		/* stream_take: the piece held, or UINT64_MAX */
	int seeking;
	int reading;		/* reads in flight */
};

/*
 * Cuts the extents into pieces that end on PIECE boundaries of the file;
 * of each extent's data when taken in order (stream_take: a piece then
 * holds whole chunks of the data's sums).
 */
static void cut(struct stream *s, const struct stream_ext *ext, size_t n)
{
	size_t pg = (size_t)getpagesize();
	uint64_t cap = 0;

	for (size_t i = 0; i < n; i++)
		cap += ext[i].len / PIECE + 2;
	s->pieces = xcalloc(cap + 1, sizeof(*s->pieces));
	for (size_t i = 0; i < n; i++)
		for (uint64_t at = ext[i].off, end = ext[i].off + ext[i].len; at < end; ) {
			uint64_t base = s->sink.put ? 0 : ext[i].off % PIECE;
			uint64_t stop = ((at - base) / PIECE + 1) * PIECE + base;

			if (stop > end)
				stop = end;
			s->pieces[s->npieces++] = (struct piece){
				at, (uint32_t)(stop - at), ext[i].region, (at - ext[i].off) / pg, 0 };
			at = stop;
		}
}

/*
 * Which pieces the page cache holds whole; those are read through it.
 * None (or all) of the data cached, the common cases, costs one look.
 */
static void residency(struct stream *s)
{
	uint64_t lo, hi, missing;

	if (!s->npieces)
		return;
	lo = s->pieces[0].off;
	hi = s->pieces[s->npieces - 1].off + s->pieces[s->npieces - 1].len;
	missing = pagecache_missing(s->fd, lo, hi - lo);
	for (uint64_t i = 0; i < s->npieces && missing < hi - lo; i++)
		s->pieces[i].cached = !missing ||
				      !pagecache_missing(s->fd, s->pieces[i].off, s->pieces[i].len);
}

/* len bytes at off into buf: 0 or an errno (EIO: the image ends early). */
static int read_at(struct stream *s, uint64_t off, uint32_t len, int direct, uint8_t *buf)
{
	if (s->dfd >= 0 && direct) {
		ssize_t got = pread(s->dfd, buf, len, (off_t)off);

		if (got == (ssize_t)len) {
			__atomic_add_fetch(&s->direct_bytes, len, __ATOMIC_RELAXED);
			return 0;
		}
		/* a short or refused direct read: the cache's read says why, or does it */
	}
	return pread_full(s->fd, buf, len, off) ? (errno ? errno : EIO) : 0;
}

/* Sums piece i and puts it in place (without the lock); 0 or an errno. */
static int put_piece(struct stream *s, uint64_t i, const uint8_t *buf, uint32_t *sum)
{
	const struct piece *p = &s->pieces[i];

	*sum = page_sum(0, buf, p->len, (size_t)getpagesize(), p->index);
	return s->sink.put(s->sink.ctx, p->region, p->off, buf, p->len) ? (errno ? errno : EIO)
									 : 0;
}

/* A slot whose piece may be put in now, or NULL (under the lock). */
static struct pslot *puttable(struct stream *s)
{
	for (int k = 0; k < NSLOT && s->sink.put; k++) {
		struct pslot *sl = &s->slot[k];
		uint32_t region;

		if (sl->state != SLOT_READ)
			continue;
		region = s->pieces[sl->piece].region;
		if (region < s->open || (region == s->open && s->opened))
			return sl;
	}
	return NULL;
}

/* The piece is done with: counted for its region, its slot free again. */
static void piece_done(struct stream *s, struct pslot *sl, int err, uint32_t sum)
{
	const struct piece *p = &s->pieces[sl->piece];

	if (p->region == s->open && s->opened) {
		s->left -= p->len;
		s->sum += sum;
		if (err && !s->err)
			s->err = err;
	}
	sl->state = SLOT_FREE;
	pthread_cond_broadcast(&s->cv);
}

static int can_read(const struct stream *s)
{
	return !s->seeking && s->next < s->npieces && s->slot[s->next % NSLOT].state == SLOT_FREE;
}

static void *reader(void *arg)
{
	struct stream *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct pslot *sl;
		uint32_t sum = 0;
		int err;

		while (!s->stop && !(sl = puttable(s)) && !can_read(s))
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop)
			break;
		/* reads first while fewer than QD are in flight: keep the disk busy */
		if (sl && can_read(s) && s->reading < QD)
			sl = NULL;
		if (sl) {
			/* pieces of regions passed over were never asked for: dropped */
			int skip = s->pieces[sl->piece].region < s->open;

			sl->state = SLOT_PUTTING;
			pthread_mutex_unlock(&s->mu);
			err = skip ? 0 : sl->err ? sl->err : put_piece(s, sl->piece, sl->buf, &sum);
			pthread_mutex_lock(&s->mu);
			piece_done(s, sl, err, sum);
			continue;
		}
		sl = &s->slot[s->next % NSLOT];
		sl->piece = s->next++;
		sl->state = SLOT_READING;
		s->reading++;
		pthread_mutex_unlock(&s->mu);
		err = read_at(s, s->pieces[sl->piece].off, s->pieces[sl->piece].len,
			      !s->pieces[sl->piece].cached, sl->buf);
		pthread_mutex_lock(&s->mu);
		sl->err = err;
		sl->state = SLOT_READ;
		s->reading--;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct stream *stream_open(int fd, const struct stream_ext *ext, size_t n, int direct,
			   const struct stream_sink *sink, struct ibcr_err *e)
{
	struct stream *s = xcalloc(1, sizeof(*s));
	char path[64];

	s->fd = fd;
	s->dfd = -1;
	s->take = UINT64_MAX;
	if (sink)
		s->sink = *sink;
	cut(s, ext, n);
	/* the very file, not whatever has its name now */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (direct)
		s->dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);	/* EINVAL: no direct I/O */
	residency(s);
	s->bufs = mmap(NULL, (size_t)PIECE * NSLOT, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->bufs == MAP_FAILED) {
		ibcr_fail_errno(e, errno, "buffers to read the image in");
		s->bufs = NULL;
		stream_close(s);
		return NULL;
	}
	for (int k = 0; k < NSLOT; k++)
		s->slot[k].buf = s->bufs + (size_t)k * PIECE;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	while (s->nth < NREAD && !pthread_create(&s->th[s->nth], NULL, reader, s))
		s->nth++;
	return s;
}

/* The first piece of a region after r - 1 (pieces are in region order). */
static uint64_t first_of(const struct stream *s, uint64_t r)
{
	uint64_t lo = 0, hi = s->npieces;

	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;

		if (s->pieces[mid].region < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Region r's pieces, [*first, *end), or none. */
static void pieces_of(const struct stream *s, uint32_t r, uint64_t *first, uint64_t *end)
{
	*first = first_of(s, r);
	*end = first_of(s, (uint64_t)r + 1);
}

/*
 * A region the stream was not told of, or asked for out of order (not
 * expected): read and put in here, a piece at a time, with a buffer of
 * its own.
 */
static int put_aside(struct stream *s, uint32_t r, const struct stream_ext *x, uint32_t *sum)
{
	size_t pg = (size_t)getpagesize();
	uint8_t *buf = xmalloc_aligned(pg, PIECE);
	int err = 0;

	*sum = 0;
	for (uint64_t at = 0; at < x->len && !err; at += PIECE) {
		uint32_t len = x->len - at < PIECE ? (uint32_t)(x->len - at) : PIECE;

		err = read_at(s, x->off + at, len, 0, buf);
		if (!err) {
			*sum += page_sum(0, buf, len, pg, at / pg);
			err = s->sink.put(s->sink.ctx, r, x->off + at, buf, len) ?
			      (errno ? errno : EIO) : 0;
		}
	}
	free(buf);
	return err;
}

int stream_region(struct stream *s, const struct stream_ext *x, uint32_t *sum)
{
	uint64_t first, end, len = 0;
	int err;

	pieces_of(s, x->region, &first, &end);
	for (uint64_t i = first; i < end; i++)
		len += s->pieces[i].len;
	pthread_mutex_lock(&s->mu);
	if (first == end || len != x->len || x->region < s->open ||
	    (x->region == s->open && s->opened) || !s->nth) {
		pthread_mutex_unlock(&s->mu);
		return put_aside(s, x->region, x, sum);
	}
	if (s->next < first)
		s->next = first;	/* the pieces before it were never asked for */
	s->open = x->region;
	s->opened = 1;
	s->left = len;
	s->sum = 0;
	s->err = 0;
	pthread_cond_broadcast(&s->cv);
	while (s->left)
		pthread_cond_wait(&s->cv, &s->mu);
	*sum = s->sum;
	err = s->err;
	pthread_mutex_unlock(&s->mu);
	return err;
}

/* Piece k's slot (it was asked for, so it is or will be read into one). */
static struct pslot *slot_of(struct stream *s, uint64_t k)
{
	struct pslot *sl = &s->slot[k % NSLOT];

	while (!(sl->piece == k && (sl->state == SLOT_READ || sl->state == SLOT_PUTTING)))
		pthread_cond_wait(&s->cv, &s->mu);
	return sl;
}

/*
 * The stream at piece k: those before it given back (their slots read
 * again); away from what it read ahead, all of that (a seek: the
 * reading goes on from k). Under the lock.
 */
static void seek_to(struct stream *s, uint64_t k)
{
	int away = k < s->take || k > s->next;

	s->seeking = away;	/* no new read meanwhile: the window holds still */
	for (uint64_t i = s->take; i < (away ? s->next : k); i++)
		slot_of(s, i)->state = SLOT_FREE;
	if (away)
		s->next = k;
	s->take = k;
	s->seeking = 0;
	pthread_cond_broadcast(&s->cv);
}

/* The piece of region's data [d0, d1), or UINT64_MAX when no one piece holds it. */
static uint64_t piece_at(const struct stream *s, uint32_t region, uint64_t d0, uint64_t d1)
{
	uint64_t first, end, k, pg = (uint64_t)getpagesize();

	pieces_of(s, region, &first, &end);
	if (first == end || s->sink.put || !s->nth)
		return UINT64_MAX;
	k = first + d0 / PIECE;
	if (k >= end || d0 < s->pieces[k].index * pg ||
	    d1 > s->pieces[k].index * pg + s->pieces[k].len)
		return UINT64_MAX;
	return k;
}

int stream_ahead(struct stream *s, uint32_t region, uint64_t d, uint64_t *end)
{
	uint64_t k = piece_at(s, region, d, d), pg = (uint64_t)getpagesize();
	int near;

	if (k == UINT64_MAX) {
		*end = 0;
		return 0;
	}
	pthread_mutex_lock(&s->mu);
	near = s->take != UINT64_MAX && k >= s->take && k < s->take + NSLOT;
	pthread_mutex_unlock(&s->mu);
	*end = s->pieces[k].index * pg + s->pieces[k].len;
	return near;
}

const uint8_t *stream_peek(struct stream *s, uint32_t region, uint64_t d0, uint64_t d1)
{
	uint64_t k = piece_at(s, region, d0, d1), pg = (uint64_t)getpagesize();
	const uint8_t *at = NULL;
	struct pslot *sl;

	if (k == UINT64_MAX)
		return NULL;
	pthread_mutex_lock(&s->mu);
	sl = &s->slot[k % NSLOT];
	if (k >= s->take && k < s->next && sl->piece == k && !sl->err &&
	    (sl->state == SLOT_READ || sl->state == SLOT_PUTTING))
		at = sl->buf + (d0 - s->pieces[k].index * pg);
	pthread_mutex_unlock(&s->mu);
	return at;
}

const uint8_t *stream_take(struct stream *s, uint32_t region, uint64_t d0, uint64_t d1,
			   int *err)
{
	uint64_t k = piece_at(s, region, d0, d1), pg = (uint64_t)getpagesize();
	const struct piece *p;
	struct pslot *sl;

	*err = 0;
	if (k == UINT64_MAX)
		return NULL;
	p = &s->pieces[k];
	pthread_mutex_lock(&s->mu);
	if (s->take == UINT64_MAX)
		s->take = 0;
	seek_to(s, k);
	sl = slot_of(s, k);
	sl->state = SLOT_PUTTING;	/* ours until the next take */
	*err = sl->err;
	pthread_mutex_unlock(&s->mu);
	return *err ? NULL : sl->buf + (d0 - p->index * pg);
}

uint64_t stream_direct_bytes(const struct stream *s)
{
	return s ? __atomic_load_n(&s->direct_bytes, __ATOMIC_RELAXED) : 0;
}

void stream_close(struct stream *s)
{
	if (!s)
		return;
	if (s->nth) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		for (int i = 0; i < s->nth; i++)
			pthread_join(s->th[i], NULL);
	}
	if (s->bufs) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		munmap(s->bufs, (size_t)PIECE * NSLOT);
	}
	if (s->dfd >= 0)
		close(s->dfd);
	free(s->pieces);
	free(s);
}

/*
 * Which processes the loader fills from the stream: those whose page
 * data the page cache lacks more than STREAM_MIN bytes of. Any part
 * read through the cache would come at readahead's pace, while the
 * core's fill, from the cache, is the faster one when it is all there
 * (two CPUs copy). IBCR_FILL=stream or IBCR_FILL=core decides it
 * instead (tests, bench).
 */
#define STREAM_MIN (16ull << 20)

/*
 * What the cache lacks of the page data the restore reads before the
 * program runs: the lazy regions' is read later, by their own stream
 * (lazy.c), and the few small regions left of a cold lazy restore come
 * in sooner by readahead than by one direct read each.
 */
static uint64_t missing_before_run(const struct job *j, int img_fd)
{
	const struct ibcr_process_state *ps = &j->ps;
	uint64_t missing = 0;

	if (!j->rs.lazy)
		return pagecache_missing(img_fd, ps->pages_off, ps->pages_size);
	for (uint32_t k = 0; k < ps->nvmas; k++)
		if (ps->vmas[k].data_len && !lazy_region(&j->rs, k))
			missing += pagecache_missing(img_fd, ps->pages_off + ps->vmas[k].data_off,
						     ps->vmas[k].data_len);
	return missing;
}

void stream_decide(struct job *j, uint32_t n, int img_fd, int verbose)
{
	const char *force = getenv("IBCR_FILL");

	for (uint32_t i = 0; i < n; i++) {
		const struct ibcr_process_state *ps = &j[i].ps;
		uint64_t missing;

		if (ps->nblocks || !ps->pages_size || (ps->rec.flags & IBCR_PROCF_ZOMBIE))
			continue;
		if (force && (!strcmp(force, "stream") || !strcmp(force, "core"))) {
			j[i].rs.stream_fill = !strcmp(force, "stream");
			continue;
		}
		missing = missing_before_run(&j[i], img_fd);
		j[i].rs.stream_fill = missing > STREAM_MIN;
		if (verbose && j[i].rs.stream_fill)
			fprintf(stderr, "restart-loader: pid %d: %llu MiB of its %llu MiB of page "
				"data are not in the page cache: read with direct I/O\n",
				(int)ps->rec.pid, (unsigned long long)(missing >> 20),
				(unsigned long long)(ps->pages_size >> 20));
	}
}
