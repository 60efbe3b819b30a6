// SPDX-License-Identifier: MIT
/*
 * workload: what `make bench` checkpoints and restores.
 *
 *   workload [-k incompressible|compressible|sparse] [-s SIZE] [-m MAPPED]
 *            [-f PERCENT] [-t THREADS] [-S SEED] [-p PERIOD_S] [-g GAP_MS] [-b]
 *
 * It maps memory, touches it with THREADS threads (the main thread
 * included), prints one "ready" line and then idles: the main thread
 * wakes every millisecond and watches the clock, the others sleep (-b:
 * they spin instead, busy on the CPUs, as a computing program's do).
 *
 *   incompressible  SIZE bytes of pseudo-random data (wyrand)
 *   compressible    SIZE bytes of a typical heap: malloc headers, structs
 *                   with pointers into the heap and small integers, ASCII
 *                   text, zero-filled buffers, a few hashes
 *   sparse          a MAPPED-byte mapping (MAP_NORESERVE) of which
 *                   PERCENT % of the 4 KiB pages, chosen pseudo-randomly,
 *                   hold random data; the others are never touched
 *
 * The content is a pure function of (kind, sizes, SEED), and so is its
 * checksum (a Fletcher-like sum per page, mixed with the page's index,
 * so a misplaced page is caught as well as a changed byte).
 *
 * Lines on stdout (each written whole with one write(2)):
 *   ready kind=K bytes=N mapped=M threads=T sum=0x.. touch_ms=.. verify_ms=.. pid=P
 *   gap ms=X rt_ms=Y end_rt_ns=T pid=P
 *                               the main thread did not run for X ms by
 *                               CLOCK_MONOTONIC, Y ms by CLOCK_REALTIME
 *                               (either >= GAP_MS, default 50): a freeze,
 *                               or the time between a checkpoint and its
 *                               restore; end_rt_ns is when it ran again.
 *                               CLOCK_REALTIME because CRIU restores into
 *                               a time namespace whose CLOCK_MONOTONIC
 *                               goes on from the dump, not from now
 *   stall max_ms=X pid=P        SIGUSR2: longest gap since the last SIGUSR2
 *                               (or since ready), then reset
 *   OK sum=0x.. verify_ms=.. rss_kb=.. t_rt_ns=.. pid=P
 *   FAIL sum=0x.. expected=0x.. pid=P
 *                               SIGUSR1, and every PERIOD_S seconds
 *                               (default 10, 0 = never): the memory is
 *                               read again and its checksum compared with
 *                               the one computed when it was touched
 *   exit status=S pid=P         SIGTERM or SIGINT: exit status 0, or 3 if
 *                               any verification failed
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PG 4096u

enum kind { INCOMPRESSIBLE, COMPRESSIBLE, SPARSE };
static const char *const kind_names[] = { "incompressible", "compressible", "sparse" };

static enum kind kind = INCOMPRESSIBLE;
static uint64_t size = 64ull << 20;	/* bytes touched (dense kinds) */
static uint64_t mapped;			/* bytes mapped */
static unsigned percent = 5;		/* sparse: pages touched, in % */
static unsigned nthreads = 1;
static uint64_t seed = 1;
static unsigned period_s = 10;
static unsigned gap_ms = 50;
static int busy;			/* -b: the other threads spin */

static unsigned char *mem;
static uint64_t npages;			/* pages of the mapping */
static uint64_t expected;
static uint64_t touched_bytes;

static volatile sig_atomic_t want_verify, want_stall, want_exit;

static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	for (int off = 0; off < n;) {
		ssize_t w = write(1, line + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (int)w;
	}
}

static void die(const char *what)
{
	fprintf(stderr, "workload: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static int64_t rt_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

/* ---- pseudo-random numbers ------------------------------------------ */

static inline uint64_t mix64(uint64_t z)	/* splitmix64 finaliser */
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t wyrand(uint64_t *s)
{
	*s += 0xa0761d6478bd642full;
	__uint128_t t = (__uint128_t)*s * (*s ^ 0xe7037ed1a0b428dbull);
	return (uint64_t)(t >> 64) ^ (uint64_t)t;
}

/* Sparse: is page i one of the touched ones? */
static inline int sparse_touched(uint64_t i)
{
	return mix64(seed * 0x9e3779b97f4a7c15ull ^ i) % 10000 < (uint64_t)percent * 100;
}

/* ---- content ---------------------------------------------------------- */

static void fill_random(unsigned char *p, uint64_t len, uint64_t st)
{
	uint64_t *w = (uint64_t *)p;

	for (uint64_t i = 0; i < len / 8; i++)
		w[i] = wyrand(&st);
}

static const char *const words[] = {
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was",
	"with", "be", "by", "on", "not", "he", "this", "are", "or", "his",
	"from", "at", "which", "but", "have", "an", "had", "they", "you",
	"were", "their", "one", "all", "we", "can", "her", "has", "there",
	"been", "if", "more", "when", "will", "would", "who", "so", "no",
	"request", "response", "connection", "timeout", "error", "user",
	"session", "config", "value", "index", "buffer", "checkpoint",
	"restart", "memory", "process", "thread", "signal", "file", "page",
	"http://example.org/", "application/json", "Content-Length:",
	"GET", "POST", "200", "404", "/usr/lib/x86_64-linux-gnu/", "{\"id\":",
	"\"name\":", "\"count\":", "null", "true", "false", "2026-11-30T10:00:00Z",
};

/*
 * A heap-like mix, object after object, each behind an 8-byte malloc
 * header (size | PREV_INUSE). The mix is chosen so that zstd -3 gets
 * about 4:1, like the heaps of the programs we looked at.
 */
static void fill_heap(unsigned char *p, uint64_t len, uint64_t base_off, uint64_t st)
{
	uint64_t heap = 0x55d0c0000000ull + base_off;	/* plausible heap addresses */
	uint64_t off = 0;

	while (off + 16 <= len) {
		uint64_t r = wyrand(&st);
		uint64_t n = 16 + ((r >> 8) % 496) / 16 * 16;	/* 16..496, 16-aligned */
		unsigned kind_r = (unsigned)(r % 100);

		if (off + 8 + n > len)
			n = (len - off - 8) / 8 * 8;
		*(uint64_t *)(p + off) = (n + 16) | 1;
		off += 8;
		unsigned char *o = p + off;
		if (kind_r < 30) {			/* struct: pointers, ints, flags */
			for (uint64_t i = 0; i + 8 <= n; i += 8) {
				uint64_t x = wyrand(&st);
				uint64_t v;
				switch (x & 7) {
				case 0: case 1: case 2:	/* pointer into the heap */
					v = heap + ((x >> 8) % (1u << 24)) / 16 * 16;
					break;
				case 3: case 4:		/* small integer */
					v = (x >> 16) % 1000;
					break;
				case 5:			/* flags / enum */
					v = (x >> 20) & 0x7;
					break;
				case 6:			/* NULL */
					v = 0;
					break;
				default:		/* a double */
					{
						double d = (double)((x >> 12) % 100000) / 100.0;
						memcpy(&v, &d, 8);
					}
				}
				memcpy(o + i, &v, 8);
			}
		} else if (kind_r < 60) {		/* text */
			uint64_t i = 0;
			while (i < n) {
				const char *wd = words[wyrand(&st) % (sizeof(words) / sizeof(words[0]))];
				size_t l = strlen(wd);
				if (i + l + 1 > n)
					break;
				memcpy(o + i, wd, l);
				o[i + l] = ' ';
				i += l + 1;
			}
			memset(o + i, 0, n - i);
		} else if (kind_r < 92) {		/* zero-filled (calloc, padding) */
			memset(o, 0, n);
		} else if (kind_r < 97) {		/* array of small counters */
			for (uint64_t i = 0; i + 4 <= n; i += 4) {
				uint32_t v = (uint32_t)(wyrand(&st) % 64);
				memcpy(o + i, &v, 4);
			}
		} else {				/* hashes, keys: random */
			fill_random(o, n / 8 * 8, wyrand(&st));
		}
		off += n;
	}
	if (off < len)
		memset(p + off, 0, len - off);
}

/* ---- checksum ---------------------------------------------------------- */

static inline uint64_t page_sum(const unsigned char *p, uint64_t idx)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t a0 = 0, b0 = 0, a1 = 0, b1 = 0;

	for (unsigned i = 0; i < PG / 8; i += 2) {
		a0 += w[i];
		b0 += a0;
		a1 += w[i + 1];
		b1 += a1;
	}
	return mix64(a0 ^ mix64(b0 ^ mix64(a1 ^ mix64(b1 + idx))));
}

/* Sum over the touched pages in [first, last). */
static uint64_t sum_range(uint64_t first, uint64_t last)
{
	uint64_t s = 0;

	for (uint64_t i = first; i < last; i++) {
		if (kind == SPARSE && !sparse_touched(i))
			continue;
		s += page_sum(mem + i * PG, i);
	}
	return s;
}

/* ---- touching ---------------------------------------------------------- */

struct worker {
	pthread_t th;
	unsigned idx;
	uint64_t first, last;	/* pages */
	uint64_t sum;
	pthread_barrier_t *ready;
};

static void touch_range(struct worker *w)
{
	const uint64_t chunk = 256;	/* pages: content is a function of the chunk */
	uint64_t len = (w->last - w->first) * PG;

	if (kind != SPARSE && len &&
	    madvise(mem + w->first * PG, len, MADV_POPULATE_WRITE) != 0 && errno != EINVAL)
		die("madvise(MADV_POPULATE_WRITE)");
	for (uint64_t c = w->first; c < w->last; c += chunk) {
		uint64_t end = c + chunk < w->last ? c + chunk : w->last;
		uint64_t st = mix64(seed ^ mix64(c));

		switch (kind) {
		case INCOMPRESSIBLE:
			fill_random(mem + c * PG, (end - c) * PG, st);
			break;
		case COMPRESSIBLE:
			fill_heap(mem + c * PG, (end - c) * PG, c * PG, st);
			break;
		case SPARSE:
			for (uint64_t i = c; i < end; i++)
				if (sparse_touched(i))
					fill_random(mem + i * PG, PG, mix64(st ^ i));
			break;
		}
	}
	w->sum = sum_range(w->first, w->last);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	touch_range(w);
	pthread_barrier_wait(w->ready);
	for (volatile uint64_t spins = 0; busy; spins++)
		;		/* busy; checkpointed wherever it is */
	for (;;)		/* idle; checkpointed wherever it is */
		nanosleep(&ts, NULL);
	return NULL;
}

/* ---- main -------------------------------------------------------------- */

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_verify = 1;
	else if (sig == SIGUSR2)
		want_stall = 1;
	else
		want_exit = 1;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	uint64_t m = 1;

	switch (*end) {
	case 'k': case 'K': m = 1ull << 10; end++; break;
	case 'm': case 'M': m = 1ull << 20; end++; break;
	case 'g': case 'G': m = 1ull << 30; end++; break;
	case 0: break;
	default: fprintf(stderr, "workload: bad size '%s'\n", s); exit(2);
	}
	if (*end || v <= 0) {
		fprintf(stderr, "workload: bad size '%s'\n", s);
		exit(2);
	}
	return ((uint64_t)(v * (double)m) + PG - 1) / PG * PG;
}

static long rss_kb(void)
{
	long pages_total, pages_rss;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages_total, &pages_rss) != 2)
		pages_rss = -1;
	fclose(f);
	return pages_rss < 0 ? -1 : pages_rss * (long)(sysconf(_SC_PAGESIZE) / 1024);
}

static int verify(void)
{
	int64_t t0 = now_ns(), t1;
	uint64_t s = sum_range(0, npages);
	long rss = rss_kb();

	t1 = now_ns();
	if (s != expected) {
		say("FAIL sum=0x%016" PRIx64 " expected=0x%016" PRIx64 " pid=%d",
		    s, expected, (int)getpid());
		return -1;
	}
	say("OK sum=0x%016" PRIx64 " verify_ms=%.1f rss_kb=%ld t_rt_ns=%" PRId64 " pid=%d",
	    s, (double)(t1 - t0) / 1e6, rss, rt_ns(), (int)getpid());
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: workload [-k incompressible|compressible|sparse] [-s SIZE] [-m MAPPED]\n"
		"                [-f PERCENT] [-t THREADS] [-S SEED] [-p PERIOD_S] [-g GAP_MS] [-b]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int c, failed = 0;

	while ((c = getopt(argc, argv, "k:s:m:f:t:S:p:g:b")) != -1) {
		switch (c) {
		case 'k':
			if (!strcmp(optarg, "incompressible")) kind = INCOMPRESSIBLE;
			else if (!strcmp(optarg, "compressible")) kind = COMPRESSIBLE;
			else if (!strcmp(optarg, "sparse")) kind = SPARSE;
			else usage();
			break;
		case 's': size = parse_size(optarg); break;
		case 'm': mapped = parse_size(optarg); break;
		case 'f': percent = (unsigned)atoi(optarg); break;
		case 't': nthreads = (unsigned)atoi(optarg); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'p': period_s = (unsigned)atoi(optarg); break;
		case 'g': gap_ms = (unsigned)atoi(optarg); break;
		case 'b': busy = 1; break;
		default: usage();
		}
	}
	if (optind != argc || nthreads < 1 || nthreads > 256 || percent > 100)
		usage();
	if (kind != SPARSE)
		mapped = size;
	else if (!mapped)
		mapped = 16ull << 30;
	npages = mapped / PG;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	mem = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap");

	/* Touch in parallel: the main thread takes the first slice. */
	int64_t t0 = now_ns();
	struct worker *w = calloc(nthreads, sizeof(*w));
	pthread_barrier_t ready;
	pthread_barrier_init(&ready, NULL, nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		w[i].idx = i;
		w[i].first = npages * i / nthreads;
		w[i].last = npages * (i + 1) / nthreads;
		w[i].ready = &ready;
	}
	for (unsigned i = 1; i < nthreads; i++) {
		/* Workers must not take SIGUSR1/2/TERM: the main thread does. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		errno = pthread_create(&w[i].th, NULL, worker_main, &w[i]);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (errno)
			die("pthread_create");
	}
	touch_range(&w[0]);
	pthread_barrier_wait(&ready);
	expected = 0;
	for (unsigned i = 0; i < nthreads; i++)
		expected += w[i].sum;
	int64_t t1 = now_ns();
	touched_bytes = 0;
	if (kind == SPARSE) {
		for (uint64_t i = 0; i < npages; i++)
			touched_bytes += sparse_touched(i) ? PG : 0;
	} else {
		touched_bytes = mapped;
	}
	/* One verification pass right away: its time is the warm cost. */
	int64_t t2 = now_ns();
	uint64_t again = sum_range(0, npages);
	int64_t t3 = now_ns();
	if (again != expected) {
		say("FAIL sum=0x%016" PRIx64 " expected=0x%016" PRIx64 " pid=%d",
		    again, expected, (int)getpid());
		return 3;
	}
	say("ready kind=%s bytes=%" PRIu64 " mapped=%" PRIu64 " threads=%u sum=0x%016" PRIx64
	    " touch_ms=%.1f verify_ms=%.1f pid=%d",
	    kind_names[kind], touched_bytes, mapped, nthreads, expected,
	    (double)(t1 - t0) / 1e6, (double)(t3 - t2) / 1e6, (int)getpid());

	/* Heartbeat: wake every millisecond, note every gap. */
	const struct timespec tick = { 0, 1000 * 1000 };
	const int64_t thr = (int64_t)gap_ms * 1000000;
	int64_t last = now_ns(), last_rt = rt_ns(), max_gap = 0;
	int64_t next_check = last + (int64_t)period_s * 1000000000;
	while (!want_exit) {
		nanosleep(&tick, NULL);	/* EINTR or restarted: either is fine */
		int64_t t = now_ns(), gap = t - last, rt = rt_ns(), rt_gap = rt - last_rt;
		if (gap > max_gap)
			max_gap = gap;
		if (gap >= thr || rt_gap >= thr)
			say("gap ms=%.3f rt_ms=%.3f end_rt_ns=%" PRId64 " pid=%d",
			    (double)gap / 1e6, (double)rt_gap / 1e6, rt, (int)getpid());
		if (want_stall) {
			want_stall = 0;
			say("stall max_ms=%.3f pid=%d", (double)max_gap / 1e6, (int)getpid());
			max_gap = 0;
		}
		if (want_verify || (period_s && t >= next_check)) {
			want_verify = 0;
			failed |= verify() != 0;
			next_check = now_ns() + (int64_t)period_s * 1000000000;
		}
		last = now_ns();
		last_rt = rt_ns();
	}
	say("exit status=%d pid=%d", failed ? 3 : 0, (int)getpid());
	return failed ? 3 : 0;
}
