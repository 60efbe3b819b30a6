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
 * it included. docs/design-notes.md, "Writing the image", has the numbers.
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

/* The number after `key` in a /proc file of "Key:  N kB" lines, in bytes. */
static uint64_t kb_field(const char *path, const char *key)
{
	struct ibcr_err e;
	char *s, *p;
	size_t len;
	uint64_t kb = 0;

	if (proc_read(path, &s, &len, &e))
		return 0;
	p = strstr(s, key);
	if (p)
		kb = strtoull(p + strlen(key), NULL, 10);
	free(s);
	return kb * 1024;
}

/* MemAvailable in bytes, or 0 when not known. */
static uint64_t mem_available(void)
{
	return kb_field("/proc/meminfo", "MemAvailable:");
}

/* How many dirty bytes the kernel holds before writing back, or 0. */
static uint64_t dirty_background(void)
{
	uint64_t bytes = proc_num("/proc/sys/vm/dirty_background_bytes");

	if (bytes)
		return bytes;
	return mem_available() / 100 * proc_num("/proc/sys/vm/dirty_background_ratio");
}

/*
 * The targets' resident anonymous and shared memory: about their page
 * data (file pages that are not written, or not yet, are not saved).
 */
static uint64_t resident(const struct target *t, uint32_t n)
{
	uint64_t sum = 0;
	char path[64];

	for (uint32_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/%d/status", (int)t[i].pid);
		/* a zombie has neither line: nothing to write */
		sum += kb_field(path, "RssAnon:") + kb_field(path, "RssShmem:");
	}
	return sum;
}

int image_direct(const struct target *t, uint32_t n)
{
	uint64_t limit = dirty_background();

	/* unknown: the page cache, as any program would write */
	return limit && resident(t, n) > limit;
}
