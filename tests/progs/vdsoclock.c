// SPDX-License-Identifier: MIT
/*
 * A program that keeps pointers into its [vdso], as a C library does:
 * at start it looks up the vdso's time functions (AT_SYSINFO_EHDR, its
 * dynamic symbols) and keeps the addresses; each tick it calls them, and
 * the C library's own clock_gettime, gettimeofday, time and getcpu, and
 * checks each answer against the system call itself. Restored on another
 * kernel (or with the loader's vdso proxy forced), the kept pointers lead
 * into the saved vdso's bytes, which must take it to this kernel's.
 * Each tick prints "tick N pid P"; a wrong answer prints "FAIL ..." and
 * exits 1; a pointer that leads nowhere kills it (SIGSEGV).
 *
 *   vdsoclock [TICKS [MS]]
 */
#define _GNU_SOURCE
#include <elf.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define PREFIX "__vdso_"
#else
#define PREFIX "__kernel_"
#endif

typedef int (*gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef long (*time_fn)(long *);
typedef int (*getcpu_fn)(unsigned *, unsigned *, void *);

static gettime_fn v_gettime, v_getres;
static gettimeofday_fn v_gettimeofday;
static time_fn v_time;		/* x86_64 only */
static getcpu_fn v_getcpu;	/* x86_64 only */

/* A defined function of the vdso's dynamic symbol table, or NULL. */
static void *vdso_sym(const char *name)
{
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const void *)base;
	const Elf64_Shdr *sh;

	if (!base)
		return NULL;
	sh = (const void *)(base + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *sym = (const void *)(base + sh[i].sh_offset);
		const char *str;

		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		str = (const char *)base + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (sym[k].st_shndx != SHN_UNDEF && !strcmp(str + sym[k].st_name, name))
				return (void *)(base + sym[k].st_value);
	}
	return NULL;
}

static double ts_s(const struct timespec *t)
{
	return (double)t->tv_sec + t->tv_nsec / 1e9;
}

/* a (from the vdso or libc) and b (the system call, taken after) agree */
static int near(const char *what, double a, double b)
{
	/* a slow emulated guest can take long between the two calls */
	if (b - a < -0.001 || b - a > 5.0) {
		printf("FAIL %s: %.6f, the system call says %.6f\n", what, a, b);
		return -1;
	}
	return 0;
}

static int check_clock(const char *name, int (*fn)(clockid_t, struct timespec *),
		       clockid_t clk)
{
	struct timespec a, b;
	char what[64];

	snprintf(what, sizeof(what), "%s(%d)", name, (int)clk);
	if (fn(clk, &a) || syscall(SYS_clock_gettime, clk, &b)) {
		printf("FAIL %s failed\n", what);
		return -1;
	}
	return near(what, ts_s(&a), ts_s(&b));
}

static int check_res(void)
{
	struct timespec a, b;

	if (!v_getres)
		return 0;
	if (v_getres(CLOCK_MONOTONIC, &a) || syscall(SYS_clock_getres, CLOCK_MONOTONIC, &b) ||
	    a.tv_sec != b.tv_sec || a.tv_nsec != b.tv_nsec) {
		printf("FAIL vdso clock_getres: %ld.%09ld, the system call %ld.%09ld\n",
		       (long)a.tv_sec, a.tv_nsec, (long)b.tv_sec, b.tv_nsec);
		return -1;
	}
	return 0;
}

static int check_tod(const char *what, int (*fn)(struct timeval *, void *))
{
	struct timeval a;
	struct timespec b;

	if (fn(&a, NULL) || syscall(SYS_clock_gettime, CLOCK_REALTIME, &b)) {
		printf("FAIL %s failed\n", what);
		return -1;
	}
	return near(what, a.tv_sec + a.tv_usec / 1e6, ts_s(&b));
}

static int check_cpu(void)
{
	unsigned a = ~0u, b = ~0u;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);

	if ((v_getcpu && v_getcpu(&a, NULL, NULL)) || syscall(SYS_getcpu, &b, NULL, NULL) ||
	    (v_getcpu && a >= (unsigned)ncpu) || sched_getcpu() < 0 || b >= (unsigned)ncpu) {
		printf("FAIL getcpu: vdso %u, system call %u, of %ld\n", a, b, ncpu);
		return -1;
	}
	return 0;
}

static int libc_tod(struct timeval *tv, void *tz)
{
	return gettimeofday(tv, tz);
}

static int check_all(void)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC,
					    CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW };
	struct timespec b;

	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		if (check_clock("vdso clock_gettime", v_gettime, clocks[i]) ||
		    check_clock("clock_gettime", clock_gettime, clocks[i]))
			return -1;
	if (check_tod("vdso gettimeofday", v_gettimeofday) || check_tod("gettimeofday", libc_tod) ||
	    check_res() || check_cpu())
		return -1;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &b);
	if (v_time && near("vdso time", (double)v_time(NULL), (double)b.tv_sec + 1))
		return -1;
	return near("time", (double)time(NULL), (double)b.tv_sec + 1);
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : -1;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	v_gettime = (gettime_fn)vdso_sym(PREFIX "clock_gettime");
	v_getres = (gettime_fn)vdso_sym(PREFIX "clock_getres");
	v_gettimeofday = (gettimeofday_fn)vdso_sym(PREFIX "gettimeofday");
#if defined(__x86_64__)
	v_time = (time_fn)vdso_sym("__vdso_time");
	v_getcpu = (getcpu_fn)vdso_sym("__vdso_getcpu");
	if (!v_time || !v_getcpu) {
		printf("FAIL no time or getcpu in the vdso\n");
		return 2;
	}
#endif
	if (!v_gettime || !v_gettimeofday) {
		printf("FAIL no clock_gettime or gettimeofday in the vdso\n");
		return 2;
	}
	printf("vdso %#lx clock_gettime %p\n", getauxval(AT_SYSINFO_EHDR), (void *)v_gettime);
	for (long n = 0; ticks < 0 || n < ticks; n++) {
		if (check_all())
			return 1;
		printf("tick %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
