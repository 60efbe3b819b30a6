/* SPDX-License-Identifier: MIT */
#ifndef IBCR_OUTPATH_H
#define IBCR_OUTPATH_H

#include "err.h"

/*
 * Where an image is written. The image goes to PATH.tmp.<saver pid> and
 * is renamed over PATH at the end (image_io.h), so PATH must be a place
 * for a regular file: checked before a process is touched, and once
 * more just before the rename.
 */

/*
 * Refuses, with the reason, a path that is empty, "-", ends in '/',
 * names an existing directory, device, FIFO or socket, or lies in a
 * directory that does not exist or cannot be written. A symbolic link
 * is followed: *real (malloc'd) is where the image will be, the link's
 * target when PATH is a link to a regular file, else PATH itself.
 */
int outpath_check(const char *path, char **real, struct ibcr_err *e);

/* Refuses when PATH exists now as anything but a regular file or a link. */
int outpath_replaceable(const char *path, struct ibcr_err *e);

/*
 * Removes the temporary images that savers which died left for PATH:
 * PATH.tmp.N and PATH.K.tmp.N (--keep's numbered images) whose N is
 * not a live saver. Says so on stderr, one line each.
 */
void outpath_clean_stale(const char *path);

#endif
