/* SPDX-License-Identifier: MIT */
/*
 * The contract between the verbs shim (libibcr-verbs.so, loaded into the
 * application) and ibcr's saver and restart-loader, which never link
 * against it: they find the exported object IBCR_VERBS_SYMBOL in the
 * target's memory (ELF .dynsym of the mapped shim + load bias) and read
 * and write it with process_vm_readv/writev or in the restore plan.
 *
 * One helper thread of the shim (created with the first opened device)
 * watches `cmd` and answers through `state`. It sleeps in poll() on the
 * read end of a pipe of its own, `wake_fd` (the saver cannot futex-wake
 * across processes): whoever writes `cmd` then writes a byte into that
 * pipe, reached as /proc/PID/fd/<wake_fd> opened for writing. Without a
 * byte it looks at `cmd` once a second anyway. Every field is naturally
 * aligned; the layout only grows at the end (bump `abi` otherwise).
 */
#ifndef IBCR_VERBS_ABI_H
#define IBCR_VERBS_ABI_H

#include <stdint.h>

#define IBCR_VERBS_SYMBOL "ibcr_verbs_control"
#define IBCR_VERBS_MAGIC 0x5342524556524349ull /* "ICRVERBS" */
#define IBCR_VERBS_ABI 3
#define IBCR_VERBS_SECTION "verbs"	/* name of the image's OPAQUE section */

/* cmd: written by saver / restart-loader, read by the shim. */
enum ibcr_verbs_cmd {
	IBCR_VCMD_NONE = 0,
	/*
	 * Phase 1: block new verbs calls (threads entering the shim wait),
	 * wait for calls in progress to leave, then wait until every posted
	 * signaled send has completed, moving every completion polled on
	 * the way into the CQs' shadow queues.
	 */
	IBCR_VCMD_QUIESCE_SENDS = 1,
	/*
	 * Phase 2 (after phase 1 is done in every peer of the job): drain
	 * every CQ into its shadow queue and every completion event into the
	 * shim's pending-event list; record posted receives not completed.
	 */
	IBCR_VCMD_QUIESCE_DRAIN = 2,
	/* The checkpoint is written and the process runs on: unblock. */
	IBCR_VCMD_RELEASE = 3,
	/*
	 * Set by restart-loader in the restored memory before any thread
	 * resumes: rebuild everything (rendezvous in `rendezvous`), then
	 * unblock. The shim's helper thread wakes on it; threads blocked in
	 * the shim wait for the rebuild to finish.
	 */
	IBCR_VCMD_RESTART = 4,
};

/* state: written by the shim. */
enum ibcr_verbs_state {
	IBCR_VSTATE_RUNNING = 0,
	IBCR_VSTATE_BUSY = 1,		/* working on cmd */
	IBCR_VSTATE_SENDS_DONE = 2,	/* phase 1 complete */
	IBCR_VSTATE_QUIESCED = 3,	/* phase 2 complete: safe to capture */
	IBCR_VSTATE_FAILED = 4,		/* message says why */
};

/* Kinds of descriptors the shim owns (saver skips them, loader stands in). */
enum ibcr_verbs_fd_kind {
	IBCR_VFD_DEVICE = 1,	/* uverbs command fd of a context */
	IBCR_VFD_ASYNC = 2,	/* async event fd of a context */
	IBCR_VFD_COMP_CHANNEL = 3,	/* completion channel */
	IBCR_VFD_RDMA_CM = 4,	/* an rdma_cm event channel (no CM id alive) */
	IBCR_VFD_SHIM_PIPE = 5,	/* the write end of a channel's stand-in pipe */
};

#define IBCR_VERBS_MAX_FDS 64
#define IBCR_VERBS_MAX_WAKE 16
#define IBCR_VERBS_MAX_DEVICES 4
#define IBCR_VERBS_MAX_EPOLL 32

struct ibcr_verbs_fd {
	int32_t fd;
	uint32_t kind;		/* enum ibcr_verbs_fd_kind */
	/*
	 * COMP_CHANNEL only: the restore puts a pipe at `fd` holding one
	 * completion event (struct ib_uverbs_comp_event_desc, 8 bytes,
	 * cq_handle) per entry of wake_cq, so that a thread blocked in
	 * read() on the channel at checkpoint wakes up and finds its CQ; the
	 * shim's rebuild then dup2()s the new channel onto `fd`.
	 */
	uint32_t nwake;
	uint32_t pad;
	uint64_t wake_cq[IBCR_VERBS_MAX_WAKE];
};

/*
 * An epoll entry of the process that watches one of fds[] (UCX watches
 * the async fd and completion channels): the restore adds it for the
 * stand-in, and the shim adds it again each time it puts a new file at
 * that number (an epoll drops an entry when its file goes).
 */
struct ibcr_verbs_epoll {
	int32_t epfd;
	int32_t tfd;
	uint32_t events;
	uint32_t pad;
	uint64_t data;
};

struct ibcr_verbs_control {
	uint64_t magic;			/* IBCR_VERBS_MAGIC */
	uint32_t abi;			/* IBCR_VERBS_ABI */
	uint32_t size;			/* sizeof(struct ibcr_verbs_control) */
	int32_t cmd;			/* enum ibcr_verbs_cmd */
	int32_t state;			/* enum ibcr_verbs_state */
	int32_t error;			/* errno-style, when FAILED */
	uint32_t ndevices;
	uint64_t epoch;			/* checkpoints taken so far */
	char message[256];		/* why FAILED, for the saver/loader to print */
	char devices[IBCR_VERBS_MAX_DEVICES][64];	/* ibv device names in use */
	uint32_t nfds;
	int32_t wake_fd;		/* the helper's wake pipe (read end), or -1 */
	struct ibcr_verbs_fd fds[IBCR_VERBS_MAX_FDS];
	char rendezvous[512];		/* directory, written by restart-loader */
	uint64_t restart_timeout_ms;	/* peer wait, written by restart-loader */
	/* ABI 3: written by restart-loader, used by the rebuild */
	uint32_t nepoll;
	uint32_t pad2;
	struct ibcr_verbs_epoll epoll[IBCR_VERBS_MAX_EPOLL];
};

/*
 * The image's OPAQUE "verbs" section: the control object as it was once
 * the process was quiesced, and where it lives in the process.
 */
struct ibcr_verbs_section {
	uint64_t control_addr;
	struct ibcr_verbs_control control;
};

#endif
