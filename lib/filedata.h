/* SPDX-License-Identifier: MIT */
#ifndef IBCR_FILEDATA_H
#define IBCR_FILEDATA_H

/*
 * The bytes of deleted files and memfds in FILEDATA (lib/image.h): a
 * record per file, its extents, then their bytes, read and checked a
 * piece at a time. Its sum (ibcr_fattr.data_sum): the low 32 bits of
 * XXH64(the extent table, seed FILE_TABLE_SEED), plus page_sum() of the
 * bytes in FILE_CHUNK pieces (seed: the piece's index), modulo 2^32.
 */
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "model.h"

#define FILE_CHUNK (1u << 20)
#define FILE_TABLE_SEED 0xffffffffull

uint32_t file_table_sum(const struct ibcr_extent *x, uint32_t n);

/*
 * Object i's bytes, from the image open at img_fd: fn(arg, offset in the
 * file, bytes, length) for each piece, in file order, after its extents
 * are checked (in order, inside the file's size) and before the sum is:
 * a mismatch is reported after the last piece. 0, or -1.
 */
typedef int (*file_piece_fn)(void *arg, uint64_t off, const uint8_t *p, size_t n);
int filedata_walk(int img_fd, const struct ibcr_files *f, uint32_t i, file_piece_fn fn,
		  void *arg, struct ibcr_err *e);

#endif
