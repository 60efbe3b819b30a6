/* SPDX-License-Identifier: MIT */
#ifndef IBCR_PAGECACHE_H
#define IBCR_PAGECACHE_H

#include <stdint.h>

/*
 * How many bytes of [off, off + len) of fd the page cache lacks (whole
 * pages). 0 when it cannot tell: the caller then reads through the cache.
 */
uint64_t pagecache_missing(int fd, uint64_t off, uint64_t len);

#endif
