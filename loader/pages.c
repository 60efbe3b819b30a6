// SPDX-License-Identifier: MIT
/*
 * Compressed images are filled by the loader, not by the core: the core
 * has no libc and no codec, and the loader has both and every core. When
 * the core has mapped a region that holds data, it asks (ST_FILL and the
 * region's index on the status pipe); the loader decompresses the blocks
 * that cover the region on all cores, checks each block's and then the
 * region's CRC, copies the bytes into the child (through its
 * userfaultfd, or pages_write), and answers CT_DONE (or CT_FAILED after printing
 * why).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "compress.h"
#include "rt/crc32c.h"
#include "rt/xxh64.h"
#include "loader.h"
#include "lazy.h"
#include "stream.h"

/*
 * Blocks are decoded ahead by worker threads, one per CPU, into a ring
 * of slots (block k in slot k % nslot), while this thread sums and puts
 * the block before: until 2026-11-30 a batch was decoded, then put, and
 * the decoding waited meanwhile. The workers live for one pages_fill;
 * what they decoded ahead stays in its slot for the next region.
 */
enum { SLOT_EMPTY, SLOT_QUEUED, SLOT_BUSY, SLOT_READY };

struct slot {
	uint64_t blk;
	int state, bad;		/* bad: decode()'s answer */
	uint8_t *raw, *stored;
};

/*
 * Reads, decompresses and checks one block: 0, -1 if it is corrupt, or
 * the errno of reading it (EIO for a short read: the image ends early).
 */
static int decode(const struct pages *pg, struct slot *s)
{
	const struct ibcr_blockref *b = &pg->ps->blocks[s->blk];
	ssize_t got = pread(pg->img_fd, s->stored, b->stored_len, (off_t)b->file_off);

	if (got != (ssize_t)b->stored_len)
		return got < 0 ? errno : EIO;
	return blk_decompress((int)b->codec, s->stored, b->stored_len, s->raw, b->raw_len) ||
	       block_sum(s->raw, b->raw_len) != b->raw_crc ? -1 : 0;
}

/* The queued slot of the lowest block, or NULL (under pg->mu). */
static struct slot *next_queued(struct pages *pg)
{
	struct slot *best = NULL;

	for (int i = 0; i < pg->nslot; i++)
		if (pg->slot[i].state == SLOT_QUEUED && (!best || pg->slot[i].blk < best->blk))
			best = &pg->slot[i];
	return best;
}

static void *worker(void *arg)
{
	struct pages *pg = arg;

	pthread_mutex_lock(&pg->mu);
	for (;;) {
		struct slot *s = NULL;

		while (!pg->stop && !(s = next_queued(pg)))
			pthread_cond_wait(&pg->cv, &pg->mu);
		if (!s)
			break;
		s->state = SLOT_BUSY;
		pthread_mutex_unlock(&pg->mu);
		int bad = decode(pg, s);

		pthread_mutex_lock(&pg->mu);
		s->bad = bad;
		s->state = SLOT_READY;
		pthread_cond_broadcast(&pg->cv);
	}
	pthread_mutex_unlock(&pg->mu);
	return NULL;
}

static void start_workers(struct pages *pg)
{
	pg->stop = 0;
	pg->nworkers = 0;
	while (pg->nworkers < pg->width &&
	       !pthread_create(&pg->workers[pg->nworkers], NULL, worker, pg))
		pg->nworkers++;
}

/* Joins them; what they had not started is dropped, what they did kept. */
static void stop_workers(struct pages *pg)
{
	pthread_mutex_lock(&pg->mu);
	pg->stop = 1;
	pthread_cond_broadcast(&pg->cv);
	pthread_mutex_unlock(&pg->mu);
	for (int i = 0; i < pg->nworkers; i++)
		pthread_join(pg->workers[i], NULL);
	pg->nworkers = 0;
	for (int i = 0; i < pg->nslot; i++)
		if (pg->slot[i].state == SLOT_QUEUED)
			pg->slot[i].state = SLOT_EMPTY;
}

/*
 * Block k, decoded: queues it and the blocks after it (into slots that
 * hold only blocks before k: we go up the stream and are done with
 * those) and waits for it. Without workers it decodes k itself.
 */
static struct slot *get_block(struct pages *pg, uint64_t k)
{
	struct slot *s = &pg->slot[k % (uint64_t)pg->nslot];

	pthread_mutex_lock(&pg->mu);
	for (uint64_t b = k; b < k + (uint64_t)pg->nslot && b < pg->ps->nblocks; b++) {
		struct slot *t = &pg->slot[b % (uint64_t)pg->nslot];

		if ((t->state != SLOT_EMPTY && t->blk == b) || t->state == SLOT_BUSY)
			continue;
		t->blk = b;
		t->bad = 0;
		t->state = SLOT_QUEUED;
	}
	pthread_cond_broadcast(&pg->cv);
	while (!(s->blk == k && s->state == SLOT_READY)) {
		if (!pg->nworkers) {
			s->blk = k;
			s->bad = decode(pg, s);
			s->state = SLOT_READY;
			break;
		}
		/* a worker was still busy with an older block there */
		if (s->state != SLOT_BUSY && s->blk != k) {
			s->blk = k;
			s->bad = 0;
			s->state = SLOT_QUEUED;
			pthread_cond_broadcast(&pg->cv);
		}
		pthread_cond_wait(&pg->cv, &pg->mu);
	}
	pthread_mutex_unlock(&pg->mu);
	return s;
}

/* First block whose data ends after stream offset `at`. */
static uint64_t find_block(const struct ibcr_process_state *ps, uint64_t at)
{
	uint64_t lo = 0, hi = ps->nblocks;

	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;

		if (ps->blocks[mid].raw_off + ps->blocks[mid].raw_len <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int put_piece(struct pages *pg, uint64_t addr, const uint8_t *p, uint64_t k)
{
	uint64_t size = (uint64_t)getpagesize();
	int64_t done;

	if (pg->ufd < 0 || addr % size || k % size)
		return pages_write(pg, addr, p, k);
	/*
	 * Through the child's userfaultfd: pages allocated and filled at
	 * once, none zeroed first. Nobody else fills the region, so a page
	 * already there is an error like any other.
	 */
	done = uffd_copy(pg->ufd, addr, (uint64_t)(uintptr_t)p, k);
	__atomic_add_fetch(&pg->copied, done > 0 ? (uint64_t)done : 0, __ATOMIC_RELAXED);
	if (done >= 0 && (uint64_t)done < k)
		errno = EEXIST;
	return (uint64_t)done == k ? 0 : -1;
}

/* Writes `len` stream bytes at stream offset `at` to their addresses. */
int pages_put(struct pages *pg, const struct ibcr_vma *v, uint64_t at,
	       const uint8_t *p, uint64_t len)
{
	const struct ibcr_process_state *ps = pg->ps;
	uint64_t run_start = v->data_off, size = (uint64_t)getpagesize();

	for (uint64_t r = v->run0; r < v->run0 + v->nruns && len; r++) {
		uint64_t run_len = ps->runs[r].npages * size, skip, k;

		if (at >= run_start + run_len) {
			run_start += run_len;
			continue;
		}
		skip = at - run_start;
		k = run_len - skip < len ? run_len - skip : len;
		if (put_piece(pg, ps->runs[r].addr + skip + pg->delta, p, k))
			return -1;
		p += k;
		at += k;
		len -= k;
		run_start += run_len;
	}
	return len ? -1 : 0;
}

static int fill_region(struct pages *pg, uint32_t idx, struct ibcr_err *e);

static int stream_put(void *ctx, uint32_t region, uint64_t off, const uint8_t *p,
		      uint64_t len)
{
	struct pages *pg = ctx;

	return pages_put(pg, &pg->ps->vmas[region], off - pg->ps->pages_off, p, len);
}

/*
 * The regions the core will ask us to fill, in stream order: those with
 * data of their own that were not built before the fork (cow.c) nor are
 * shared memory (shm.c) nor filled lazily (lazy.c: read ahead, they
 * would only delay the others). A wrong guess costs a read, not a wrong page:
 * the stream reads a region it was not told of when it is asked for it.
 */
static struct stream *open_stream(struct pages *pg, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = pg->ps;
	struct stream_ext *ext = xcalloc(ps->nvmas + 1, sizeof(*ext));
	struct stream_sink sink = { stream_put, pg };
	struct stream *s;
	size_t n = 0;

	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];

		if (v->data_len && (v->kind == IBCR_VMA_ANON || v->kind == IBCR_VMA_FILE) &&
		    !(v->flags & (IBCR_VMAF_COW | IBCR_VMAF_COWSRC)) &&
		    !(pg->rs && lazy_region(pg->rs, i)))
			ext[n++] = (struct stream_ext){ ps->pages_off + v->data_off, v->data_len, i };
	}
	s = stream_open(pg->img_fd, ext, n, 1, &sink, e);
	free(ext);
	return s;
}

/*
 * An uncompressed region that the page cache does not hold (stream.c
 * decides): read, summed and put in by the stream's threads, the sum
 * checked before we answer.
 */
static int stream_fill(struct pages *pg, uint32_t idx, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = pg->ps;
	const struct ibcr_vma *v = &ps->vmas[idx];
	struct stream_ext x = { ps->pages_off + v->data_off, v->data_len, idx };
	uint32_t crc = 0;
	int err;

	if (!pg->stream && !(pg->stream = open_stream(pg, e)))
		return -1;
	err = stream_region(pg->stream, &x, &crc);
	if (err)
		return ibcr_fail_errno(e, err, "image %s: region %#llx-%#llx (%s): reading it "
				       "or putting it into the restored process", pg->path,
				       (unsigned long long)v->start, (unsigned long long)v->end,
				       ibcr_vma_label(ps, idx));
	if (crc != v->data_crc)
		return ibcr_fail(e, "image %s: region %#llx-%#llx (%s): page data is corrupt "
				 "(checksum mismatch); nothing was resumed", pg->path,
				 (unsigned long long)v->start, (unsigned long long)v->end,
				 ibcr_vma_label(ps, idx));
	return 0;
}

int pages_fill(struct pages *pg, uint32_t idx, int fd, struct ibcr_err *e)
{
	int rc;

	if (idx >= pg->ps->nvmas)
		return ibcr_fail(e, "the core asked for region %u of %u", idx, pg->ps->nvmas);
	if (fd >= 0) {
		pg->ufd = pages_take_fd(pg, fd);
		if (pg->ufd < 0)
			return 1;
	}
	if (!pg->ps->nblocks) {
		rc = stream_fill(pg, idx, e);
	} else {
		start_workers(pg);
		rc = fill_region(pg, idx, e);
		stop_workers(pg);
	}
	if (pg->ufd >= 0)
		close(pg->ufd);
	pg->ufd = -1;
	return rc;
}

static int fill_region(struct pages *pg, uint32_t idx, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = pg->ps;
	const struct ibcr_vma *v = &ps->vmas[idx];
	uint64_t at = v->data_off, end = v->data_off + v->data_len;
	uint32_t crc = 0;

	for (uint64_t k = find_block(ps, at); at < end; k++) {
		const struct ibcr_blockref *b;
		const struct slot *s;
		uint64_t from, len;

		if (k >= ps->nblocks)
			return ibcr_fail(e, "image %s: region %#llx-%#llx: page blocks end "
					 "early", pg->path, (unsigned long long)v->start,
					 (unsigned long long)v->end);
		s = get_block(pg, k);
		if (s->bad > 0)
			return ibcr_fail_errno(e, s->bad, "image %s: reading page block %llu "
					       "(for region %#llx-%#llx, %s)", pg->path,
					       (unsigned long long)k, (unsigned long long)v->start,
					       (unsigned long long)v->end, ibcr_vma_label(ps, idx));
		if (s->bad)
			return ibcr_fail(e, "image %s: page block %llu (for region "
					 "%#llx-%#llx, %s) is corrupt", pg->path,
					 (unsigned long long)k, (unsigned long long)v->start,
					 (unsigned long long)v->end, ibcr_vma_label(ps, idx));
		b = &ps->blocks[k];
		from = at - b->raw_off;
		len = (b->raw_len - from < end - at) ? b->raw_len - from : end - at;
		crc = page_sum(crc, s->raw + from, len, (size_t)getpagesize(),
			       (at - v->data_off) / (uint64_t)getpagesize());
		if (pages_put(pg, v, at, s->raw + from, len))
			return ibcr_fail_errno(e, errno, "writing region %#llx-%#llx (%s) into "
					       "the restored process",
					       (unsigned long long)v->start,
					       (unsigned long long)v->end, ibcr_vma_label(ps, idx));
		at += len;
	}
	if (crc != v->data_crc)
		return ibcr_fail(e, "image %s: region %#llx-%#llx (%s): page data is corrupt "
				 "(checksum mismatch); nothing was resumed", pg->path,
				 (unsigned long long)v->start, (unsigned long long)v->end,
				 ibcr_vma_label(ps, idx));
	return 0;
}

int pages_open(struct pages *pg, const struct ibcr_process_state *ps, int img_fd,
	       const char *path, pid_t child, struct ibcr_err *e)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t max_raw = 1, max_stored = 1;
	char mem[64];

	memset(pg, 0, sizeof(*pg));
	pg->ps = ps;
	pg->img_fd = img_fd;
	pg->path = path;
	pg->child = child;
	pg->ufd = -1;
	pg->width = cpus < 1 ? 1 : cpus > PAGES_MAX_WORKERS ? PAGES_MAX_WORKERS : (int)cpus;
	pg->nslot = pg->width + 2;	/* what the workers decode, and two ahead */
	pthread_mutex_init(&pg->mu, NULL);
	pthread_cond_init(&pg->cv, NULL);
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)child);
	pg->memfd = open(mem, O_RDWR | O_CLOEXEC);
	if (pg->memfd < 0)
		return ibcr_fail_errno(e, errno, "opening %s", mem);
	/* buffers as large as the largest block: the format allows any size */
	for (uint64_t k = 0; k < ps->nblocks; k++) {
		if (ps->blocks[k].raw_len > max_raw)
			max_raw = ps->blocks[k].raw_len;
		if (ps->blocks[k].stored_len > max_stored)
			max_stored = ps->blocks[k].stored_len;
	}
	pg->slot = xcalloc((size_t)pg->nslot, sizeof(*pg->slot));
	for (int k = 0; k < pg->nslot; k++) {
		pg->slot[k].raw = xmalloc(max_raw);
		pg->slot[k].stored = xmalloc(max_stored);
	}
	return 0;
}

void pages_close(struct pages *pg)
{
	for (int k = 0; pg->slot && k < pg->nslot; k++) {
		free(pg->slot[k].raw);
		free(pg->slot[k].stored);
	}
	if (pg->slot) {
		pthread_mutex_destroy(&pg->mu);
		pthread_cond_destroy(&pg->cv);
	}
	free(pg->slot);
	free(pg->help_buf);
	stream_close(pg->stream);
	if (pg->memfd >= 0)
		close(pg->memfd);
	memset(pg, 0, sizeof(*pg));
	pg->memfd = -1;
	pg->ufd = -1;
}
