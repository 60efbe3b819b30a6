/* SPDX-License-Identifier: MIT */
#ifndef IBCR_WQMAP_H
#define IBCR_WQMAP_H

#include <stdint.h>

/*
 * The file of a wqueue, when it is on tmpfs, filled in place through a
 * shared mapping (wqmap.c says why). The fd must be open read-write.
 */
struct wqmap;

/* NULL: not tmpfs, or it cannot be mapped (write() it then). */
struct wqmap *wqm_open(int fd);
/* WQ_BUF_SIZE bytes of the file from offset `end`, made; NULL with errno. */
uint8_t *wqm_buf(struct wqmap *m, uint64_t end);
/* The file ends at `end` (the pages made ahead go): 0, or -1 with errno. */
int wqm_finish(struct wqmap *m, uint64_t end);
void wqm_close(struct wqmap *m);

#endif
