/* SPDX-License-Identifier: MIT */
/*
 * ibcr image format, version 1: the on-disk records.
 *
 * docs/image-format.md is the reference; this header must agree with it.
 * All integers are little-endian (both supported architectures are), all
 * records have fixed sizes and explicit padding so that the saver (glibc),
 * the loader (musl) and the freestanding restore core see the same layout.
 */
#ifndef IBCR_IMAGE_H
#define IBCR_IMAGE_H

#include <stdint.h>

#define IBCR_MAGIC "IBCRIMG\n"
/*
 * 2: page data checked with XXH64; 3: a region's page sum adds up
 * independent per-page terms (xxh64.h); 4: credentials, attributes,
 * deleted files' data, socket options and layouts, copy-on-write
 * sharing, backing files and the vdso (sections 12-24)
 */
#define IBCR_VERSION 4

enum ibcr_arch {
	IBCR_ARCH_X86_64 = 1,
	IBCR_ARCH_AARCH64 = 2,
};

/* File header, at offset 0. */
struct ibcr_file_hdr {
	char magic[8];
	uint32_t version;
	uint32_t arch;		/* enum ibcr_arch */
	uint32_t page_size;
	uint32_t flags;		/* IBCR_HDRF_* */
	uint32_t nprocs;	/* processes in this image */
	uint32_t hdr_size;	/* sizeof(struct ibcr_file_hdr) */
	uint64_t created_ns;	/* CLOCK_REALTIME when the image was made */
	uint8_t reserved[20];
	uint32_t crc;		/* CRC-32C of the 60 bytes before it */
};

enum ibcr_sec_type {
	IBCR_SEC_PROC = 1,	/* struct ibcr_proc + strings */
	IBCR_SEC_THREAD = 2,	/* struct ibcr_thread + registers + siginfos */
	IBCR_SEC_SIGACT = 3,	/* struct ibcr_sigaction[IBCR_NSIG] */
	IBCR_SEC_FILES = 4,	/* struct ibcr_files_hdr + fds */
	IBCR_SEC_PAGES = 5,	/* page data of every region of one process */
	IBCR_SEC_VMAS = 6,	/* struct ibcr_vmas_hdr + vmas + runs + strings */
	IBCR_SEC_OPAQUE = 7,	/* owned by a named stage (e.g. "verbs") */
	IBCR_SEC_FILEOBJS = 8,	/* image-wide: open file descriptions */
	IBCR_SEC_SYSVSHM = 9,	/* image-wide: SysV shared memory segments */
	IBCR_SEC_SYSVSEM = 10,	/* image-wide: SysV semaphore sets */
	IBCR_SEC_SYSVMSG = 11,	/* image-wide: SysV message queues */
	IBCR_SEC_CREDS = 12,	/* struct ibcr_creds_hdr + per-thread records */
	IBCR_SEC_SECCOMP = 13,	/* struct ibcr_seccomp_hdr + filters + programs */
	IBCR_SEC_COW = 24,	/* pages a process shares with its parent */
	IBCR_SEC_PAGESUMS = 26,	/* a sum per chunk of each region's page data */
	IBCR_SEC_PATTRS = 14,	/* struct ibcr_pattrs + cgroup path */
	IBCR_SEC_TATTRS = 15,	/* struct ibcr_tattrs[nthreads] */
	IBCR_SEC_FILEDATA = 16,	/* image-wide: bytes of deleted files and memfds */
	IBCR_SEC_FILEATTRS = 17,	/* image-wide: struct ibcr_fattr[FILEOBJS' nobjs] */
	IBCR_SEC_BACKING = 22,	/* image-wide: mapped (and carried) files: identity, contents */
	IBCR_SEC_VDSO = 23,	/* image-wide: the saving kernel's [vdso], its bytes */
	IBCR_SEC_SOCKOPTS = 18,	/* image-wide: socket options (lib/sockopt.h) */
	IBCR_SEC_PTIMERS = 27,	/* struct ibcr_ptimer[]: POSIX timers (timer_create) */
	IBCR_SEC_NETLOCK = 19,	/* image-wide: the network lock left for the */
				/* image's TCP connections (lib/netlock.h) */
	IBCR_SEC_END = 0x7fff,	/* last section: marks a complete image */
};

#define IBCR_SEC_MAGIC 0x43455349u /* "ISEC" */
#define IBCR_PROC_NONE 0xffffffffu  /* section belongs to no process */

/* Section flags. */
#define IBCR_SECF_CRC_PER_REGION 0x1 /* PAGES: data_crc unused, see vmas */
#define IBCR_SECF_BLOCKS 0x2	/* PAGES: a sequence of (compressed) blocks */

/*
 * Every section starts with this header. The payload follows after `pad`
 * zero bytes; PAGES sections use the padding to start their payload on a
 * page boundary, so that page data can be read (or mapped) in place.
 */
struct ibcr_sec_hdr {
	uint32_t magic;		/* IBCR_SEC_MAGIC */
	uint32_t type;		/* enum ibcr_sec_type */
	uint32_t proc;		/* owning process index, or IBCR_PROC_NONE */
	uint32_t flags;
	uint64_t size;		/* payload bytes */
	uint32_t pad;		/* zero bytes between header and payload */
	uint32_t data_crc;	/* CRC-32C of the payload */
	char name[24];		/* owner of an OPAQUE section, else empty */
	uint32_t reserved;
	uint32_t hdr_crc;	/* CRC-32C of the 60 bytes before it */
};

/*
 * A compressed PAGES payload is a sequence of blocks, each this header
 * and stored_len bytes, padded to 8. Block k holds bytes [raw_off,
 * raw_off + raw_len) of the page stream, the concatenation of every
 * region's page data that an uncompressed PAGES payload holds as is;
 * regions' data_off and data_len refer to that stream. A block that
 * did not shrink is stored raw (codec 0).
 */
enum ibcr_codec {
	IBCR_CODEC_RAW = 0,
	IBCR_CODEC_ZSTD = 1,
	IBCR_CODEC_ZLIB = 2,
};

#define IBCR_BLOCK_MAGIC 0x4b4c4249u /* "IBLK" */

struct ibcr_block {
	uint32_t magic;
	uint32_t codec;		/* enum ibcr_codec */
	uint32_t raw_len;
	uint32_t stored_len;
	uint64_t raw_off;
	uint32_t raw_crc;	/* block_sum (XXH64) of the raw_len uncompressed bytes */
	uint32_t hdr_crc;	/* CRC-32C of the 28 bytes before it */
};

/* END section payload. */
struct ibcr_end {
	uint64_t nsections;	/* sections before this one */
	uint64_t file_size;	/* offset of this section's header */
};

#define IBCR_NSIG 64
#define IBCR_RLIM_NLIMITS 16
#define IBCR_MAX_AUXV 64	/* 64-bit words, as the kernel's saved_auxv */

/* Process flags. */
#define IBCR_PROCF_SECCOMP 0x1	/* a thread is under seccomp (CREDS, SECCOMP) */
#define IBCR_PROCF_ZOMBIE 0x2	/* exited, not reaped: PROC only, exit_status */
#define IBCR_PROCF_STOPPED 0x4	/* stopped by job control: restored stopped */
#define IBCR_PROCF_NOTTY 0x1000	/* had no controlling terminal (a daemon) */

/*
 * PROC section: one per process, the first section of that process.
 * Strings (exe, cwd, cmdline) live after the fixed part, at the offsets
 * given, each NUL-terminated; cmdline is informational (the real argv is
 * in the restored stack memory).
 */
struct ibcr_proc {
	int32_t pid, ppid, pgid, sid;
	uint32_t nthreads;
	uint32_t umask;
	uint32_t personality;
	uint32_t flags;		/* IBCR_PROCF_* */
	/* the main thread's, for ckpt-info; CREDS holds what is restored */
	uint32_t uid[4];	/* real, effective, saved, filesystem */
	uint32_t gid[4];
	uint32_t ngroups;	/* the first 32 at most */
	uint32_t groups[32];
	uint32_t auxv_words;	/* used entries of auxv[] */
	/* mm fields, as PR_SET_MM_MAP takes them */
	uint64_t start_code, end_code, start_data, end_data;
	uint64_t start_brk, brk, start_stack;
	uint64_t arg_start, arg_end, env_start, env_end;
	uint64_t auxv[IBCR_MAX_AUXV];
	uint64_t rlim[IBCR_RLIM_NLIMITS][2];	/* soft, hard */
	uint64_t itimer[3][4];	/* REAL, VIRTUAL, PROF: interval s/us, value s/us */
	uint32_t exe_off, cwd_off, cmdline_off, cmdline_len;
	char comm[16];
	/* exe identity, to refuse a changed binary */
	uint64_t exe_ino, exe_dev, exe_size, exe_mtime_ns;
	int32_t exit_status;	/* zombies: as wait(2) reports it */
	uint32_t files_of;	/* 1 + index of the process whose descriptor */
				/* table this one shares (CLONE_FILES): the */
				/* first of them in the image; 0: its own */
};

/*
 * CREDS section: one per process (not zombies), after its THREADs.
 * struct ibcr_creds_hdr, nthreads records in THREAD order, ngroups u32
 * group ids (each record's list from its group0; threads with the same
 * list share it), then the root directory (root_len bytes with its NUL,
 * as /proc/PID/root reads from the saver).
 */
struct ibcr_creds_hdr {
	uint32_t nthreads;
	uint32_t ngroups;
	uint32_t dumpable;	/* PR_GET_DUMPABLE: 0, 1, or 2 (root only) */
	uint32_t root_len;
};

#define IBCR_CREDF_NO_NEW_PRIVS 0x1

enum ibcr_seccomp_mode {
	IBCR_SECCOMP_OFF = 0,
	IBCR_SECCOMP_STRICT = 1,
	IBCR_SECCOMP_FILTER = 2,
};

/* One thread's credentials and sandbox. Capability sets: bit n = cap n. */
struct ibcr_creds {
	uint32_t uid[4];	/* real, effective, saved, filesystem */
	uint32_t gid[4];
	uint64_t cap_eff, cap_prm, cap_inh, cap_bnd, cap_amb;
	uint32_t securebits;	/* PR_GET_SECUREBITS, lock bits included */
	uint32_t flags;		/* IBCR_CREDF_* */
	uint32_t seccomp;	/* enum ibcr_seccomp_mode */
	uint32_t filter;	/* FILTER: its newest filter, index + 1 in SECCOMP */
	uint32_t group0, ngroups;	/* its supplementary groups in the table */
	uint32_t loginuid;	/* audit; 0xffffffff: never set */
	uint32_t sessionid;	/* audit session, informational (not restorable) */
};

/*
 * SECCOMP section: one per process that has filters. struct
 * ibcr_seccomp_hdr, nfilters records, ninsns classic BPF instructions
 * (struct sock_filter, 8 bytes each). A record is a node of the
 * kernel's filter tree: the filter it was installed on top of comes
 * first (prev, index + 1; 0 for the first of a chain). Threads whose
 * filters are equal, in the same order, share the records: that is how
 * the kernel shares them after TSYNC or a clone.
 */
struct ibcr_seccomp_hdr {
	uint32_t nfilters;
	uint32_t ninsns;
};

struct ibcr_seccomp_filter {
	uint32_t prev;		/* index + 1 of the filter below, 0: none */
	uint32_t flags;		/* SECCOMP_FILTER_FLAG_LOG as the kernel reports it */
	uint32_t insn0;		/* its program in the instruction table */
	uint32_t ninsns;
};

/*
 * PATTRS section, one per live process (after FILES): attributes of the
 * process as a whole that the kernel keeps and the restore sets again.
 * The cgroup v2 path (cgroup_len bytes with its NUL, 0 = none known)
 * follows the record.
 */
#define IBCR_PATTRF_SUBREAPER 0x1	/* PR_SET_CHILD_SUBREAPER */
#define IBCR_PATTRF_MEMBARRIER_OLD 0x2	/* kernel without MEMBARRIER_CMD_GET_REGISTRATIONS: */
					/* the global expedited registration is unknown */
#define IBCR_PATTRF_AMX 0x4	/* x86: asked for AMX tile data (ARCH_REQ_XCOMP_PERM) */

/* membarrier registrations, as the commands that make them (MEMBARRIER_CMD_*) */
#define IBCR_MEMBARRIER_GLOBAL_EXPEDITED 0x4
#define IBCR_MEMBARRIER_PRIVATE_EXPEDITED 0x10
#define IBCR_MEMBARRIER_SYNC_CORE 0x40
#define IBCR_MEMBARRIER_RSEQ 0x100

struct ibcr_pattrs {
	int32_t oom_score_adj;	/* /proc/PID/oom_score_adj */
	uint32_t flags;		/* IBCR_PATTRF_* */
	uint32_t thp_disable;	/* what PR_GET_THP_DISABLE answered (bit 1: except advised) */
	uint32_t membarrier;	/* IBCR_MEMBARRIER_*: registrations whose command works */
	uint32_t stop_sig;	/* IBCR_PROCF_STOPPED: the signal that stopped it */
	uint32_t cgroup_len;	/* bytes of the cgroup v2 path that follows, NUL included */
	uint8_t reserved[40];
};

/*
 * TATTRS section, one per live process (after PATTRS): a record per
 * thread, in the order of the THREAD sections. The scheduling fields are
 * struct sched_attr's (sched_getattr); the affinity mask has bit n for
 * CPU n, up to 1024 CPUs.
 */
#define IBCR_TATTRF_UCLAMP 0x1		/* util_min/util_max were read */
#define IBCR_TATTRF_SLACK_DEFAULT 0x2	/* timer_slack_default_ns was read */
#define IBCR_AFFINITY_BYTES 128

struct ibcr_tattrs {
	int32_t tid;
	uint32_t flags;		/* IBCR_TATTRF_* */
	uint32_t sched_policy;	/* SCHED_* */
	int32_t sched_nice;
	uint64_t sched_flags;	/* SCHED_FLAG_* (reset on fork, deadline flags) */
	uint32_t sched_priority;
	uint32_t util_min, util_max;
	uint32_t pdeath_sig;	/* PR_GET_PDEATHSIG */
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint64_t timer_slack_ns;	/* PR_GET_TIMERSLACK */
	uint64_t timer_slack_default_ns;	/* what PR_SET_TIMERSLACK 0 goes back to */
	uint8_t affinity[IBCR_AFFINITY_BYTES];	/* sched_getaffinity */
	uint8_t reserved[32];
};

/* How the restore writes the thread's TID at clear_child_tid. */
enum ibcr_ctid_mode {
	IBCR_CTID_NONE = 0,	/* kernel clears it at exit; nothing cached */
	IBCR_CTID_CACHE = 1,	/* libc caches the TID there (glibc): write it */
};

/*
 * THREAD section: one per thread, the main thread first. After the fixed
 * part come gpregs_size bytes of general registers (the arch's
 * NT_PRSTATUS layout), fpregs_size bytes of FP/SIMD state (x86_64:
 * NT_X86_XSTATE, aarch64: NT_PRFPREG) and nsiginfo pending siginfos of
 * 128 bytes each (per-thread queue), then on the main thread
 * nsiginfo_shared of the process-wide queue.
 *
 * Registers are stored ready to resume: when the checkpoint interrupted a
 * system call that the kernel would restart, the program counter is moved
 * back onto the system call instruction and the number/argument register
 * restored, so resuming re-executes it (syscall_nr/syscall_ret say which).
 */
enum ibcr_thread_flags {
	/* x86 PKRU is the saving machine's default for new processes (and no
	 * region has a protection key): a CPU without PKU may restore it */
	IBCR_THREADF_PKEYS_DEFAULT = 0x1,
};

struct ibcr_thread {
	int32_t tid;
	uint32_t flags;		/* enum ibcr_thread_flags */
	uint64_t sigmask;	/* blocked signals */
	uint64_t clear_child_tid;
	uint32_t ctid_mode;	/* enum ibcr_ctid_mode */
	uint32_t rseq_len;
	uint64_t rseq_ptr;
	uint32_t rseq_sig;
	uint32_t altstack_flags;
	uint64_t altstack_sp, altstack_size;
	uint64_t robust_list, robust_len;
	int64_t syscall_nr;	/* interrupted syscall, or -1 */
	int64_t syscall_ret;	/* what the kernel had in the return register */
	uint64_t tls[2];	/* aarch64: tpidr_el0, tpidr2_el0; x86: unused */
	char comm[16];
	uint32_t gpregs_size;
	uint32_t fpregs_size;
	uint32_t nsiginfo;	/* per-thread pending */
	uint32_t nsiginfo_shared; /* process-wide pending, after the above */
};

#define IBCR_SIGINFO_SIZE 128

/*
 * PTIMERS section: one per process that has POSIX timers (timer_create),
 * after its THREADs; one record per timer, in ascending id order.
 */
struct ibcr_ptimer {
	int32_t id;		/* the timer_t the program holds */
	int32_t clock;		/* CLOCK_REALTIME, _MONOTONIC, _BOOTTIME, _TAI */
	int32_t notify;		/* sigev_notify: SIGEV_SIGNAL, _NONE, _THREAD, */
				/* | SIGEV_THREAD_ID */
	int32_t signo;		/* sigev_signo (kept for SIGEV_NONE too) */
	uint64_t sigval;	/* sigev_value */
	int32_t tid;		/* SIGEV_THREAD_ID: the saved TID it signals */
	int32_t overrun;	/* timer_getoverrun: of the last signal taken */
	int64_t value_ns;	/* time left (timer_gettime); 0: disarmed */
	int64_t interval_ns;	/* 0: one-shot */
	uint64_t reserved;
};

#define IBCR_MAX_PTIMERS 65536	/* per process: a bound for the reader */
/* sigev_notify and clock ids, as the kernel's uapi has them */
enum { IBCR_SIGEV_SIGNAL = 0, IBCR_SIGEV_NONE = 1, IBCR_SIGEV_THREAD = 2,
       IBCR_SIGEV_THREAD_ID = 4 };
enum { IBCR_CLOCK_REALTIME = 0, IBCR_CLOCK_MONOTONIC = 1, IBCR_CLOCK_BOOTTIME = 7,
       IBCR_CLOCK_TAI = 11 };


/* SIGACT section: IBCR_NSIG entries, signal n at index n-1. */
struct ibcr_sigaction {
	uint64_t handler;
	uint64_t flags;
	uint64_t restorer;
	uint64_t mask;
};

/*
 * FILEOBJS section: image-wide (proc IBCR_PROC_NONE), before the first
 * process. Every open file description of every process, once: two
 * descriptors (in one process or several) that share one, after dup()
 * or fork(), refer to the same object and share it again after restore.
 */
enum ibcr_fd_kind {
	IBCR_FD_REG = 1,	/* regular file: reopened by path at pos */
	IBCR_FD_DIR = 2,	/* directory: reopened by path */
	IBCR_FD_CHR = 3,	/* stateless character device: reopened by path */
	IBCR_FD_STDIO = 4,	/* tty/pipe/socket leading outside, on fds 0-2: */
				/* rebound to the loader's fd of that number */
	IBCR_FD_STAGE = 5,	/* owned by a stage (verbs): its section says how */
	IBCR_FD_PIPE = 6,	/* one end of a pipe: aux[0] pipe inode, aux[1] size */
	IBCR_FD_FIFO = 7,	/* one end of a named pipe: the same, and a path */
	IBCR_FD_EVENTFD = 8,	/* aux[0] count, aux[1] 1 = EFD_SEMAPHORE */
	IBCR_FD_TIMERFD = 9,	/* aux[0] clock id | settime flags << 32, aux[1] */
				/* unread expirations, aux[2] interval ns, aux[3] */
				/* ns left (TFD_TIMER_ABSTIME: the deadline on */
				/* that clock); 0 = disarmed */
	IBCR_FD_SIGNALFD = 10,	/* aux[0] mask: bit n-1 = signal n */
	IBCR_FD_EPOLL = 11,	/* aux[0] pid whose fd numbers the interest list */
				/* uses, aux[1] entries; data: per entry 3 u64: */
				/* target fd, events, data word */
	IBCR_FD_INOTIFY = 12,	/* aux[0] watches; data: per watch u32 wd, u32 */
				/* mask, u32 path bytes (with NUL), u32 0, the */
				/* path, zero-padded to 8; sorted by wd */
	IBCR_FD_DELETED = 13,	/* regular file deleted while open: path without */
				/* " (deleted)", data = its contents, at pos */
	IBCR_FD_MEMFD = 14,	/* memfd: path = its name, data = its contents, */
				/* aux[0] seals (F_GET_SEALS) */
	IBCR_FD_TTY = 15,	/* terminal used above fd 2: rebound to the */
				/* restarting loader's controlling terminal; */
				/* on fds 0-2 like IBCR_FD_STDIO */
	IBCR_FD_UNIX = 16,	/* UNIX socket: aux[0] inode, aux[1] type | */
				/* role << 8 (enum ibcr_sock_role) | shutdown */
				/* << 16 (IBCR_SHUT_*), aux[2] peer inode, aux[3] */
				/* backlog (a listener) or the listener's object */
				/* (IBCR_SOCK_PENDING); path = bound name ("@..." */
				/* abstract); data: struct ibcr_unix */
	IBCR_FD_INET = 17,	/* IP socket: aux[0] inode, aux[1] family | type */
				/* << 8 | role << 16 | protocol << 24 (0: TCP or */
				/* UDP; raw and ICMP ones), aux[2] backlog, */
				/* aux[3] shutdown (1 reading, 2 writing: */
				/* IBCR_SHUT_*); data: local and remote address */
				/* (struct sockaddr_in6 room each), then for UDP */
				/* the datagrams waiting (struct ibcr_dgram); */
				/* options in the SOCKOPTS section */
	IBCR_FD_PTMX = 18,	/* pty master: aux[0] its index at the checkpoint; */
				/* data: struct ibcr_pty, then the output that */
				/* waited for the master's reader */
	IBCR_FD_PTS = 19,	/* pty slave whose master is in the image: aux[0] */
				/* the index, aux[1] the master's object */
	IBCR_FD_EXTERNAL = 20,	/* a descriptor leading outside, as saver */
				/* --external-fd said: data struct ibcr_external */
	IBCR_FD_OPATH = 21,	/* O_PATH descriptor of any kind of file (a */
				/* symlink itself with O_NOFOLLOW): path, mode */
	IBCR_FD_DELDIR = 22,	/* a directory removed while open (or a working */
				/* directory): where it was, mode, times; owner */
				/* in FILEATTRS; made again and removed */
	IBCR_FD_PIDFD = 23,	/* pidfd of a process of the image: data struct */
				/* ibcr_pidfd; opened by its holder */
	IBCR_FD_NETLINK = 30,	/* netlink socket: aux[0] inode, aux[1] type | */
				/* protocol << 8, aux[2] its port id (0: not */
				/* bound), aux[3] destination port id | group */
				/* << 32; data: its groups, u32 bit masks */
};

/* The data of an IBCR_FD_PIDFD object. */
struct ibcr_pidfd {
	int32_t pid;		/* the process it refers to (saved pid): its */
				/* holder, the holder's parent or a child of it */
	uint32_t thread;	/* 1: PIDFD_THREAD (of that main thread) */
};

/* What the restore puts at a descriptor that leads outside (saver --external-fd). */
enum ibcr_ext_action {
	IBCR_EXT_CLOSE = 1,	/* nothing: the descriptor is closed */
	IBCR_EXT_NULL = 2,	/* /dev/null, with the saved access mode and flags */
	IBCR_EXT_INHERIT = 3,	/* restart-loader's own descriptor of that number */
	IBCR_EXT_TTY = 4,	/* restart-loader's controlling terminal */
};

/* The data of an IBCR_FD_EXTERNAL object. */
struct ibcr_external {
	uint32_t action;	/* enum ibcr_ext_action */
	int32_t fd;		/* the descriptor's number in its process */
};

/* A pty pair's terminal state, the data of its IBCR_FD_PTMX object. */
struct ibcr_pty {
	uint32_t iflag, oflag, cflag, lflag;	/* termios, as the C library has it */
	uint8_t line;
	uint8_t pad[3];
	uint8_t cc[32];		/* c_cc (NCCS is 32 in glibc and musl) */
	uint16_t rows, cols, xpixel, ypixel;	/* window size */
	uint32_t locked;	/* the slave is locked (TIOCGPTLCK) */
	uint32_t pending;	/* bytes of output that follow */
};

/*
 * A datagram that waited in a UDP socket: in its FILEOBJS data after the
 * two addresses, one after another, each this header, `len` bytes, zero
 * padding to 8. The restore hands each in again from its sender's
 * address (loader/inject.c).
 */
struct ibcr_dgram {
	uint32_t len;
	uint32_t pad;
	uint8_t from[32];	/* the sender: struct sockaddr_in or sockaddr_in6 */
};

/*
 * A UNIX socket's FILEOBJS data: this header, the peer's name (peer_len
 * bytes, its NUL included), zero padding to 8; a listener's connections
 * not accepted yet (npending u32: their clients' objects, in the queue's
 * order), padding to 8; then what waits in its receive queue, nmsgs
 * records in order: struct ibcr_unix_msg, its descriptors in flight
 * (nfds u32: objects of FILEOBJS, which need no process to hold them),
 * padding to 8, its len bytes, padding to 8. A stream's queue is cut
 * where the kernel's own reads stop: at descriptors, at other credentials.
 */
struct ibcr_unix {
	uint32_t peer_len;
	uint32_t npending;
	uint32_t nmsgs;
	uint32_t flags;		/* IBCR_UNIXF_* */
};

#define IBCR_UNIXF_DELETED 0x1	/* its bound file was deleted: removed again */
				/* once the restored socket is bound */

struct ibcr_unix_msg {
	uint32_t len;
	uint32_t nfds;		/* SCM_RIGHTS */
	int32_t pid;		/* the sender's credentials (SCM_CREDENTIALS) */
	uint32_t uid, gid;
	uint32_t from_len;	/* datagrams: the sender's name's bytes, 0: unnamed */
	char from[112];		/* its sun_path as received (abstract: a NUL first) */
};

/* A socket's shut down directions (sk_shutdown). */
#define IBCR_SHUT_RD 1
#define IBCR_SHUT_WR 2

enum ibcr_sock_role {
	IBCR_SOCK_FRESH = 0,	/* unnamed, unconnected: just the socket */
	IBCR_SOCK_PAIR = 1,	/* UNIX, connected to a peer in the image */
				/* (or to one that is gone: peer inode 0) */
	IBCR_SOCK_LISTEN = 2,	/* bound and listening */
	IBCR_SOCK_BOUND = 3,	/* bound, and connected to a named peer if */
				/* it names one (datagrams) */
	IBCR_SOCK_CLOSED = 4,	/* TCP connection given up (saver --tcp-close): */
				/* a fresh socket, unconnected */
	IBCR_SOCK_REPAIR = 5,	/* TCP connection, taken over with TCP_REPAIR: */
				/* the addresses are followed by struct */
				/* ibcr_tcp, the received bytes not read (inq) */
				/* and the bytes to send (outq) */
	IBCR_SOCK_PENDING = 6,	/* UNIX, connected to a listener (object aux[3]) */
				/* that had not accepted it yet: connected again */
				/* in the listener's queue order */
};

/*
 * A TCP connection's state, as repair mode gives it. The sequence numbers
 * and queue lengths count bytes only: a SYN or FIN it had sent, or a FIN
 * it had received, is left out, and the restore puts it back by what
 * `state` says (restored as established at these numbers, then: connect
 * again for SYN-SENT, shutdown for a FIN sent, the peer's FIN handed in
 * again for one received).
 */
enum ibcr_tcp_state {		/* the kernel's TCP states */
	IBCR_TCP_ESTABLISHED = 1,
	IBCR_TCP_SYN_SENT = 2,
	IBCR_TCP_FIN_WAIT1 = 4,	/* FIN sent, not acknowledged */
	IBCR_TCP_FIN_WAIT2 = 5,	/* FIN sent and acknowledged */
	IBCR_TCP_CLOSE_WAIT = 8,	/* FIN received */
	IBCR_TCP_LAST_ACK = 9,	/* FIN received, then FIN sent */
	IBCR_TCP_CLOSING = 11,	/* FIN sent, then FIN received */
};

struct ibcr_tcp {
	uint32_t snd_seq;	/* after the last byte written (write_seq) */
	uint32_t rcv_seq;	/* after the last byte received (rcv_nxt) */
	uint32_t outq;		/* bytes written, not acknowledged yet */
	uint32_t unsent;	/* of them, not sent yet */
	uint32_t inq;		/* bytes received, not read yet */
	uint32_t mss;
	uint32_t opts;		/* TCPI_OPT_*: timestamps, sack, window scaling */
	uint8_t snd_wscale, rcv_wscale;
	uint8_t state;		/* enum ibcr_tcp_state; 0 (older images): established */
	uint8_t pad;
	uint32_t timestamp;	/* TCP_TIMESTAMP */
	uint32_t snd_wl1, snd_wnd, max_window, rcv_wnd, rcv_wup;	/* TCP_REPAIR_WINDOW */
	uint32_t pad2;
};

/*
 * SOCKOPTS section: image-wide, struct ibcr_sockopts_hdr, nopts records,
 * then data_size bytes of option values. Each record is one option of
 * one socket object (level and name as setsockopt takes them, the value
 * as getsockopt gave it), sorted by object, each object's in the order
 * the restore applies them. Only what differs from a new socket of the
 * same kind is saved (lib/sockopt.c says which options and why).
 */
struct ibcr_sockopts_hdr {
	uint32_t nopts;
	uint32_t pad;
	uint64_t data_size;
	/* struct ibcr_sockopt[nopts], the values */
};

struct ibcr_sockopt {
	uint32_t obj;		/* the socket's index in FILEOBJS */
	int32_t level;		/* SOL_SOCKET, IPPROTO_IP, IPPROTO_TCP, ... */
	int32_t name;		/* SO_KEEPALIVE, TCP_KEEPIDLE, ... */
	uint32_t len;		/* value bytes */
	uint64_t data_off;	/* the value, in the data area */
};

/*
 * NETLOCK section: image-wide, one record. saver --kill leaves the
 * packets of the image's TCP connections (and new connections to its
 * listeners) dropped by an nftables table of its own until the restore
 * has the sockets live again; the loader then deletes the table.
 */
struct ibcr_netlock {
	char table[48];		/* nftables table, family inet; NUL-terminated */
	uint32_t nconns;	/* connections locked */
	uint32_t nlisteners;	/* listening ports locked */
	uint64_t created_ns;	/* CLOCK_REALTIME when the lock was taken */
};

struct ibcr_fobj {
	uint32_t kind;		/* enum ibcr_fd_kind */
	uint32_t flags;		/* open(2) flags as /proc/PID/fdinfo shows */
	uint64_t pos;
	uint64_t ino, dev, size, mtime_ns;	/* identity at checkpoint */
	uint32_t mode;		/* st_mode */
	uint32_t path_off;	/* in the string table */
	uint64_t data_off;	/* bytes it holds (unread pipe data), in */
	uint64_t data_len;	/* the section's data area */
	uint64_t aux[4];	/* per kind, see ibcr_fd_kind; lib/fobj.h packs it */
};

/*
 * FILEATTRS section: image-wide, after FILEDATA, one record per object
 * of FILEOBJS, in its order: what an open file description or its file
 * has beyond struct ibcr_fobj. An image without it has zeros here.
 */
#define IBCR_FATTR_DATA 0x1	/* its bytes are in FILEDATA: data_off, data_len */
#define IBCR_FATTR_OWNER 0x2	/* uid, gid, atime_ns hold the file's */

struct ibcr_fattr {
	uint32_t same_file;	/* DELETED, MEMFD: 1 + index of an earlier object */
				/* that is this very file (it holds the bytes) */
	uint32_t flags;		/* IBCR_FATTR_* */
	uint32_t uid, gid;	/* DELETED, MEMFD: the file's owner */
	uint64_t atime_ns;	/* DELETED, MEMFD: (mtime_ns is in the object) */
	uint64_t data_off;	/* its record in FILEDATA's payload: */
	uint64_t data_len;	/* nextents struct ibcr_extent, then their bytes */
	uint32_t nextents;
	uint32_t data_sum;	/* file_sum() of the record */
	int32_t owner_pid;	/* F_GETOWN_EX: tid, pid or pgid; 0: none */
	uint32_t owner_type;	/* F_OWNER_TID 0, F_OWNER_PID 1, F_OWNER_PGRP 2 */
	uint32_t sig;		/* F_GETSIG: 0 is SIGIO */
	uint32_t lease;		/* F_GETLEASE + 1 (1 read, 2 write), 0: none */
	int32_t async_pid;	/* O_ASYNC: the process and fd whose number its */
	int32_t async_fd;	/* signals name (si_fd), as the saver saw it first */
	uint32_t mode;		/* PTMX: its slave's permission bits (uid, gid: */
				/* its owner, flag OWNER) */
	int32_t ctty_sid;	/* PTMX: the session whose controlling terminal */
	int32_t fg_pgrp;	/* the slave is, and its foreground group; 0: none */
	uint32_t pty_input;	/* PTMX: bytes of input the slave's reader had not */
				/* read (non-canonical), after the pending output */
};

/*
 * FILEDATA section: image-wide, after FILEOBJS, flag CRC_PER_REGION (its
 * data_crc is unused): the records of the files whose bytes the image
 * holds, each 8-byte aligned, as its FILEATTRS record says. A record is
 * the file's data extents (SEEK_DATA, SEEK_HOLE: holes stay holes), then
 * their bytes, extent after extent. It is read a piece at a time, not
 * held in memory: a file may be larger than memory.
 */
struct ibcr_extent {
	uint64_t off, len;
};

struct ibcr_fileobjs_hdr {
	uint32_t nobjs;
	uint32_t strtab_size;
	uint64_t data_size;
	/* struct ibcr_fobj[nobjs], the string table, the data area */
};

/*
 * SYSVSHM section: image-wide, an array of these. The segments mapped by
 * the image's processes; their contents are the page data of the first
 * region that maps each (SHMEM regions with IBCR_VMAF_SYSV, file_ino = id).
 */
#define IBCR_SHM_DEST 0x1	/* marked for removal (IPC_RMID) while attached */

struct ibcr_sysv_shm {
	int32_t id;
	int32_t key;
	uint32_t mode;		/* permission bits */
	uint32_t flags;		/* IBCR_SHM_* */
	uint32_t uid, gid, cuid, cgid;
	uint64_t size;
};

/*
 * SYSVSEM section: image-wide, struct ibcr_sysv_sem_hdr, nsets records,
 * then nvalues u16 semaphore values (GETALL), each set's nsems values
 * from its `first`, sets in order and without gaps. The sets the
 * processes' credentials could use, whether or not they did (nothing in
 * a process says which sets it uses).
 */
struct ibcr_sysv_sem_hdr {
	uint32_t nsets;
	uint32_t nvalues;
	/* struct ibcr_sysv_sem[nsets], uint16_t values[nvalues] */
};

struct ibcr_sysv_sem {
	int32_t id;
	int32_t key;
	uint32_t mode;		/* permission bits */
	uint32_t nsems;
	uint32_t uid, gid, cuid, cgid;
	uint32_t first;		/* its first value in values[] */
	uint32_t pad;
};

/*
 * SYSVMSG section: image-wide, struct ibcr_sysv_msg_hdr, nqueues queue
 * records, nmsgs message records (each queue's nmsgs from its `first`,
 * in queue order, oldest first; queues in order and without gaps), then
 * data_size bytes of message text, each message's `len` bytes at its
 * `data_off`. Chosen like the semaphore sets.
 */
struct ibcr_sysv_msg_hdr {
	uint32_t nqueues;
	uint32_t nmsgs;
	uint64_t data_size;
	/* struct ibcr_sysv_msgq[nqueues], struct ibcr_sysv_msg[nmsgs], data */
};

struct ibcr_sysv_msgq {
	int32_t id;
	int32_t key;
	uint32_t mode;		/* permission bits */
	uint32_t nmsgs;
	uint32_t uid, gid, cuid, cgid;
	uint64_t qbytes;	/* msg_qbytes: the most bytes it may hold */
	uint32_t first;		/* its first message in the message records */
	uint32_t pad;
};

struct ibcr_sysv_msg {
	int64_t mtype;		/* > 0 */
	uint64_t len;		/* bytes of text */
	uint64_t data_off;	/* in the data area */
};

/*
 * BACKING section (image-wide): the files the processes map, each once
 * (by device and inode), with what a restore recognises them by; in a
 * self-contained image (IBCR_HDRF_SELF_CONTAINED) also the regular files
 * they have open, with their contents. struct ibcr_backing_hdr, nfiles
 * records, the string table. The contents, when carried, are a stream of
 * their own: a second BACKING section with flag IBCR_SECF_CRC_PER_REGION
 * (and IBCR_SECF_BLOCKS when compressed), laid out like a PAGES payload,
 * each file's bytes at its data_off, summed like a region (data_sum).
 */
#define IBCR_BACKF_BUILD_ID 0x1	/* build_id[build_id_len]: its ELF build-id */
#define IBCR_BACKF_SHA256 0x2	/* sha256[]: the SHA-256 of its contents */
#define IBCR_BACKF_CONTENTS 0x4	/* its contents are in the image */
#define IBCR_BACKF_MAPPED 0x8	/* a process maps it */
#define IBCR_BACKF_OPEN 0x10	/* a process has it open (self-contained) */

struct ibcr_backing {
	uint64_t ino, dev, size, mtime_ns, ctime_ns;	/* at the checkpoint */
	uint32_t mode;		/* st_mode */
	uint32_t flags;		/* IBCR_BACKF_* */
	uint32_t path_off;	/* in the string table */
	uint32_t build_id_len;
	uint8_t build_id[32];
	uint8_t sha256[32];
	uint64_t data_off;	/* CONTENTS: its bytes in the contents stream */
	uint64_t data_len;	/* (size, rounded up to the page size) */
	uint32_t data_sum;	/* page_sum of those bytes, as a region's */
	uint32_t pad;
};

struct ibcr_backing_hdr {
	uint32_t nfiles;
	uint32_t strtab_size;
	/* struct ibcr_backing[nfiles], string table */
};

/* File header flags. */
#define IBCR_HDRF_SELF_CONTAINED 0x1	/* carries its files (BACKING contents) */

/* FILES section, one per process: its descriptors, sorted by number. */
struct ibcr_fd {
	int32_t fd;
	uint32_t obj;		/* index in FILEOBJS */
	uint32_t cloexec;
	uint32_t pad;
};

/* A file lock the process held: POSIX locks are the process's, flock
 * and OFD locks its open file description's. */
enum ibcr_lock_kind {
	IBCR_LOCK_POSIX = 1,
	IBCR_LOCK_FLOCK = 2,
	IBCR_LOCK_OFD = 3,
};

struct ibcr_lock {
	int32_t fd;		/* a descriptor of the locked file */
	uint32_t kind;		/* enum ibcr_lock_kind */
	uint32_t write;		/* 1: write (exclusive) lock, 0: read (shared) */
	uint32_t pad;
	uint64_t start, end;	/* byte range, end inclusive; UINT64_MAX: to EOF */
};

struct ibcr_files_hdr {
	uint32_t nfds;
	uint32_t nlocks;
	/* struct ibcr_fd[nfds], struct ibcr_lock[nlocks] */
};

/* VMAS section. */
enum ibcr_vma_kind {
	IBCR_VMA_ANON = 1,	/* private anonymous (incl. [heap], [stack]) */
	IBCR_VMA_FILE = 2,	/* file mapping, private or shared */
	IBCR_VMA_SHMEM = 3,	/* shared anonymous memory or SysV segment: */
				/* file_dev and file_ino name the object */
	IBCR_VMA_SPECIAL = 4,	/* kernel-owned: [vdso], [vvar], ... */
	IBCR_VMA_DEVICE = 5,	/* owned by a stage (verbs): not restored */
};

/* VMA flags. */
#define IBCR_VMAF_SHARED 0x1
#define IBCR_VMAF_GROWSDOWN 0x2
#define IBCR_VMAF_HEAP 0x4
#define IBCR_VMAF_STACK 0x8
#define IBCR_VMAF_DELETED 0x10	/* backing file was deleted */
#define IBCR_VMAF_NORESERVE 0x20	/* MAP_NORESERVE (no commit accounting) */
#define IBCR_VMAF_ACCOUNT 0x40	/* charged to commit (was writable once) */
#define IBCR_VMAF_SHMREF 0x80	/* SHMEM: its data is saved with another */
				/* region of the same object (file_dev/ino) */
#define IBCR_VMAF_SYSV 0x100	/* SHMEM: a SysV segment; file_ino is its id */
#define IBCR_VMAF_NAMED 0x200	/* SHMEM: a file (tmpfs or mapped writable */
				/* shared) whose mapped content is saved; */
				/* the region's name is its path */
#define IBCR_VMAF_OBJFILE 0x800	/* FILE with DELETED: a deleted file or memfd */
				/* that is a file object of the image (by */
				/* file_dev, file_ino): mapped from it */
#define IBCR_VMAF_THP 0x400	/* had transparent huge pages (with */
				/* IBCR_MADV_HUGEPAGE: filled so that the */
				/* kernel gives them again) */
#define IBCR_VMAF_COW 0x10000	/* ANON: some of its pages are its parent's, */
				/* shared copy-on-write (COW section) */
#define IBCR_VMAF_COWSRC 0x20000	/* ANON: children share some of its pages */
#define IBCR_VMAF_DROPPABLE 0x40000	/* ANON: MAP_DROPPABLE (6.11): its pages */
				/* may be dropped under memory pressure */

/* madvise state (from smaps VmFlags). */
#define IBCR_MADV_HUGEPAGE 0x1
#define IBCR_MADV_NOHUGEPAGE 0x2
#define IBCR_MADV_DONTDUMP 0x4
#define IBCR_MADV_DONTFORK 0x8
#define IBCR_MADV_WIPEONFORK 0x10
#define IBCR_MADV_MERGEABLE 0x20
#define IBCR_MADV_LOCKED 0x40	/* mlock()ed */

struct ibcr_vma {
	uint64_t start, end;
	uint64_t pgoff;		/* file offset in bytes */
	uint32_t prot;		/* PROT_* */
	uint32_t flags;		/* IBCR_VMAF_* */
	uint32_t kind;		/* enum ibcr_vma_kind */
	uint32_t madv;		/* IBCR_MADV_* */
	uint32_t name_off;	/* path or [name], in the string table */
	uint32_t data_crc;	/* page_sum (XXH64 per page, added) of its page data */
	uint64_t run0, nruns;	/* its runs in the run table */
	uint64_t data_off;	/* its page data, from the PAGES payload start */
	uint64_t data_len;
	uint64_t file_ino, file_dev, file_size;
	union {
		uint64_t file_mtime_ns;	/* FILE: the file's mtime */
		uint64_t file_mode;	/* SHMEM with NAMED: its st_mode */
	};
};

/*
 * COW section, per process, after its VMAS: struct ibcr_cow_hdr, then
 * nregions records, then nruns runs. Each record names a region (flag
 * COW) and the region of the parent process (the process whose pid is
 * this one's ppid; flag COWSRC) where it starts (it may end past it: a
 * heap grows), and its runs, all within both regions:
 * the pages that were the very same physical page in both, which the
 * region's own page data does not hold. The region's other pages are
 * its stored runs or were not there (zero).
 */
struct ibcr_cow_hdr {
	uint32_t nregions;
	uint32_t pad;
	uint64_t nruns;
	/* struct ibcr_cow_region[nregions], struct ibcr_run[nruns] */
};

struct ibcr_cow_region {
	uint32_t vma;		/* index in this process's VMAS */
	uint32_t src;		/* index in the parent's VMAS */
	uint64_t run0, nruns;	/* its runs in this section's runs */
};

/*
 * PAGESUMS section, per process with uncompressed page data, after its
 * VMAS: the page_sum of every `chunk` bytes of each region's data, so
 * that a restore which fills memory while the program runs again
 * (restart-loader --lazy) checks each piece before it puts it in. Sum k
 * of a region covers its data [k * chunk, (k + 1) * chunk), cut at its
 * end, its pages' seeds their indices in the region's data as for
 * data_crc, so a region's sums add up to its data_crc.
 */
struct ibcr_pagesums_hdr {
	uint32_t chunk;		/* a power of two, a multiple of the page size */
	uint32_t pad;
	uint64_t nsums;
	/* uint32_t sums[nsums]: region after region (those with data, in */
	/* VMAS order), ceil(data_len / chunk) each */
};

#define IBCR_PAGESUMS_CHUNK (64u << 10)

/* A run of stored pages: [addr, addr + npages * page_size). */
struct ibcr_run {
	uint64_t addr;
	uint64_t npages;
};

struct ibcr_vmas_hdr {
	uint32_t nvmas;
	uint32_t strtab_size;
	uint64_t nruns;
	/* struct ibcr_vma[nvmas], struct ibcr_run[nruns], string table */
};

#endif
