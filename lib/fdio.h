/* SPDX-License-Identifier: MIT */
#ifndef IBCR_FDIO_H
#define IBCR_FDIO_H

#include <stddef.h>
#include <stdint.h>

/*
 * Whole reads and writes: short transfers are continued, EINTR retried.
 * 0, or -1 with errno set (EIO: the file ended first; ENOSPC: write
 * wrote nothing).
 */
int write_full(int fd, const void *p, size_t n);
int pwrite_full(int fd, const void *p, size_t n, uint64_t off);
int read_full(int fd, void *p, size_t n);
int pread_full(int fd, void *p, size_t n, uint64_t off);
/*
 * Turns O_DIRECT on or off for an open file: 0, or -1 with errno set
 * (EINVAL when the file system cannot do direct I/O).
 */
int fd_set_direct(int fd, int on);
/* Waits up to ms milliseconds for fd to have want bytes to read: 0, or -1 */
int fionread_wait(int fd, int want, int ms);

#endif
