/* SPDX-License-Identifier: MIT */
#ifndef IBCR_PROGRESS_H
#define IBCR_PROGRESS_H

#include <pthread.h>
#include <stdint.h>

/*
 * Progress of long work (a save, a --verify, a restore) on stderr: how
 * much is done of how much, the rate and the time left, four times a
 * second on a terminal (one line, rewritten), once a second as lines
 * when asked for where stderr is no terminal (--progress). Nothing for
 * work done within its first second. `done` is sampled from outside the
 * work (the bytes this process wrote or read, a process's memory), so
 * the work itself needs no hook.
 */
struct progress {
	const char *prog, *what;	/* "saver", "writing" */
	uint64_t total;		/* bytes, an estimate (0: unknown) */
	uint64_t (*done)(void *arg);
	void *arg;
	int tty, shown;
	uint64_t base;		/* done() at the start */
	double start;
	int stop;		/* atomic */
	pthread_t th;
	int running;
};

/* mode: -1 on a terminal only, 0 never, 1 always. */
void progress_start(struct progress *p, const char *prog, const char *what, uint64_t total,
		    uint64_t (*done)(void *), void *arg, int mode);
void progress_end(struct progress *p);

/* Samplers: bytes this process read or wrote (/proc/self/io), a
 * process's resident anonymous and shared memory (arg: a pid_t *). */
uint64_t progress_read_bytes(void *arg);
uint64_t progress_written_bytes(void *arg);
uint64_t progress_rss_bytes(void *arg);

#endif
