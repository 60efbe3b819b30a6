// SPDX-License-Identifier: MIT
/*
 * The plan builder's computations on plain data (plan.c gathers the
 * data and takes the room): what the core unmaps, which descriptors it
 * closes. Apart so that the unit tests reach them.
 */
#include <stdlib.h>

#include "loader.h"

static int cmp_range(const void *x, const void *y)
{
	const struct plan_range *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

size_t plan_gaps(struct plan_range *keep, size_t nk, uint64_t top, struct plan_range *out)
{
	uint64_t at = 0;
	size_t n = 0;

	qsort(keep, nk, sizeof(keep[0]), cmp_range);
	for (size_t i = 0; i < nk; i++) {
		if (keep[i].start > at)
			out[n++] = (struct plan_range){ at, keep[i].start };
		if (keep[i].end > at)
			at = keep[i].end;
	}
	if (at < top)
		out[n++] = (struct plan_range){ at, top };
	return n;
}

int32_t plan_close_list(const int32_t *map_fds, uint32_t n, int32_t exe_fd, int32_t *out)
{
	int32_t cnt = 0;

	for (uint32_t i = 0; i < n; i++) {
		int dup = 0;

		for (int32_t k = 0; k < cnt && !dup; k++)
			dup = out[k] == map_fds[i];
		if (map_fds[i] >= 0 && !dup)
			out[cnt++] = map_fds[i];
	}
	if (exe_fd >= 0)
		out[cnt++] = exe_fd;
	return cnt;
}
