// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "proc_stat.h"
#include "progress.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The number after "key" in a small /proc file, or 0. */
static uint64_t proc_number(const char *path, const char *key)
{
	long long v = proc_key_num(path, key, 10);

	return v > 0 ? (uint64_t)v : 0;
}

uint64_t progress_read_bytes(void *arg)
{
	(void)arg;
	return proc_number("/proc/self/io", "rchar:");
}

uint64_t progress_written_bytes(void *arg)
{
	(void)arg;
	return proc_number("/proc/self/io", "wchar:");
}

uint64_t progress_rss_bytes(void *arg)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)*(pid_t *)arg);
	return (proc_number(path, "RssAnon:") + proc_number(path, "RssShmem:")) << 10;
}

static void show(struct progress *p, int last)
{
	double t = now_s() - p->start;
	uint64_t d = p->done(p->arg), mib = 1u << 20;
	double rate;
	char left[48] = "";

	d = d > p->base ? d - p->base : 0;
	if (p->total && d > p->total)
		d = p->total;
	/* the total was an estimate (resident memory): at the end, what was done */
	if (last && p->total)
		p->total = d;
	rate = t > 0 ? (double)d / t : 0;
	if (p->total && rate > 0 && !last)
		snprintf(left, sizeof(left), ", %.0f s left", (double)(p->total - d) / rate);
	fprintf(stderr, "%s%s: %s %llu MiB", p->tty ? "\r" : "", p->prog, p->what,
		(unsigned long long)(d / mib));
	if (p->total)
		fprintf(stderr, " of %llu MiB (%d%%)", (unsigned long long)(p->total / mib),
			(int)(100.0 * (double)d / (double)p->total));
	fprintf(stderr, ", %.0f MiB/s%s%s", rate / (double)mib, left,
		p->tty ? "\033[K" : "\n");
	fflush(stderr);
	p->shown = 1;
}

/*
 * Shown from the first second on (IBCR_PROGRESS_DELAY_MS, for tests),
 * then four times a second on a terminal, once a second elsewhere.
 */
static void *loop(void *arg)
{
	struct progress *p = arg;
	const struct timespec tick = { 0, 50 * 1000 * 1000 };
	const char *d = getenv("IBCR_PROGRESS_DELAY_MS");
	double delay = d && *d ? atof(d) / 1e3 : 1.0, next = delay;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		nanosleep(&tick, NULL);
		if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE) || now_s() - p->start < next)
			continue;
		show(p, 0);
		next = now_s() - p->start + (p->tty ? 0.25 : 1.0);
	}
	return NULL;
}

void progress_start(struct progress *p, const char *prog, const char *what, uint64_t total,
		    uint64_t (*done)(void *), void *arg, int mode)
{
	memset(p, 0, sizeof(*p));
	p->tty = isatty(2);
	if (mode == 0 || (mode < 0 && !p->tty))
		return;
	p->prog = prog;
	p->what = what;
	p->total = total;
	p->done = done;
	p->arg = arg;
	p->base = done(arg);
	p->start = now_s();
	p->running = !pthread_create(&p->th, NULL, loop, p);
}

void progress_end(struct progress *p)
{
	if (!p->running)
		return;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	pthread_join(p->th, NULL);
	p->running = 0;
	if (p->shown && p->tty)
		fputs("\r\033[K", stderr);	/* the line goes: the result follows */
	else if (p->shown)
		show(p, 1);
	fflush(stderr);
}
