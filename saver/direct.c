// SPDX-License-Identifier: MIT
/*
 * Whether the image goes past the page cache (direct I/O, wqueue.h).
 *
 * Through the page cache, a write is done at memory speed and the image
 * stays cached for a restore on this machine, as long as the cache takes
 * it: up to what the kernel lets sit dirty before it starts writing back
 * (vm.dirty_background_*). A larger image is held to the disk's speed
 * anyway, needs as much fresh memory as it is large, and pushes out the
 * cache of everything else on the machine, the application saved with
 * it included. docs/design.md, "Writing the image", has the numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "saver.h"

/* One number from a /proc file, or 0 when it cannot be read. */
static uint64_t proc_num(const char *path)
{
	struct ibcr_err e;
	char *s;
	size_t len;
	uint64_t v;

	if (proc_read(path, &s, &len, &e))
		return 0;
	v = strtoull(s, NULL, 10);
	free(s);
	return v;
}

/* MemAvailable in bytes, or 0 when not known. */
static uint64_t mem_available(void)
{
	struct ibcr_err e;
	char *s, *p;
	size_t len;
	uint64_t kb = 0;

	if (proc_read("/proc/meminfo", &s, &len, &e))
		return 0;
	p = strstr(s, "MemAvailable:");
	if (p)
		kb = strtoull(p + sizeof("MemAvailable:") - 1, NULL, 10);
	free(s);
	return kb * 1024;
}

/* How many dirty bytes the kernel holds before writing back, or 0. */
static uint64_t dirty_background(void)
{
	uint64_t bytes = proc_num("/proc/sys/vm/dirty_background_bytes");

	if (bytes)
		return bytes;
	return mem_available() / 100 * proc_num("/proc/sys/vm/dirty_background_ratio");
}

/* Resident bytes of the targets: about their page data (an estimate). */
static uint64_t resident(const struct target *t, uint32_t n)
{
	uint64_t sum = 0;
	char path[64];

	for (uint32_t i = 0; i < n; i++) {
		char *s, *p;
		size_t len;
		struct ibcr_err e;

		snprintf(path, sizeof(path), "/proc/%d/statm", (int)t[i].pid);
		if (proc_read(path, &s, &len, &e))
			continue;	/* a zombie: nothing to write */
		p = strchr(s, ' ');
		if (p)
			sum += strtoull(p + 1, NULL, 10) * (uint64_t)getpagesize();
		free(s);
	}
	return sum;
}

int image_direct(const struct target *t, uint32_t n)
{
	uint64_t limit = dirty_background();

	/* unknown: the page cache, as any program would write */
	return limit && resident(t, n) > limit;
}
