/* SPDX-License-Identifier: MIT */
#ifndef IBCR_STREAM_H
#define IBCR_STREAM_H

#include <stdint.h>

#include "err.h"

/*
 * stream.c: an uncompressed image's page data read ahead in large direct
 * reads (several in flight) into a ring of buffers, for a copy that goes
 * through it in file order.
 */
struct stream_ext {
	uint64_t off, len;	/* file offsets */
	uint32_t region;	/* whose data it is: extents in the order of it */
};
struct stream;

/* Where the bytes go: put(ctx, region, file offset, bytes, len), 0 or -1 (errno). */
struct stream_sink {
	int (*put)(void *ctx, uint32_t region, uint64_t off, const uint8_t *p, uint64_t len);
	void *ctx;
};

/*
 * Reads ahead the extents, in order; direct: O_DIRECT where uncached.
 * With a sink its threads put the data in (stream_region); without,
 * stream_take hands it out.
 */
struct stream *stream_open(int fd, const struct stream_ext *ext, size_t n, int direct,
			   const struct stream_sink *sink, struct ibcr_err *e);
/*
 * Region x->region's data (extent x) put in through the sink, by every
 * thread of the stream; returns when all of it is, with *sum its
 * page_sum: 0, or an errno of reading or putting (EIO: the image ends
 * first). Regions come in the order of the extents; one the stream was
 * not told of, or out of order, is read and put in here.
 */
int stream_region(struct stream *s, const struct stream_ext *x, uint32_t *sum);
/*
 * Taken instead (a stream opened without a sink, by one thread:
 * lazyfill.c): region's data [d0, d1), read, if one piece holds it; the
 * pieces before it are given back, and the stream reads on from it
 * (from there on if it was elsewhere). NULL: read it yourself (*err:
 * the stream's read failed with it). Valid until the next take.
 */
const uint8_t *stream_take(struct stream *s, uint32_t region, uint64_t d0, uint64_t d1,
			   int *err);
/*
 * Whether the piece holding region's data at d is read or about to be
 * (within the ring from the piece held on); *end: where its data ends.
 */
int stream_ahead(struct stream *s, uint32_t region, uint64_t d, uint64_t *end);
/* The same if it is read already, without waiting or moving the stream; or NULL. */
const uint8_t *stream_peek(struct stream *s, uint32_t region, uint64_t d0, uint64_t d1);
uint64_t stream_direct_bytes(const struct stream *s);
void stream_close(struct stream *s);

/* Sets rs.stream_fill of the image's processes (IBCR_FILL, the page cache). */
struct job;
void stream_decide(struct job *j, uint32_t n, int img_fd, int verbose);

#endif
