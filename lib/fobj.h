/* SPDX-License-Identifier: MIT */
/*
 * What struct ibcr_fobj's aux[4] words hold, per file kind: the one
 * place that packs and unpacks them, for the saver, the loader and
 * ckpt-info alike. The bytes on disk are lib/image.h's (enum
 * ibcr_fd_kind says the same in words); these only name them. A getter
 * of one kind used on an object of another reads that kind's bytes as
 * if they were this one's: callers check o->kind first.
 */
#ifndef IBCR_FOBJ_H
#define IBCR_FOBJ_H

#include <stdint.h>

#include "image.h"

/* The byte at bit `shift` of a word: the packed socket fields. */
static inline uint32_t fobj_byte(uint64_t w, unsigned shift)
{
	return (uint32_t)(w >> shift) & 0xff;
}

/* ---- PIPE, FIFO: aux[0] the pipe's inode, aux[1] its size ---------------- */

static inline uint64_t fobj_pipe_ino(const struct ibcr_fobj *o) { return o->aux[0]; }
static inline void fobj_pipe_set_ino(struct ibcr_fobj *o, uint64_t ino) { o->aux[0] = ino; }
static inline uint64_t fobj_pipe_size(const struct ibcr_fobj *o) { return o->aux[1]; }
static inline void fobj_pipe_set_size(struct ibcr_fobj *o, uint64_t size) { o->aux[1] = size; }

/* ---- EVENTFD: aux[0] the count, aux[1] 1 = EFD_SEMAPHORE ------------------ */

static inline uint64_t fobj_eventfd_count(const struct ibcr_fobj *o) { return o->aux[0]; }
static inline int fobj_eventfd_semaphore(const struct ibcr_fobj *o) { return o->aux[1] != 0; }

static inline void fobj_eventfd_set(struct ibcr_fobj *o, uint64_t count, uint64_t semaphore)
{
	o->aux[0] = count;
	o->aux[1] = semaphore;
}

/*
 * ---- TIMERFD: aux[0] clock id | settime flags << 32, aux[1] unread
 * expirations, aux[2] interval ns, aux[3] ns left (TFD_TIMER_ABSTIME: the
 * deadline on that clock); 0 = disarmed ------------------------------------
 */

static inline int fobj_timerfd_clock(const struct ibcr_fobj *o) { return (int)(uint32_t)o->aux[0]; }
static inline int fobj_timerfd_flags(const struct ibcr_fobj *o) { return (int)(o->aux[0] >> 32); }
static inline uint64_t fobj_timerfd_ticks(const struct ibcr_fobj *o) { return o->aux[1]; }
static inline uint64_t fobj_timerfd_interval(const struct ibcr_fobj *o) { return o->aux[2]; }
static inline uint64_t fobj_timerfd_value(const struct ibcr_fobj *o) { return o->aux[3]; }

static inline void fobj_timerfd_set(struct ibcr_fobj *o, uint64_t clock, uint64_t flags,
				    uint64_t ticks, uint64_t interval_ns, uint64_t value_ns)
{
	o->aux[0] = clock | flags << 32;
	o->aux[1] = ticks;
	o->aux[2] = interval_ns;
	o->aux[3] = value_ns;
}

/* ---- SIGNALFD: aux[0] the mask, bit n-1 = signal n ------------------------ */

static inline uint64_t fobj_signalfd_mask(const struct ibcr_fobj *o) { return o->aux[0]; }
static inline void fobj_signalfd_set_mask(struct ibcr_fobj *o, uint64_t mask) { o->aux[0] = mask; }

/*
 * ---- EPOLL: aux[0] the pid whose fd numbers the interest list uses,
 * aux[1] its entries (3 u64 each in the data) ------------------------------
 */

static inline int64_t fobj_epoll_pid(const struct ibcr_fobj *o) { return (int64_t)o->aux[0]; }
static inline uint64_t fobj_epoll_entries(const struct ibcr_fobj *o) { return o->aux[1]; }

static inline void fobj_epoll_set(struct ibcr_fobj *o, int64_t pid, uint64_t entries)
{
	o->aux[0] = (uint64_t)pid;
	o->aux[1] = entries;
}

/* ---- INOTIFY: aux[0] the watches in the data ------------------------------ */

static inline uint64_t fobj_inotify_watches(const struct ibcr_fobj *o) { return o->aux[0]; }
static inline void fobj_inotify_set_watches(struct ibcr_fobj *o, uint64_t n) { o->aux[0] = n; }

/* ---- MEMFD: aux[0] its seals (F_GET_SEALS) --------------------------------- */

static inline uint64_t fobj_memfd_seals(const struct ibcr_fobj *o) { return o->aux[0]; }
static inline void fobj_memfd_set_seals(struct ibcr_fobj *o, uint64_t seals) { o->aux[0] = seals; }

/* ---- PTMX: aux[0] its index; PTS: aux[0] the index, aux[1] the master's object */

static inline uint64_t fobj_pty_index(const struct ibcr_fobj *o) { return o->aux[0]; }
static inline void fobj_pty_set_index(struct ibcr_fobj *o, uint64_t idx) { o->aux[0] = idx; }
static inline uint64_t fobj_pts_master(const struct ibcr_fobj *o) { return o->aux[1]; }
static inline void fobj_pts_set_master(struct ibcr_fobj *o, uint64_t k) { o->aux[1] = k; }

/*
 * ---- sockets: UNIX, INET, NETLINK: aux[0] the socket's inode. The saver
 * first takes every socket for a UNIX one with aux[1] 0 ("not settled
 * yet") until sockets_finish says what it is. ------------------------------
 */

static inline uint64_t fobj_sock_ino(const struct ibcr_fobj *o) { return o->aux[0]; }
static inline void fobj_sock_set_ino(struct ibcr_fobj *o, uint64_t ino) { o->aux[0] = ino; }
static inline int fobj_sock_settled(const struct ibcr_fobj *o) { return o->aux[1] != 0; }
/* one that turned out to lead outside (kind STDIO) */
static inline void fobj_sock_set_settled(struct ibcr_fobj *o) { o->aux[1] = 1; }

/*
 * UNIX: aux[1] type | role << 8 (enum ibcr_sock_role) | shutdown << 16
 * (IBCR_SHUT_*), aux[2] the peer's inode, aux[3] the backlog (a listener)
 * or the listener's object (IBCR_SOCK_PENDING).
 */
static inline int fobj_unix_type(const struct ibcr_fobj *o) { return (int)fobj_byte(o->aux[1], 0); }
static inline int fobj_unix_role(const struct ibcr_fobj *o) { return (int)fobj_byte(o->aux[1], 8); }
static inline int fobj_unix_shut(const struct ibcr_fobj *o) { return (int)((o->aux[1] >> 16) & 3); }
static inline uint64_t fobj_unix_peer(const struct ibcr_fobj *o) { return o->aux[2]; }
static inline uint64_t fobj_unix_backlog(const struct ibcr_fobj *o) { return o->aux[3]; }
static inline uint64_t fobj_unix_listener(const struct ibcr_fobj *o) { return o->aux[3]; }

static inline void fobj_unix_set(struct ibcr_fobj *o, uint64_t type, uint64_t role,
				 uint64_t shut, uint64_t peer, uint64_t backlog_or_listener)
{
	o->aux[1] = type | role << 8 | shut << 16;
	o->aux[2] = peer;
	o->aux[3] = backlog_or_listener;
}

/*
 * INET: aux[1] family | type << 8 | role << 16 | protocol << 24 (0: TCP
 * or UDP), aux[2] the backlog, aux[3] shutdown (IBCR_SHUT_*).
 */
static inline int fobj_inet_family(const struct ibcr_fobj *o) { return (int)fobj_byte(o->aux[1], 0); }
static inline int fobj_inet_type(const struct ibcr_fobj *o) { return (int)fobj_byte(o->aux[1], 8); }
static inline int fobj_inet_role(const struct ibcr_fobj *o) { return (int)fobj_byte(o->aux[1], 16); }
static inline int fobj_inet_proto(const struct ibcr_fobj *o) { return (int)fobj_byte(o->aux[1], 24); }
static inline uint64_t fobj_inet_backlog(const struct ibcr_fobj *o) { return o->aux[2]; }
static inline uint64_t fobj_inet_shut(const struct ibcr_fobj *o) { return o->aux[3]; }

static inline void fobj_inet_set(struct ibcr_fobj *o, uint64_t family, uint64_t type,
				 uint64_t role, uint64_t backlog, uint64_t shut)
{
	o->aux[1] = family | type << 8 | role << 16;
	o->aux[2] = backlog;
	o->aux[3] = shut;
}

/* raw and ICMP sockets: the protocol the socket was made with */
static inline void fobj_inet_set_proto(struct ibcr_fobj *o, uint64_t proto)
{
	o->aux[1] |= (proto & 0xff) << 24;
}

/*
 * NETLINK: aux[1] type | protocol << 8, aux[2] its port id (0: not
 * bound), aux[3] the destination port id | group << 32.
 */
static inline int fobj_netlink_type(const struct ibcr_fobj *o) { return (int)fobj_byte(o->aux[1], 0); }
static inline int fobj_netlink_proto(const struct ibcr_fobj *o) { return (int)fobj_byte(o->aux[1], 8); }
static inline uint32_t fobj_netlink_port(const struct ibcr_fobj *o) { return (uint32_t)o->aux[2]; }
static inline uint32_t fobj_netlink_dport(const struct ibcr_fobj *o) { return (uint32_t)o->aux[3]; }
static inline uint32_t fobj_netlink_dgroups(const struct ibcr_fobj *o) { return (uint32_t)(o->aux[3] >> 32); }

static inline void fobj_netlink_set(struct ibcr_fobj *o, uint64_t type, uint64_t proto,
				    uint32_t port, uint32_t dport, uint32_t dgroups)
{
	o->aux[1] = type | proto << 8;
	o->aux[2] = port;
	o->aux[3] = dport | (uint64_t)dgroups << 32;
}

#endif
