/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_H
#define IBCR_SAVER_H

#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "verbs_abi.h"
#include "coord.h"
#include "err.h"
#include "image_io.h"
#include "model.h"
#include "fobj.h"
#include "procfs.h"
#include "sockopt.h"

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
	int stop_sig;		/* the signal that stopped it, when known */
	uint64_t syscall_insn;	/* a syscall instruction in its [vdso] */
	uint64_t sigreturn_gadget;	/* park.c: rt_sigreturn in its code, or 0 */
	int park_ready;		/* park.c: both looked for */
	struct park *parks;	/* per thread, while calls are injected (inject.c) */
	int memfd;		/* /proc/PID/mem (of mem_pid when set) */
	pid_t mem_pid;		/* the copy-on-write snapshot memory is read from */
	uint64_t verbs_addr;	/* the verbs shim's control object, or 0 */
	struct ibcr_verbs_control *verbs;	/* its copy once quiesced; NULL: idle shim */
	struct maps_entry *pre;	/* smaps read before the freeze (vmflags.c) */
	size_t npre;
	int vmflags_guessed;	/* vmas' flags from pre, to be verified */
	uint32_t vmflags_fixed;	/* regions whose guessed flags were wrong */
	unsigned long ptopts;	/* our ptrace options on it (creds.c: seccomp suspended) */
	uint32_t tty_nr;	/* its controlling terminal (stat), 0: none */
	int32_t tpgid;		/* that terminal's foreground group, or -1 */
	uint8_t *vdso;		/* its [vdso]'s bytes (vdso_len), for a vdso proxy */
	size_t vdso_len;
	struct cow_map *cow;	/* regions sharing pages with the parent (cow.c) */
	uint32_t ncow;
	struct shm_copy *shmcopy;	/* shared memory copied in the freeze */
	uint32_t nshmcopy;
	uint64_t cap_sums;	/* room in ps.sums (pagesums.c) */
	struct ibcr_process_state ps;
};

/* shmsnap.c: a shared region's data as it was in the freeze */
struct shm_copy {
	uint32_t vma;
	uint8_t *buf;		/* the region's bytes, from its start */
	uint64_t *bits;		/* pages that held data */
};

/* cow.c: region vma's pages that are its parent's region src's */
struct cow_map {
	uint32_t vma, src;
	uint64_t *bits;		/* one bit a page of the region */
};

/* seize.c */
int target_check(pid_t pid, struct ibcr_err *e);
/* Refuses a process of a PID namespace below this saver's (seize.c). */
int pidns_check(pid_t pid, struct ibcr_err *e);
int target_seize(struct target *t, struct ibcr_err *e);
void target_release(struct target *t, int how);
/* After a failure: says so if it was because a process exited meanwhile */
void explain_exited(const struct target *t, uint32_t n, struct ibcr_err *e);
/* After --kill: waits (bounded) until the processes are gone, pids and ports free */
void wait_gone(const struct target *t, uint32_t n);
enum { RELEASE_RUN, RELEASE_STOP, RELEASE_KILL };

/* tree.c: --tree, a process and its descendants, stopped top-down */
int tree_seize(struct target **t, uint32_t *n, struct ibcr_err *e);
int tree_add_children(struct target **t, uint32_t *n, pid_t pid, pid_t tid,
		      struct ibcr_err *e);

/* inject.c: state only the process itself can read */
int capture_injected(struct target *t, struct ibcr_err *e);
#define SCRATCH_SLOTS 128	/* calls of one round at most (injectall.c) */
/* injectall.c: signal actions, and each thread's altstack and TID address */
int read_sigactions_all(struct target *t, struct ibcr_err *e);
int read_threads_all(struct target *t, struct ibcr_err *e);
/* A system call run by thread i of t; *ret its result, or NULL: fail on error. */
int inject_call(struct target *t, uint32_t thread, long nr, uint64_t a0, uint64_t a1,
		uint64_t a2, uint64_t a3, long *ret, struct ibcr_err *e);

/* attrs.c: process and thread attributes (PATTRS, TATTRS); scratch: parked bytes of t */
int capture_attrs(struct target *t, uint64_t scratch, struct ibcr_err *e);
/* ptimers.c: POSIX timers, read by injected calls into scratch */
int capture_ptimers(struct target *t, uint64_t scratch, struct ibcr_err *e);
/* Once captured: the stop state and the stop signals still queued. */
void attrs_stop_state(struct target *t);
/* procinfo.c: children of the processes that are not among them, said. */
void warn_children(const struct target *t, uint32_t n);
/* Once all are captured: what the process tree cannot give back. */
int attrs_check_tree(const struct target *t, uint32_t n, struct ibcr_err *e);

/* rseq.c: a thread stopped inside an rseq critical section goes to its abort */
int rseq_fixup(struct target *t, uint32_t i, struct ibcr_err *e);

/* threads.c */
int capture_regs(struct target *t, struct ibcr_err *e);
int capture_threads(struct target *t, struct ibcr_err *e);

/* procinfo.c */
int capture_procinfo(struct target *t, struct ibcr_err *e);
/* limits.c: soft and hard resource limits, from /proc/PID/limits */
int read_limits(pid_t pid, uint64_t rlim[IBCR_RLIM_NLIMITS][2], struct ibcr_err *e);

/* creds.c: credentials and sandbox of every thread, before anything is injected */
int capture_creds(struct target *t, struct ibcr_err *e);
int write_creds(struct target *t, uint32_t proc, struct img_writer *w, struct ibcr_err *e);
/* seccomp.c: every thread's filters into t->ps.priv */
int capture_seccomp(struct target *t, struct ibcr_err *e);
/* external.c: saver --external-fd [PID:]FD:ACTION (pid 0: every process) */
struct ext_rule {
	pid_t pid;
	int fd;
	uint32_t action;	/* enum ibcr_ext_action */
};

/* files.c: the image's open file descriptions, being collected */
struct fobjs {
	struct ibcr_files f;
	pid_t *rep_pid;		/* per object: a process and fd that use it */
	int *rep_fd;
	uint32_t cap;
	int tcp_close;		/* --tcp-close: give up established TCP */
	struct ext_rule *ext;	/* --external-fd */
	uint32_t next;
	struct fdata *fdata;	/* per object: bytes of a deleted file or memfd */
	uint64_t held_bytes;	/* of them, read in the freeze */
	int keep_stopped;	/* some are read while writing: no snapshot */
	int kill;		/* --kill: the network lock outlives the saver */
	const char *image;	/* the image being made (named by the lock) */
	uint32_t given_up;	/* TCP connections given up (--tcp-close) */
	struct ibcr_sockopts sockopts;	/* every socket's options (SOCKOPTS) */
};
/* reopen.c: unprivileged, every file reopened by path must open for us */
int reopen_check(const struct fobjs *o, struct ibcr_err *e);
int capture_files(struct target *t, struct fobjs *o, struct ibcr_err *e);
/* A new object of pid's fd (or -1: of no descriptor), path link; its index. */
uint32_t fobjs_add(struct fobjs *o, pid_t pid, int fd, const char *link);
int files_finish(struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e);
/* filedata.c: FILEDATA (the files' bytes), then the objects' FILEATTRS */
int filedata_write(struct img_writer *w, struct fobjs *o, struct ibcr_err *e);
void filedata_free(struct fobjs *o);
/*
 * A descriptor of the saver's own that the image holds without any of its
 * processes (one in flight in a socket): its object, shared or new.
 */
int files_add_held(struct fobjs *o, int fd, uint32_t *obj, struct ibcr_err *e);
/* fn for every "KIND:[ino]" descriptor outside the image, until it returns nonzero */
void walk_outside(const struct target *t, uint32_t n, const char *kind,
		  int (*fn)(void *arg, pid_t pid, uint64_t ino), void *arg);

/* netcheck.c: with --kill, what the restore of the sockets will need */
int net_precheck(const struct target *t, uint32_t n, const struct fobjs *o,
		 struct ibcr_err *e);

/* memory.c */
int capture_memory_map(struct target *t, struct ibcr_err *e);
/* Sets a region's flags and madvise state that come from smaps VmFlags. */
void vma_set_vmflags(struct ibcr_vma *v, uint32_t vmflags);

/* vmflags.c: smaps (a page walk) read before the freeze, checked after */
void vmflags_preread(struct target *t);
int vmflags_layout(struct target *t, struct maps_entry **m, size_t *n,
		   struct ibcr_err *e);
int vmflags_verify(struct target *t, struct ibcr_err *e);
/* treepre.c: the same for a tree (--tree), taken by each member after its freeze */
void tree_preread(const struct target *t, uint32_t n);
void tree_adopt_preread(struct target *t, uint32_t n);
/* direct.c: whether the image should go past the page cache (--direct) */
int image_direct(const struct target *t, uint32_t n);
/* shmobj.c: makes every mapping of a file saved as shared memory one (NAMED). */
void shm_join_named(struct target *t, uint32_t n);
int write_memory(struct target *t, uint32_t proc, struct img_writer *w,
		 int codec, int level, struct ibcr_err *e);

/* verbs.c: processes running with the verbs shim */
int verbs_find(struct target *t, struct ibcr_err *e);
int verbs_quiesce_sends(struct target *t, uint32_t n, struct ibcr_err *e);
int verbs_quiesce_drain(struct target *t, uint32_t n, struct ibcr_err *e);
void verbs_release(struct target *t, uint32_t n);
/* A byte for the shim's helper; written in the freeze, it wakes a restore */
void verbs_wake(struct target *t);
int verbs_owns_fd(const struct target *t, int fd);
int verbs_write_section(struct target *t, uint32_t proc, struct img_writer *w,
			struct ibcr_err *e);
/* verbstree.c: the shim processes below --tree roots, found while running */
int verbs_tree_find(const struct target *roots, uint32_t nroots, struct target **pre,
		    uint32_t *npre, struct ibcr_err *e);
/* Once all are stopped: adopt what was quiesced, refuse verbs state that was not. */
int verbs_after_seize(struct target *t, uint32_t n, struct target *pre, uint32_t npre,
		      struct ibcr_err *e);


/* sockets.c: every socket's final kind, state and queued bytes */
int sockets_finish(struct fobjs *o, struct ibcr_err *e);
/* hold.c: every thread of t held while their sockets change; then let be. */
int hold_all(struct target *t, uint32_t n, struct ibcr_err *e);
int hold_release(struct ibcr_err *e);
/* netlink.c: a netlink socket's protocol, port id, groups; refused with data */
int netlink_socket(struct fobjs *o, uint32_t i, struct ibcr_err *e);
/* unix.c: the descriptors it took from UNIX sockets' queues, closed */
void unix_release(void);
/* tcp.c: established TCP connections, in repair mode until released */
struct buf;
int tcp_capture(pid_t pid, int fd, int s, struct buf *b, struct ibcr_err *e);
void tcp_release(int killed);
/* Out of repair mode with its SO_REUSEADDR back (also the guardian's); 0 or -1 */
int tcp_leave_repair(int fd, int reuse);
int tcp_enter_repair(int fd);

/* sockopt.c: the options of a socket that differ from a new one's */
int sockopt_capture(int fd, uint32_t obj, int family, int type, int proto, int connected,
		    const char *who, struct ibcr_sockopts *out, struct ibcr_err *e);

/* netlock.c: packets of the connections dropped while they are captured */
struct sockaddr_storage;
void netlock_conn(const struct sockaddr_storage *local, const struct sockaddr_storage *remote);
void netlock_listener(const struct sockaddr_storage *local);
int netlock_take(const char *image, int keep, struct ibcr_err *e);
/* 1 and the record when the lock is left for the restore (--kill) */
int netlock_record(struct ibcr_netlock *rec);
void netlock_release(int killed, const char *image);
/* saver --unlock-net: removes locks no saver and no image hold; exit status */
int netlock_unlock_stale(void);
/* Whether the image at path is there and names lock table */
int netlock_image_holds(const char *path, const char *table);

/* locks.c: file locks held, per descriptor */
int capture_locks(struct target *t, struct ibcr_err *e);

/* sysv.c: the SysV segments the processes have attached */
int sysv_capture(const struct target *t, uint32_t n, struct ibcr_sysv *out,
		 struct ibcr_err *e);

/* sysvipc.c: the SysV semaphore sets and message queues they used (or could: all) */
int sysvipc_capture(const struct target *t, uint32_t n, int all, struct ibcr_sysvipc *out,
		    struct ibcr_err *e);

/* cow.c: pages shared copy-on-write with the parent, found while stopped */
int cow_find(struct target *t, uint32_t n, struct ibcr_err *e);
const uint64_t *cow_bits(const struct target *t, uint32_t vma);
int cow_write_section(struct target *t, uint32_t proc, struct img_writer *w,
		      struct ibcr_err *e);

/* pagesums.c: a sum per chunk of page data stored raw, for lazy restores */
void pagesum_add(struct target *t, uint64_t data_off, uint32_t term);
int pagesums_write_section(struct target *t, uint32_t proc, struct img_writer *w,
			   struct ibcr_err *e);

/* shmobj.c: which shared regions hold their object's data (before shm_copy_all) */
void shm_decide_refs(struct target *t, uint32_t n);
/* shmsnap.c: 0 copied, 1 no memory for it (no snapshot then), -1 error */
int shm_copy_all(struct target *t, struct ibcr_err *e);
/* Before the freeze: buffers for the shared memory of a layout read then */
void shm_copy_reserve(const struct maps_entry *m, size_t n);
const struct shm_copy *shm_copy_of(const struct target *t, uint32_t vma);
void shm_copy_free(struct target *t, uint32_t vma);
/* noforkcopy.c: DONTFORK and WIPEONFORK memory copied in the freeze (0, 1: cannot, -1) */
int nofork_copy_all(struct target *t, struct ibcr_err *e);

/* snapshot.c: a copy-on-write copy to write the image from */
int snapshot_create_all(struct target *t, uint32_t n, struct ibcr_err *e);
void snapshot_kill(struct target *t);
void snapshot_destroy(struct target *t);
/* Makes t (running) reap child, a dead snapshot of it: one injected wait4 */
void snapshot_reap(struct target *t, pid_t child);

/* vdso.c: the saving kernel's [vdso] bytes, for a restore on another kernel */
int vdso_write_section(const struct target *t, uint32_t n, struct img_writer *w,
		       struct ibcr_err *e);

/* backing.c: the files they map, with what a restore recognises them by */
struct backing_opt {
	int self_contained;	/* --self-contained: carry them, and open files */
	int codec, level;	/* their contents' compression */
	const struct ibcr_files *files;	/* the image's open files */
};
int backing_write(struct img_writer *w, const struct target *t, uint32_t n,
		  const struct backing_opt *o, struct ibcr_err *e);
/* before the freeze: digests of the files pid maps now */
void backing_prehash(pid_t pid);

/* util */
int read_target(struct target *t, uint64_t addr, void *buf, size_t len,
		struct ibcr_err *e);

#endif
