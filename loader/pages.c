// SPDX-License-Identifier: MIT
/*
 * Compressed images are filled by the loader, not by the core: the core
 * has no libc and no codec, and the loader has both and every core. When
 * the core has mapped a region that holds data, it asks ('P' and the
 * region's index on the status pipe); the loader decompresses the blocks
 * that cover the region, a batch at a time on all cores, checks each
 * block's and then the region's CRC, writes the bytes into the child
 * (pages_write), and answers 'K' (or 'X' after printing why).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "buf.h"
#include "compress.h"
#include "crc32c.h"
#include "xxh64.h"
#include "loader.h"

#define MAX_BATCH 8

struct slot {
	const struct ibcr_blockref *b;
	uint8_t *raw, *stored;
	int fd, bad;
};

static void *decode(void *arg)
{
	struct slot *s = arg;

	s->bad = pread(s->fd, s->stored, s->b->stored_len, (off_t)s->b->file_off) !=
			 (ssize_t)s->b->stored_len ||
		 blk_decompress((int)s->b->codec, s->stored, s->b->stored_len, s->raw,
				s->b->raw_len) ||
		 block_sum(s->raw, s->b->raw_len) != s->b->raw_crc;
	return NULL;
}

/* Decodes blocks [first, first + n) of the stream, one thread each. */
static int decode_batch(struct pages *pg, uint64_t first, int n)
{
	pthread_t th[MAX_BATCH];
	int threaded[MAX_BATCH] = { 0 };

	for (int k = 0; k < n; k++) {
		struct slot *s = &pg->slot[k];

		s->b = &pg->ps->blocks[first + k];
		s->fd = pg->img_fd;
		threaded[k] = k && !pthread_create(&th[k], NULL, decode, s);
	}
	for (int k = 0; k < n; k++)
		if (!threaded[k])
			decode(&pg->slot[k]);
	for (int k = 0; k < n; k++)
		if (threaded[k])
			pthread_join(th[k], NULL);
	pg->first = first;
	pg->n = n;
	for (int k = 0; k < n; k++)
		if (pg->slot[k].bad)
			return (int)k + 1;
	return 0;
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

/*
 * Through the child's userfaultfd: pages allocated and filled at once,
 * none zeroed first. Nobody else fills the region, so a page already
 * there (EEXIST) is an error like any other.
 */
static int uffd_put(int ufd, uint64_t dst, const uint8_t *src, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		struct uffdio_copy c = { .dst = dst + done,
					 .src = (uint64_t)(uintptr_t)(src + done),
					 .len = len - done };

		if (ioctl(ufd, UFFDIO_COPY, &c) && errno != EAGAIN && c.copy <= 0) {
			if (c.copy < 0)
				errno = (int)-c.copy;
			return -1;
		}
		if (c.copy > 0)
			done += (uint64_t)c.copy;
	}
	return 0;
}

static int put_piece(struct pages *pg, uint64_t addr, const uint8_t *p, uint64_t k)
{
	uint64_t size = (uint64_t)getpagesize();

	if (pg->ufd >= 0 && !(addr % size) && !(k % size))
		return uffd_put(pg->ufd, addr, p, k);
	return pages_write(pg, addr, p, k);
}

/* Writes `len` stream bytes at stream offset `at` to their addresses. */
static int put(struct pages *pg, const struct ibcr_vma *v, uint64_t at,
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
	rc = fill_region(pg, idx, e);
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
		const uint8_t *raw;
		uint64_t from, len;
		int bad;

		if (k >= ps->nblocks)
			return ibcr_fail(e, "image %s: region %#llx-%#llx: page blocks end "
					 "early", pg->path, (unsigned long long)v->start,
					 (unsigned long long)v->end);
		if (k < pg->first || k >= pg->first + (uint64_t)pg->n) {
			int n = ps->nblocks - k < (uint64_t)pg->width ? (int)(ps->nblocks - k) :
								      pg->width;

			bad = decode_batch(pg, k, n);
			if (bad)
				return ibcr_fail(e, "image %s: page block %llu (for region "
						 "%#llx-%#llx, %s) is corrupt", pg->path,
						 (unsigned long long)(k + bad - 1),
						 (unsigned long long)v->start,
						 (unsigned long long)v->end, ps->vma_names[idx]);
		}
		b = &ps->blocks[k];
		raw = pg->slot[k - pg->first].raw;
		from = at - b->raw_off;
		len = (b->raw_len - from < end - at) ? b->raw_len - from : end - at;
		crc = page_sum(crc, raw + from, len, (size_t)getpagesize());
		if (put(pg, v, at, raw + from, len))
			return ibcr_fail_errno(e, errno, "writing region %#llx-%#llx (%s) into "
					       "the restored process",
					       (unsigned long long)v->start,
					       (unsigned long long)v->end, ps->vma_names[idx]);
		at += len;
	}
	if (crc != v->data_crc)
		return ibcr_fail(e, "image %s: region %#llx-%#llx (%s): page data is corrupt "
				 "(checksum mismatch); nothing was resumed", pg->path,
				 (unsigned long long)v->start, (unsigned long long)v->end,
				 ps->vma_names[idx]);
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
	pg->first = (uint64_t)-1;
	pg->child = child;
	pg->ufd = -1;
	pg->width = cpus < 1 ? 1 : cpus > MAX_BATCH ? MAX_BATCH : (int)cpus;
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
	pg->slot = xcalloc(MAX_BATCH, sizeof(*pg->slot));
	for (int k = 0; k < pg->width; k++) {
		pg->slot[k].raw = xmalloc(max_raw);
		pg->slot[k].stored = xmalloc(max_stored);
	}
	return 0;
}

void pages_close(struct pages *pg)
{
	for (int k = 0; pg->slot && k < pg->width; k++) {
		free(pg->slot[k].raw);
		free(pg->slot[k].stored);
	}
	free(pg->slot);
	free(pg->help_buf);
	if (pg->memfd >= 0)
		close(pg->memfd);
	memset(pg, 0, sizeof(*pg));
	pg->memfd = -1;
	pg->ufd = -1;
}
