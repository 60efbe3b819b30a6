/* SPDX-License-Identifier: MIT */
#ifndef IBCR_PROCFS_H
#define IBCR_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* VmFlags from smaps, as bits. */
#define VMF_GROWSDOWN 0x1	/* gd */
#define VMF_HUGEPAGE 0x2	/* hg */
#define VMF_NOHUGEPAGE 0x4	/* nh */
#define VMF_DONTDUMP 0x8	/* dd */
#define VMF_DONTFORK 0x10	/* dc */
#define VMF_WIPEONFORK 0x20	/* wf */
#define VMF_MERGEABLE 0x40	/* mg */
#define VMF_IO 0x80		/* io */
#define VMF_PFNMAP 0x100	/* pf */
#define VMF_HUGETLB 0x200	/* ht */
#define VMF_NORESERVE 0x400	/* nr */
#define VMF_LOCKED 0x800	/* lo */
#define VMF_ACCOUNT 0x1000	/* ac */
#define VMF_MAYWRITE 0x2000	/* mw */
#define VMF_DROPPABLE 0x4000	/* dp: MAP_DROPPABLE (6.11) */
/* no VmFlags mnemonic: smaps shows AnonHugePages above 0 */
#define VMF_PKEY 0x40000000	/* smaps ProtectionKey: not 0 */
#define VMF_THP 0x80000000

struct maps_entry {
	uint64_t start, end, pgoff;
	uint32_t prot;		/* PROT_* */
	int shared;
	unsigned dev_major, dev_minor;
	uint64_t ino;
	uint32_t vmflags;	/* VMF_*, with smaps only */
	char *path;		/* "" when anonymous */
};

/*
 * Reads /proc/PID/maps (pid 0: self), or smaps when with_flags, so that
 * vmflags is filled. *out is malloc'd; free with maps_free.
 */
int maps_read(pid_t pid, int with_flags, struct maps_entry **out, size_t *n,
	      struct ibcr_err *e);
/* The same from the file's text, which it cuts into lines (maps_read's part). */
void maps_parse(char *text, int with_flags, struct maps_entry **out, size_t *n);
/* A process (not this one) that maps the file, or 0 when none is seen. */
pid_t maps_users(unsigned major, unsigned minor, uint64_t ino);
void maps_free(struct maps_entry *m, size_t n);

/* Reads a whole /proc file; *out is malloc'd and NUL-terminated. */
int proc_read(const char *path, char **out, size_t *len, struct ibcr_err *e);

#endif
