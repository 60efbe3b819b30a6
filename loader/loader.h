/* SPDX-License-Identifier: MIT */
#ifndef IBCR_LOADER_H
#define IBCR_LOADER_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <sys/types.h>

#include "coord.h"
#include "err.h"
#include "image_io.h"
#include "model.h"
#include "fobj.h"
#include "core/plan.h"
#include "core/status.h"

/* Bytes the core writes into restored memory before threads resume. */
struct poke {
	uint64_t addr;
	uint32_t len;
	uint8_t *data;
};

/* A shared memory object the loader made and hands down by fork (shm.c). */
struct shm_obj {
	uint64_t dev, ino;	/* its identity in the image */
	uint64_t addr, size;	/* where it is mapped in the loader */
	const struct ibcr_sysv_shm *sysv;	/* a SysV segment: its record */
	const struct ibcr_vma *named;	/* a file (IBCR_VMAF_NAMED): a region of it */
	const char *path;		/* the name of its first region (a file's path) */
};

/* One restore of one process, as the loader's musl part prepares it. */
struct restore {
	struct img_reader *r;
	struct ibcr_process_state *ps;
	uint32_t proc;		/* index in the image */
	int status_fd;		/* child -> parent */
	int control_fd;		/* parent -> child */
	int exact_pid;		/* got the saved PID */
	int new_ids;		/* --new-pids: a root or thread may get a new id */
	uint32_t *cred_flags;	/* per thread, PLAN_CRED_* (creds.c) */
	int seccomp;		/* a thread is under seccomp */
	int loginuid_differs;	/* from the loader's: the child writes it */
	int *map_fds;		/* per region: its file, or -1 */
	const struct ibcr_files *files;	/* the image's file objects */
	const int *obj_fds;	/* each one opened by the loader, or -1 */
	int fd_base;		/* every descriptor of ours is at or above it */
	int exe_fd;
	int verbose;
	uint32_t npokes;
	struct poke *pokes;
	uint32_t nshm;		/* the image's shared memory objects */
	const struct shm_obj *shm;
	/* a descriptor table shared with other processes (fdtable.c) */
	uint32_t nmembers;	/* its leader: how many share it */
	int grp[4];		/* the group's pipes: placed (r, w), done (r, w) */
	int *keep;		/* its leader: the members' own descriptors */
	uint32_t nkeep;
	const struct job *jobs;	/* the image's processes (their pids, once forked) */
	uint32_t njobs;
	struct vdso_proxy *vdso;	/* another kernel's vdso: the proxy (vdso.c) */
	struct backing_ctx *backing;	/* the image's backing files (backing.c) */
	int cpu_in_use;		/* --cpu-check=in-use */
	int cgroup_here;	/* --cgroup=here: no move into the saved cgroup */
	uint64_t *cow_at;	/* per region: built at this address before */
				/* forking (cow.c), or 0 */
	int stream_fill;	/* the loader fills its regions from the stream */
	int lazy;		/* --lazy: regions may be filled once it runs (lazy.c) */
};

/* creds.c: can the loader give every thread its credentials and sandbox? */
int creds_preflight(struct restore *rs, struct ibcr_err *e);
/* creds.c (child, before the core): what only the process may set for itself */
int creds_child(const struct restore *rs, struct ibcr_err *e);

/* plan.c: room in the hole for the parts of the plan built elsewhere */
struct arena {
	uint8_t *base;
	size_t size, used;
};
void *arena_take(struct arena *a, size_t n, size_t align);
struct plan;
/* credplan.c: each thread's credentials and filters in the plan */
size_t creds_plan_size(const struct restore *rs);
void plan_creds(struct plan *p, struct arena *a, const struct restore *rs);
void plan_creds_shared(struct plan *p, const struct restore *rs);

/* timers.c: POSIX timers in the plan; can this kernel give their ids? */
int timers_preflight(const struct restore *rs, struct ibcr_err *e);
size_t timers_plan_size(const struct restore *rs);
void plan_timers(struct plan *p, struct arena *a, const struct restore *rs);

/* tcp.c: established TCP connections, in repair mode until tcp_finish */
int tcp_repair_on(int s);
int tcp_restore(int s, const uint8_t *data, uint64_t len, const struct sockaddr *peer,
		socklen_t plen);
int tcp_finish(const struct ibcr_files *f, const int *fds, struct ibcr_err *e);
/* tcpstate.c: SYNs and FINs that repair mode cannot set, before the lock goes */
int tcp_replay(const struct ibcr_files *f, const int *fds, struct ibcr_err *e);
int tcp_fin_in_repair(int s, const struct ibcr_tcp *t);
int tcp_fin_after_data(int s, const struct ibcr_tcp *t);
struct sockaddr_in6;
/* inject.c: packets from a peer into a restored socket, past the lock */
int tcp_send_fin(const struct sockaddr_in6 *local, const struct sockaddr_in6 *peer,
		 uint32_t seq, uint32_t ack, uint16_t window, int fin);
int udp_send_again(const struct sockaddr_in6 *local, const struct sockaddr_in6 *from,
		   const uint8_t *data, uint32_t len);

/* pathmap.c: --path-map OLD=NEW, applied to the image's paths once read */
struct pathmap_rule;
struct pathmap {
	size_t n;
	struct pathmap_rule *rule;
};
int pathmap_add(struct pathmap *pm, const char *arg, struct ibcr_err *e);
/* path's translation (malloc'd), or NULL when no rule applies */
char *pathmap_lookup(const struct pathmap *pm, const char *path);
void pathmap_process(const struct pathmap *pm, struct ibcr_process_state *ps);
void pathmap_files(const struct pathmap *pm, struct ibcr_files *f);
void pathmap_backing(const struct pathmap *pm, struct ibcr_backings *b);

/* addrmap.c: --addr-map OLD=NEW, applied to the image's IP sockets once read */
struct addrmap_rule;
struct addrmap {
	size_t n;
	struct addrmap_rule *rule;
};
int addrmap_add(struct addrmap *am, const char *arg, struct ibcr_err *e);
void addrmap_files(const struct addrmap *am, struct ibcr_files *f);

/* backing.c: is every mapped file the one saved (identity, build-id, digest)? */
struct backing_ctx;
/* trusted: per file, 1 when it was put back by selfc.c (or NULL) */
struct backing_ctx *backing_ctx(const struct ibcr_backings *b, const uint8_t *trusted);
int backing_check(struct restore *rs, struct ibcr_err *e);

/* selfc.c: a self-contained image's files, put back where missing */
struct selfc;
int selfc_prepare(struct img_reader *r, const struct ibcr_backings *b,
		  const struct ibcr_files *files, struct selfc **out, struct ibcr_err *e);
const uint8_t *selfc_trusted(const struct selfc *sc);
/* its missing cwd made, its mapped files that are memfds named so */
int selfc_process(const struct selfc *sc, struct ibcr_process_state *ps, struct ibcr_err *e);

/* main.c: exits the way a restored process did (status from waitpid) */
__attribute__((noreturn)) void exit_like(int st);

/* pidns.c: --pid-ns; returns in the new namespace's first process */
int pidns_enter(struct ibcr_err *e);
/* a restore as root of a user namespace must find the saved ids mapped */
int userns_check_creds(const struct ibcr_process_state *ps, struct ibcr_err *e);

/* init.c: as pid 1 (a container's init), signals go on to the processes */
void init_forward(const pid_t *pids, size_t n);
/* init.c: SIGTERM, SIGHUP to any loader go on to the restored roots */
void term_forward(const pid_t *pids, size_t n);

/* preflight.c: checks that need no change to anything */
int preflight(struct restore *rs, struct ibcr_err *e);
int preflight_files(const struct ibcr_files *f, struct ibcr_err *e);

/* attrs_check.c: can the attributes come back exactly? (no change made) */
int attrs_preflight(const struct restore *rs, struct ibcr_err *e);
int attrs_have_cap(int cap);
const char *attrs_limit_name(int r);
/* attrs.c: process attributes, in the child; per-thread ones into the plan */
int attrs_child(const struct restore *rs, struct ibcr_err *e);
void attrs_plan(struct plan *p, const struct restore *rs);
long attrs_fork_slack(const struct ibcr_process_state *child);
void attrs_fork_slack_done(long own);
/* cgroup.c: cgroup v2 membership */
int attrs_check_cgroup(const struct restore *rs, struct ibcr_err *e);
int cgroup_enter(const struct restore *rs, struct ibcr_err *e);

/* verbs.c: the loader's part of the verbs stage */
int verbs_preflight(const struct ibcr_process_state *ps, struct ibcr_err *e);
int verbs_standins(struct restore *rs, struct ibcr_err *e);
int verbs_pokes(struct restore *rs, struct ibcr_err *e);
/* the child, once its plan is built: its threads keep one credential */
int verbs_creds_check(const struct restore *rs, const struct plan *p, struct ibcr_err *e);

/* objects.c (parent, before forking): opens the image's file objects */
int objects_open(const struct ibcr_files *f, int base, int **out, uint32_t *failed,
		 struct ibcr_err *e);
struct job;
/* the first process and fd that hold object obj, said before e's message */
void objects_name_holder(const struct job *j, uint32_t n, uint32_t obj,
			 struct ibcr_err *e);

/* sockopt.c: a socket's saved options (late: those set after its data) */
int sockopt_apply(int s, uint32_t obj, const struct ibcr_files *f, int late,
		  struct ibcr_err *e);
/* SO_REUSEADDR again, as saved: leaving repair mode clears it */
int sockopt_after_repair(int s, uint32_t obj, const struct ibcr_files *f,
			 struct ibcr_err *e);

/* buffer sizes and their locks as saved, after the queues were refilled */
int sockopt_buffers(int s, uint32_t obj, const struct ibcr_files *f, struct ibcr_err *e);

/* udp.c: the datagrams that waited in UDP sockets, sent again */
int udp_refill(const struct ibcr_files *f, const int *fds, struct ibcr_err *e);

/* unix.c, unixq.c: UNIX sockets (sock_open returns UNIX_LATER for one */
/* made by unix_pending), their queues refilled once the processes exist */
#define UNIX_LATER (-2)
struct unix_data {	/* an object's data, laid out (image.h, struct ibcr_unix) */
	struct ibcr_unix h;
	const char *peer;
	const uint32_t *pending;
	const uint8_t *msgs, *end;
};
struct pidmap {		/* saved pids and the restored processes' own */
	uint32_t n;
	const int32_t *old, *now;
};
struct sockaddr_un;
int unix_layout(const struct ibcr_files *f, uint32_t i, struct unix_data *u);
socklen_t unix_address(const char *name, struct sockaddr_un *a);
long unix_peer_object(const struct ibcr_files *f, uint32_t i);
int unix_open(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e);
int unix_pending(const struct ibcr_files *f, int *fds, int base, struct ibcr_err *e);
int unix_gone_end(uint32_t obj);
void unix_gone_close(void);
int unix_refill(const struct ibcr_files *f, const int *fds, const struct pidmap *pm,
		struct ibcr_err *e);

/* netfinish.c: UNIX queues refilled, TCP live (every process exists) */
int net_finish(const struct job *j, uint32_t n, const struct ibcr_files *f, const int *fds,
	       struct ibcr_err *e);
/* the image's network lock removed, if it has one (said on failure) */
struct ibcr_netlock;
void net_unlock(const struct ibcr_netlock *lock, int locked);
/* --unlock-net: only that; the exit status */
int net_unlock_only(const struct ibcr_netlock *lock, int locked, const char *image);

/* netlink.c: a netlink socket, with its port id and groups */
int netlink_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e);

/* sockets.c: a socket object, opened by objects_open */
int sock_open(const struct ibcr_files *f, uint32_t i, int *fds, struct ibcr_err *e);

/* files.c (child) */
int setup_files(struct restore *rs, struct ibcr_err *e);

/* locks.c (child): file locks, once the descriptors are placed */
int restore_locks(const struct restore *rs, struct ibcr_err *e);

/* plan.c (child): maps the hole, fills it, returns where to jump */
int build_plan(struct restore *rs, uint64_t *entry, struct plan **plan,
	       uint64_t *sp, struct ibcr_err *e);

/* child.c: a restore's failure, said on its status pipe; exits */
__attribute__((noreturn)) void child_fail(int fd, const struct ibcr_err *e);

/* finalize.c (parent) */
int finalize(pid_t child, uint64_t plan_addr, int control_fd, int verbose, int keep,
	     struct ibcr_err *e);

/* pages.c (parent): fills the regions of a compressed image on request */
struct slot;
#define PAGES_MAX_WORKERS 8

struct pages {
	const struct ibcr_process_state *ps;
	int img_fd, memfd;
	pid_t child;
	int width;		/* decoding threads: one per CPU */
	int nslot;		/* blocks decoded or being decoded, at most */
	int nworkers, stop;
	pthread_t workers[PAGES_MAX_WORKERS];
	pthread_mutex_t mu;	/* the slots' states, stop */
	pthread_cond_t cv;
	int64_t delta;		/* added to the saved addresses written to */
	int ufd;		/* pages_fill: the child's userfaultfd, or -1 */
	const char *path;
	struct slot *slot;
	uint8_t *help_buf;	/* pagehelp.c */
	/* page data we put in (--stats): by UFFDIO_COPY, by writing */
	uint64_t copied, written;
	struct stream *stream;	/* uncompressed, not in the page cache (stream.c) */
	const struct restore *rs;	/* its lazy regions (lazy.c) or NULL */
};

int pages_open(struct pages *pg, const struct ibcr_process_state *ps, int img_fd,
	       const char *path, pid_t child, struct ibcr_err *e);
/*
 * Region idx of a compressed image, into the child: through its
 * userfaultfd `fd` (a descriptor number in the child) when fd >= 0.
 * 0 done, 1 that descriptor cannot be had (nothing done), -1 error.
 */
int pages_fill(struct pages *pg, uint32_t idx, int fd, struct ibcr_err *e);
void pages_close(struct pages *pg);
/* `len` bytes of the page stream from offset `at` (region v's) into place */
int pages_put(struct pages *pg, const struct ibcr_vma *v, uint64_t at, const uint8_t *p,
	      uint64_t len);
/*
 * pagehelp.c: page data of region idx from byte `from` on, into child;
 * *sum is the page_sum of what was put in.
 */
int pages_help(struct pages *pg, uint32_t idx, uint64_t from, uint32_t *sum,
	       struct ibcr_err *e);
/*
 * The same through the core's userfaultfd `fd` (a descriptor number in
 * the child): 1 when it cannot be had (the core then does it), 0 done.
 */
int pages_help_uffd(struct pages *pg, uint32_t idx, uint64_t from, int fd, uint32_t *sum,
		    struct ibcr_err *e);
/* k bytes to addr in the child, whatever the region's protection */
int pages_write(struct pages *pg, uint64_t addr, const uint8_t *p, size_t k);
/* pagehelp.c: our copy of the child's descriptor fd, or -1 */
int pages_take_fd(struct pages *pg, int fd);
/*
 * pagehelp.c: UFFDIO_COPY of [dst, dst + len) from src, up to the first
 * page that is there already (EEXIST); the bytes copied, or -1 (errno)
 * on any other error.
 */
int64_t uffd_copy(int ufd, uint64_t dst, uint64_t src, uint64_t len);

/* One process of the image being restored (main.c, tree.c). */
struct job {
	struct ibcr_process_state ps;
	struct restore rs;
	int parent;		/* index of its parent in the image, or -1: a root */
	pid_t child;		/* its pid, once known */
	int status_fd, control_fd;	/* the loader's ends */
	uint64_t plan_addr;	/* its plan, in it: from ST_READY */
	int st, exited;
	int pages_open;
	struct pages pages;	/* compressed images: the filler */
	struct lazy *lazy;	/* --lazy: its fill, once the core handed it over */
	int pidfd;		/* --lazy: lazy_pin's (lazy.c), -1 before */
};

static inline int is_zombie(const struct job *x)
{
	return x->ps.rec.flags & IBCR_PROCF_ZOMBIE;
}

/* shm.c: shared memory objects, made once and handed down by fork */
int shm_prepare(struct job *j, uint32_t n, const struct ibcr_sysv *sv, struct ibcr_err *e);
/* The memfd that file object i is, made and mapped by shm_prepare, or -1. */
int shm_memfd(uint32_t i);
void shm_remove_dead(const struct ibcr_sysv *sv);
uint64_t shm_source(const struct restore *rs, const struct ibcr_vma *v);

/* shm.c: region i of x's image, its saved start put at `at` */
int region_fill_at(const struct job *x, uint32_t i, uint64_t at, struct ibcr_err *e);

/* cow.c: pages shared copy-on-write with the parent, shared again by fork */
int cow_prepare(struct job *j, uint32_t n, struct ibcr_err *e);
int cow_build(const struct job *j, uint32_t n, uint32_t k, struct ibcr_err *e);
/* The same in process k before it forks its children; exits on failure. */
void cow_build_or_fail(const struct job *j, uint32_t n, uint32_t k);
/* Where region vma was built, to be moved into place; 0: not so. */
uint64_t cow_source(const struct restore *rs, uint32_t vma);

/* sysvipc.c: SysV semaphore sets and message queues, before forking */
int sysvipc_prepare(const struct ibcr_sysvipc *s, struct ibcr_err *e);

/*
 * plancalc.c: the ranges below top that no keep range covers (keep gets
 * sorted; out has room for nk + 1); the count.
 */
size_t plan_gaps(struct plan_range *keep, size_t nk, uint64_t top, struct plan_range *out);
/* plancalc.c: each descriptor of map_fds once (not -1), then exe_fd if any; the count. */
int32_t plan_close_list(const int32_t *map_fds, uint32_t n, int32_t exe_fd, int32_t *out);

/* hole.c: a range free now and in the saved layouts of processes ps */
int find_free(const struct ibcr_process_state *const *ps, uint32_t nps, size_t size,
	      uint64_t *at, struct ibcr_err *e);
/*
 * hole.c, find_free's search: the highest size bytes below the top that
 * keep a margin from every busy range (any order, may overlap); -1 if none.
 */
int find_free_in(const struct plan_range *busy, size_t n, uint64_t size, uint64_t *at);
/*
 * hole.c: a place for len bytes in [lo, hi) overlapping no busy range,
 * the point off bytes into it as near `near` as can be; -1 if none.
 */
int find_free_near(const struct plan_range *busy, size_t n, uint64_t len, uint64_t off,
		   uint64_t near, uint64_t lo, uint64_t hi, uint64_t *at);

/*
 * vdso.c: the kernel's special mappings. The same kernel: each moves
 * back to its saved address. Another kernel (its [vdso] differs): a
 * vdso proxy, the saved vdso's bytes at their old address with each
 * entry point redirected into this kernel's vdso, which moves with its
 * data pages to a place free in the saved layout, near the old one.
 */
struct vdso_proxy;
int vdso_preflight(struct restore *rs, struct ibcr_err *e);
/* Room the plan needs for it in the hole, and to park the special mappings. */
size_t vdso_plan_size(const struct restore *rs);
size_t vdso_park_size(const struct restore *rs);
int vdso_plan(struct plan *p, const struct restore *rs, uint8_t *proxy, uint64_t park,
	      struct ibcr_err *e);

/* tree.c: processes come back as the tree they were */
void tree_link(struct job *j, uint32_t n);
int tree_start(struct job *j, uint32_t n, int base, int verbose);
/* ids.c: every saved pid and tid can be had, or e says which cannot */
int ids_preflight(const struct job *j, uint32_t n, struct ibcr_err *e);
/* the saved pid (waiting a little for its old holder), or -1 and e says why; */
/* a root with --new-pids: another one, said on stderr (*exact 0) */
pid_t fork_root(const struct job *x, int *exact, struct ibcr_err *e);
/* a child of a restored process */
pid_t fork_exact(const struct job *x, unsigned long flags, struct ibcr_err *e);
/* ids.c: says once which threads did not get their saved ids */
void ids_report(const struct job *x);

/* IBCR_TRACE set and not empty: report each step of the restore. */
static inline int trace_on(void)
{
	const char *v = getenv("IBCR_TRACE");

	return v && *v && *v != '0';
}

/* enter.asm */
__attribute__((noreturn)) void ibcr_enter(uint64_t entry, struct plan *p, uint64_t sp);

/* blob.asm */
extern const uint8_t ibcr_core_blob[], ibcr_core_blob_end[];

/* Header at the start of the core blob (freestanding/arch/<arch>/core.*). */
struct core_blob_head {
	uint64_t magic;
	uint32_t entry;
	uint32_t syscall_insn;
};
#define CORE_BLOB_MAGIC 0x45524f4352434249ull /* "IBCRCORE" */

#endif
