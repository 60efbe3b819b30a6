// SPDX-License-Identifier: MIT
/*
 * The PAGESUMS section (lib/image.h): a page_sum per chunk of each
 * region's page data. Encoded by the saver as it streams the pages;
 * decoded after the process's VMAS with every count checked and each
 * region's sums checked to add up to its data_crc, so that a restore
 * which trusts a chunk's sum trusts what the VMAS table says.
 */
#include <string.h>

#include "buf.h"
#include "image_io.h"

void enc_pagesums(struct buf *b, const struct ibcr_process_state *ps)
{
	struct ibcr_pagesums_hdr h = { .chunk = ps->sum_chunk, .nsums = ps->nsums };

	buf_put(b, &h, sizeof(h));
	buf_put(b, ps->sums, sizeof(uint32_t) * ps->nsums);
}

uint64_t pagesums_of(const struct ibcr_vma *v, uint32_t chunk)
{
	return (v->data_len + chunk - 1) / chunk;
}

int dec_pagesums(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
		 uint32_t page_size, struct ibcr_process_state *ps, struct ibcr_err *e)
{
	struct ibcr_pagesums_hdr h;
	uint64_t want = 0, k = 0;

	if (!ps->vmas || ps->sums || n < sizeof(h))
		return ibcr_fail(e, "image %s: process %u: PAGESUMS section out of place or "
				 "cut off", path, proc);
	memcpy(&h, p, sizeof(h));
	if (h.chunk < page_size || h.chunk > (16u << 20) || (h.chunk & (h.chunk - 1)) ||
	    h.pad)
		return ibcr_fail(e, "image %s: process %u: PAGESUMS chunk of %u bytes is "
				 "malformed", path, proc, h.chunk);
	for (uint32_t i = 0; i < ps->nvmas; i++)
		want += pagesums_of(&ps->vmas[i], h.chunk);
	if (h.nsums != want || n != sizeof(h) + h.nsums * sizeof(uint32_t))
		return ibcr_fail(e, "image %s: process %u: PAGESUMS holds %llu sums, its "
				 "regions need %llu", path, proc, (unsigned long long)h.nsums,
				 (unsigned long long)want);
	ps->sums = xmalloc(sizeof(uint32_t) * (h.nsums + 1));
	memcpy(ps->sums, p + sizeof(h), sizeof(uint32_t) * h.nsums);
	ps->nsums = h.nsums;
	ps->sum_chunk = h.chunk;
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		uint32_t total = 0;

		for (uint64_t c = pagesums_of(&ps->vmas[i], h.chunk); c; c--)
			total += ps->sums[k++];
		if (total != ps->vmas[i].data_crc)
			return ibcr_fail(e, "image %s: process %u: region %#llx-%#llx: its "
					 "PAGESUMS disagree with its checksum (corrupt)", path, proc,
					 (unsigned long long)ps->vmas[i].start,
					 (unsigned long long)ps->vmas[i].end);
	}
	return 0;
}
