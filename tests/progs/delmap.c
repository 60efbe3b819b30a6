// SPDX-License-Identifier: MIT
/*
 * A private mapping of a deleted file: PATH (4 pages of a pattern) is
 * mapped privately twice, page 0 read-only and pages 1-3 read-write,
 * with an anonymous read-write region right after the latter; page 2 is
 * rewritten (a private copy), then the file is unlinked and closed. Every
 * tick the program checks the bytes and that /proc/self/maps shows both
 * mappings as "PATH (deleted)" at their offsets, apart from the
 * anonymous neighbour. At the end it drops its copy of page 2
 * (MADV_DONTNEED), which must then read the file's own bytes again.
 *
 *   delmap PATH [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PG 4096u
#define WORDS (PG / 8)

static uint64_t file_word(size_t page, size_t w) { return (page << 32) ^ (w * 2654435761u); }

static int check_page(const uint64_t *p, size_t page, int changed, const char *what)
{
	for (size_t w = 0; w < WORDS; w++) {
		uint64_t want = file_word(page, w) ^ (changed ? 0x5a5a5a5a5a5a5a5aull : 0);

		if (p[w] != want) {
			printf("FAIL %s: page %zu word %zu is %#llx, not %#llx\n", what, page, w,
			       (unsigned long long)p[w], (unsigned long long)want);
			return -1;
		}
	}
	return 0;
}

/* The maps line of the region at addr: offset and name as wanted. */
static int maps_line(const void *addr, unsigned long off, const char *name, const char *what)
{
	char line[512], start[32], want[400];
	FILE *f = fopen("/proc/self/maps", "r");
	int ok = 0;

	snprintf(start, sizeof(start), "%lx-", (unsigned long)(uintptr_t)addr);
	snprintf(want, sizeof(want), " %s\n", name);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long o = ~0ul;

		if (strncmp(line, start, strlen(start)))
			continue;
		sscanf(line, "%*s %*s %lx", &o);
		ok = o == off && strlen(line) > strlen(want) &&
		     !strcmp(line + strlen(line) - strlen(want), want);
		if (!ok)
			printf("FAIL %s: maps shows %s", what, line);
	}
	if (f)
		fclose(f);
	if (!ok)
		printf("FAIL %s: no maps line %s... %lx ... %s\n", what, start, off, name);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/delmap.dat";
	long ticks = argc > 2 ? atol(argv[2]) : 60, ms = argc > 3 ? atol(argv[3]) : 50;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	uint64_t buf[WORDS];
	char deleted[320];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0640);
	uint8_t *ro, *rw, *anon;

	if (fd < 0) {
		perror(path);
		return 2;
	}
	for (size_t p = 0; p < 4; p++) {
		for (size_t w = 0; w < WORDS; w++)
			buf[w] = file_word(p, w);
		if (write(fd, buf, PG) != PG)
			return 2;
	}
	/* rw and anon side by side: the kernel could merge an anonymous copy */
	rw = mmap(NULL, 6 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 0);
	if (rw == MAP_FAILED || ro == MAP_FAILED ||
	    mmap(rw, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, PG) != rw)
		return 2;
	anon = mmap(rw + 3 * PG, 3 * PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (anon != rw + 3 * PG)
		return 2;
	memset(anon, 7, 3 * PG);
	for (size_t w = 0; w < WORDS; w++)
		((uint64_t *)(rw + PG))[w] ^= 0x5a5a5a5a5a5a5a5aull;	/* file page 2 */
	if (unlink(path) || close(fd))
		return 2;
	snprintf(deleted, sizeof(deleted), "%s (deleted)", path);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (long n = 0; n <= ticks; n++) {
		if (check_page((uint64_t *)ro, 0, 0, "read-only mapping") ||
		    check_page((uint64_t *)rw, 1, 0, "page 1") ||
		    check_page((uint64_t *)(rw + PG), 2, 1, "page 2 (rewritten)") ||
		    check_page((uint64_t *)(rw + 2 * PG), 3, 0, "page 3") ||
		    maps_line(ro, 0, deleted, "read-only mapping") ||
		    maps_line(rw, PG, deleted, "read-write mapping") ||
		    maps_line(anon, 0, "", "anonymous neighbour") ||
		    anon[3 * PG - 1] != 7)
			return 1;
		if (n == ticks)
			break;
		printf("tick %ld pid %d\n", n, (int)getpid());
		nanosleep(&ts, NULL);
	}
	/* the copy dropped: the file's own page 2 shows through again */
	if (madvise(rw + PG, PG, MADV_DONTNEED) ||
	    check_page((uint64_t *)(rw + PG), 2, 0, "page 2 after MADV_DONTNEED"))
		return 1;
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
