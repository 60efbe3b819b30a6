/* SPDX-License-Identifier: MIT */
#ifndef IBCR_LAZYFILL_H
#define IBCR_LAZYFILL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "loader.h"

/* lazy_hold's waitpid is interrupted by it when the fill ends */
#define LAZY_WAKE_SIG (SIGRTMIN + 1)

/* Data still to come: [addr, addr + len), region's data from doff on. */
struct lz_ext {
	uint64_t addr, len, doff;
	uint32_t region, pad;
};

/* Shared by lazy.c (set-up), lazyfill.c (the fill thread), lazyhold.c. */
struct lazy {
	const struct ibcr_process_state *ps;
	const struct job *jobs;	/* the image's processes: a damaged chunk kills all */
	uint32_t njobs;
	pid_t child, holder;	/* holder: lazy_hold_all's thread, once it holds */
	int pid;		/* the saved pid, for messages */
	int img_fd, ufd, slow_ms, started, over, heard;
	int go, resumed;	/* eventfd: the program runs (lazy_resumed) */
	const char *path;
	pthread_t th;
	struct pages pages;	/* only for pages_take_fd */
	uint8_t *is_lazy;	/* per region */
	uint64_t *sumbase;	/* per region: its first sum in ps->sums */
	struct lz_ext *ext;	/* sorted by address, disjoint */
	size_t n, cap;
	uint64_t *pend;		/* faults to serve again: the kernel said EAGAIN */
	size_t npend, cappend;
	uint8_t *buf;
	struct stream *stream;	/* the lazy regions' data read ahead, in order */
	double t_start, t_end;
	uint64_t copied, zeroed, faults;
	uint64_t last_fault, hint;	/* the background goes on from hint */
};

/* lazy.c: SIGKILL to every process of the image; how many it reached */
unsigned lazy_kill_tree(const struct lazy *lz);

/* lazyfill.c */
void ext_add(struct lazy *lz, uint64_t addr, uint64_t len, uint64_t doff, uint32_t region);
/* The lazy regions' data read ahead by stream.c, once the program runs (lazy.c). */
void lazy_open_stream(struct lazy *lz);
/* The program runs: the fill goes on beyond its faults (lazy.c). */
void lazy_resumed(struct lazy *lz);
/* Fills until nothing is left or the process is gone. */
void lazy_fill(struct lazy *lz);

#endif
