/* SPDX-License-Identifier: MIT */
/*
 * The restore plan: everything the freestanding restore core needs,
 * built by the loader's musl part inside the hole, next to the core's
 * code. Pointers in it point into the hole, which stays mapped until
 * every thread has resumed. Shared by loader/ and the core (freestanding/core/).
 */
#ifndef IBCR_PLAN_H
#define IBCR_PLAN_H

#include <stdint.h>

#include "image.h"

#define PLAN_MAGIC 0x4e414c5052434249ull /* "IBCRPLAN" */

struct plan_range {
	uint64_t start, end;
};

/* A kernel special mapping ([vdso], [vvar], ...) to move. */
struct plan_special {
	uint64_t cur, len;	/* where the loader has it */
	uint64_t park;		/* temporary place inside the hole */
	uint64_t target;	/* where the restored process had it */
};

/* Bytes written into restored memory before any thread resumes. */
struct plan_poke {
	uint64_t addr;
	uint64_t len;
	const uint8_t *data;
};

struct plan_vma {
	uint64_t start, end, pgoff;
	uint32_t prot, flags, kind, madv;
	int32_t fd;		/* backing file opened by the loader, or -1 */
	uint32_t lazy;		/* filled by the loader once the threads run */
	uint64_t shm_src;	/* shared object's pages in the loader's mapping, or 0 */
	uint64_t cow_src;	/* built there, filled (loader/cow.c): moved, or 0 */
	uint32_t data_crc;
	const struct ibcr_run *runs;
	uint64_t nruns;
	uint64_t data_off;	/* absolute file offset of its page data */
	uint64_t data_len;
	const char *name;
};

/* A seccomp filter a thread installs: seccomp(SECCOMP_SET_MODE_FILTER, flags). */
struct plan_filter {
	const void *insns;	/* struct sock_filter[len] */
	uint32_t len;
	uint32_t flags;		/* SECCOMP_FILTER_FLAG_LOG, _TSYNC */
};

/* What a thread's credentials and sandbox become (freestanding/core/creds.c). */
struct plan_creds {
	uint32_t uid[4], gid[4];	/* real, effective, saved, filesystem */
	uint64_t eff, prm, inh, bnd, amb;
	uint32_t securebits;
	uint32_t flags;		/* PLAN_CRED_* */
	uint32_t seccomp;	/* enum ibcr_seccomp_mode */
	uint32_t ngroups;
	const uint32_t *groups;
	uint32_t nfilters;	/* it installs them, oldest first, as the last steps */
	uint32_t pad;
	const struct plan_filter *filters;
};

#define PLAN_CRED_IDS 0x1	/* set groups and ids: the loader's differ */
#define PLAN_CRED_NNP 0x2	/* no_new_privs */
#define PLAN_CRED_BOUNDING 0x4	/* drop what its bounding set lacks */
#define PLAN_CRED_SECUREBITS 0x8	/* securebits differ from the loader's */
#define PLAN_CRED_LATE_CAPS 0x10	/* capabilities last: its filters need */
					/* CAP_SYS_ADMIN to be installed */
#define PLAN_CRED_DUMP_ROOT 0x20	/* dumpable 2: an id change sets it */

struct plan_thread {
	int32_t tid;		/* saved TID, asked for with clone3 set_tid */
	int32_t new_tid;	/* the TID it got */
	uint64_t ctid;
	uint32_t ctid_mode;
	uint32_t rseq_len;
	uint64_t rseq_ptr;
	uint32_t rseq_sig;
	uint32_t altstack_flags;
	uint64_t altstack_sp, altstack_size;
	uint64_t robust_list, robust_len;
	uint64_t tls[2];	/* x86_64: fs_base, gs_base; aarch64: tpidr_el0, tpidr2 */
	char comm[16];
	void *frame;		/* rt_sigframe built by the loader */
	uint64_t stack_top;	/* the core's stack for this thread */
	uint32_t nsiginfo;
	uint32_t has_attrs;	/* attrs below are the saved ones (core/attrs.c) */
	uint32_t xstate_touch;	/* touch lazily sized state first (arch_touch_xstate) */
	uint32_t pad;
	const uint8_t *siginfo;	/* per-thread pending, 128 bytes each */
	const struct plan_creds *creds;
	struct ibcr_tattrs attrs;
};

/* A POSIX timer the core makes again (core/timers.c). */
struct plan_timer {
	struct ibcr_ptimer t;	/* as saved; t.tid is the saved TID */
	uint32_t thread;	/* SIGEV_THREAD_ID: index of the thread it signals */
	uint32_t pad;
};

/* prctl(PR_SET_MM, PR_SET_MM_MAP) argument, as in <linux/prctl.h>. */
struct plan_mm_map {
	uint64_t start_code, end_code, start_data, end_data;
	uint64_t start_brk, brk, start_stack;
	uint64_t arg_start, arg_end, env_start, env_end;
	uint64_t *auxv;
	uint32_t auxv_size;
	uint32_t exe_fd;
};

#define PLAN_EXACT_TIDS 0x1	/* ask clone3 for the saved TIDs */
#define PLAN_TRACE 0x4		/* report each step (ST_TRACE lines) */
#define PLAN_FILL_BY_LOADER 0x8	/* compressed image: the loader fills regions */
#define PLAN_NO_UFFD 0x10	/* IBCR_NO_UFFD=1: fill without userfaultfd */
#define PLAN_TIMER_FILL 0x100	/* make timer ids in order, without */
				/* PR_TIMER_CREATE_RESTORE_IDS (or IBCR_TIMER_FILL=1) */
#define PLAN_TIMER_FILL_MAX 10000	/* then: timer ids below this only */
#define PLAN_SECCOMP 0x20	/* threads under seccomp: the loader traces them */
				/* with PTRACE_O_SUSPEND_SECCOMP to the end */
#define PLAN_LAZY 0x40		/* regions with `lazy` go to the loader (core/lazy.c) */
#define PLAN_NEW_TIDS 0x200	/* --new-pids: a taken TID is replaced, not fatal */
#define PLAN_CREDS_SHARED 0x80	/* all threads share the main thread's credentials: */
				/* it sets them before it makes the others */

struct plan {
	uint64_t magic;
	uint64_t hole_start, hole_len;
	uint32_t flags;
	uint32_t page_size;
	int32_t img_fd;		/* the image, for page data */
	int32_t status_fd;	/* core -> loader: status.h's status_kind */
	int32_t control_fd;	/* loader -> core: status.h's control_kind */
	int32_t nclose;
	const int32_t *close_fds;	/* loader fds to close before resuming */
	uint64_t nunmap;
	const struct plan_range *unmap;
	uint64_t nspecial;
	struct plan_special *special;
	/* another kernel: the saved [vdso], redirected (loader/vdso.c), or len 0 */
	uint64_t proxy_addr, proxy_len;
	const uint8_t *proxy;
	uint64_t nshm;		/* shared objects inherited from the loader: */
	const struct plan_range *shm;	/* unmapped once the regions are in place */
	uint64_t nvmas;
	const struct plan_vma *vmas;
	uint64_t npokes;
	const struct plan_poke *pokes;
	struct plan_mm_map mm;
	const struct ibcr_sigaction *sigact;	/* IBCR_NSIG entries */
	uint64_t rlim[16][2];	/* rlim_late's: the larger of ours and the saved */
	uint64_t rlim_late[16][2];	/* set once every thread is set up */
	uint32_t rlim_late_mask;	/* bit r: rlim_late[r] */
	uint32_t pad_late;
	uint64_t itimer[3][4];
	const char *root;	/* chroot there once the regions are in, or NULL */
	uint32_t dumpable;	/* PR_SET_DUMPABLE at the end (2: left as it is) */
	uint32_t first_thread;	/* installs the filters all threads share: */
				/* the loader lets it run first */
	uint32_t nthreads;
	struct plan_thread *threads;
	uint32_t nsiginfo_shared;
	uint32_t ntimers;	/* POSIX timers, ascending ids */
	const uint8_t *siginfo_shared;
	const struct plan_timer *timers;
	const char *image_path;	/* for messages */
	uint8_t *bounce;	/* for regions filled through /proc/self/mem */
	uint64_t bounce_len;
	/* futex words, written by the threads */
	int32_t ready;
	int32_t go;
	int32_t exact_tids_failed;
	int32_t timers_made;	/* the main thread has made the timers */
};

#endif
