/* SPDX-License-Identifier: MIT */
/*
 * The files of one node's verbs rendezvous directory as one value of a
 * PMIx fence (ibcr-pmix putdir/getdir): "NAME LEN\n" then LEN bytes, per
 * file. Between ibcr-pmix.c and pmix_bundle.c only.
 */
#ifndef IBCR_PMIX_BUNDLE_H
#define IBCR_PMIX_BUNDLE_H

#include <stddef.h>

/*
 * The regular files of dir whose names begin with one of the
 * comma-separated prefixes, as one NUL-terminated string (malloc'd; the
 * files are text). NULL with why filled on failure. *nfiles: how many.
 */
char *bundle_dir(const char *dir, const char *prefixes, unsigned *nfiles, char *why, size_t n);

/* Writes every file of bundle into dir, each atomically. 0, or -1 with why. */
int unbundle(const char *bundle, const char *dir, unsigned *nfiles, char *why, size_t n);

#endif
