/* SPDX-License-Identifier: MIT */
#ifndef IBCR_XXH64_H
#define IBCR_XXH64_H

#include <stddef.h>
#include <stdint.h>

/*
 * Page data is checked with XXH64 (as zstd frames check their content),
 * not CRC-32C: its four 64-bit lanes run at memory speed on every CPU,
 * and under emulation (qemu TCG) at about 3 GB/s where the CRC-32C
 * instruction is emulated one by one (140 MB/s). Metadata keeps CRC-32C.
 */
uint64_t xxh64(const void *p, size_t len, uint64_t seed);

/*
 * A region's page checksum: the sum, modulo 2^32, of the low 32 bits of
 * XXH64(page, seed = the page's index in the region's data). `p` holds
 * `len` bytes (a multiple of `page`) from page `index` on. The terms do
 * not depend on each other, so parts summed in any order, by several
 * threads or processes, add up to the region's sum: the restore's two
 * fillers each sum what they put in. The index seed makes pages of the
 * image found in another order (swapped, shifted) count as corrupt. The
 * sums check the image's bytes and that each page was put in once, not
 * the address each went to: that is the run table's.
 */
uint32_t page_sum(uint32_t sum, const void *p, size_t len, size_t page, uint64_t index);

/* A compressed block's raw bytes: low 32 bits of XXH64(p, seed 0). */
uint32_t block_sum(const void *p, size_t len);

#endif
