/* SPDX-License-Identifier: MIT */
#ifndef IBCR_WQUEUE_H
#define IBCR_WQUEUE_H

#include <stddef.h>
#include <stdint.h>

/*
 * A file written from offset 0 on by threads of its own (one; two with
 * direct I/O), from a ring of buffers, each buffer at its place in the
 * file: the caller fills one buffer while the previous ones are
 * written, so reading a process's memory and writing the image overlap.
 * Through the page cache, the writer also starts writeback behind itself
 * (sync_file_range), so that the final fsync finds little left to do.
 * 1 MiB buffers: larger ones measured no faster, and are more fresh
 * memory to fault in.
 *
 * Errors of the thread (a full disk) come back from the next wq_submit
 * or wq_drain as -1 with errno set.
 *
 * Direct (wq_open's `direct`): the file is written with O_DIRECT, from
 * the buffers straight to the disk, while whole buffers come (all but
 * the last of a file written in one go); the rest goes through the page
 * cache. A file system without direct I/O gets the page cache only.
 * docs/design-notes.md, "Writing the image", says why and when.
 */
#define WQ_BUF_SIZE (1u << 20)
/* what direct I/O needs of buffers, lengths and offsets (512 B and 4 KiB block disks) */
#define WQ_DIRECT_ALIGN 4096u

struct wqueue;

struct wqueue *wq_open(int fd, int direct);
/* After wq_drain: how many bytes went to the file by direct I/O. */
uint64_t wq_direct_bytes(struct wqueue *q);
/* The buffer to fill next, WQ_BUF_SIZE bytes. */
uint8_t *wq_buf(struct wqueue *q);
/* Hands the first `len` bytes of the current buffer to the thread. */
int wq_submit(struct wqueue *q, size_t len);
/* Waits until everything submitted is written. */
int wq_drain(struct wqueue *q);
/* Drains (errors ignored: the caller is giving up or has drained), stops, frees. */
void wq_close(struct wqueue *q);

#endif
