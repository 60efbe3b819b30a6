/* SPDX-License-Identifier: MIT */
/*
 * For test programs that check their own regions in /proc/self/smaps
 * (madvise, thp): one field of the region that holds an address.
 */
#ifndef IBCR_TEST_SMAPS_H
#define IBCR_TEST_SMAPS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/*
 * The rest of the line that starts with key ("VmFlags:") in the entry of
 * the region holding addr, into out; 0, or -1 when there is none.
 */
static int smaps_field(uintptr_t addr, const char *key, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	size_t klen = strlen(key);
	char line[512];
	int in = 0, rc = -1;

	out[0] = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		/* an entry's first line: "start-end perms ..." */
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = addr >= s && addr < e;
		} else if (in && !strncmp(line, key, klen)) {
			snprintf(out, len, "%s", line + klen);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

#endif
