/* SPDX-License-Identifier: MIT */
/*
 * Internal to libibcr-verbs.so: the virtual objects handed to the
 * application, the shadow state recorded for a rebuild, the call gate used
 * to quiesce, and the small lock-free hash tables used for translation.
 * See docs/verbs.md for the design.
 */
#ifndef IBCR_VERBS_SHIM_H
#define IBCR_VERBS_SHIM_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>

#include "verbs_abi.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------ real */

/* The real libibverbs entry points (dlvsym RTLD_NEXT). */
struct real_fns {
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	const char *(*get_device_name)(struct ibv_device *);
	__be64 (*get_device_guid)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
	int (*query_port)(struct ibv_context *, uint8_t, void *);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
	int (*query_pkey)(struct ibv_context *, uint8_t, int, __be16 *);
	int (*get_pkey_index)(struct ibv_context *, uint8_t, __be16);
	int (*query_gid_ex)(struct ibv_context *, uint32_t, uint32_t,
			    struct ibv_gid_entry *, uint32_t, size_t);
	ssize_t (*query_gid_table)(struct ibv_context *, struct ibv_gid_entry *,
				   size_t, uint32_t, size_t);
	int (*query_gid_type)(struct ibv_context *, uint8_t, unsigned int, void *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	struct ibv_mr *(*reg_mr_iova)(struct ibv_pd *, void *, size_t, uint64_t, int);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *, void *, size_t, uint64_t,
				       unsigned int);
	int (*dereg_mr)(struct ibv_mr *);
	int (*rereg_mr)(struct ibv_mr *, int, struct ibv_pd *, void *, size_t, int);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *);
	int (*destroy_comp_channel)(struct ibv_comp_channel *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *,
				    struct ibv_comp_channel *, int);
	int (*resize_cq)(struct ibv_cq *, int);
	int (*destroy_cq)(struct ibv_cq *);
	int (*get_cq_event)(struct ibv_comp_channel *, struct ibv_cq **, void **);
	void (*ack_cq_events)(struct ibv_cq *, unsigned int);
	struct ibv_srq *(*create_srq)(struct ibv_pd *, struct ibv_srq_init_attr *);
	int (*modify_srq)(struct ibv_srq *, struct ibv_srq_attr *, int);
	int (*query_srq)(struct ibv_srq *, struct ibv_srq_attr *);
	int (*destroy_srq)(struct ibv_srq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*query_qp)(struct ibv_qp *, struct ibv_qp_attr *, int,
			struct ibv_qp_init_attr *);
	int (*destroy_qp)(struct ibv_qp *);
	struct ibv_ah *(*create_ah)(struct ibv_pd *, struct ibv_ah_attr *);
	int (*destroy_ah)(struct ibv_ah *);
	int (*init_ah_from_wc)(struct ibv_context *, uint8_t, struct ibv_wc *,
			       struct ibv_grh *, struct ibv_ah_attr *);
	int (*attach_mcast)(struct ibv_qp *, const union ibv_gid *, uint16_t);
	int (*detach_mcast)(struct ibv_qp *, const union ibv_gid *, uint16_t);
	int (*get_async_event)(struct ibv_context *, struct ibv_async_event *);
	void (*ack_async_event)(struct ibv_async_event *);
	int (*query_ece)(struct ibv_qp *, struct ibv_ece *);
	int (*set_ece)(struct ibv_qp *, struct ibv_ece *);
	int (*query_qp_data_in_order)(struct ibv_qp *, enum ibv_wr_opcode, uint32_t);
	int (*resolve_eth_l2_from_gid)(struct ibv_context *, struct ibv_ah_attr *,
				       uint8_t *, uint16_t *);
	struct ibv_qp_ex *(*qp_to_qp_ex)(struct ibv_qp *);
};

extern HIDDEN struct real_fns R;

/* ---------------------------------------------------------- hash tables */

/*
 * Open addressing, linear probing, 32-bit keys. One writer at a time (under
 * a lock held by the caller), readers lock-free: a slot's value is written
 * before its key (release), readers load the key (acquire), the value, and
 * the key again. Grown tables are published by pointer; the old ones are
 * kept on a retire list and freed only when no reader can be running
 * (quiesced).
 */
struct hslot {
	uint64_t key;	/* 0 empty, HT_TOMB deleted, else key + 1 */
	uint64_t val;
};
struct htab_arr {
	uint32_t cap;	/* power of two */
	uint32_t used;	/* live + tombstones */
	struct htab_arr *retired;
	struct hslot s[];
};
struct htab {
	struct htab_arr *a;
	uint32_t live;
};
#define HT_TOMB UINT64_MAX

HIDDEN void ht_put(struct htab *h, uint32_t key, uint64_t val);
HIDDEN void ht_del(struct htab *h, uint32_t key);
HIDDEN void ht_clear(struct htab *h);
HIDDEN void ht_reap(struct htab *h);	/* free retired arrays (quiesced only) */

static inline uint32_t ht_hash(uint32_t k)
{
	return (k * 0x9E3779B1u) ^ (k >> 16);
}

/* Returns 1 and *val when found. */
static inline int ht_get(const struct htab *h, uint32_t key, uint64_t *val)
{
	const struct htab_arr *a = __atomic_load_n(&h->a, __ATOMIC_ACQUIRE);
	uint64_t want = (uint64_t)key + 1;
	uint32_t i, m;

	if (!a)
		return 0;
	m = a->cap - 1;
	for (i = ht_hash(key) & m;; i = (i + 1) & m) {
		uint64_t k = __atomic_load_n(&a->s[i].key, __ATOMIC_ACQUIRE);
		if (k == want) {
			uint64_t v = __atomic_load_n(&a->s[i].val, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&a->s[i].key, __ATOMIC_RELAXED) != want)
				continue;
			*val = v;
			return 1;
		}
		if (k == 0)
			return 0;
	}
}

/* ------------------------------------------------------------- objects */

struct sctx;
struct spd;
struct scq;
struct sqp;
struct ssrq;
struct schan;

struct list {
	struct list *prev, *next;
};

/* An address of a port as the application knows it (GID or LID). */
struct vaddr {
	uint8_t kind;		/* 1 gid, 2 lid */
	uint8_t port;
	uint16_t lid;
	union ibv_gid gid;
};

#define SHIM_MAX_GIDS 16
#define SHIM_MAX_PORTS 4
struct pinfo {
	uint16_t lid_app, lid_cur;
	int ngid;
	struct {
		uint32_t idx;
		union ibv_gid app, cur;
	} gid[SHIM_MAX_GIDS];
};

/* What one peer device (as addressed by the application) maps to now. */
struct rdev {
	struct rdev *next;
	int naddr;
	struct {
		struct vaddr app, cur;
	} addr[SHIM_MAX_GIDS * 2];
	struct htab qpn;	/* app qpn -> current qpn */
	struct htab rkey;	/* app rkey -> current rkey */
};

/* A test-and-test-and-set spinlock, inline (short critical sections). */
typedef volatile int spin_t;
static inline void spin_init(spin_t *l)
{
	*l = 0;
}
static inline void spin_lock(spin_t *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (*l)
			__builtin_ia32_pause();
}
static inline void spin_unlock(spin_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* Posted receives not yet completed: a ring, sized by the queue depth. */
struct rslot {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad;
	struct ibv_sge sge[];
};
struct rring {
	spin_t lock;
	uint32_t head, count, cap, max_sge;
	size_t stride;
	char *buf;
};

struct sctx {
	/* first: vx.context is what the application holds, an extended
	 * context whose operations are the shim's (extended.c) */
	struct verbs_context vx;
	struct list link;
	struct ibv_context *real;
	struct ibv_device *dev;
	char name[64];
	int extra_cmd_fd, extra_async_fd;	/* real fds when not the app's */
	int async_flags;			/* fcntl flags of async fd */
	int nports;
	struct pinfo port[SHIM_MAX_PORTS];
	struct htab qtab;	/* current real qpn -> struct sqp * */
	struct htab lkey;	/* app lkey -> current lkey (after a rebuild) */
	pthread_mutex_t async_lock;
};

struct spd {
	struct ibv_pd v;
	struct list link;
	struct ibv_pd *real;
	struct sctx *ctx;
};

struct smr {
	struct ibv_mr v;
	struct list link;
	struct ibv_mr *real;
	struct spd *pd;
	uint64_t iova;
	unsigned int access;
	int how;		/* 0 reg_mr, 1 iova, 2 iova2 */
};

struct schan {
	struct ibv_comp_channel v;
	struct list link;
	struct ibv_comp_channel *real;
	struct sctx *ctx;
	int extra_fd;		/* real fd when not the app's */
	int fd_flags;
	int switch_pending;	/* stand-in still at v.fd until pending drains */
	int pend_wr;		/* write end of the shim's stand-in pipe, or -1 */
	pthread_mutex_t rd_lock;	/* one reader of the real fd at a time */
	int npend, cappend;
	struct scq **pend;	/* drained completion events, oldest first */
};

struct scq {
	union {			/* first: what the application holds */
		struct ibv_cq v;
		struct ibv_cq_ex vx;	/* made by ibv_create_cq_ex */
	};
	int ex;
	struct ibv_wc ex_wc;	/* an extended CQ's current completion */
	struct list link;
	struct ibv_cq *real;
	struct sctx *ctx;
	struct schan *chan;
	int cqe_req;
	int comp_vector;
	int (*rpoll)(struct ibv_cq *, int, struct ibv_wc *);
	/* shadow queue: completions drained at quiesce, delivered first */
	spin_t lock;
	volatile int shadow_n;
	int shadow_head, shadow_cap;
	struct ibv_wc *shadow;
	int armed, solicited;
	uint32_t ev_got, ev_acked, ev_old;
	uint32_t async_unacked, async_old;
};

struct ssrq {
	struct ibv_srq v;
	struct list link;
	struct ibv_srq *real;
	struct spd *pd;
	struct sctx *ctx;
	struct ibv_srq_attr attr;	/* max_wr, max_sge, srq_limit */
	int (*rpost)(struct ibv_srq *, struct ibv_recv_wr *, struct ibv_recv_wr **);
	struct rring ring;
	uint32_t async_unacked, async_old;
};

struct qrec {
	int mask;
	struct ibv_qp_attr attr;
};

struct wrbatch;
struct sqp {
	union {
		struct ibv_qp v;
		struct ibv_qp_ex vqx;	/* made with send operations (wr.c) */
	};
	struct wrbatch *wrb;	/* its ibv_wr_* requests, else NULL */
	struct list link;
	struct ibv_qp *real;
	struct sctx *ctx;
	struct spd *pd;
	struct scq *scq, *rcq;
	struct ssrq *srq;
	struct ibv_qp_init_attr init;	/* as created (virtual pointers) */
	int (*rpost_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);
	int (*rpost_recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **);
	int cur_state;
	struct qrec rec[IBV_QPS_ERR + 1];
	/* connected QPs: who is at the other end, as the app named it */
	int has_remote;
	struct vaddr my_addr, remote_addr;
	uint32_t remote_qpn;
	struct rdev *rdev;
	/* quiesce accounting */
	uint64_t sends_posted, sends_done;
	int tail_unsig;
	int errored;
	struct rring ring;	/* own receive queue (no SRQ) */
	uint32_t async_unacked, async_old;
};

struct sah {
	struct ibv_ah v;
	struct list link;
	struct ibv_ah *real;
	struct spd *pd;
	struct ibv_ah_attr attr;	/* as the app gave it */
	struct rdev *rdev;
};

/* ------------------------------------------------------------ globals */

struct shim {
	pthread_mutex_t lock;	/* lists and control object */
	struct list ctxs, pds, mrs, chans, cqs, srqs, qps, ahs;
	struct rdev *rdevs;
	struct htab rev_qpn;	/* current peer qpn -> app qpn (UD src_qp) */
	pthread_t helper;
	int helper_started;
	int wake[2];		/* the helper's wake pipe (verbs_abi.h) */
	int translating;	/* a rebuild happened: translate every WR */
	uint64_t epoch_rebuilt;
	uint64_t restart_start_ns;
	int debug;
	char rdv_default[512];
	uint64_t quiesce_timeout_ms;
	int last_cmd;
	struct {		/* UD targets that never published */
		struct vaddr a;
		uint32_t qpn;
	} ud_neg[64];
	int n_ud_neg;
};
extern HIDDEN struct shim S;
extern EXPORT struct ibcr_verbs_control ibcr_verbs_control;

/* ----------------------------------------------------------- the gate */

/*
 * Every call on a virtual object enters the gate. g_mode: 0 running (fast
 * path), 1 sends quiesced (post_send and control calls wait; polls, receive
 * posts and notifications go on, with locks), 2 closed. A thread marks
 * itself in flight with a plain store to its own slot; the quiescer uses
 * membarrier(2) (or, if unavailable, both sides use full fences).
 */
struct tslot {
	volatile uint32_t fast;
	volatile uint32_t slow;
	int used;
	struct tslot *next;
};
extern HIDDEN __thread struct tslot *t_slot __attribute__((tls_model("initial-exec")));
extern HIDDEN __thread int t_helper __attribute__((tls_model("initial-exec")));
extern HIDDEN volatile int g_mode;
extern HIDDEN int g_need_fence;

HIDDEN struct tslot *slot_register(void);
HIDDEN int gate_slow(struct tslot *s, int allow1);

#define GATE_FAST 0
#define GATE_SLOW 1

static inline int gate_enter(int allow1)
{
	struct tslot *s = t_slot;

	if (unlikely(!s))
		s = slot_register();
	s->fast++;
	if (unlikely(g_need_fence))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__asm__ __volatile__("" ::: "memory");
	if (likely(g_mode == 0) || s->fast > 1)
		return GATE_FAST;
	s->fast--;
	return gate_slow(s, allow1);
}

static inline void gate_leave(int how)
{
	struct tslot *s = t_slot;

	__asm__ __volatile__("" ::: "memory");
	if (how == GATE_FAST)
		__atomic_store_n(&s->fast, s->fast - 1, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&s->slow, s->slow - 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ helpers */

extern HIDDEN struct ibv_context_ops shim_ops;
HIDDEN int shim_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
HIDDEN int shim_req_notify_cq(struct ibv_cq *cq, int solicited_only);
HIDDEN int shim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad);
HIDDEN int shim_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad);
HIDDEN int shim_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad);

/* An object is virtual iff its context is one of ours. */
static inline int is_vctx(const struct ibv_context *c)
{
	return c && c->ops.poll_cq == shim_poll_cq;
}
#define IS_V(obj) ((obj) && is_vctx((obj)->context))

#define list_for(pos, head) for (pos = (head)->next; pos != (head); pos = pos->next)
#define container(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
HIDDEN void list_init(struct list *l);
HIDDEN void list_add_tail(struct list *l, struct list *n);
HIDDEN void list_del(struct list *n);

HIDDEN void shim_init(void);
HIDDEN void ext_context_init(struct sctx *c);	/* extended.c */
/* wr.c: ibv_create_qp_ex with send operations, the ibv_wr_* API */
HIDDEN struct ibv_qp *shim_create_qp_ex(struct ibv_context *context,
					struct ibv_qp_init_attr_ex *ax);
HIDDEN void wr_batch_free(struct wrbatch *b);
HIDDEN void dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
HIDDEN void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
HIDDEN void ctl_update_fds(void);	/* S.lock held */
HIDDEN int ctl_add_fd(int *n, int fd, uint32_t kind);	/* from ctl_update_fds */
HIDDEN void helper_start(void);
HIDDEN uint64_t now_ns(int clock);
HIDDEN void sleep_ms(unsigned ms);
HIDDEN void futex_wake_all(volatile int *addr);
HIDDEN void futex_wait(volatile int *addr, int val, unsigned ms);

/* rings */
HIDDEN int ring_init(struct rring *r, uint32_t depth, uint32_t max_sge);
HIDDEN void ring_free(struct rring *r);
HIDDEN int ring_push(struct rring *r, const struct ibv_recv_wr *wr);
HIDDEN void ring_truncate(struct rring *r, uint32_t count);
HIDDEN int ring_done(struct rring *r, uint64_t wr_id, int head_only);
static inline struct rslot *ring_at(struct rring *r, uint32_t i)
{
	return (struct rslot *)(r->buf + (size_t)((r->head + i) & (r->cap - 1)) * r->stride);
}

/* ring_push's common case, inline (lock held). */
static inline int ring_push_fast(struct rring *r, const struct ibv_recv_wr *wr)
{
	struct rslot *s;
	int i;

	if (unlikely(r->count == r->cap || wr->num_sge < 0 ||
		     (uint32_t)wr->num_sge > r->max_sge))
		return ring_push(r, wr);
	s = ring_at(r, r->count);
	s->wr_id = wr->wr_id;
	s->num_sge = (uint32_t)wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		s->sge[i] = wr->sg_list[i];
	r->count++;
	return 0;
}

/* ring_done's common case: the head completed (takes the lock). */
static inline int ring_done_fast(struct rring *r, uint64_t wr_id, int head_only)
{
	spin_lock(&r->lock);
	if (likely(r->count && ring_at(r, 0)->wr_id == wr_id)) {
		r->head = (r->head + 1) & (r->cap - 1);
		r->count--;
		spin_unlock(&r->lock);
		return 1;
	}
	spin_unlock(&r->lock);
	return ring_done(r, wr_id, head_only);
}

/* data path pieces used by the helper */
HIDDEN void wc_account(struct scq *cq, struct ibv_wc *wc, int n);
HIDDEN int cq_drain_locked(struct scq *cq);
HIDDEN int repost_ring(struct rring *r, void *obj, int srq);

/* translation */
static inline uint32_t xl_lkey(struct sctx *c, uint32_t k)
{
	uint64_t v;
	return ht_get(&c->lkey, k, &v) ? (uint32_t)v : k;
}
HIDDEN struct rdev *rdev_find(const struct vaddr *a);
HIDDEN int xl_ah_attr(struct ibv_ah_attr *at, struct rdev **rd);
HIDDEN uint32_t ud_remote_qpn(struct sah *ah, uint32_t qpn);
HIDDEN struct ibv_ah *ud_real_ah(struct sah *ah);

/* checkpoint side (ckpt.c) */
HIDDEN void *helper_main(void *arg);
HIDDEN void addr_of_port(struct sctx *c, int port, int sgid_index, int global,
			 struct vaddr *out);
HIDDEN void capture_ports(struct sctx *c, int app);
HIDDEN void qp_record_modify(struct sqp *q, struct ibv_qp_attr *attr, int mask);
HIDDEN const char *rdv_dir(void);

/* rdmacm.c: librdmacm event channels (S.lock held) */
HIDDEN void cm_update_fds(int *n);
HIDDEN int cm_check_idle(char *why, size_t n);	/* -1: a CM id is alive */
HIDDEN void cm_record_flags(void);
HIDDEN int cm_rebuild(char *why, size_t n);

/* epoll.c: the process's epoll entries on the shim's fds, after a restart */
HIDDEN int epoll_readd(int fd);	/* -1: said on stderr */

#endif
