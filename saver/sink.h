/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SINK_H
#define IBCR_SINK_H

#include <pthread.h>
#include <stdint.h>

#include "err.h"
#include "image_io.h"

/*
 * Where page data goes: straight into the PAGES section, or cut into
 * 1 MiB blocks that are compressed a batch at a time on every core and
 * written in order (docs/image-format.md, compressed PAGES).
 */
struct sink {
	struct img_writer *w;
	int codec, level;
	uint64_t pos;		/* bytes of page stream so far */
	/* compressed: a batch of blocks, filled in order */
	int nblk, cur;
	uint8_t **raw, **out;
	size_t *raw_len, *out_len;
	uint64_t batch_off;	/* stream offset of the batch's first block */
};

int sink_init(struct sink *s, struct img_writer *w, int codec, int level);
int sink_put(struct sink *s, const void *p, size_t n, struct ibcr_err *e);
int sink_finish(struct sink *s, struct ibcr_err *e);
/* Uncompressed only: room to write page data in place (see imgw_room). */
void *sink_room(struct sink *s, size_t min, size_t *len, struct ibcr_err *e);
int sink_fill(struct sink *s, size_t n, struct ibcr_err *e);
/* Page data put by every sink so far (atomic): a save's progress. */
extern uint64_t sink_bytes;

#endif
