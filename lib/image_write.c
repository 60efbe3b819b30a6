// SPDX-License-Identifier: MIT
/* Image writer: buffered, temp file + rename, see image_io.h. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "rt/crc32c.h"
#include "fdio.h"
#include "image_io.h"
#include "outpath.h"
#include "wqueue.h"

/* Hands the filled buffer to the writing thread and takes the next one. */
static int flush(struct img_writer *w, struct ibcr_err *e)
{
	if (w->wlen && wq_submit(w->q, w->wlen))
		return ibcr_fail_errno(e, errno, "writing image %s", w->tmp);
	w->wbuf = wq_buf(w->q);
	w->wlen = 0;
	return 0;
}

/* Everything put so far is in the file. */
static int drain(struct img_writer *w, struct ibcr_err *e)
{
	if (flush(w, e))
		return -1;
	if (wq_drain(w->q))
		return ibcr_fail_errno(e, errno, "writing image %s", w->tmp);
	return 0;
}

static int put(struct img_writer *w, const void *p, uint64_t n,
	       struct ibcr_err *e)
{
	const uint8_t *c = p;

	while (n) {
		size_t k = WQ_BUF_SIZE - w->wlen < n ? WQ_BUF_SIZE - w->wlen : (size_t)n;

		memcpy(w->wbuf + w->wlen, c, k);
		w->wlen += k;
		w->off += k;
		c += k;
		n -= k;
		if (w->wlen == WQ_BUF_SIZE && flush(w, e))
			return -1;
	}
	return 0;
}

static int put_zeros(struct img_writer *w, uint64_t n, struct ibcr_err *e)
{
	static const uint8_t zeros[4096];

	while (n) {
		uint64_t k = n < sizeof(zeros) ? n : sizeof(zeros);

		if (put(w, zeros, k, e))
			return -1;
		n -= k;
	}
	return 0;
}

static void seal_sec(struct ibcr_sec_hdr *h)
{
	h->hdr_crc = crc32c(0, h, offsetof(struct ibcr_sec_hdr, hdr_crc));
}

int imgw_open(struct img_writer *w, const char *path, uint32_t arch,
	      uint32_t nprocs, unsigned flags, struct ibcr_err *e)
{
	struct ibcr_file_hdr h;
	struct timespec ts;
	size_t n;

	memset(w, 0, sizeof(*w));
	w->path = xstrdup(path);
	n = strlen(path) + 32;
	w->tmp = xmalloc(n);
	snprintf(w->tmp, n, "%s.tmp.%d", path, (int)getpid());
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		ibcr_fail_errno(e, errno, "creating image %s", w->tmp);
		free(w->path);
		free(w->tmp);
		return -1;
	}
	w->q = wq_open(w->fd, !!(flags & IMGW_DIRECT));
	if (!w->q) {
		ibcr_fail(e, "creating image %s: no thread to write it", w->tmp);
		close(w->fd);
		unlink(w->tmp);
		free(w->path);
		free(w->tmp);
		return -1;
	}
	w->wbuf = wq_buf(w->q);

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, IBCR_MAGIC, 8);
	h.version = IBCR_VERSION;
	h.arch = arch;
	h.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	h.nprocs = nprocs;
	h.hdr_size = sizeof(h);
	h.flags = (flags & IMGW_SELF_CONTAINED) ? IBCR_HDRF_SELF_CONTAINED : 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	h.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	h.crc = crc32c(0, &h, offsetof(struct ibcr_file_hdr, crc));
	if (put(w, &h, sizeof(h), e)) {
		imgw_abort(w);
		return -1;
	}
	return 0;
}

static uint32_t pad_for(uint64_t off, uint32_t align)
{
	uint64_t start = off + sizeof(struct ibcr_sec_hdr);

	if (align <= 1)
		return 0;
	return (uint32_t)((align - start % align) % align);
}

static void fill_hdr(struct ibcr_sec_hdr *h, uint32_t type, uint32_t proc,
		     const char *name)
{
	memset(h, 0, sizeof(*h));
	h->magic = IBCR_SEC_MAGIC;
	h->type = type;
	h->proc = proc;
	if (name)
		strncpy(h->name, name, sizeof(h->name) - 1);
}

/* Sections start 8-byte aligned so records can be read in place. */
static int align8(struct img_writer *w, struct ibcr_err *e)
{
	return put_zeros(w, (8 - w->off % 8) % 8, e);
}

int imgw_section(struct img_writer *w, uint32_t type, uint32_t proc,
		 const char *name, const void *payload, uint64_t size,
		 struct ibcr_err *e)
{
	struct ibcr_sec_hdr h;

	if (align8(w, e))
		return -1;
	fill_hdr(&h, type, proc, name);
	h.size = size;
	h.data_crc = crc32c(0, payload, size);
	seal_sec(&h);
	if (put(w, &h, sizeof(h), e) || put(w, payload, size, e))
		return -1;
	w->nsections++;
	return 0;
}

int imgw_begin(struct img_writer *w, uint32_t type, uint32_t proc,
	       uint32_t flags, uint32_t align, struct ibcr_err *e)
{
	if (align8(w, e))
		return -1;
	fill_hdr(&w->sec, type, proc, NULL);
	w->sec.flags = flags;
	w->sec.pad = pad_for(w->off, align);
	w->sec_off = w->off;
	w->sec_crc = 0;
	w->streaming = 1;
	/* The header is rewritten with size and CRC at commit (imgw_end). */
	if (put(w, &w->sec, sizeof(w->sec), e) || put_zeros(w, w->sec.pad, e))
		return -1;
	return 0;
}

uint64_t imgw_payload_pos(const struct img_writer *w)
{
	return w->off - w->sec_off - sizeof(struct ibcr_sec_hdr) - w->sec.pad;
}

int imgw_data(struct img_writer *w, const void *data, uint64_t len,
	      struct ibcr_err *e)
{
	if (!(w->sec.flags & IBCR_SECF_CRC_PER_REGION))
		w->sec_crc = crc32c(w->sec_crc, data, len);
	return put(w, data, len, e);
}

void *imgw_room(struct img_writer *w, size_t min, size_t *len, struct ibcr_err *e)
{
	size_t left = WQ_BUF_SIZE - w->wlen;

	if (left < min && left < *len && flush(w, e))
		return NULL;
	left = WQ_BUF_SIZE - w->wlen;
	if (*len > left)
		*len = left;
	return w->wbuf + w->wlen;
}

int imgw_fill(struct img_writer *w, size_t n, struct ibcr_err *e)
{
	w->wlen += n;
	w->off += n;
	return w->wlen == WQ_BUF_SIZE ? flush(w, e) : 0;
}

/*
 * The header goes in at commit, not now: writing it now would need what
 * is buffered in the file first, a short write in the middle of the
 * file, and the direct writes after it would be unaligned.
 */
int imgw_end(struct img_writer *w, struct ibcr_err *e)
{
	(void)e;
	w->sec.size = imgw_payload_pos(w);
	w->sec.data_crc = w->sec_crc;
	seal_sec(&w->sec);
	w->streaming = 0;
	w->patch = xrealloc(w->patch, (w->npatch + 1) * sizeof(*w->patch));
	w->patch[w->npatch++] = (struct imgw_patch){ w->sec_off, w->sec };
	w->nsections++;
	return 0;
}

/* The streamed sections' headers, through the page cache (unaligned). */
static int write_patches(struct img_writer *w, struct ibcr_err *e)
{
	if (w->npatch && fd_set_direct(w->fd, 0))
		return ibcr_fail_errno(e, errno, "writing image %s", w->tmp);
	for (size_t i = 0; i < w->npatch; i++) {
		const struct imgw_patch *p = &w->patch[i];
		ssize_t k = pwrite(w->fd, &p->hdr, sizeof(p->hdr), (off_t)p->off);

		if (k != (ssize_t)sizeof(p->hdr))
			return ibcr_fail_errno(e, k < 0 ? errno : ENOSPC,
					       "writing image %s", w->tmp);
	}
	return 0;
}

static int sync_dir(const char *path, struct ibcr_err *e)
{
	char *copy = xstrdup(path);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0 || fsync(fd))
		rc = ibcr_fail_errno(e, errno, "syncing directory of %s", path);
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

int imgw_commit(struct img_writer *w, struct ibcr_err *e)
{
	struct ibcr_end end;

	if (align8(w, e))
		goto fail;
	end.nsections = w->nsections;
	end.file_size = w->off;
	if (imgw_section(w, IBCR_SEC_END, IBCR_PROC_NONE, NULL, &end,
			 sizeof(end), e) ||
	    drain(w, e))
		goto fail;
	w->direct_bytes = wq_direct_bytes(w->q);
	wq_close(w->q);
	w->q = NULL;
	if (write_patches(w, e))
		goto fail;
	if (fsync(w->fd)) {
		ibcr_fail_errno(e, errno, "syncing image %s", w->tmp);
		goto fail;
	}
	if (close(w->fd)) {
		w->fd = -1;
		ibcr_fail_errno(e, errno, "closing image %s", w->tmp);
		goto fail;
	}
	w->fd = -1;
	if (outpath_replaceable(w->path, e))	/* a device put there meanwhile */
		goto fail;
	if (rename(w->tmp, w->path)) {
		ibcr_fail_errno(e, errno, "renaming %s to %s", w->tmp, w->path);
		goto fail;
	}
	/* On failure the image is complete; only its durability is unsure. */
	int rc = sync_dir(w->path, e);

	free(w->tmp);
	free(w->path);
	return rc;
fail:
	imgw_abort(w);
	return -1;
}

void imgw_abort(struct img_writer *w)
{
	wq_close(w->q);
	w->q = NULL;
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (w->tmp)
		unlink(w->tmp);
	free(w->tmp);
	free(w->path);
	free(w->patch);
	w->patch = NULL;
	w->npatch = 0;
	w->wbuf = NULL;
	w->tmp = w->path = NULL;
}
