// SPDX-License-Identifier: MIT
/*
 * Sections that make an image portable: the saving kernel's [vdso], the
 * identity (and, self-contained, the contents) of its backing files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "compress.h"
#include "image_io.h"
#include "rt/xxh64.h"

/* A vdso is a few pages; anything larger is not one. */
#define VDSO_MAX (1u << 20)

int imgr_load_vdso(struct img_reader *r, uint8_t **bytes, uint64_t *size,
		   struct ibcr_err *e)
{
	*bytes = NULL;
	*size = 0;
	for (uint32_t i = 0; i < r->nsecs; i++) {
		const struct img_section *s = &r->secs[i];

		if (s->h.type != IBCR_SEC_VDSO)
			continue;
		if (*bytes) {
			free(*bytes);
			*bytes = NULL;
			return ibcr_fail(e, "image %s: two VDSO sections", r->path);
		}
		if (!s->h.size || s->h.size > VDSO_MAX || s->h.proc != IBCR_PROC_NONE)
			return ibcr_fail(e, "image %s: VDSO section is malformed", r->path);
		if (imgr_payload(r, i, bytes, e))
			return -1;
		*size = s->h.size;
	}
	return 0;
}

void enc_backing(struct buf *b, const struct ibcr_backings *f)
{
	struct ibcr_backing_hdr h = { .nfiles = f->n };
	struct buf s = { 0 };
	size_t at = b->len;

	buf_put(b, &h, sizeof(h));
	for (uint32_t i = 0; i < f->n; i++) {
		struct ibcr_backing rec = f->f[i];

		rec.path_off = (uint32_t)buf_str(&s, f->paths[i]);
		buf_put(b, &rec, sizeof(rec));
	}
	h.strtab_size = (uint32_t)s.len;
	memcpy(b->p + at, &h, sizeof(h));
	buf_put(b, s.p, s.len);
	buf_free(&s);
}

static int dec_backing(struct img_reader *r, const uint8_t *p, uint64_t n,
		       struct ibcr_backings *f, struct ibcr_err *e)
{
	struct ibcr_backing_hdr h;
	const char *tab;

	if (n < sizeof(h))
		return ibcr_fail(e, "image %s: BACKING section too short", r->path);
	memcpy(&h, p, sizeof(h));
	if (h.nfiles > 1u << 20 ||
	    sizeof(h) + (uint64_t)h.nfiles * sizeof(struct ibcr_backing) + h.strtab_size != n)
		return ibcr_fail(e, "image %s: BACKING section size does not match its contents",
				 r->path);
	tab = (const char *)p + sizeof(h) + (uint64_t)h.nfiles * sizeof(struct ibcr_backing);
	f->n = h.nfiles;
	f->f = xcalloc(h.nfiles + 1, sizeof(*f->f));
	f->paths = xcalloc(h.nfiles + 1, sizeof(*f->paths));
	memcpy(f->f, p + sizeof(h), (size_t)h.nfiles * sizeof(*f->f));
	for (uint32_t i = 0; i < h.nfiles; i++) {
		const struct ibcr_backing *b = &f->f[i];

		if (b->path_off >= h.strtab_size || !memchr(tab + b->path_off, 0,
							    h.strtab_size - b->path_off) ||
		    b->build_id_len > sizeof(b->build_id) ||
		    ((b->flags & IBCR_BACKF_CONTENTS) && b->data_len < b->size))
			return ibcr_fail(e, "image %s: backing file %u is malformed", r->path, i);
		f->paths[i] = xstrdup(tab + b->path_off);
	}
	return 0;
}

/* The contents stream: where it is, and its blocks when compressed. */
static int find_contents(struct img_reader *r, const struct img_section *s,
			 struct ibcr_backings *f, struct ibcr_err *e)
{
	if (f->data_payload)
		return ibcr_fail(e, "image %s: two BACKING contents sections", r->path);
	f->data_payload = s->payload;
	f->data_size = s->h.size;
	if (s->h.flags & IBCR_SECF_BLOCKS)
		return imgr_scan_blocks(r, s, "backing files' contents", &f->blocks, &f->nblocks,
					&f->data_size, e);
	return 0;
}

/* Every carried file's bytes lie inside the contents stream. */
static int check_contents(struct img_reader *r, const struct ibcr_backings *f,
			  struct ibcr_err *e)
{
	for (uint32_t i = 0; f->f && i < f->n; i++) {
		const struct ibcr_backing *b = &f->f[i];

		if ((b->flags & IBCR_BACKF_CONTENTS) &&
		    (!f->data_payload || b->data_off > f->data_size ||
		     b->data_len > f->data_size - b->data_off))
			return ibcr_fail(e, "image %s: the contents of %s lie outside the image's "
					 "BACKING contents", r->path, f->paths[i]);
	}
	return 0;
}

int imgr_load_backing(struct img_reader *r, struct ibcr_backings *f, struct ibcr_err *e)
{
	memset(f, 0, sizeof(*f));
	for (uint32_t i = 0; i < r->nsecs; i++) {
		const struct img_section *s = &r->secs[i];
		uint8_t *p;
		int rc;

		if (s->h.type != IBCR_SEC_BACKING)
			continue;
		if (s->h.flags & IBCR_SECF_CRC_PER_REGION) {
			if (find_contents(r, s, f, e)) {
				ibcr_backings_free(f);
				return -1;
			}
			continue;
		}
		if (f->f) {
			ibcr_backings_free(f);
			return ibcr_fail(e, "image %s: two BACKING tables", r->path);
		}
		if (imgr_payload(r, i, &p, e))
			return -1;
		rc = dec_backing(r, p, s->h.size, f, e);
		free(p);
		if (rc) {
			ibcr_backings_free(f);
			return -1;
		}
	}
	if (check_contents(r, f, e)) {
		ibcr_backings_free(f);
		return -1;
	}
	return 0;
}

void ibcr_backings_free(struct ibcr_backings *f)
{
	for (uint32_t i = 0; f->paths && i < f->n; i++)
		free(f->paths[i]);
	free(f->paths);
	free(f->f);
	free(f->blocks);
	memset(f, 0, sizeof(*f));
}

void contents_open(struct contents_reader *c, struct img_reader *r,
		   const struct ibcr_backings *f)
{
	memset(c, 0, sizeof(*c));
	c->r = r;
	c->f = f;
	c->cur = -1;
}

void contents_close(struct contents_reader *c)
{
	free(c->raw);
	free(c->stored);
	memset(c, 0, sizeof(*c));
}

/* Block k decoded into c->raw, its checksum checked. */
static int load_block(struct contents_reader *c, uint64_t k, struct ibcr_err *e)
{
	const struct ibcr_blockref *b = &c->f->blocks[k];

	if ((int64_t)k == c->cur)
		return 0;
	c->raw = xrealloc(c->raw, b->raw_len);
	c->stored = xrealloc(c->stored, b->stored_len + 1);
	if (pread(c->r->fd, c->stored, b->stored_len, (off_t)b->file_off) != (ssize_t)b->stored_len)
		return ibcr_fail_errno(e, errno, "image %s: reading the backing files' contents",
				       c->r->path);
	if (b->codec == IBCR_CODEC_RAW)
		memcpy(c->raw, c->stored, b->raw_len);
	else if (blk_decompress((int)b->codec, c->stored, b->stored_len, c->raw, b->raw_len))
		return ibcr_fail(e, "image %s: a block of the backing files' contents is corrupt",
				 c->r->path);
	if (block_sum(c->raw, b->raw_len) != b->raw_crc)
		return ibcr_fail(e, "image %s: a block of the backing files' contents is corrupt "
				 "(checksum mismatch)", c->r->path);
	c->cur = (int64_t)k;
	return 0;
}

int contents_read(struct contents_reader *c, uint64_t off, void *dst, size_t len,
		  struct ibcr_err *e)
{
	uint8_t *d = dst;
	uint64_t k = 0;

	if (!c->f->nblocks) {
		if (pread(c->r->fd, dst, len, (off_t)(c->f->data_payload + off)) != (ssize_t)len)
			return ibcr_fail_errno(e, errno, "image %s: reading the backing files' "
					       "contents", c->r->path);
		return 0;
	}
	while (len) {
		const struct ibcr_blockref *b;
		size_t n;

		while (k < c->f->nblocks && c->f->blocks[k].raw_off + c->f->blocks[k].raw_len <= off)
			k++;
		if (k == c->f->nblocks || load_block(c, k, e))
			return k == c->f->nblocks ? ibcr_fail(e, "image %s: the backing files' "
							      "contents end early", c->r->path) : -1;
		b = &c->f->blocks[k];
		n = b->raw_off + b->raw_len - off < len ? (size_t)(b->raw_off + b->raw_len - off) : len;
		memcpy(d, c->raw + (off - b->raw_off), n);
		d += n;
		off += n;
		len -= n;
	}
	return 0;
}

int contents_verify(struct img_reader *r, const struct ibcr_backings *f, struct ibcr_err *e)
{
	struct contents_reader c;
	uint8_t *buf = xmalloc(CONTENTS_CHUNK);
	int rc = 0;

	contents_open(&c, r, f);
	for (uint32_t i = 0; i < f->n && !rc; i++) {
		const struct ibcr_backing *b = &f->f[i];
		uint32_t sum = 0;

		if (!(b->flags & IBCR_BACKF_CONTENTS))
			continue;
		for (uint64_t done = 0; done < b->data_len && !rc; ) {
			size_t k = b->data_len - done < CONTENTS_CHUNK ?
				   (size_t)(b->data_len - done) : CONTENTS_CHUNK;

			rc = contents_read(&c, b->data_off + done, buf, k, e);
			sum = page_sum(sum, buf, k, r->hdr.page_size, done / r->hdr.page_size);
			done += k;
		}
		if (!rc && sum != b->data_sum)
			rc = ibcr_fail(e, "image %s: the carried contents of %s are corrupt "
				       "(checksum mismatch)", r->path, f->paths[i]);
	}
	contents_close(&c);
	free(buf);
	return rc;
}
