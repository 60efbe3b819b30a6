/* SPDX-License-Identifier: MIT */
#ifndef IBCR_LAZY_H
#define IBCR_LAZY_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * restart-loader --lazy: the regions the core registered with its
 * userfaultfd are filled by a thread of the loader while the program
 * runs (lazy.c), faults first; forks wait meanwhile (lazyhold.c).
 */
struct restore;
struct job;
struct lazy;
struct st_lazy;

/* Region i of rs's process may be filled once the program runs. */
int lazy_region(const struct restore *rs, uint32_t i);
/*
 * A tree: says which regions stay eager for sharing pages copy-on-write
 * (-v names them); nothing for one process.
 */
void lazy_tree_note(const struct job *j, uint32_t n, const char *image, int verbose);
/* Every process of the image by a pidfd, once all are ready; closed again. */
void lazy_pin(struct job *j, uint32_t n);
void lazy_unpin(struct job *j, uint32_t n);
/*
 * The core's ST_LAZY (the descriptor's number in the child and the errno
 * that kept it from making one): takes it and starts the fill thread;
 * answers the core CT_DONE, or CT_CANNOT when it cannot (it fills them).
 */
int lazy_serve(struct job *j, const struct st_lazy *m, int verbose);
/* The fill is over (everything in, the program gone, or killed). */
int lazy_done(const struct lazy *lz);
/*
 * Holds every restored process with a fill under ptrace until its own
 * fill ends: a fork waits at its system call entry, signals and stops
 * pass on. Every thread is stopped, traced by us (finalize). Then
 * detaches; a root's end it reaps is recorded in its job (st, exited).
 */
void lazy_hold_all(struct job *j, uint32_t n);
/* Milliseconds from the start of the fill to its end, once over. */
double lazy_fill_ms(const struct lazy *lz);
/* The faults it served (the program ran on memory not yet there). */
unsigned long long lazy_faults(const struct lazy *lz);
/* Bytes its background fill read with direct I/O (a cold image). */
uint64_t lazy_direct_bytes(const struct lazy *lz);
void lazy_free(struct lazy *lz);

#endif
