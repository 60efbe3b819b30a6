// SPDX-License-Identifier: MIT
/*
 * Files that only the process still has, and what must come back with
 * them. MODE sets one up in the working directory, says "ready", waits
 * for "go" (gate.h) and checks from inside:
 *
 *   holes    a deleted file of 2 MiB with data at 0 and at 1 MiB only (a
 *            hole between and after: SEEK_DATA/SEEK_HOLE say so), mode
 *            0640, owner 1234:5678 (as root), set access and modification
 *            times; a memfd with a hole too
 *   big      a deleted file of 70 MiB of data (more than the 64 MiB held
 *            in memory at checkpoint), each page its own bytes, its fd
 *            link still "big (deleted)"
 *   shared   a deleted file and a memfd, each opened again by a child
 *            through /proc/PPID/fd (another open file description of the
 *            same file): after the restore what the child writes through
 *            its descriptions the parent reads through its own, and both
 *            see one inode
 *   linked   a file "a" with a second name "b", "a" deleted, kept open:
 *            the descriptor is the file "b" still
 *   exec     a memfd holding a copy of /bin/true: execveat() on it works
 *            (ETXTBSY once after a restore)
 *   mapped   a deleted file "m" of 3 pages, open, mapped shared (A) and
 *            private (B, page 1 written: a copy of its own), and a
 *            deleted file "n" mapped shared and open nowhere: after the
 *            restore A and the descriptor are one file (a write through
 *            either is seen through the other, and through B's untouched
 *            page 0), B's page 1 is still its own, n's mapping holds its
 *            bytes and is still "n (deleted)" in /proc/self/maps
 *   deldir   a directory "d" removed while open (mode 0750, set times),
 *            and a working directory "w" removed: both are still
 *            directories removed (/proc says "(deleted)", no links, no
 *            entry can be made in them), under their names, "d" with its
 *            mode and times
 *
 *   delfiles MODE
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate.h"

#define MIB (1l << 20)
#define ATIME 1000000000l
#define MTIME 1100000000l

static void fill_page(uint8_t *p, long page)
{
	for (int i = 0; i < 4096; i++)
		p[i] = (uint8_t)(page * 31 + i / 7);
}

static void hole_layout(int fd, const char *what)
{
	struct stat st;

	check(fstat(fd, &st) == 0 && st.st_size == 2 * MIB, "%s: size", what);
	check(lseek(fd, 0, SEEK_DATA) == 0, "%s: data at 0", what);
	check(lseek(fd, 0, SEEK_HOLE) == 4096, "%s: a hole at 4096, not %ld", what,
	      (long)lseek(fd, 0, SEEK_HOLE));
	check(lseek(fd, 4096, SEEK_DATA) == MIB, "%s: data again at 1 MiB, not %ld", what,
	      (long)lseek(fd, 4096, SEEK_DATA));
	check(lseek(fd, MIB, SEEK_HOLE) == MIB + 4096, "%s: a hole after it", what);
}

static void hole_bytes(int fd, const char *what)
{
	uint8_t b[4096], want[4096];

	check(pread(fd, b, 4096, 0) == 4096 && (fill_page(want, 0), !memcmp(b, want, 4096)),
	      "%s: the bytes at 0", what);
	check(pread(fd, b, 4096, MIB) == 4096 && (fill_page(want, 256), !memcmp(b, want, 4096)),
	      "%s: the bytes at 1 MiB", what);
	memset(want, 0, sizeof(want));
	check(pread(fd, b, 4096, 8192) == 4096 && !memcmp(b, want, 4096), "%s: zeros in the hole",
	      what);
}

static void make_holes(int fd)
{
	uint8_t b[4096];

	check(ftruncate(fd, 2 * MIB) == 0, "ftruncate");
	fill_page(b, 0);
	check(pwrite(fd, b, 4096, 0) == 4096, "pwrite 0");
	fill_page(b, 256);
	check(pwrite(fd, b, 4096, MIB) == 4096, "pwrite 1 MiB");
}

static void holes(void)
{
	struct timespec t[2] = { { ATIME, 123456789 }, { MTIME, 500000000 } };
	int fd = open(".", O_TMPFILE | O_RDWR, 0600), m = memfd_create("holes", 0);
	int root = geteuid() == 0;
	struct stat st;

	check(fd >= 0 && m >= 0, "O_TMPFILE, memfd");
	make_holes(fd);
	make_holes(m);
	check(fchmod(fd, 0640) == 0 && fchmod(m, 0604) == 0, "fchmod");
	check(!root || (fchown(fd, 1234, 5678) == 0 && fchown(m, 4321, 8765) == 0), "fchown");
	check(futimens(fd, t) == 0 && futimens(m, t) == 0, "futimens");
	gate_wait();
	for (int k = 0; k < 2; k++) {
		const char *what = k ? "memfd" : "deleted file";
		int f = k ? m : fd;

		check(fstat(f, &st) == 0, "fstat");
		check((st.st_mode & 07777) == (k ? 0604u : 0640u), "%s: mode %o", what,
		      st.st_mode & 07777);
		check(!root || (st.st_uid == (k ? 4321u : 1234u) && st.st_gid == (k ? 8765u : 5678u)),
		      "%s: owner %u:%u", what, st.st_uid, st.st_gid);
		check(st.st_mtim.tv_sec == MTIME && st.st_mtim.tv_nsec == 500000000, "%s: mtime %ld",
		      what, (long)st.st_mtim.tv_sec);
		check(st.st_atim.tv_sec == ATIME && st.st_atim.tv_nsec == 123456789, "%s: atime %ld",
		      what, (long)st.st_atim.tv_sec);
		check(st.st_blocks <= 64, "%s: %ld blocks: holes came back filled", what,
		      (long)st.st_blocks);
		hole_layout(f, what);
		hole_bytes(f, what);
	}
}

/* fd's link in /proc ends in "/NAME (deleted)". */
static void deleted_link(int fd, const char *name)
{
	char link[64], want[64], got[4096];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	k = readlink(link, got, sizeof(got) - 1);
	got[k > 0 ? k : 0] = 0;
	snprintf(want, sizeof(want), "/%s (deleted)", name);
	check(k > 0 && strlen(got) > strlen(want) && !strcmp(got + strlen(got) - strlen(want), want),
	      "fd %d is %s, not the deleted %s", fd, got, name);
}

static void big(void)
{
	int fd = open("big", O_CREAT | O_RDWR | O_TRUNC, 0600);
	static uint8_t b[MIB], want[4096];

	check(fd >= 0 && unlink("big") == 0, "big file");
	for (long mib = 0; mib < 70; mib++) {
		for (long p = 0; p < 256; p++)
			fill_page(b + p * 4096, mib * 256 + p);
		check(write(fd, b, MIB) == MIB, "writing MiB %ld", mib);
	}
	check(lseek(fd, 12345, SEEK_SET) == 12345, "lseek");
	gate_wait();
	check(lseek(fd, 0, SEEK_CUR) == 12345, "offset %ld", (long)lseek(fd, 0, SEEK_CUR));
	deleted_link(fd, "big");
	for (long mib = 0; mib < 70; mib++) {
		check(pread(fd, b, MIB, mib * MIB) == MIB, "reading MiB %ld", mib);
		for (long p = 0; p < 256; p++) {
			fill_page(want, mib * 256 + p);
			check(!memcmp(b + p * 4096, want, 4096), "page %ld", mib * 256 + p);
		}
	}
}

static int reopen_of(pid_t pid, int fd, int flags)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, fd);
	return open(p, flags);
}

static void shared(void)
{
	int fd = open(".", O_TMPFILE | O_RDWR, 0600), m = memfd_create("two", 0), go[2], up[2], st;
	pid_t parent = getpid(), c;
	char y;

	check(fd >= 0 && m >= 0 && pipe(go) == 0 && pipe(up) == 0, "files");
	check(pwrite(fd, "parent", 6, 0) == 6 && pwrite(m, "parent", 6, 0) == 6, "writes");
	if (!(c = fork())) {
		int cfd = reopen_of(parent, fd, O_RDWR), cm = reopen_of(parent, m, O_RDWR);
		char x;
		struct stat a, b;

		close(fd);
		close(m);
		check(cfd >= 0 && cm >= 0 && write(up[1], "r", 1) == 1, "child: reopening");
		check(read(go[0], &x, 1) == 1, "child: waiting");
		check(fstat(cfd, &a) == 0 && fstat(cm, &b) == 0, "child: fstat");
		printf("child ino %lu %lu\n", (unsigned long)a.st_ino, (unsigned long)b.st_ino);
		check(pwrite(cfd, "child", 5, 10) == 5 && pwrite(cm, "child", 5, 10) == 5,
		      "child: writes");
		_exit(0);
	}
	check(read(up[0], &y, 1) == 1, "the child did not reopen the files");
	gate_wait();
	check(write(go[1], "g", 1) == 1 && waitpid(c, &st, 0) == c && st == 0, "the child failed");
	for (int k = 0; k < 2; k++) {
		char b[16] = "";

		check(pread(k ? m : fd, b, 5, 10) == 5 && !memcmp(b, "child", 5),
		      "%s: the child's write is not in the parent's file ('%.5s'): two files",
		      k ? "memfd" : "deleted file", b);
	}
}

static void linked(void)
{
	int fd = open("a", O_CREAT | O_RDWR, 0644);
	struct stat a, b;

	check(fd >= 0 && write(fd, "12345", 5) == 5 && link("a", "b") == 0 && unlink("a") == 0,
	      "a, b");
	gate_wait();
	check(fstat(fd, &a) == 0 && stat("b", &b) == 0, "stat");
	check(a.st_ino == b.st_ino && a.st_dev == b.st_dev, "the descriptor is not the file b");
	check(lseek(fd, 0, SEEK_CUR) == 5 && write(fd, "6", 1) == 1, "offset, write");
	check(stat("b", &b) == 0 && b.st_size == 6, "the write is not in b");
}

static void exec_memfd(void)
{
	int fd = memfd_create("true", MFD_CLOEXEC), src = open("/bin/true", O_RDONLY), st;
	static char b[1 << 16];
	ssize_t k;
	pid_t c;

	check(fd >= 0 && src >= 0, "memfd, /bin/true");
	while ((k = read(src, b, sizeof(b))) > 0)
		check(write(fd, b, (size_t)k) == k, "copying /bin/true");
	close(src);
	gate_wait();
	if (!(c = fork())) {
		char *argv[] = { "true", NULL }, *envp[] = { NULL };

		syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
		_exit(errno == ETXTBSY ? 101 : 102);
	}
	check(waitpid(c, &st, 0) == c && WIFEXITED(st), "the child");
	check(WEXITSTATUS(st) == 0, "execveat of the memfd failed%s",
	      WEXITSTATUS(st) == 101 ? ": ETXTBSY" : "");
}

static int mapped_as(const void *p, const char *name)
{
	char line[512], want[64];
	unsigned long s, e;
	FILE *f = fopen("/proc/self/maps", "r");
	int ok = 0;

	snprintf(want, sizeof(want), "/%s (deleted)\n", name);
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s == (uintptr_t)p &&
		    strlen(line) > strlen(want) && !strcmp(line + strlen(line) - strlen(want), want))
			ok = 1;
	if (f)
		fclose(f);
	return ok;
}

static void mapped(void)
{
	int fd = open("m", O_CREAT | O_RDWR | O_TRUNC, 0600), nfd = open("n", O_CREAT | O_RDWR, 0600);
	uint8_t page[4096], *a, *b, *n;
	char x[8] = "";

	check(fd >= 0 && nfd >= 0, "m, n");
	for (int k = 0; k < 3; k++) {
		fill_page(page, k);
		check(write(fd, page, 4096) == 4096 && write(nfd, page, 4096) == 4096, "writing");
	}
	a = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	b = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	n = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, nfd, 0);
	check(a != MAP_FAILED && b != MAP_FAILED && n != MAP_FAILED, "mmap");
	memcpy(b + 4096 + 8, "BBBB", 4);
	memcpy(n + 8, "NNNN", 4);
	check(close(nfd) == 0 && unlink("m") == 0 && unlink("n") == 0, "unlink");
	gate_wait();
	check(mapped_as(a, "m") && mapped_as(b, "m") && mapped_as(n, "n"),
	      "the mappings are not of the deleted files m and n");
	check(pwrite(fd, "XXXX", 4, 100) == 4, "pwrite");
	check(!memcmp(a + 100, "XXXX", 4), "a write through the fd is not seen in the shared map");
	check(!memcmp(b + 100, "XXXX", 4), "... nor in the private map's untouched page");
	memcpy(a + 4096 + 200, "YYYY", 4);
	check(pread(fd, x, 4, 4096 + 200) == 4 && !memcmp(x, "YYYY", 4),
	      "a write into the shared map is not seen through the fd");
	check(!memcmp(b + 4096 + 8, "BBBB", 4) && memcmp(b + 4096 + 200, "YYYY", 4),
	      "the private map's own page changed");
	fill_page(page, 2);
	check(!memcmp(a + 8192, page, 4096) && !memcmp(b + 8192, page, 4096), "page 2");
	fill_page(page, 1);
	check(!memcmp(n + 4096, page, 4096) && !memcmp(n + 8, "NNNN", 4), "n's bytes");
	memcpy(n + 16, "n!", 2);
}

static void removed_dir(int fd, const char *link, const char *name)
{
	char want[64], got[4096];
	struct stat st;
	ssize_t k = readlink(link, got, sizeof(got) - 1);

	got[k > 0 ? k : 0] = 0;
	snprintf(want, sizeof(want), "/%s (deleted)", name);
	check(k > 0 && strlen(got) > strlen(want) && !strcmp(got + strlen(got) - strlen(want), want),
	      "%s is %s, not a removed %s", link, got, name);
	check(fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_nlink == 0,
	      "%s: not a removed directory", name);
	check(openat(fd, "x", O_CREAT | O_WRONLY, 0644) < 0 && errno == ENOENT,
	      "%s: an entry could be made in it", name);
}

static void deldir(void)
{
	struct timespec t[2] = { { ATIME, 1 }, { MTIME, 2 } };
	int d = -1, w;
	struct stat st;
	char link[64];

	check((gate_dir = open(".", O_RDONLY | O_DIRECTORY)) >= 0, "this directory");
	check(mkdir("d", 0700) == 0 && (d = open("d", O_RDONLY | O_DIRECTORY)) >= 0, "d");
	check(fchmod(d, 0750) == 0 && futimens(d, t) == 0 && rmdir("d") == 0, "removing d");
	check(mkdir("w", 0755) == 0 && chdir("w") == 0 && rmdir("../w") == 0, "removing w");
	check((w = open(".", O_RDONLY | O_DIRECTORY)) >= 0 && close(w) == 0, "w");
	gate_wait();
	snprintf(link, sizeof(link), "/proc/self/fd/%d", d);
	removed_dir(d, link, "d");
	check((w = open(".", O_RDONLY | O_DIRECTORY)) >= 0, "the working directory");
	removed_dir(w, "/proc/self/cwd", "w");
	check(fstat(d, &st) == 0 && (st.st_mode & 07777) == 0750, "d: mode %o", st.st_mode & 07777);
	check(st.st_mtim.tv_sec == MTIME && st.st_mtim.tv_nsec == 2 && st.st_atim.tv_sec == ATIME,
	      "d: times %ld %ld", (long)st.st_mtim.tv_sec, (long)st.st_atim.tv_sec);
}

int main(int argc, char **argv)
{
	static const struct gate_mode modes[] = {
		{ "holes", holes }, { "big", big }, { "shared", shared }, { "linked", linked },
		{ "exec", exec_memfd }, { "deldir", deldir }, { "mapped", mapped },
	};

	return gate_main(argc, argv, modes, sizeof(modes) / sizeof(modes[0]));
}
