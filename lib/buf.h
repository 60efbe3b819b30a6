/* SPDX-License-Identifier: MIT */
#ifndef IBCR_BUF_H
#define IBCR_BUF_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer for building section payloads. */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

/* Appends n bytes; returns their offset. Aborts on out-of-memory. */
size_t buf_put(struct buf *b, const void *data, size_t n);
/* Appends a NUL-terminated string; returns its offset. */
size_t buf_str(struct buf *b, const char *s);
void buf_free(struct buf *b);

/* malloc/calloc/realloc that abort with a message instead of failing. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
/* align: a power of two, a multiple of sizeof(void *); free() frees it */
void *xmalloc_aligned(size_t align, size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

#endif
