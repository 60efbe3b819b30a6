// SPDX-License-Identifier: MIT
/*
 * The DELFILES section (lib/image.h): deleted files the image's regions
 * map privately, with their bytes. Encoded by the saver (saver/memdel.c),
 * decoded here with every count, offset and string checked.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "image_io.h"

void enc_delfiles(struct buf *b, const struct ibcr_delfiles *d)
{
	struct ibcr_delfiles_hdr h = { .nfiles = d->nfiles, .nranges = d->nranges,
				       .data_size = d->data_size };
	struct buf s = { 0 };
	size_t at;

	buf_put(b, &h, sizeof(h));
	at = buf_put(b, d->files, sizeof(struct ibcr_delfile) * d->nfiles);
	for (uint32_t i = 0; i < d->nfiles; i++)
		((struct ibcr_delfile *)(b->p + at))[i].path_off = (uint32_t)buf_str(&s, d->paths[i]);
	buf_put(b, d->ranges, sizeof(struct ibcr_delrange) * d->nranges);
	((struct ibcr_delfiles_hdr *)b->p)->strtab_size = (uint32_t)s.len;
	buf_put(b, s.p, s.len);
	buf_put(b, d->data, d->data_size);
	buf_free(&s);
}

void ibcr_delfiles_free(struct ibcr_delfiles *d)
{
	for (uint32_t i = 0; d->paths && i < d->nfiles; i++)
		free(d->paths[i]);
	free(d->paths);
	free(d->files);
	free(d->ranges);
	free(d->data);
	memset(d, 0, sizeof(*d));
}

static int check(const struct ibcr_delfiles *d, const char *tab, uint32_t tab_len)
{
	uint32_t next = 0;

	for (uint32_t i = 0; i < d->nfiles; i++) {
		const struct ibcr_delfile *f = &d->files[i];
		uint64_t at = 0;

		if (f->path_off >= tab_len || !memchr(tab + f->path_off, 0, tab_len - f->path_off) ||
		    f->range0 != next || f->nranges > d->nranges - next)
			return -1;
		for (uint32_t k = f->range0; k < f->range0 + f->nranges; k++) {
			const struct ibcr_delrange *r = &d->ranges[k];

			if (r->off < at || r->len > f->size || r->off > f->size - r->len ||
			    r->data_off > d->data_size || r->len > d->data_size - r->data_off)
				return -1;
			at = r->off + r->len;
		}
		next += f->nranges;
	}
	return next == d->nranges ? 0 : -1;
}

static int decode(const uint8_t *p, uint64_t n, struct ibcr_delfiles *d)
{
	struct ibcr_delfiles_hdr h;
	uint64_t fixed;
	const char *tab;

	if (n < sizeof(h))
		return -1;
	memcpy(&h, p, sizeof(h));
	fixed = sizeof(h) + (uint64_t)h.nfiles * sizeof(struct ibcr_delfile) +
		(uint64_t)h.nranges * sizeof(struct ibcr_delrange);
	if (h.nfiles > 1u << 16 || h.nranges > 1u << 24 ||
	    fixed + h.strtab_size + h.data_size != n)
		return -1;
	d->nfiles = h.nfiles;
	d->nranges = h.nranges;
	d->data_size = h.data_size;
	d->files = xcalloc(h.nfiles + 1, sizeof(*d->files));
	d->ranges = xcalloc(h.nranges + 1, sizeof(*d->ranges));
	d->paths = xcalloc(h.nfiles + 1, sizeof(char *));
	d->data = xmalloc(h.data_size + 1);
	memcpy(d->files, p + sizeof(h), h.nfiles * sizeof(*d->files));
	memcpy(d->ranges, p + sizeof(h) + h.nfiles * sizeof(*d->files),
	       h.nranges * sizeof(*d->ranges));
	tab = (const char *)p + fixed;
	memcpy(d->data, p + fixed + h.strtab_size, h.data_size);
	if (check(d, tab, h.strtab_size))
		return -1;
	for (uint32_t i = 0; i < h.nfiles; i++)
		d->paths[i] = xstrdup(tab + d->files[i].path_off);
	return 0;
}

int imgr_load_delfiles(struct img_reader *r, struct ibcr_delfiles *d, struct ibcr_err *e)
{
	memset(d, 0, sizeof(*d));
	for (uint32_t i = 0; i < r->nsecs; i++) {
		uint8_t *p;
		int rc;

		if (r->secs[i].h.type != IBCR_SEC_DELFILES)
			continue;
		if (d->files)
			return ibcr_fail(e, "image %s: two DELFILES sections", r->path);
		if (imgr_payload(r, i, &p, e))
			return -1;
		rc = decode(p, r->secs[i].h.size, d);
		free(p);
		if (rc) {
			ibcr_delfiles_free(d);
			return ibcr_fail(e, "image %s: DELFILES section is malformed", r->path);
		}
	}
	return 0;
}
