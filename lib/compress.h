/* SPDX-License-Identifier: MIT */
#ifndef IBCR_COMPRESS_H
#define IBCR_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Block compression for PAGES (zstd or zlib, from Debian's static
 * libraries). Independent blocks, so both sides run on every core.
 */
#define IBCR_BLOCK_RAW (1u << 20)	/* uncompressed bytes per block */

/* Upper bound of a compressed block for `n` input bytes. */
size_t blk_bound(int codec, size_t n);
/*
 * Compresses src into dst; returns the size, or 0 when the block did not
 * shrink (or the codec failed): store it raw then.
 */
size_t blk_compress(int codec, int level, const void *src, size_t n, void *dst,
		    size_t cap);
/* Decompresses exactly `raw` bytes; 0 on success, -1 on damaged input. */
int blk_decompress(int codec, const void *src, size_t n, void *dst, size_t raw);
/* "zstd", "zlib", "raw". */
const char *codec_name(int codec);

#endif
