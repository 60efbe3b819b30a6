/* SPDX-License-Identifier: MIT */
#ifndef IBCR_CORE_H
#define IBCR_CORE_H

#include "plan.h"
#include "status.h"

/*
 * The restore core: runs in the hole with no libc, after the loader has
 * jumped there. core_main() never returns: it either resumes the
 * process through rt_sigreturn on every thread or reports the failure
 * to the loader and exits.
 */
__attribute__((noreturn)) void core_main(struct plan *p);
__attribute__((noreturn, format(printf, 2, 3)))
void core_die(struct plan *p, const char *fmt, ...);

/* With PLAN_TRACE: one ST_TRACE line per step to the loader (IBCR_TRACE=1). */
__attribute__((format(printf, 2, 3)))
void core_trace(struct plan *p, const char *fmt, ...);

void core_unmap_loader(struct plan *p);
void core_move_specials(struct plan *p);
/* vdso.c: the saved [vdso] with its entry points redirected, if any */
void core_vdso_proxy(struct plan *p);
void core_map_regions(struct plan *p);
void core_set_process(struct plan *p);
__attribute__((noreturn)) void core_start_threads(struct plan *p);

/* creds.c: credentials before 'ready', sandbox after go, root after the regions */
void core_creds(struct plan *p, const struct plan_thread *t);
void core_sandbox(struct plan *p, uint32_t idx);
void core_chroot(struct plan *p);

/* uffd.c: a region filled with UFFDIO_COPY (no zeroing first) */
int uffd_open(struct plan *p, const struct plan_vma *v);
uint32_t uffd_fill(struct plan *p, const struct plan_vma *v, int fd, uint64_t *upto);
void uffd_close(struct plan *p, const struct plan_vma *v, int fd);

/* lazy.c: regions the loader fills once the program runs (--lazy) */
long core_lazy_open(struct plan *p);
int core_lazy_register(struct plan *p, long fd, const struct plan_vma *v);
void core_lazy_handover(struct plan *p, long fd, uint64_t nregistered);

/* attrs.c: a thread's scheduling, affinity, slack; its parent-death signal */
void core_thread_attrs(struct plan *p, const struct plan_thread *t);
void core_thread_attrs_late(struct plan *p, const struct plan_thread *t);
void core_slack_for_clone(const struct plan *p, uint32_t i);
void core_late_limits(struct plan *p);

/* timers.c: POSIX timers made (main thread, all threads cloned), then armed */
void core_timers_create(struct plan *p);
void core_timers_arm(struct plan *p, uint32_t idx);

/* freestanding/arch/<arch>/core_arch.c */
long arch_set_tls(const uint64_t tls[2]);
/* Makes the kernel give this thread room for the state its frame holds. */
void arch_touch_xstate(void);

#endif
