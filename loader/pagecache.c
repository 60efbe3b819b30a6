// SPDX-License-Identifier: MIT
/*
 * What the page cache holds of the image: decides how its page data is
 * read (stream.c). cachestat(2) (Linux 6.5) counts a range's cached
 * pages from the cache's tree of folios, without a mapping: 4 GiB in
 * under 1 ms here, where mincore of the file mapped looks every page up
 * one by one (~45 ms uncached, ~75 ms cached for 4 GiB), which was most
 * of the time a lazy restore of 4 GiB took to run again. mincore stays
 * the way on kernels without cachestat.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "pagecache.h"

#ifndef SYS_cachestat
#define SYS_cachestat 451	/* the same on every architecture */
#endif

/* The kernel's struct cachestat_range and struct cachestat (uapi mman.h). */
struct cs_range {
	uint64_t off, len;
};

struct cs_stat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* Pages of [lo, hi) (page aligned lo) not cached, by mincore; 0 if unknown. */
static uint64_t missing_by_mincore(int fd, uint64_t lo, uint64_t hi, uint64_t pg)
{
	uint64_t missing = 0;
	uint8_t *vec;
	void *map = mmap(NULL, hi - lo, PROT_READ, MAP_SHARED, fd, (off_t)lo);

	if (map == MAP_FAILED)
		return 0;
	vec = xmalloc((hi - lo) / pg + 1);
	if (!mincore(map, hi - lo, vec))
		for (uint64_t k = 0; k < (hi - lo + pg - 1) / pg; k++)
			missing += (vec[k] & 1) ? 0 : 1;
	free(vec);
	munmap(map, hi - lo);
	return missing;
}

uint64_t pagecache_missing(int fd, uint64_t off, uint64_t len)
{
	uint64_t pg = (uint64_t)getpagesize(), lo = off / pg * pg, hi = off + len;
	uint64_t npages = (hi - lo + pg - 1) / pg;
	struct cs_range r = { lo, hi - lo };
	struct cs_stat st;

	if (!len)
		return 0;
	if (!syscall(SYS_cachestat, fd, &r, &st, 0))
		return (npages > st.nr_cache ? npages - st.nr_cache : 0) * pg;
	/* ENOSYS: an older kernel; anything else: mincore tells or says nothing */
	return missing_by_mincore(fd, lo, hi, pg) * pg;
}
