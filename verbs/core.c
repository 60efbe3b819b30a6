/* SPDX-License-Identifier: MIT */
/*
 * libibcr-verbs.so core: the control object, the real entry points, the
 * call gate, hash tables, receive rings, small utilities.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

EXPORT struct ibcr_verbs_control ibcr_verbs_control = {
	.magic = IBCR_VERBS_MAGIC,
	.abi = IBCR_VERBS_ABI,
	.size = sizeof(struct ibcr_verbs_control),
	.state = IBCR_VSTATE_RUNNING,
	.wake_fd = -1,
};

HIDDEN struct real_fns R;
HIDDEN struct shim S = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};
HIDDEN __thread struct tslot *t_slot __attribute__((tls_model("initial-exec")));
HIDDEN __thread int t_helper __attribute__((tls_model("initial-exec")));
HIDDEN volatile int g_mode;
HIDDEN int g_need_fence;

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
HIDDEN struct tslot *g_slots;
static pthread_key_t slot_key;

/* ------------------------------------------------------------ utilities */

void list_init(struct list *l)
{
	l->prev = l->next = l;
}

void list_add_tail(struct list *l, struct list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

uint64_t now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void futex_wake_all(volatile int *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

void futex_wait(volatile int *addr, int val, unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void vlog(const char *fmt, va_list ap)
{
	char buf[1024];
	int n;

	n = snprintf(buf, sizeof buf, "ibcr-verbs: ");
	vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	n = (int)strlen(buf);
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0)
		return;
}

void dbg(const char *fmt, ...)
{
	char f[512];
	va_list ap;

	if (!S.debug)
		return;
	/* when, and who: the races this is for are between processes */
	snprintf(f, sizeof f, "[%llu ms pid %d] %s",
		 (unsigned long long)(now_ns(CLOCK_REALTIME) / 1000000 % 1000000), (int)getpid(), fmt);
	va_start(ap, fmt);
	vlog(f, ap);	// NOLINT(clang-diagnostic-format-nonliteral): fmt checked at the callers
	va_end(ap);
}

void warnx_(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------- real functions */

static void *real_sym(const char *name, const char *version)
{
	void *p = NULL;

	if (version)
		p = dlvsym(RTLD_NEXT, name, version);
	if (!p)
		p = dlsym(RTLD_NEXT, name);
	return p;
}

#define RS(field, name, ver) (*(void **)&R.field = real_sym(name, ver))

static void resolve_real(void)
{
	RS(get_device_list, "ibv_get_device_list", "IBVERBS_1.1");
	RS(free_device_list, "ibv_free_device_list", "IBVERBS_1.1");
	RS(get_device_name, "ibv_get_device_name", "IBVERBS_1.1");
	RS(get_device_guid, "ibv_get_device_guid", "IBVERBS_1.1");
	RS(open_device, "ibv_open_device", "IBVERBS_1.1");
	RS(close_device, "ibv_close_device", "IBVERBS_1.1");
	RS(query_device, "ibv_query_device", "IBVERBS_1.1");
	RS(query_port, "ibv_query_port", "IBVERBS_1.1");
	RS(query_gid, "ibv_query_gid", "IBVERBS_1.1");
	RS(query_pkey, "ibv_query_pkey", "IBVERBS_1.1");
	RS(get_pkey_index, "ibv_get_pkey_index", "IBVERBS_1.5");
	RS(query_gid_ex, "_ibv_query_gid_ex", "IBVERBS_1.11");
	RS(query_gid_table, "_ibv_query_gid_table", "IBVERBS_1.11");
	RS(query_gid_type, "ibv_query_gid_type", "IBVERBS_PRIVATE_34");
	RS(alloc_pd, "ibv_alloc_pd", "IBVERBS_1.1");
	RS(dealloc_pd, "ibv_dealloc_pd", "IBVERBS_1.1");
	RS(reg_mr, "ibv_reg_mr", "IBVERBS_1.1");
	RS(reg_mr_iova, "ibv_reg_mr_iova", "IBVERBS_1.7");
	RS(reg_mr_iova2, "ibv_reg_mr_iova2", "IBVERBS_1.8");
	RS(dereg_mr, "ibv_dereg_mr", "IBVERBS_1.1");
	RS(rereg_mr, "ibv_rereg_mr", "IBVERBS_1.1");
	RS(create_comp_channel, "ibv_create_comp_channel", "IBVERBS_1.0");
	RS(destroy_comp_channel, "ibv_destroy_comp_channel", "IBVERBS_1.0");
	RS(create_cq, "ibv_create_cq", "IBVERBS_1.1");
	RS(resize_cq, "ibv_resize_cq", "IBVERBS_1.1");
	RS(destroy_cq, "ibv_destroy_cq", "IBVERBS_1.1");
	RS(get_cq_event, "ibv_get_cq_event", "IBVERBS_1.1");
	RS(ack_cq_events, "ibv_ack_cq_events", "IBVERBS_1.1");
	RS(create_srq, "ibv_create_srq", "IBVERBS_1.1");
	RS(modify_srq, "ibv_modify_srq", "IBVERBS_1.1");
	RS(query_srq, "ibv_query_srq", "IBVERBS_1.1");
	RS(destroy_srq, "ibv_destroy_srq", "IBVERBS_1.1");
	RS(create_qp, "ibv_create_qp", "IBVERBS_1.1");
	RS(modify_qp, "ibv_modify_qp", "IBVERBS_1.1");
	RS(query_qp, "ibv_query_qp", "IBVERBS_1.1");
	RS(destroy_qp, "ibv_destroy_qp", "IBVERBS_1.1");
	RS(create_ah, "ibv_create_ah", "IBVERBS_1.1");
	RS(destroy_ah, "ibv_destroy_ah", "IBVERBS_1.1");
	RS(init_ah_from_wc, "ibv_init_ah_from_wc", "IBVERBS_1.1");
	RS(attach_mcast, "ibv_attach_mcast", "IBVERBS_1.1");
	RS(detach_mcast, "ibv_detach_mcast", "IBVERBS_1.1");
	RS(get_async_event, "ibv_get_async_event", "IBVERBS_1.1");
	RS(ack_async_event, "ibv_ack_async_event", "IBVERBS_1.1");
	RS(query_ece, "ibv_query_ece", "IBVERBS_1.10");
	RS(set_ece, "ibv_set_ece", "IBVERBS_1.10");
	RS(query_qp_data_in_order, "ibv_query_qp_data_in_order", "IBVERBS_1.14");
	RS(resolve_eth_l2_from_gid, "ibv_resolve_eth_l2_from_gid", "IBVERBS_1.1");
	RS(qp_to_qp_ex, "ibv_qp_to_qp_ex", "IBVERBS_1.6");
}

/* ---------------------------------------------------------------- init */

static void slot_release(void *p)
{
	struct tslot *s = p;

	/* A thread that exits leaves no call in flight. */
	__atomic_store_n(&s->fast, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->slow, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
}

static void membarrier_register(void)
{
	long r = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (r >= 0 && (r & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
		g_need_fence = 0;
		return;
	}
	g_need_fence = 1;
}

/* Heavy side of the asymmetric fence (see gate_enter). */
HIDDEN void heavy_barrier(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!g_need_fence &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
		/* Not registered (e.g. a restored process): fall back to fences;
		 * threads that might have missed the switch are caught by the
		 * sleep below, which outlasts any call's entry sequence. */
		g_need_fence = 1;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		sleep_ms(20);
	}
}
HIDDEN void membarrier_setup(void)
{
	membarrier_register();
}

__attribute__((constructor)) static void shim_ctor(void)
{
	shim_init();
}

void shim_init(void)
{
	static int done;
	const char *e;

	if (done)
		return;
	done = 1;
	list_init(&S.ctxs);
	list_init(&S.pds);
	list_init(&S.mrs);
	list_init(&S.chans);
	list_init(&S.cqs);
	list_init(&S.srqs);
	list_init(&S.qps);
	list_init(&S.ahs);
	resolve_real();
	pthread_key_create(&slot_key, slot_release);
	membarrier_register();
	e = getenv("IBCR_VERBS_DEBUG");
	S.debug = e && *e && *e != '0';
	e = getenv("IBCR_VERBS_RENDEZVOUS");
	snprintf(S.rdv_default, sizeof S.rdv_default, "%s",
		 e && *e ? e : "/tmp/ibcr-verbs-rendezvous");
	e = getenv("IBCR_VERBS_QUIESCE_TIMEOUT_MS");
	S.quiesce_timeout_ms = e && *e ? strtoull(e, NULL, 10) : 50000;
	S.last_cmd = IBCR_VCMD_NONE;
}

/* --------------------------------------------------------------- gate */

__attribute__((noinline)) struct tslot *slot_register(void)
{
	struct tslot *s;

	pthread_mutex_lock(&slots_lock);
	for (s = g_slots; s; s = s->next)
		if (!s->used)
			break;
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s)
			abort();
		s->next = g_slots;
		__atomic_store_n(&g_slots, s, __ATOMIC_RELEASE);
	}
	s->used = 1;
	s->fast = s->slow = 0;
	pthread_mutex_unlock(&slots_lock);
	t_slot = s;
	pthread_setspecific(slot_key, s);
	return s;
}

__attribute__((noinline)) int gate_slow(struct tslot *s, int allow1)
{
	for (;;) {
		int m = __atomic_load_n(&g_mode, __ATOMIC_ACQUIRE);

		if (m == GATE_OPEN) {
			s->fast++;
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(&g_mode, __ATOMIC_ACQUIRE) == GATE_OPEN)
				return GATE_FAST;
			s->fast--;
			continue;
		}
		if (m == GATE_SENDS_HELD && allow1) {
			s->slow++;
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(&g_mode, __ATOMIC_ACQUIRE) == GATE_SENDS_HELD)
				return GATE_SLOW;
			s->slow--;
			continue;
		}
		futex_wait(&g_mode, m, 100);
	}
}

/* Helper side: is any thread (other than the caller) inside the gate? */
HIDDEN int gate_busy(int slow_too)
{
	struct tslot *s;
	int busy = 0;

	pthread_mutex_lock(&slots_lock);
	for (s = g_slots; s; s = s->next) {
		if (s == t_slot)
			continue;
		if (__atomic_load_n(&s->fast, __ATOMIC_ACQUIRE) ||
		    (slow_too && __atomic_load_n(&s->slow, __ATOMIC_ACQUIRE)))
			busy = 1;
	}
	pthread_mutex_unlock(&slots_lock);
	return busy;
}

/* --------------------------------------------------------- hash tables */

static struct htab_arr *ht_alloc(uint32_t cap)
{
	struct htab_arr *a = calloc(1, sizeof *a + (size_t)cap * sizeof(struct hslot));

	if (!a)
		abort();
	a->cap = cap;
	return a;
}

static void ht_raw_put(struct htab_arr *a, uint32_t key, uint64_t val)
{
	uint32_t m = a->cap - 1, i;
	uint64_t want = (uint64_t)key + 1;
	int64_t tomb = -1;

	for (i = ht_hash(key) & m;; i = (i + 1) & m) {
		uint64_t k = a->s[i].key;

		if (k == want) {
			__atomic_store_n(&a->s[i].val, val, __ATOMIC_RELEASE);
			return;
		}
		if (k == HT_TOMB && tomb < 0)
			tomb = i;
		if (k == 0)
			break;
	}
	if (tomb >= 0) {
		i = (uint32_t)tomb;
		/* Readers that see the old key must notice the change. */
		__atomic_store_n(&a->s[i].key, HT_TOMB, __ATOMIC_RELEASE);
	} else {
		a->used++;
	}
	__atomic_store_n(&a->s[i].val, val, __ATOMIC_RELEASE);
	__atomic_store_n(&a->s[i].key, want, __ATOMIC_RELEASE);
}

void ht_put(struct htab *h, uint32_t key, uint64_t val)
{
	struct htab_arr *a = h->a;
	uint64_t old;

	if (ht_get(h, key, &old)) {
		ht_raw_put(a, key, val);
		return;
	}
	if (!a || (a->used + 1) * 4 >= a->cap * 3) {
		uint32_t cap = 16, i;
		struct htab_arr *n;

		while (cap < (h->live + 1) * 3)
			cap *= 2;
		n = ht_alloc(cap);
		if (a) {
			for (i = 0; i < a->cap; i++)
				if (a->s[i].key && a->s[i].key != HT_TOMB)
					ht_raw_put(n, (uint32_t)(a->s[i].key - 1), a->s[i].val);
			n->retired = a;
		}
		__atomic_store_n(&h->a, n, __ATOMIC_RELEASE);
		a = n;
	}
	ht_raw_put(a, key, val);
	h->live++;
}

void ht_del(struct htab *h, uint32_t key)
{
	struct htab_arr *a = h->a;
	uint64_t want = (uint64_t)key + 1;
	uint32_t m, i;

	if (!a)
		return;
	m = a->cap - 1;
	for (i = ht_hash(key) & m;; i = (i + 1) & m) {
		if (a->s[i].key == want) {
			__atomic_store_n(&a->s[i].key, HT_TOMB, __ATOMIC_RELEASE);
			h->live--;
			return;
		}
		if (a->s[i].key == 0)
			return;
	}
}

void ht_reap(struct htab *h)
{
	struct htab_arr *r;

	if (!h->a)
		return;
	while ((r = h->a->retired)) {
		h->a->retired = r->retired;
		free(r);
	}
}

void ht_clear(struct htab *h)
{
	struct htab_arr *a = h->a, *r;

	h->a = NULL;
	h->live = 0;
	while (a) {
		r = a->retired;
		free(a);
		a = r;
	}
}

/* ---------------------------------------------------------------- rings */

static uint32_t pow2(uint32_t n)
{
	uint32_t c = 8;

	while (c < n)
		c *= 2;
	return c;
}

int ring_init(struct rring *r, uint32_t depth, uint32_t max_sge)
{
	spin_init(&r->lock);
	r->head = r->count = 0;
	r->cap = pow2(depth);
	r->max_sge = max_sge ? max_sge : 1;
	r->stride = sizeof(struct rslot) + r->max_sge * sizeof(struct ibv_sge);
	r->buf = calloc(r->cap, r->stride);
	return r->buf ? 0 : ENOMEM;
}

void ring_free(struct rring *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = r->count = 0;
}

static int ring_grow(struct rring *r, uint32_t max_sge)
{
	uint32_t cap = r->cap * (r->count + 1 > r->cap ? 2 : 1), i;
	uint32_t msge = max_sge > r->max_sge ? max_sge : r->max_sge;
	size_t stride = sizeof(struct rslot) + msge * sizeof(struct ibv_sge);
	char *buf = calloc(cap, stride);

	if (!buf)
		return ENOMEM;
	for (i = 0; i < r->count; i++) {
		struct rslot *o = ring_at(r, i), *n = (struct rslot *)(buf + i * stride);

		memcpy(n, o, sizeof *o + o->num_sge * sizeof(struct ibv_sge));
	}
	free(r->buf);
	r->buf = buf;
	r->cap = cap;
	r->max_sge = msge;
	r->stride = stride;
	r->head = 0;
	return 0;
}

/* Appends one receive WR (lock held). */
int ring_push(struct rring *r, const struct ibv_recv_wr *wr)
{
	struct rslot *s;

	if (unlikely(wr->num_sge < 0))
		return EINVAL;
	if (unlikely(r->count == r->cap || (uint32_t)wr->num_sge > r->max_sge))
		if (ring_grow(r, (uint32_t)wr->num_sge))
			return ENOMEM;
	s = ring_at(r, r->count);
	s->wr_id = wr->wr_id;
	s->num_sge = (uint32_t)wr->num_sge;
	if (wr->num_sge)
		memcpy(s->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
	r->count++;
	return 0;
}

void ring_truncate(struct rring *r, uint32_t count)
{
	if (count < r->count)
		r->count = count;
}

/*
 * A receive completed: remove its entry. Receive queues complete in order,
 * so it is the head; for an SRQ (or unusual providers) the oldest entry
 * with the same wr_id. Returns 1 if removed.
 */
int ring_done(struct rring *r, uint64_t wr_id, int head_only)
{
	uint32_t i, j;
	int found = 0;

	spin_lock(&r->lock);
	if (r->count && ring_at(r, 0)->wr_id == wr_id) {
		r->head = (r->head + 1) & (r->cap - 1);
		r->count--;
		found = 1;
	} else if (!head_only) {
		for (i = 1; i < r->count; i++)
			if (ring_at(r, i)->wr_id == wr_id)
				break;
		if (i < r->count) {
			for (j = i; j + 1 < r->count; j++)
				memcpy(ring_at(r, j), ring_at(r, j + 1), r->stride);
			r->count--;
			found = 1;
		}
	}
	spin_unlock(&r->lock);
	return found;
}

/* ------------------------------------------------------ control object */

int ctl_add_fd(int *n, int fd, uint32_t kind)
{
	struct ibcr_verbs_fd *f;
	int i;

	if (fd < 0)
		return 0;
	for (i = 0; i < *n; i++)
		if (ibcr_verbs_control.fds[i].fd == fd)
			return 0;
	if (*n >= IBCR_VERBS_MAX_FDS) {
		warnx_("more than %d descriptors to record; fd %d is not", IBCR_VERBS_MAX_FDS, fd);
		return -1;
	}
	f = &ibcr_verbs_control.fds[*n];
	f->fd = fd;
	f->kind = kind;
	f->nwake = 0;
	f->pad = 0;
	memset(f->wake_cq, 0, sizeof f->wake_cq);
	(*n)++;
	return 0;
}

/*
 * Recomputes fds[] and devices[] from the live objects (S.lock held). The
 * wake lists of channels are filled at QUIESCE_DRAIN (helper).
 */
void ctl_update_fds(void)
{
	struct ibcr_verbs_control *c = &ibcr_verbs_control;
	struct list *p;
	int n = 0, nd = 0, i;

	list_for(p, &S.ctxs) {
		struct sctx *x = container(p, struct sctx, link);

		ctl_add_fd(&n, x->vx.context.cmd_fd, IBCR_VFD_DEVICE);
		ctl_add_fd(&n, x->vx.context.async_fd, IBCR_VFD_ASYNC);
		ctl_add_fd(&n, x->extra_cmd_fd, IBCR_VFD_DEVICE);
		ctl_add_fd(&n, x->extra_async_fd, IBCR_VFD_ASYNC);
		for (i = 0; i < nd; i++)
			if (!strcmp(c->devices[i], x->name))
				break;
		if (i == nd && nd < IBCR_VERBS_MAX_DEVICES) {
			snprintf(c->devices[nd], sizeof c->devices[nd], "%s", x->name);
			nd++;
		}
	}
	list_for(p, &S.chans) {
		struct schan *ch = container(p, struct schan, link);

		ctl_add_fd(&n, ch->v.fd, IBCR_VFD_COMP_CHANNEL);
		ctl_add_fd(&n, ch->extra_fd, IBCR_VFD_COMP_CHANNEL);
		ctl_add_fd(&n, ch->pend_wr, IBCR_VFD_SHIM_PIPE);
	}
	cm_update_fds(&n);
	for (i = nd; i < IBCR_VERBS_MAX_DEVICES; i++)
		memset(c->devices[i], 0, sizeof c->devices[i]);
	for (i = n; i < IBCR_VERBS_MAX_FDS; i++)
		memset(&c->fds[i], 0, sizeof c->fds[i]);
	c->ndevices = (uint32_t)nd;
	c->nfds = (uint32_t)n;
}

const char *rdv_dir(void)
{
	if (ibcr_verbs_control.rendezvous[0])
		return ibcr_verbs_control.rendezvous;
	return S.rdv_default;
}
