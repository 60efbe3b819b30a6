// SPDX-License-Identifier: MIT
/*
 * Reading a file's record in FILEDATA (filedata.h): a piece at a time,
 * so that a deleted file larger than memory restores in bounded memory.
 */
#include <errno.h>
#include <stdlib.h>

#include "buf.h"
#include "fdio.h"
#include "filedata.h"
#include "rt/xxh64.h"

uint32_t file_table_sum(const struct ibcr_extent *x, uint32_t n)
{
	return (uint32_t)xxh64(x, (size_t)n * sizeof(*x), FILE_TABLE_SEED);
}

/* Extents in order, not overlapping, inside the file, adding up to the record. */
static int check_extents(const struct ibcr_files *f, uint32_t i, const struct ibcr_extent *x,
			 struct ibcr_err *e)
{
	const struct ibcr_fattr *a = &f->attrs[i];
	uint64_t end = 0, bytes = 0;

	for (uint32_t k = 0; k < a->nextents; k++) {
		if (x[k].off < end || x[k].len > f->objs[i].size ||
		    x[k].off > f->objs[i].size - x[k].len)
			return ibcr_fail(e, "file object %u (%s): its extent %u is malformed", i,
					 f->paths[i], k);
		end = x[k].off + x[k].len;
		bytes += x[k].len;
	}
	if (bytes + (uint64_t)a->nextents * sizeof(*x) != a->data_len)
		return ibcr_fail(e, "file object %u (%s): its extents do not match its %llu "
				 "bytes of data", i, f->paths[i], (unsigned long long)a->data_len);
	return 0;
}

static int walk(int img_fd, const struct ibcr_files *f, uint32_t i, const struct ibcr_extent *x,
		file_piece_fn fn, void *arg, uint32_t *sum, struct ibcr_err *e)
{
	const struct ibcr_fattr *a = &f->attrs[i];
	uint64_t src = f->filedata_off + a->data_off + (uint64_t)a->nextents * sizeof(*x);
	uint8_t *buf = xmalloc(FILE_CHUNK);
	uint64_t piece = 0;
	uint32_t k = 0;
	uint64_t in = 0;	/* bytes of extent k done */
	int rc = 0;

	while (!rc && k < a->nextents) {
		size_t n = 0;

		/* one piece: FILE_CHUNK bytes of the data, across extents */
		while (n < FILE_CHUNK && k < a->nextents) {
			uint64_t take = x[k].len - in;
			size_t m = take < FILE_CHUNK - n ? (size_t)take : FILE_CHUNK - n;

			if (pread_full(img_fd, buf + n, m, src)) {
				rc = ibcr_fail_errno(e, errno, "file object %u (%s): reading its "
						     "bytes from the image", i, f->paths[i]);
				break;
			}
			if ((rc = fn(arg, x[k].off + in, buf + n, m)) < 0)
				break;
			src += m;
			n += m;
			in += m;
			if (in == x[k].len)
				k++, in = 0;
		}
		if (!rc)
			*sum = page_sum(*sum, buf, n, FILE_CHUNK, piece++);
	}
	free(buf);
	return rc;
}

int filedata_walk(int img_fd, const struct ibcr_files *f, uint32_t i, file_piece_fn fn,
		  void *arg, struct ibcr_err *e)
{
	const struct ibcr_fattr *a = &f->attrs[i];
	size_t tsize = (size_t)a->nextents * sizeof(struct ibcr_extent);
	struct ibcr_extent *x = xmalloc(tsize + sizeof(*x));
	uint32_t sum;
	int rc;

	if (pread_full(img_fd, x, tsize, f->filedata_off + a->data_off)) {
		free(x);
		return ibcr_fail_errno(e, errno, "file object %u (%s): reading its extents "
				       "from the image", i, f->paths[i]);
	}
	sum = file_table_sum(x, a->nextents);
	rc = check_extents(f, i, x, e) || walk(img_fd, f, i, x, fn, arg, &sum, e) ? -1 : 0;
	free(x);
	if (!rc && sum != a->data_sum)
		rc = ibcr_fail(e, "file object %u (%s): its bytes in the image are corrupt "
			       "(checksum mismatch)", i, f->paths[i]);
	return rc;
}
