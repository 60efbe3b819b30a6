/* SPDX-License-Identifier: MIT */
#ifndef IBCR_RELEASE_H
#define IBCR_RELEASE_H

#include <stdio.h>

/*
 * The release every program reports with --version: the VERSION file of
 * the source tree and, in a git checkout, `git describe` of the commit
 * it was built from (GNUmakefile writes both into build/release.h).
 * Not the image format's version (IBCR_VERSION, lib/image.h).
 */
const char *ibcr_release(void);

/* Prints "PROG (ibcr) RELEASE" and the image format on f. */
void ibcr_print_version(FILE *f, const char *prog);

#endif
