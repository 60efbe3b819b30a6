// SPDX-License-Identifier: MIT
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "compress.h"
#include "rt/crc32c.h"
#include "sink.h"
#include "rt/xxh64.h"

int sink_init(struct sink *s, struct img_writer *w, int codec, int level)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	memset(s, 0, sizeof(*s));
	s->w = w;
	s->codec = codec;
	s->level = level;
	if (codec == IBCR_CODEC_RAW)
		return 0;
	/* two blocks per core keep every core busy; at most 16: bounded memory */
	s->nblk = (int)(cpus > 0 ? (cpus < 8 ? cpus : 8) : 1) * 2;
	s->raw = xcalloc((size_t)s->nblk, sizeof(*s->raw));
	s->out = xcalloc((size_t)s->nblk, sizeof(*s->out));
	s->raw_len = xcalloc((size_t)s->nblk, sizeof(*s->raw_len));
	s->out_len = xcalloc((size_t)s->nblk, sizeof(*s->out_len));
	for (int i = 0; i < s->nblk; i++) {
		s->raw[i] = xmalloc(IBCR_BLOCK_RAW);
		s->out[i] = xmalloc(blk_bound(codec, IBCR_BLOCK_RAW));
	}
	return 0;
}

struct job {
	struct sink *s;
	int first, step;
};

static void *compress_some(void *arg)
{
	struct job *j = arg;
	struct sink *s = j->s;

	for (int i = j->first; i < s->nblk; i += j->step)
		if (s->raw_len[i])
			s->out_len[i] = blk_compress(s->codec, s->level, s->raw[i],
						     s->raw_len[i], s->out[i],
						     blk_bound(s->codec, IBCR_BLOCK_RAW));
	return NULL;
}

static int write_block(struct sink *s, int i, uint64_t raw_off, struct ibcr_err *e)
{
	static const uint8_t zeros[8];
	int stored_raw = s->out_len[i] == 0;
	struct ibcr_block b = {
		.magic = IBCR_BLOCK_MAGIC,
		.codec = stored_raw ? IBCR_CODEC_RAW : (uint32_t)s->codec,
		.raw_len = (uint32_t)s->raw_len[i],
		.stored_len = (uint32_t)(stored_raw ? s->raw_len[i] : s->out_len[i]),
		.raw_off = raw_off,
		.raw_crc = block_sum(s->raw[i], s->raw_len[i]),
	};

	b.hdr_crc = crc32c(0, &b, offsetof(struct ibcr_block, hdr_crc));
	if (imgw_data(s->w, &b, sizeof(b), e) ||
	    imgw_data(s->w, stored_raw ? s->raw[i] : s->out[i], b.stored_len, e) ||
	    imgw_data(s->w, zeros, (8 - b.stored_len % 8) % 8, e))
		return -1;
	return 0;
}

/* Compresses the filled blocks on every core, then writes them in order. */
static int flush_batch(struct sink *s, struct ibcr_err *e)
{
	int n = s->nblk / 2;
	pthread_t th[64];
	int threaded[64] = { 0 };
	struct job jobs[64];
	uint64_t off = s->batch_off;

	if (n > 64)
		n = 64;
	for (int k = 0; k < n; k++) {
		jobs[k] = (struct job){ s, k, n };
		/* job 0 runs here; one that gets no thread too */
		threaded[k] = k && !pthread_create(&th[k], NULL, compress_some, &jobs[k]);
	}
	for (int k = 0; k < n; k++)
		if (!threaded[k])
			compress_some(&jobs[k]);
	for (int k = 0; k < n; k++)
		if (threaded[k])
			pthread_join(th[k], NULL);
	for (int i = 0; i < s->nblk && s->raw_len[i]; i++) {
		if (write_block(s, i, off, e))
			return -1;
		off += s->raw_len[i];
		s->raw_len[i] = 0;
	}
	s->batch_off = off;
	s->cur = 0;
	return 0;
}

/* Page data put so far, by every sink: the progress of a save (main.c). */
uint64_t sink_bytes;

int sink_put(struct sink *s, const void *p, size_t n, struct ibcr_err *e)
{
	const uint8_t *c = p;

	s->pos += n;
	__atomic_add_fetch(&sink_bytes, n, __ATOMIC_RELAXED);
	if (s->codec == IBCR_CODEC_RAW)
		return imgw_data(s->w, p, n, e);
	while (n) {
		size_t room = IBCR_BLOCK_RAW - s->raw_len[s->cur];
		size_t k = n < room ? n : room;

		memcpy(s->raw[s->cur] + s->raw_len[s->cur], c, k);
		s->raw_len[s->cur] += k;
		c += k;
		n -= k;
		if (s->raw_len[s->cur] == IBCR_BLOCK_RAW && ++s->cur == s->nblk &&
		    flush_batch(s, e))
			return -1;
	}
	return 0;
}

int sink_finish(struct sink *s, struct ibcr_err *e)
{
	int rc = 0;

	if (s->codec != IBCR_CODEC_RAW && s->raw_len[0])
		rc = flush_batch(s, e);
	for (int i = 0; i < s->nblk; i++) {
		free(s->raw[i]);
		free(s->out[i]);
	}
	free(s->raw);
	free(s->out);
	free(s->raw_len);
	free(s->out_len);
	return rc;
}

void *sink_room(struct sink *s, size_t min, size_t *len, struct ibcr_err *e)
{
	return imgw_room(s->w, min, len, e);
}

int sink_fill(struct sink *s, size_t n, struct ibcr_err *e)
{
	s->pos += n;
	__atomic_add_fetch(&sink_bytes, n, __ATOMIC_RELAXED);
	return imgw_fill(s->w, n, e);
}
