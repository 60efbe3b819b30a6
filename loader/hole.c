// SPDX-License-Identifier: MIT
/*
 * Free address ranges: free in the loader now (so it can map there) and
 * in the saved layout of every given process (so nothing restored lands
 * on top). The restore core's hole and the shared memory objects the
 * loader hands down by fork live in such ranges, highest first, with
 * margins that keep clear of stack guard gaps.
 */
#include <stdlib.h>

#include "arch.h"
#include "buf.h"
#include "loader.h"
#include "procfs.h"

#define MARGIN (2ul << 20)

struct span {
	uint64_t start, end;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorted, and overlapping or touching spans merged into one. */
static size_t merge(struct span *s, size_t n)
{
	size_t out = 0;

	qsort(s, n, sizeof(*s), cmp_span);
	for (size_t i = 0; i < n; i++) {
		if (out && s[i].start <= s[out - 1].end) {
			if (s[i].end > s[out - 1].end)
				s[out - 1].end = s[i].end;
			continue;
		}
		s[out++] = s[i];
	}
	return out;
}

int find_free_in(const struct plan_range *busy, size_t n, uint64_t size, uint64_t *at)
{
	struct span *s = xmalloc(sizeof(*s) * (n + 1));
	uint64_t top = ARCH_TASK_TOP - MARGIN;
	size_t cnt;

	for (size_t i = 0; i < n; i++)
		s[i] = (struct span){ busy[i].start, busy[i].end };
	cnt = merge(s, n);
	for (size_t i = cnt; i-- > 0; ) {
		uint64_t lo = s[i].end + MARGIN;

		if (lo < top && top - lo >= size) {
			*at = top - size;
			free(s);
			return 0;
		}
		if (s[i].start < top + MARGIN)	/* the margin below it reaches below top */
			top = s[i].start > MARGIN ? s[i].start - MARGIN : 0;
	}
	free(s);
	return -1;
}

int find_free(const struct ibcr_process_state *const *ps, uint32_t nps, size_t size,
	      uint64_t *at, struct ibcr_err *e)
{
	struct maps_entry *m;
	size_t n, cnt = 0, total = 0;
	struct plan_range *busy;
	int rc;

	if (maps_read(0, 0, &m, &n, e))
		return -1;
	for (uint32_t k = 0; k < nps; k++)
		total += ps[k]->nvmas;
	busy = xmalloc(sizeof(*busy) * (n + total + 1));
	for (size_t i = 0; i < n; i++)
		if (m[i].end <= ARCH_TASK_TOP)
			busy[cnt++] = (struct plan_range){ m[i].start, m[i].end };
	maps_free(m, n);
	for (uint32_t k = 0; k < nps; k++)
		for (uint32_t i = 0; i < ps[k]->nvmas; i++)
			busy[cnt++] = (struct plan_range){ ps[k]->vmas[i].start, ps[k]->vmas[i].end };
	rc = find_free_in(busy, cnt, size, at);
	free(busy);
	return rc ? ibcr_fail(e, "no free address range of %zu bytes", size) : 0;
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

int find_free_near(const struct plan_range *busy, size_t n, uint64_t len, uint64_t off,
		   uint64_t near, uint64_t lo, uint64_t hi, uint64_t *at)
{
	struct span *s = xmalloc(sizeof(*s) * (n + 2));
	size_t cnt = 0;
	uint64_t best = 0, gap_lo = lo;
	int found = 0;

	for (size_t i = 0; i < n; i++)
		s[cnt++] = (struct span){ busy[i].start, busy[i].end };
	s[cnt++] = (struct span){ hi, hi };
	cnt = merge(s, cnt);
	for (size_t i = 0; i < cnt && gap_lo < hi; i++) {
		uint64_t gap_hi = s[i].start < hi ? s[i].start : hi;

		if (gap_hi > gap_lo && gap_hi - gap_lo >= len) {
			/* the nearest place in this gap: as close to near as it fits */
			uint64_t want = near > off ? near - off : 0, pos;

			pos = want < gap_lo ? gap_lo : want > gap_hi - len ? gap_hi - len : want;
			if (!found++ || distance(pos + off, near) < distance(best + off, near))
				best = pos;
		}
		if (s[i].end > gap_lo)
			gap_lo = s[i].end;
	}
	free(s);
	if (found)
		*at = best;
	return found ? 0 : -1;
}
