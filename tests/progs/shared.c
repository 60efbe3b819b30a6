// SPDX-License-Identifier: MIT
/*
 * Memory shared between processes: a parent maps shared memory, fills a
 * part of it with a pattern and forks two workers; each worker counts in
 * its own slot of the shared page, and the parent can only see the counts
 * move if the memory is really shared. The parent prints "tick N pid P
 * counts A B" and fails when a count stands still for 20 ticks (its worker
 * is not sharing any more) or the pattern changed.
 *
 *   shared [TICKS [MS [KIND [PATH]]]]
 *
 * KIND is what the memory is: anon (MAP_SHARED anonymous, inherited),
 * posix (shm_open(PATH), mapped again by each worker), file (the file
 * PATH, likewise), memfd (each worker maps the inherited memfd, which
 * all then close), memfd-open (the same, but the memfd stays open: each
 * tick the parent writes the tick into the memory and reads it back
 * through the descriptor, which must be the same object) or deleted
 * (shm_open(PATH), mapped, then unlinked before the workers map it
 * again, as python's multiprocessing does with its semaphores: no name
 * and no descriptor is left, only the mappings of a deleted file; each
 * tick the parent checks that /proc/self/maps still shows its mapping as
 * "/dev/shm/PATH (deleted)") or deleted-part (the same with the file a
 * page longer than the mappings, "TAIL" written there: at the end the
 * parent's mapping is grown over that page with mremap, which must read
 * it, the file's own bytes that no mapping had).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIZE (4u << 20)
#define STALL 20

struct shared {
	atomic_ulong count[2];
	atomic_int stop;
	long mark;		/* memfd-open: written here, read through the fd */
	uint64_t pattern[];	/* the rest: mix(i) */
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

enum kind { ANON, POSIX, FILE_, MEMFD, MEMFD_OPEN, DELETED, DELETED_PART };

/* A mapping of the object of its own; fd is -1 for anonymous memory. */
static struct shared *map(int fd)
{
	void *p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | (fd < 0 ? MAP_ANONYMOUS : 0), fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int open_object(enum kind kind, const char *path)
{
	int fd = -1;

	if (kind == POSIX || kind == DELETED || kind == DELETED_PART)
		fd = shm_open(path, O_RDWR | O_CREAT, 0640);
	else if (kind == FILE_)
		fd = open(path, O_RDWR | O_CREAT, 0640);
	else if (kind == MEMFD || kind == MEMFD_OPEN)
		fd = memfd_create("shared-test", 0);
	if (fd >= 0 && ftruncate(fd, SIZE + (kind == DELETED_PART ? 4096 : 0)))
		return -1;
	return fd;
}

/* Written through the mapping, read through the descriptor. */
static int fd_sees(struct shared *s, int fd, long n)
{
	long v = -1;

	s->mark = n;
	return pread(fd, &v, sizeof(v), (off_t)offsetof(struct shared, mark)) ==
	       (ssize_t)sizeof(v) && v == n;
}

/* The line of /proc/self/maps for s names the deleted file. */
static int maps_deleted(const struct shared *s, const char *path)
{
	char line[512], want[300], start[32];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	snprintf(want, sizeof(want), " /dev/shm%s (deleted)\n", path);
	snprintf(start, sizeof(start), "%lx-", (unsigned long)(uintptr_t)s);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, start, strlen(start)))
			found = strlen(line) > strlen(want) &&
				!strcmp(line + strlen(line) - strlen(want), want);
	if (f)
		fclose(f);
	return found;
}

static int worker(struct shared *s, int k)
{
	while (!atomic_load(&s->stop)) {
		atomic_fetch_add(&s->count[k], 1);
		sleep_ms(5);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 40, ms = argc > 2 ? atol(argv[2]) : 100;
	const char *kinds = argc > 3 ? argv[3] : "anon", *path = argc > 4 ? argv[4] : "";
	enum kind kind = !strcmp(kinds, "posix") ? POSIX : !strcmp(kinds, "file") ? FILE_ :
			 !strcmp(kinds, "memfd") ? MEMFD :
			 !strcmp(kinds, "memfd-open") ? MEMFD_OPEN :
			 !strcmp(kinds, "deleted") ? DELETED :
			 !strcmp(kinds, "deleted-part") ? DELETED_PART : ANON;
	int fd = open_object(kind, path), still[2] = { 0, 0 }, st;
	struct shared *s = kind == ANON || fd >= 0 ? map(fd) : NULL;
	size_t words = (SIZE - sizeof(struct shared)) / 8;
	unsigned long last[2] = { 0, 0 };
	pid_t w[2];

	if (!s) {
		perror("shared: the shared object");
		return 2;
	}
	for (size_t i = 0; i < words; i++)
		s->pattern[i] = mix(i);
	if (kind == DELETED_PART && pwrite(fd, "TAIL", 4, SIZE + 100) != 4) {
		perror("shared: writing the tail");
		return 2;
	}
	if ((kind == DELETED || kind == DELETED_PART) && shm_unlink(path)) {
		perror("shared: shm_unlink");
		return 2;
	}
	for (int k = 0; k < 2; k++)
		if ((w[k] = fork()) == 0) {
			/* a mapping of its own, not the inherited one */
			struct shared *mine = fd >= 0 ? map(fd) : s;

			if (fd >= 0 && kind != MEMFD_OPEN)
				close(fd);
			return mine ? worker(mine, k) : 2;
		}
	if (fd >= 0 && kind != MEMFD_OPEN)
		close(fd);
	for (long n = 0; n < ticks; n++) {
		for (int k = 0; k < 2; k++) {
			unsigned long c = atomic_load(&s->count[k]);

			still[k] = c == last[k] ? still[k] + 1 : 0;
			last[k] = c;
			if (still[k] >= STALL) {
				printf("FAIL worker %d's count stood still at %lu: not shared\n", k, c);
				return 1;
			}
		}
		for (size_t i = 0; i < words; i += 97)
			if (s->pattern[i] != mix(i)) {
				printf("FAIL shared pattern word %zu changed\n", i);
				return 1;
			}
		if ((kind == DELETED || kind == DELETED_PART) && !maps_deleted(s, path)) {
			printf("FAIL tick %ld: maps does not show /dev/shm%s (deleted)\n", n, path);
			return 1;
		}
		if (kind == MEMFD_OPEN && !fd_sees(s, fd, n)) {
			printf("FAIL tick %ld: the memfd does not see its mapping\n", n);
			return 1;
		}
		printf("tick %ld pid %d counts %lu %lu\n", n, (int)getpid(), last[0], last[1]);
		fflush(stdout);
		sleep_ms(ms);
	}
	atomic_store(&s->stop, 1);
	for (int k = 0; k < 2; k++)
		if (waitpid(w[k], &st, 0) != w[k] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("FAIL worker %d status %#x\n", k, st);
			return 1;
		}
	if (kind == DELETED_PART) {
		char *grown = mremap(s, SIZE, SIZE + 4096, MREMAP_MAYMOVE);

		if (grown == MAP_FAILED || memcmp(grown + SIZE + 100, "TAIL", 4)) {
			printf("FAIL the deleted file's unmapped tail is not there\n");
			return 1;
		}
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
