/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_H
#define IBCR_SAVER_H

#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "ibcr_verbs_abi.h"
#include "err.h"
#include "image_io.h"
#include "model.h"
#include "procfs.h"

/* One process being checkpointed. */
struct target {
	pid_t pid;
	uint32_t nthreads;
	pid_t *tids;		/* main thread first */
	int *seized;		/* per thread: attached by us */
	int released;		/* let go (run, stop or kill) already */
	int zombie;		/* exited, not reaped: only its record is saved */
	int tree;		/* saved with its descendants (--tree) */
	int stopped;		/* stopped by job control: saved, and left, so */
	uint64_t syscall_insn;	/* a syscall instruction in its [vdso] */
	uint64_t sigreturn_gadget;	/* park.c: rt_sigreturn in its code, or 0 */
	int park_ready;		/* park.c: both looked for */
	int memfd;		/* /proc/PID/mem (of mem_pid when set) */
	pid_t mem_pid;		/* the copy-on-write snapshot memory is read from */
	uint64_t verbs_addr;	/* the verbs shim's control object, or 0 */
	struct ibcr_verbs_control *verbs;	/* its copy once quiesced */
	struct maps_entry *pre;	/* smaps read before the freeze (vmflags.c) */
	size_t npre;
	int vmflags_guessed;	/* vmas' flags from pre, to be verified */
	uint32_t vmflags_fixed;	/* regions whose guessed flags were wrong */
	struct ibcr_process_state ps;
};

/* seize.c */
int target_check(pid_t pid, struct ibcr_err *e);
int target_seize(struct target *t, struct ibcr_err *e);
void target_release(struct target *t, int how);
/* After a failure: says so if it was because a process exited meanwhile */
void explain_exited(const struct target *t, uint32_t n, struct ibcr_err *e);
/* After --kill: waits (bounded) until the processes are gone, their pids free */
void wait_gone(const struct target *t, uint32_t n);
enum { RELEASE_RUN, RELEASE_STOP, RELEASE_KILL };

/* tree.c: --tree, a process and its descendants, stopped top-down */
int tree_seize(struct target **t, uint32_t *n, struct ibcr_err *e);

/* inject.c: state only the process itself can read */
int capture_injected(struct target *t, struct ibcr_err *e);

/* threads.c */
int capture_regs(struct target *t, struct ibcr_err *e);
int capture_threads(struct target *t, struct ibcr_err *e);

/* procinfo.c */
int capture_procinfo(struct target *t, struct ibcr_err *e);

/* files.c: the image's open file descriptions, being collected */
struct fobjs {
	struct ibcr_files f;
	pid_t *rep_pid;		/* per object: a process and fd that use it */
	int *rep_fd;
	uint32_t cap;
	int tcp_close;		/* --tcp-close: give up established TCP */
};
int capture_files(struct target *t, struct fobjs *o, struct ibcr_err *e);
int files_finish(struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e);

/* memory.c */
int capture_memory_map(struct target *t, struct ibcr_err *e);
/* Sets a region's flags and madvise state that come from smaps VmFlags. */
void vma_set_vmflags(struct ibcr_vma *v, uint32_t vmflags);

/* vmflags.c: smaps (a page walk) read before the freeze, checked after */
void vmflags_preread(struct target *t);
int vmflags_layout(struct target *t, struct maps_entry **m, size_t *n,
		   struct ibcr_err *e);
int vmflags_verify(struct target *t, struct ibcr_err *e);
/* direct.c: whether the image should go past the page cache (--direct) */
int image_direct(const struct target *t, uint32_t n);
/* Makes every mapping of a file saved as shared memory one (NAMED). */
void shm_join_named(struct target *t, uint32_t n);
int write_memory(struct target *t, uint32_t proc, struct img_writer *w,
		 int codec, int level, struct ibcr_err *e);

/* verbs.c: processes running with the verbs shim */
int verbs_find(struct target *t, struct ibcr_err *e);
int verbs_quiesce(struct target *t, uint32_t n, struct ibcr_err *e);
void verbs_release(struct target *t, uint32_t n);
/* A byte for the shim's helper; written in the freeze, it wakes a restore */
void verbs_wake(struct target *t);
int verbs_owns_fd(const struct target *t, int fd);
int verbs_write_section(struct target *t, uint32_t proc, struct img_writer *w,
			struct ibcr_err *e);

/* sockets.c: every socket's final kind, state and queued bytes */
int sockets_finish(struct fobjs *o, struct ibcr_err *e);
/* tcp.c: established TCP connections, in repair mode until released */
struct buf;
int tcp_capture(pid_t pid, int fd, int s, struct buf *b, struct ibcr_err *e);
void tcp_release(int killed);

/* locks.c: file locks held, per descriptor */
int capture_locks(struct target *t, struct ibcr_err *e);

/* sysv.c: the SysV segments the processes have attached */
int sysv_capture(const struct target *t, uint32_t n, struct ibcr_sysv *out,
		 struct ibcr_err *e);

/* sysvipc.c: the SysV semaphore sets and message queues they used (or could: all) */
int sysvipc_capture(const struct target *t, uint32_t n, int all, struct ibcr_sysvipc *out,
		    struct ibcr_err *e);

/* snapshot.c: a copy-on-write copy to write the image from */
int snapshot_create(struct target *t, struct ibcr_err *e);
void snapshot_kill(struct target *t);
void snapshot_destroy(struct target *t);
/* Makes t (running) reap child, a dead snapshot of it: one injected wait4 */
void snapshot_reap(struct target *t, pid_t child);

/* util */
int read_target(struct target *t, uint64_t addr, void *buf, size_t len,
		struct ibcr_err *e);

#endif
