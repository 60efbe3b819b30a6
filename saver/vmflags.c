// SPDX-License-Identifier: MIT
/*
 * A region's VmFlags (DONTFORK, WIPEONFORK, HUGEPAGE, LOCKED, ...) are
 * only in /proc/PID/smaps, and reading smaps walks every page table of
 * the process: ~40 ms for 4 GiB, most of what the freeze costs besides
 * the snapshot's fork. So when the process is to run on from a snapshot,
 * smaps is read before the freeze, and in the freeze only the cheap
 * /proc/PID/maps: a region found there with the same bounds, offset,
 * file and protection takes the flags read before (any other difference
 * means the layout moved: smaps is then read in the freeze after all).
 *
 * What a guess misses is a madvise or mlock of a whole region between
 * the two reads. mlock shows in VmLck, checked in the freeze. The others
 * are checked once the process runs again, against the snapshot's own
 * smaps: the child of the fork has the regions and flags the process had
 * at that instant, except that a DONTFORK region is absent from it and no
 * region is locked in it. A region absent or WIPEONFORK there, unguessed,
 * (a guessed DONTFORK one is absent and was copied in the freeze:
 * noforkcopy.c) means the snapshot is not the process: the checkpoint fails (nothing
 * is written) rather than save memory it did not copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "saver.h"

void vmflags_preread(struct target *t)
{
	struct ibcr_err e;

	if (maps_read(t->pid, 1, &t->pre, &t->npre, &e))
		t->pre = NULL;	/* read in the freeze then, with its errors */
	else
		shm_copy_reserve(t->pre, t->npre);	/* shmsnap.c */
}

static int same_region(const struct maps_entry *a, const struct maps_entry *b)
{
	return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff &&
	       a->prot == b->prot && a->shared == b->shared &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->ino == b->ino && !strcmp(a->path, b->path);
}

/* VmLck of /proc/PID/status in KiB, or -1. */
static long vm_locked_kb(pid_t pid)
{
	struct ibcr_err e;
	char path[64], *text, *p;
	long kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (proc_read(path, &text, NULL, &e))
		return -1;
	p = strstr(text, "\nVmLck:");
	if (p)
		kb = strtol(p + 7, NULL, 10);
	free(text);
	return kb;
}

/* Every region of m matches one read before; flags copied. */
static int take_guess(struct target *t, struct maps_entry *m, size_t n)
{
	uint64_t locked = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		while (k < t->npre && t->pre[k].start < m[i].start)
			k++;
		if (k == t->npre || !same_region(&t->pre[k], &m[i]))
			return 0;
		m[i].vmflags = t->pre[k].vmflags;
		if (m[i].vmflags & VMF_LOCKED)
			locked += m[i].end - m[i].start;
	}
	return vm_locked_kb(t->pid) == (long)(locked >> 10);
}

/* 1: *m holds the layout with guessed flags; 0: no guess; -1: error. */
int vmflags_layout(struct target *t, struct maps_entry **m, size_t *n,
		   struct ibcr_err *e)
{
	int ok;

	if (!t->pre)
		return 0;
	if (maps_read(t->pid, 0, m, n, e))
		return -1;
	ok = take_guess(t, *m, *n);
	maps_free(t->pre, t->npre);
	t->pre = NULL;
	if (!ok)
		maps_free(*m, *n);
	t->vmflags_guessed = ok;
	return ok;
}

/*
 * The snapshot's region for v: the same bounds, or one that holds it
 * whole, private, with the same protection (the fork's child may hold as one
 * region what the process kept as two neighbours).
 */
static const struct maps_entry *find(const struct maps_entry *m, size_t n,
				     const struct ibcr_vma *v)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].start == v->start && m[i].end == v->end)
			return &m[i];
	if (v->madv & IBCR_MADV_DONTFORK)
		return NULL;	/* not in the snapshot: nothing holds it */
	for (size_t i = 0; i < n; i++)
		if (m[i].start <= v->start && m[i].end >= v->end && m[i].prot == v->prot &&
		    !m[i].shared && !(v->flags & IBCR_VMAF_SHARED))
			return &m[i];
	return NULL;
}

/*
 * The flags of every region from the snapshot (or from the process while
 * it is still stopped): guessed ones are replaced by the real ones.
 */
int vmflags_verify(struct target *t, struct ibcr_err *e)
{
	pid_t src = t->mem_pid ? t->mem_pid : t->pid;
	struct maps_entry *m;
	size_t n;
	int rc = 0;

	if (!t->vmflags_guessed)
		return 0;
	if (maps_read(src, 1, &m, &n, e))
		return -1;
	for (uint32_t i = 0; i < t->ps.nvmas && !rc; i++) {
		struct ibcr_vma *v = &t->ps.vmas[i];
		const struct maps_entry *r = find(m, n, v);
		uint32_t vmf, was_flags = v->flags, was_madv = v->madv;

		/* DONTFORK, as guessed: not in the snapshot, copied in the freeze */
		if (!r && t->mem_pid && (v->madv & IBCR_MADV_DONTFORK))
			continue;
		if (!r || (t->mem_pid && (r->vmflags & VMF_WIPEONFORK) &&
			   !(v->madv & IBCR_MADV_WIPEONFORK))) {
			rc = ibcr_fail(e, "pid %d: region %#llx-%#llx was madvised "
				       "(%s) while being checkpointed: nothing saved, try "
				       "again", (int)t->pid, (unsigned long long)v->start,
				       (unsigned long long)v->end,
				       r ? "WIPEONFORK" : "DONTFORK: not in the snapshot");
			break;
		}
		vmf = r->vmflags;
		if (t->mem_pid)		/* a fork's child has nothing locked */
			vmf = (vmf & ~(uint32_t)VMF_LOCKED) |
			      ((v->madv & IBCR_MADV_LOCKED) ? VMF_LOCKED : 0);
		vma_set_vmflags(v, vmf);
		if (v->flags != was_flags || v->madv != was_madv)
			t->vmflags_fixed++;	/* --stats says so: tests count on it */
	}
	maps_free(m, n);
	t->vmflags_guessed = 0;
	return rc;
}
