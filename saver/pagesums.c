// SPDX-License-Identifier: MIT
/*
 * PAGESUMS (lib/image.h): the page_sum of every chunk of a region's raw
 * page data, gathered from the terms memory.c sums anyway, so a lazy
 * restore can check each chunk before it puts it in, where the region's
 * one sum could only be checked once the whole region is in, too late
 * to stop a program that is already running. Compressed images have a
 * sum per block instead and get none.
 */
#include <unistd.h>

#include "buf.h"
#include "image_io.h"
#include "saver.h"

/* The term of the page at data_off of the region being stored. */
void pagesum_add(struct target *t, uint64_t data_off, uint32_t term)
{
	struct ibcr_process_state *ps = &t->ps;

	ps->sum_chunk = IBCR_PAGESUMS_CHUNK;
	if (data_off % IBCR_PAGESUMS_CHUNK == 0) {
		if (ps->nsums == t->cap_sums) {
			t->cap_sums = t->cap_sums ? t->cap_sums * 2 : 1024;
			ps->sums = xrealloc(ps->sums, sizeof(*ps->sums) * t->cap_sums);
		}
		ps->sums[ps->nsums++] = 0;
	}
	ps->sums[ps->nsums - 1] += term;	/* a region's first page opened one */
}

int pagesums_write_section(struct target *t, uint32_t proc, struct img_writer *w,
			   struct ibcr_err *e)
{
	struct buf b = { 0 };
	int rc;

	if (!t->ps.sum_chunk)
		return 0;
	enc_pagesums(&b, &t->ps);
	rc = imgw_section(w, IBCR_SEC_PAGESUMS, proc, NULL, b.p, b.len, e);
	buf_free(&b);
	return rc;
}
