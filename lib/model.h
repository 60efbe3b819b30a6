/* SPDX-License-Identifier: MIT */
#ifndef IBCR_MODEL_H
#define IBCR_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/*
 * The in-memory picture of one checkpointed process: what the saver
 * fills and encodes, and what the loader and ckpt-info decode and check.
 * Records are the on-disk ones; variable parts are separate arrays.
 */
struct ibcr_thread_state {
	struct ibcr_thread rec;
	uint8_t *gpregs;	/* rec.gpregs_size bytes */
	uint8_t *fpregs;	/* rec.fpregs_size bytes */
	uint8_t *siginfo;	/* (nsiginfo + nsiginfo_shared) * 128 bytes */
};

struct ibcr_opaque {
	char name[24];
	uint8_t *data;
	uint64_t size;
};

/* Where a block of a compressed PAGES payload is (reader side). */
struct ibcr_blockref {
	uint64_t file_off;	/* its stored bytes */
	uint64_t raw_off;	/* its place in the page stream */
	uint32_t raw_len, stored_len, codec, raw_crc;
};

/* Privileges and sandbox of one process: CREDS and SECCOMP (image_priv.c). */
struct ibcr_priv {
	struct ibcr_creds_hdr hdr;
	struct ibcr_creds *creds;	/* hdr.nthreads, in THREAD order */
	uint32_t *groups;		/* hdr.ngroups */
	char *root;			/* root directory */
	uint32_t nfilters, ninsns;
	struct ibcr_seccomp_filter *filters;
	uint64_t *insns;		/* struct sock_filter, 8 bytes each */
};

struct ibcr_process_state {
	struct ibcr_proc rec;
	char *exe, *cwd, *cmdline;	/* cmdline: NULs between arguments */
	struct ibcr_thread_state *threads;	/* rec.nthreads */
	struct ibcr_sigaction sigact[IBCR_NSIG];
	uint32_t nfds;
	struct ibcr_fd *fds;	/* objects: the image's struct ibcr_files */
	uint32_t nlocks;
	struct ibcr_lock *locks;
	uint32_t nvmas;
	struct ibcr_vma *vmas;
	char **vma_names;
	uint64_t nruns;
	struct ibcr_run *runs;
	uint64_t pages_off;	/* reader: file offset of the PAGES payload */
	uint64_t pages_size;	/* bytes of page stream (uncompressed) */
	uint64_t nblocks;	/* compressed PAGES: its blocks, in order */
	struct ibcr_blockref *blocks;
	uint32_t nopaque;
	struct ibcr_opaque *opaque;
	struct ibcr_priv priv;
	uint32_t ncow;		/* COW section: regions sharing pages with the parent */
	struct ibcr_cow_region *cow;
	uint64_t ncow_runs;
	struct ibcr_run *cow_runs;
	int has_attrs;		/* PATTRS and TATTRS: none in older images */
	struct ibcr_pattrs pattrs;
	char *cgroup;		/* its cgroup v2 path, or NULL */
	struct ibcr_tattrs *tattrs;	/* rec.nthreads records, or NULL */
	uint32_t nptimers;	/* PTIMERS: POSIX timers, ascending ids */
	struct ibcr_ptimer *ptimers;
	uint32_t sum_chunk;	/* PAGESUMS: bytes per sum, 0 without */
	uint64_t nsums;
	uint32_t *sums;
};

/* The image's open file descriptions, shared by its processes. */
struct ibcr_sockopts;
struct ibcr_files {
	uint32_t nobjs;
	struct ibcr_fobj *objs;
	char **paths;
	uint8_t **data;		/* each object's data_len bytes, or NULL */
	struct ibcr_fattr *attrs;	/* each object's (FILEATTRS; zeros without) */
	uint64_t filedata_off;	/* reader: file offset of FILEDATA's payload */
	uint64_t filedata_size;
	int filedata_fd;	/* reader: the image, to read FILEDATA from */
	const struct ibcr_sockopts *sockopts;	/* loader: the sockets' options */
};

/* The image's SysV shared memory segments (SYSVSHM section). */
struct ibcr_sysv {
	uint32_t nshm;
	struct ibcr_sysv_shm *shm;
};

/* The image's SysV semaphore sets and message queues (SYSVSEM, SYSVMSG). */
struct ibcr_sysvipc {
	uint32_t nsets, nvalues;
	struct ibcr_sysv_sem *sets;
	uint16_t *values;	/* each set's nsems from its first */
	uint32_t nqueues, nmsgs;
	struct ibcr_sysv_msgq *queues;
	struct ibcr_sysv_msg *msgs;	/* each queue's nmsgs from its first */
	uint64_t data_size;
	uint8_t *data;		/* message text, at each message's data_off */
};

/* The image's backing files (BACKING section, image_port.c). */
struct ibcr_backings {
	uint32_t n;
	struct ibcr_backing *f;
	char **paths;
	uint64_t data_payload;	/* self-contained: file offset of the contents stream */
	uint64_t data_size;	/* its bytes (uncompressed) */
	uint64_t nblocks;	/* compressed: its blocks */
	struct ibcr_blockref *blocks;
};

void ibcr_backings_free(struct ibcr_backings *b);
void ibcr_process_free(struct ibcr_process_state *ps);
void ibcr_sysvipc_free(struct ibcr_sysvipc *s);
void ibcr_files_free(struct ibcr_files *f);
void ibcr_priv_free(struct ibcr_priv *p);

#endif
