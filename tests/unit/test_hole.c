// SPDX-License-Identifier: MIT
/*
 * Unit tests of the loader's pure address-space logic: the free-hole
 * searches (loader/hole.c) and the plan builder's computations
 * (loader/plancalc.c: what the core unmaps, which descriptors it
 * closes), on layouts given as data: unsorted, overlapping, touching,
 * above the task's top, exact fits and one byte too many.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arch.h"
#include "loader/loader.h"

#define TOP ARCH_TASK_TOP
#define M (2ull << 20)		/* hole.c's margin */
#define MB (1ull << 20)

static const struct plan_range layout[] = {
	{ 0x400000, 0x500000 },			/* the program */
	{ TOP - 256 * MB, TOP - 240 * MB },	/* libraries */
};

static void hole_highest(void **state)
{
	uint64_t at = 0;

	assert_int_equal(find_free_in(layout, 2, MB, &at), 0);
	assert_true(at == TOP - M - MB);
	/* exactly what fits above the libraries, a margin on each side */
	assert_int_equal(find_free_in(layout, 2, 236 * MB, &at), 0);
	assert_true(at == TOP - 240 * MB + M);
	/* one byte more: below them, a margin away */
	assert_int_equal(find_free_in(layout, 2, 236 * MB + 1, &at), 0);
	assert_true(at == TOP - 256 * MB - M - (236 * MB + 1));
}

static void hole_messy_input(void **state)
{
	/* the same layout cut into overlapping and touching pieces, in any order */
	const struct plan_range messy[] = {
		{ TOP - 245 * MB, TOP - 240 * MB }, { 0x480000, 0x500000 },
		{ TOP - 256 * MB, TOP - 250 * MB }, { 0x400000, 0x490000 },
		{ TOP - 250 * MB, TOP - 244 * MB },
		/* above the task's top ([vsyscall]): changes nothing */
		{ 0xffffffffff600000ull, 0xffffffffff601000ull },
	};
	uint64_t a = 0, b = 0;

	for (uint64_t size = 236 * MB; size <= 236 * MB + 1; size++) {
		assert_int_equal(find_free_in(layout, 2, size, &a), 0);
		assert_int_equal(find_free_in(messy, 6, size, &b), 0);
		assert_true(a == b);
	}
}

static void hole_none(void **state)
{
	uint64_t at = 0;

	/* more than the address space: refused, no wrap-around */
	assert_int_equal(find_free_in(layout, 2, TOP, &at), -1);
	assert_int_equal(find_free_in(layout, 2, UINT64_MAX, &at), -1);
}

static void hole_margin_at_top(void **state)
{
	/* a range that ends at the top (a stack, ASLR off): the margin below it too */
	const struct plan_range high[] = { { 0x400000, 0x500000 }, { TOP - MB, TOP } };
	uint64_t at = 0;

	assert_int_equal(find_free_in(high, 2, MB, &at), 0);
	assert_true(at == TOP - MB - M - MB);
}

static void near_nearest(void **state)
{
	const struct plan_range busy[] = { { 0x40000, 0x50000 }, { 0x10000, 0x20000 } };
	uint64_t at = 0;

	/* in the gap between: as asked */
	assert_int_equal(find_free_near(busy, 2, 0x8000, 0, 0x30000, 0, 0x100000, &at), 0);
	assert_true(at == 0x30000);
	/* off bytes in is what must be near */
	assert_int_equal(find_free_near(busy, 2, 0x8000, 0x1000, 0x30000, 0, 0x100000, &at), 0);
	assert_true(at == 0x2f000);
	/* wanted inside a busy range: the nearer edge of the two gaps */
	assert_int_equal(find_free_near(busy, 2, 0x8000, 0, 0x45000, 0, 0x100000, &at), 0);
	assert_true(at == 0x50000);
	assert_int_equal(find_free_near(busy, 2, 0x8000, 0, 0x43000, 0, 0x100000, &at), 0);
	assert_true(at == 0x38000);
	/* near below off: from the bottom of the lowest gap that is lo or above */
	assert_int_equal(find_free_near(busy, 2, 0x8000, 0x2000, 0x1000, 0x4000, 0x100000, &at),
			 0);
	assert_true(at == 0x4000);
}

static void near_bounds(void **state)
{
	const struct plan_range busy[] = { { 0x10000, 0x20000 } };
	uint64_t at = 7;

	/* [lo, hi) alone: an exact fit, then one byte too many */
	assert_int_equal(find_free_near(NULL, 0, 0x2000, 0, 0, 0x1000, 0x3000, &at), 0);
	assert_true(at == 0x1000);
	at = 7;
	assert_int_equal(find_free_near(NULL, 0, 0x2001, 0, 0, 0x1000, 0x3000, &at), -1);
	assert_true(at == 7);
	/* the gap beside a busy range that runs past hi */
	assert_int_equal(find_free_near(busy, 1, 0x8000, 0, 0x30000, 0x8000, 0x18000, &at), 0);
	assert_true(at == 0x8000);
	assert_int_equal(find_free_near(busy, 1, 0x8001, 0, 0x30000, 0x8000, 0x18000, &at), -1);
}

static void gaps(void **state)
{
	struct plan_range keep[] = { { 0x5000, 0x6000 }, { 0x1000, 0x2000 }, { 0x1800, 0x3000 },
				     { 0x2000, 0x2800 } };
	struct plan_range out[8];
	size_t n = plan_gaps(keep, 4, 0x10000, out);

	assert_int_equal(n, 3);
	assert_true(out[0].start == 0 && out[0].end == 0x1000);
	assert_true(out[1].start == 0x3000 && out[1].end == 0x5000);
	assert_true(out[2].start == 0x6000 && out[2].end == 0x10000);
}

static void gaps_edges(void **state)
{
	/* from 0, nested, up to and past the top: no empty range anywhere */
	struct plan_range keep[] = { { 0xf000, 0x20000 }, { 0, 0x1000 }, { 0x2000, 0x9000 },
				     { 0x3000, 0x4000 } };
	struct plan_range out[8];
	size_t n = plan_gaps(keep, 4, 0x10000, out);

	assert_int_equal(n, 2);
	assert_true(out[0].start == 0x1000 && out[0].end == 0x2000);
	assert_true(out[1].start == 0x9000 && out[1].end == 0xf000);
	n = plan_gaps(keep, 0, 0x10000, out);
	assert_int_equal(n, 1);
	assert_true(out[0].start == 0 && out[0].end == 0x10000);
}

static void close_list(void **state)
{
	const int32_t fds[] = { 3, -1, 3, 5, 5, -1, 4, 3 };
	int32_t out[9];
	const int32_t want[] = { 3, 5, 4, 7 };

	assert_int_equal(plan_close_list(fds, 8, 7, out), 4);
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(plan_close_list(fds, 8, -1, out), 3);
	assert_int_equal(plan_close_list(fds, 0, 9, out), 1);
	assert_int_equal(out[0], 9);
	assert_int_equal(plan_close_list(fds + 1, 1, -1, out), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hole_highest),
		cmocka_unit_test(hole_messy_input),
		cmocka_unit_test(hole_none),
		cmocka_unit_test(hole_margin_at_top),
		cmocka_unit_test(near_nearest),
		cmocka_unit_test(near_bounds),
		cmocka_unit_test(gaps),
		cmocka_unit_test(gaps_edges),
		cmocka_unit_test(close_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
