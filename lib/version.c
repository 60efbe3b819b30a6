// SPDX-License-Identifier: MIT
#include "image.h"
#include "release.h"	/* generated: IBCR_RELEASE */
#include "version.h"

const char *ibcr_release(void)
{
	return IBCR_RELEASE;
}

void ibcr_print_version(FILE *f, const char *prog)
{
	fprintf(f, "%s (ibcr) %s\nimage format %d\n", prog, IBCR_RELEASE, IBCR_VERSION);
}
