// SPDX-License-Identifier: MIT
/* Sections that make an image portable: the saving kernel's [vdso]. */
#include <stdlib.h>

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
