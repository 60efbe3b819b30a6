// SPDX-License-Identifier: MIT
/*
 * Sections that make an image portable: the saving kernel's [vdso], the
 * identity (and, self-contained, the contents) of its backing files.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "image_io.h"

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

int imgr_load_backing(struct img_reader *r, struct ibcr_backings *f, struct ibcr_err *e)
{
	memset(f, 0, sizeof(*f));
	for (uint32_t i = 0; i < r->nsecs; i++) {
		const struct img_section *s = &r->secs[i];
		uint8_t *p;
		int rc;

		if (s->h.type != IBCR_SEC_BACKING || (s->h.flags & IBCR_SECF_CRC_PER_REGION))
			continue;
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
