/* SPDX-License-Identifier: MIT */
/*
 * The helper thread: the cmd/state protocol of lib/verbs_abi.h, the
 * two-phase quiesce, and the rebuild after a restart (device, PDs, MRs at
 * the same addresses, channels, CQs, SRQs, QPs, rendezvous with the peers,
 * state replay, receives re-posted, AHs).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define CTL ibcr_verbs_control

HIDDEN void heavy_barrier(void);
HIDDEN void membarrier_setup(void);
HIDDEN int gate_busy(int slow_too);

static void set_state(int st)
{
	__atomic_store_n(&CTL.state, st, __ATOMIC_RELEASE);
}

static void set_failed(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_failed(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(CTL.message, sizeof CTL.message, fmt, ap);
	va_end(ap);
	CTL.error = err;
	warnx_("%s", CTL.message);
	set_state(IBCR_VSTATE_FAILED);
}

/* A restart that cannot complete: the application cannot go on. */
static void fatal(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void fatal(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(CTL.message, sizeof CTL.message, fmt, ap);
	va_end(ap);
	CTL.error = err ? err : EIO;
	set_state(IBCR_VSTATE_FAILED);
	warnx_("%s", CTL.message);
	_exit(70);
}

/* ------------------------------------------------------------ addresses */

static void hex(char *out, const uint8_t *p, int n)
{
	static const char d[] = "0123456789abcdef";
	int i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

static int unhex(const char *s, uint8_t *p, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		p[i] = (uint8_t)v;
	}
	return 0;
}

/* "g<32 hex>" or "l<4 hex>": how file names spell an address. */
static void addr_str(const struct vaddr *a, char *out)
{
	if (a->kind == 1) {
		out[0] = 'g';
		hex(out + 1, a->gid.raw, 16);
	} else {
		sprintf(out, "l%04x", a->lid);
	}
}

static int addr_eq(const struct vaddr *a, const struct vaddr *b)
{
	if (a->kind != b->kind)
		return 0;
	if (a->kind == 1)
		return !memcmp(a->gid.raw, b->gid.raw, 16);
	return a->lid && a->lid == b->lid;
}

static int gid_zero(const union ibv_gid *g)
{
	static const union ibv_gid z;

	return !memcmp(g, &z, sizeof z);
}

/*
 * Records the port's LID and valid GIDs: app = 1 at open (what the
 * application sees and keeps using), app = 0 after a rebuild (cur).
 */
void capture_ports(struct sctx *c, int app)
{
	struct ibv_device_attr da;
	struct ibv_gid_entry *ent = NULL;
	ssize_t ne = -1;
	size_t total = 0;
	int p, i, k;

	memset(&da, 0, sizeof da);
	if (R.query_device(c->real, &da))
		da.phys_port_cnt = 1;
	c->nports = da.phys_port_cnt < SHIM_MAX_PORTS ? da.phys_port_cnt : SHIM_MAX_PORTS;
	for (p = 1; p <= c->nports; p++) {
		struct ibv_port_attr pa;

		memset(&pa, 0, sizeof pa);
		if (!R.query_port(c->real, (uint8_t)p, &pa))
			total += (size_t)(pa.gid_tbl_len > 0 ? pa.gid_tbl_len : 0);
		if (app)
			c->port[p - 1].lid_app = pa.lid;
		c->port[p - 1].lid_cur = pa.lid;
	}
	if (R.query_gid_table && total) {
		ent = calloc(total, sizeof *ent);
		if (ent)
			ne = R.query_gid_table(c->real, ent, total, 0, sizeof *ent);
	}
	for (p = 1; p <= c->nports; p++) {
		struct pinfo *pi = &c->port[p - 1];

		if (app)
			pi->ngid = 0;
		for (k = 0; k < pi->ngid; k++)
			memset(&pi->gid[k].cur, 0, sizeof pi->gid[k].cur);
		if (ne >= 0) {
			for (i = 0; i < ne; i++) {
				if (ent[i].port_num != (uint32_t)p || gid_zero(&ent[i].gid))
					continue;
				if (app) {
					if (pi->ngid < SHIM_MAX_GIDS) {
						pi->gid[pi->ngid].idx = ent[i].gid_index;
						pi->gid[pi->ngid].app = ent[i].gid;
						pi->gid[pi->ngid].cur = ent[i].gid;
						pi->ngid++;
					}
				} else {
					for (k = 0; k < pi->ngid; k++)
						if (pi->gid[k].idx == ent[i].gid_index)
							pi->gid[k].cur = ent[i].gid;
				}
			}
		} else {
			/* No GID table query: the first indices one by one. */
			for (i = 0; i < SHIM_MAX_GIDS; i++) {
				union ibv_gid g;

				if (R.query_gid(c->real, (uint8_t)p, i, &g) || gid_zero(&g))
					continue;
				if (app) {
					pi->gid[pi->ngid].idx = (uint32_t)i;
					pi->gid[pi->ngid].app = g;
					pi->gid[pi->ngid].cur = g;
					pi->ngid++;
				} else {
					for (k = 0; k < pi->ngid; k++)
						if (pi->gid[k].idx == (uint32_t)i)
							pi->gid[k].cur = g;
				}
			}
		}
	}
	free(ent);
}

/* This end of a connection, as the peer names it. */
void addr_of_port(struct sctx *c, int port, int sgid_index, int global, struct vaddr *out)
{
	struct pinfo *pi;
	int k;

	memset(out, 0, sizeof *out);
	out->port = (uint8_t)port;
	if (port < 1 || port > c->nports)
		port = 1;
	pi = &c->port[port - 1];
	if (!global) {
		out->kind = 2;
		out->lid = pi->lid_app;
		return;
	}
	out->kind = 1;
	for (k = 0; k < pi->ngid; k++)
		if (pi->gid[k].idx == (uint32_t)sgid_index) {
			out->gid = pi->gid[k].app;
			return;
		}
	R.query_gid(c->real, (uint8_t)port, sgid_index, &out->gid);
}

/* ---------------------------------------------------- QP state records */

static void merge(struct qrec *r, const struct ibv_qp_attr *a, int m)
{
	struct ibv_qp_attr *d = &r->attr;

	r->mask |= m;
	if (m & IBV_QP_STATE)
		d->qp_state = a->qp_state;
	if (m & IBV_QP_CUR_STATE)
		d->cur_qp_state = a->cur_qp_state;
	if (m & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		d->en_sqd_async_notify = a->en_sqd_async_notify;
	if (m & IBV_QP_ACCESS_FLAGS)
		d->qp_access_flags = a->qp_access_flags;
	if (m & IBV_QP_PKEY_INDEX)
		d->pkey_index = a->pkey_index;
	if (m & IBV_QP_PORT)
		d->port_num = a->port_num;
	if (m & IBV_QP_QKEY)
		d->qkey = a->qkey;
	if (m & IBV_QP_AV)
		d->ah_attr = a->ah_attr;
	if (m & IBV_QP_PATH_MTU)
		d->path_mtu = a->path_mtu;
	if (m & IBV_QP_TIMEOUT)
		d->timeout = a->timeout;
	if (m & IBV_QP_RETRY_CNT)
		d->retry_cnt = a->retry_cnt;
	if (m & IBV_QP_RNR_RETRY)
		d->rnr_retry = a->rnr_retry;
	if (m & IBV_QP_RQ_PSN)
		d->rq_psn = a->rq_psn;
	if (m & IBV_QP_MAX_QP_RD_ATOMIC)
		d->max_rd_atomic = a->max_rd_atomic;
	if (m & IBV_QP_ALT_PATH) {
		d->alt_ah_attr = a->alt_ah_attr;
		d->alt_pkey_index = a->alt_pkey_index;
		d->alt_port_num = a->alt_port_num;
		d->alt_timeout = a->alt_timeout;
	}
	if (m & IBV_QP_MIN_RNR_TIMER)
		d->min_rnr_timer = a->min_rnr_timer;
	if (m & IBV_QP_SQ_PSN)
		d->sq_psn = a->sq_psn;
	if (m & IBV_QP_MAX_DEST_RD_ATOMIC)
		d->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (m & IBV_QP_PATH_MIG_STATE)
		d->path_mig_state = a->path_mig_state;
	if (m & IBV_QP_CAP)
		d->cap = a->cap;
	if (m & IBV_QP_DEST_QPN)
		d->dest_qp_num = a->dest_qp_num;
	if (m & IBV_QP_RATE_LIMIT)
		d->rate_limit = a->rate_limit;
}

/* A successful modify_qp (S.lock held): what a replay needs. */
void qp_record_modify(struct sqp *q, struct ibv_qp_attr *attr, int mask)
{
	if (mask & IBV_QP_STATE) {
		int s = attr->qp_state;

		if (s == IBV_QPS_RESET) {
			/* RESET discards posted work without completions. */
			memset(q->rec, 0, sizeof q->rec);
			q->cur_state = s;
			q->has_remote = 0;
			q->errored = 0;
			q->sends_posted = q->sends_done = 0;
			q->tail_unsig = 0;
			if (!q->srq) {
				spin_lock(&q->ring.lock);
				q->ring.count = 0;
				spin_unlock(&q->ring.lock);
			}
			return;
		}
		if (s >= IBV_QPS_INIT && s <= IBV_QPS_SQD)
			merge(&q->rec[s], attr, mask);
		q->cur_state = s;
	} else if (q->cur_state >= IBV_QPS_INIT && q->cur_state <= IBV_QPS_SQD) {
		merge(&q->rec[q->cur_state], attr, mask);
	}
	if ((q->v.qp_type == IBV_QPT_RC || q->v.qp_type == IBV_QPT_UC) &&
	    (mask & (IBV_QP_AV | IBV_QP_DEST_QPN))) {
		const struct ibv_ah_attr *ah = &q->rec[IBV_QPS_RTR].attr.ah_attr;
		int port = ah->port_num ? ah->port_num : q->rec[IBV_QPS_INIT].attr.port_num;

		if (!(q->rec[IBV_QPS_RTR].mask & IBV_QP_AV) ||
		    !(q->rec[IBV_QPS_RTR].mask & IBV_QP_DEST_QPN))
			return;
		memset(&q->remote_addr, 0, sizeof q->remote_addr);
		q->remote_addr.port = (uint8_t)port;
		if (ah->is_global) {
			q->remote_addr.kind = 1;
			q->remote_addr.gid = ah->grh.dgid;
		} else {
			q->remote_addr.kind = 2;
			q->remote_addr.lid = ah->dlid;
		}
		q->remote_qpn = q->rec[IBV_QPS_RTR].attr.dest_qp_num;
		addr_of_port(q->ctx, port, ah->grh.sgid_index, ah->is_global, &q->my_addr);
		q->has_remote = 1;
	}
}

/* ---------------------------------------------------------- peer tables */

struct rdev *rdev_find(const struct vaddr *a)
{
	struct rdev *d;
	int i;

	for (d = __atomic_load_n(&S.rdevs, __ATOMIC_ACQUIRE); d; d = d->next)
		for (i = 0; i < d->naddr; i++)
			if (addr_eq(&d->addr[i].app, a))
				return d;
	return NULL;
}

static void ah_addr(const struct ibv_ah_attr *at, struct vaddr *a)
{
	memset(a, 0, sizeof *a);
	a->port = at->port_num;
	if (at->is_global) {
		a->kind = 1;
		a->gid = at->grh.dgid;
	} else {
		a->kind = 2;
		a->lid = at->dlid;
	}
}

/* Translates a destination the application named into the current one. */
int xl_ah_attr(struct ibv_ah_attr *at, struct rdev **rdp)
{
	struct vaddr a;
	struct rdev *d;
	int i;

	ah_addr(at, &a);
	d = rdev_find(&a);
	if (rdp)
		*rdp = d;
	if (!d)
		return 0;
	for (i = 0; i < d->naddr; i++) {
		if (!addr_eq(&d->addr[i].app, &a))
			continue;
		if (a.kind == 1)
			at->grh.dgid = d->addr[i].cur.gid;
		else
			at->dlid = d->addr[i].cur.lid;
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ rendezvous */

/*
 * What a process publishes for one of its devices (see docs/verbs.md):
 *
 *   ibcr-verbs-rendezvous 1
 *   pid PID
 *   time NS          restart start, CLOCK_REALTIME (stale-file rule)
 *   lid PORT APP CUR
 *   gid PORT IDX APPHEX CURHEX
 *   qp APP CUR
 *   mr APPRKEY CURRKEY
 *   end
 */
struct rdv_content {
	char *text;
	size_t len;
};

static int content_make(struct sctx *c, struct rdv_content *out)
{
	size_t cap = 4096, len = 0;
	char *t = malloc(cap);
	struct list *p;
	int i, k;

#define EMIT(...)                                                                 \
	do {                                                                      \
		int n__;                                                          \
		char *grown__;                                                    \
		for (;;) {                                                        \
			n__ = snprintf(t + len, cap - len, __VA_ARGS__);          \
			if ((size_t)n__ < cap - len)                              \
				break;                                            \
			cap *= 2;                                                 \
			grown__ = realloc(t, cap);                                \
			if (!grown__) {                                           \
				free(t);                                          \
				return ENOMEM;                                    \
			}                                                         \
			t = grown__;                                              \
		}                                                                 \
		len += (size_t)n__;                                               \
	} while (0)

	if (!t)
		return ENOMEM;
	EMIT("ibcr-verbs-rendezvous 1\npid %d\ntime %llu\n", (int)getpid(),
	     (unsigned long long)S.restart_start_ns);
	for (i = 0; i < c->nports; i++) {
		struct pinfo *pi = &c->port[i];

		EMIT("lid %d %u %u\n", i + 1, pi->lid_app, pi->lid_cur);
		for (k = 0; k < pi->ngid; k++) {
			char a[40], b[40];

			hex(a, pi->gid[k].app.raw, 16);
			hex(b, pi->gid[k].cur.raw, 16);
			EMIT("gid %d %u %s %s\n", i + 1, pi->gid[k].idx, a, b);
		}
	}
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);

		if (q->ctx == c && q->real)
			EMIT("qp %u %u\n", q->v.qp_num, q->real->qp_num);
	}
	list_for(p, &S.mrs) {
		struct smr *m = container(p, struct smr, link);

		if (m->pd->ctx == c && m->real)
			EMIT("mr %u %u\n", m->v.rkey, m->real->rkey);
	}
	EMIT("end\n");
#undef EMIT
	out->text = t;
	out->len = len;
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Publishes `text` under `name` in the rendezvous directory, atomically. */
static int publish(const char *name, const char *text, size_t len)
{
	char tmp[1024], dst[1024];
	int fd;

	snprintf(dst, sizeof dst, "%s/%s", rdv_dir(), name);
	snprintf(tmp, sizeof tmp, "%s/.tmp.%d.%s", rdv_dir(), (int)getpid(), name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write_all(fd, text, len) || fsync(fd)) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, dst)) {
		unlink(tmp);
		return -1;
	}
	dbg("published %s", name);
	return 0;
}

static void mkdir_p(const char *dir)
{
	char b[512];
	char *s;

	snprintf(b, sizeof b, "%s", dir);
	for (s = b + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(b, 0777);
			*s = '/';
		}
	mkdir(b, 0777);
}

/*
 * Reads a published file. Returns 1 with *out filled (caller frees), 0 if
 * absent or incomplete, -1 if stale (older than this restart's window).
 */
static int read_pub(const char *name, char **out)
{
	char path[1024];
	struct stat st;
	char *t;
	int fd;
	ssize_t n;
	unsigned long long tm = 0;
	const char *e;
	uint64_t window;

	snprintf(path, sizeof path, "%s/%s", rdv_dir(), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || st.st_size <= 0 || st.st_size > (1 << 26)) {
		close(fd);
		return 0;
	}
	t = malloc((size_t)st.st_size + 1);
	if (!t) {
		close(fd);
		return 0;
	}
	n = read(fd, t, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(t);
		return 0;
	}
	t[n] = 0;
	if (strncmp(t, "ibcr-verbs-rendezvous 1\n", 24) || !strstr(t, "\nend\n")) {
		free(t);
		return 0;
	}
	e = strstr(t, "\ntime ");
	if (e)
		tm = strtoull(e + 6, NULL, 10);
	window = (CTL.restart_timeout_ms ? CTL.restart_timeout_ms : 60000) * 1000000ull;
	if (tm + window < S.restart_start_ns) {
		free(t);
		return -1;
	}
	*out = t;
	return 1;
}

/* Merges a publication into the peer tables (S.lock held). */
static void ingest(const char *text)
{
	struct vaddr apps[SHIM_MAX_GIDS * 2], curs[SHIM_MAX_GIDS * 2];
	struct rdev *d = NULL;
	const char *l;
	int na = 0, i, j;

	for (l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		unsigned port, idx, app, cur;
		char ah[40], ch[40];

		if (na < SHIM_MAX_GIDS * 2 && sscanf(l, "lid %u %u %u", &port, &app, &cur) == 3) {
			if (!app)
				continue;
			memset(&apps[na], 0, sizeof apps[na]);
			memset(&curs[na], 0, sizeof curs[na]);
			apps[na].kind = curs[na].kind = 2;
			apps[na].port = curs[na].port = (uint8_t)port;
			apps[na].lid = (uint16_t)app;
			curs[na].lid = (uint16_t)cur;
			na++;
		} else if (na < SHIM_MAX_GIDS * 2 &&
			   sscanf(l, "gid %u %u %39s %39s", &port, &idx, ah, ch) == 4) {
			memset(&apps[na], 0, sizeof apps[na]);
			memset(&curs[na], 0, sizeof curs[na]);
			apps[na].kind = curs[na].kind = 1;
			apps[na].port = curs[na].port = (uint8_t)port;
			if (unhex(ah, apps[na].gid.raw, 16) || unhex(ch, curs[na].gid.raw, 16))
				continue;
			na++;
		}
	}
	for (i = 0; i < na && !d; i++)
		d = rdev_find(&apps[i]);
	if (!d) {
		d = calloc(1, sizeof *d);
		if (!d)
			return;
		d->next = S.rdevs;
		__atomic_store_n(&S.rdevs, d, __ATOMIC_RELEASE);
	}
	for (i = 0; i < na; i++) {
		for (j = 0; j < d->naddr; j++)
			if (addr_eq(&d->addr[j].app, &apps[i]))
				break;
		if (j < d->naddr) {
			d->addr[j].cur = curs[i];
		} else if (d->naddr < SHIM_MAX_GIDS * 2) {
			d->addr[d->naddr].cur = curs[i];
			d->addr[d->naddr].app = apps[i];
			__atomic_store_n(&d->naddr, d->naddr + 1, __ATOMIC_RELEASE);
		}
	}
	for (l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		unsigned a, c;

		if (sscanf(l, "qp %u %u", &a, &c) == 2) {
			ht_put(&d->qpn, a, c);
			ht_put(&S.rev_qpn, c, a);
		} else if (sscanf(l, "mr %u %u", &a, &c) == 2) {
			ht_put(&d->rkey, a, c);
		}
	}
}

static void pair_name(char *out, size_t n, const char *kind, const struct vaddr *to,
		      uint32_t to_qpn, const struct vaddr *from, uint32_t from_qpn)
{
	char a[40], b[40];

	addr_str(to, a);
	addr_str(from, b);
	snprintf(out, n, "%s-%s-%x-from-%s-%x", kind, a, to_qpn, b, from_qpn);
}

static uint64_t restart_timeout(void)
{
	return CTL.restart_timeout_ms ? CTL.restart_timeout_ms : 60000;
}

/*
 * Waits for the file `name` written by the peer of q, consumes it and
 * ingests it. Fatal on timeout.
 */
static void wait_pair(struct sqp *q, const char *name, uint64_t deadline, int ingest_it)
{
	char *t = NULL;

	for (;;) {
		int r = read_pub(name, &t);

		if (r == 1)
			break;
		if (r < 0) {
			char path[1024];

			snprintf(path, sizeof path, "%s/%s", rdv_dir(), name);
			dbg("stale rendezvous file %s removed", name);
			unlink(path);
		}
		if (now_ns(CLOCK_MONOTONIC) > deadline) {
			char ra[40];

			addr_str(&q->remote_addr, ra);
			fatal(ETIMEDOUT,
			      "restart: the peer of QP 0x%x (remote QP 0x%x at %s) did not "
			      "show up in %s within %llu ms (no %s)",
			      q->v.qp_num, q->remote_qpn, ra, rdv_dir(),
			      (unsigned long long)restart_timeout(), name);
		}
		sleep_ms(5);
	}
	{
		char path[1024];

		snprintf(path, sizeof path, "%s/%s", rdv_dir(), name);
		unlink(path);	/* consumed */
	}
	if (ingest_it) {
		pthread_mutex_lock(&S.lock);
		ingest(t);
		pthread_mutex_unlock(&S.lock);
	}
	free(t);
}

/* ----------------------------------------------------------- UD targets */

static struct ibv_ah *ah_recreate(struct sah *h)
{
	struct ibv_ah_attr a = h->attr;
	struct rdev *rd = NULL;
	struct ibv_ah *real;

	xl_ah_attr(&a, &rd);
	real = R.create_ah(h->pd->real, &a);
	if (!real)
		return NULL;
	__atomic_store_n(&h->rdev, rd, __ATOMIC_RELEASE);
	__atomic_store_n(&h->real, real, __ATOMIC_RELEASE);
	return real;
}

struct ibv_ah *ud_real_ah(struct sah *h)
{
	struct ibv_ah *r = __atomic_load_n(&h->real, __ATOMIC_ACQUIRE);

	if (likely(r))
		return r;
	pthread_mutex_lock(&S.lock);
	r = h->real ? h->real : ah_recreate(h);
	pthread_mutex_unlock(&S.lock);
	return r;
}

/*
 * The current QPN of a UD destination: from the tables when known, else
 * from the destination's announcement in the rendezvous directory (it is
 * written once the destination is rebuilt), else unchanged.
 */
uint32_t ud_remote_qpn(struct sah *h, uint32_t qpn)
{
	struct rdev *rd = __atomic_load_n(&h->rdev, __ATOMIC_ACQUIRE);
	struct vaddr a;
	char name[256];
	uint64_t v, deadline;
	char *t = NULL;
	int i;

	if (likely(rd && ht_get(&rd->qpn, qpn, &v)))
		return (uint32_t)v;
	ah_addr(&h->attr, &a);
	pthread_mutex_lock(&S.lock);
	rd = rdev_find(&a);
	if (rd && ht_get(&rd->qpn, qpn, &v))
		goto found;
	for (i = 0; i < S.n_ud_neg; i++)
		if (S.ud_neg[i].qpn == qpn && addr_eq(&S.ud_neg[i].a, &a)) {
			pthread_mutex_unlock(&S.lock);
			return qpn;
		}
	pair_name(name, sizeof name, "ud", &a, qpn, &a, 0);
	*strstr(name, "-from-") = 0;
	/* A destination restarted with us announces itself within the
	 * restart's window; after it, a missing announcement means a QP this
	 * restart does not know (created since): no waiting then. */
	deadline = S.restart_start_ns + restart_timeout() * 1000000ull;
	for (;;) {
		if (read_pub(name, &t) == 1)
			break;
		if (now_ns(CLOCK_REALTIME) > deadline) {
			char as[40];

			addr_str(&a, as);
			dbg("UD destination QP 0x%x at %s did not announce itself in %s; "
			    "sending to it untranslated", qpn, as, rdv_dir());
			if (S.n_ud_neg < (int)(sizeof S.ud_neg / sizeof S.ud_neg[0])) {
				S.ud_neg[S.n_ud_neg].a = a;
				S.ud_neg[S.n_ud_neg].qpn = qpn;
				S.n_ud_neg++;
			}
			pthread_mutex_unlock(&S.lock);
			return qpn;
		}
		sleep_ms(5);
	}
	ingest(t);
	free(t);
	rd = rdev_find(&a);
	if (!rd || !ht_get(&rd->qpn, qpn, &v)) {
		pthread_mutex_unlock(&S.lock);
		return qpn;
	}
found:
	if (h->rdev != rd) {
		/* The destination's address may have changed too. */
		struct ibv_ah_attr x;

		/* a byte copy, padding too: only the fields xl_ah_attr changes differ */
		memcpy(&x, &h->attr, sizeof x);
		if (xl_ah_attr(&x, NULL) &&
		    memcmp(&x, &h->attr, sizeof x))	// NOLINT(bugprone-suspicious-memory-comparison)
			ah_recreate(h);	/* the old real AH is left alone */
		__atomic_store_n(&h->rdev, rd, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&S.lock);
	return (uint32_t)v;
}

/* --------------------------------------------------------------- quiesce */

static int wait_gate(int slow_too, uint64_t deadline)
{
	while (gate_busy(slow_too)) {
		if (now_ns(CLOCK_MONOTONIC) > deadline)
			return -1;
		sched_yield();
		sleep_ms(1);
	}
	return 0;
}

static int drain_all_cqs(void)
{
	struct list *p;
	int n = 0, r;

	list_for(p, &S.cqs) {
		struct scq *c = container(p, struct scq, link);

		spin_lock(&c->lock);
		r = cq_drain_locked(c);
		spin_unlock(&c->lock);
		if (r < 0)
			return -1;
		n += r;
	}
	return n;
}

static int quiesce_sends(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = t0 + S.quiesce_timeout_ms * 1000000ull;
	struct list *p;
	int tail = 0;
	char why[200];

	set_state(IBCR_VSTATE_BUSY);
	CTL.message[0] = 0;
	CTL.error = 0;
	pthread_mutex_lock(&S.lock);
	if (cm_check_idle(why, sizeof(why))) {
		pthread_mutex_unlock(&S.lock);
		set_failed(EBUSY, "%s", why);
		return -1;
	}
	pthread_mutex_unlock(&S.lock);
	__atomic_store_n(&g_mode, 1, __ATOMIC_SEQ_CST);
	heavy_barrier();
	if (wait_gate(0, deadline)) {
		set_failed(ETIMEDOUT, "quiesce: a thread stayed inside a verbs call for %llu ms",
			   (unsigned long long)S.quiesce_timeout_ms);
		return -1;
	}
	pthread_mutex_lock(&S.lock);
	for (;;) {
		struct sqp *late = NULL;

		if (drain_all_cqs() < 0) {
			pthread_mutex_unlock(&S.lock);
			set_failed(EIO, "quiesce: polling a completion queue failed");
			return -1;
		}
		tail = 0;
		list_for(p, &S.qps) {
			struct sqp *q = container(p, struct sqp, link);
			uint64_t posted = __atomic_load_n(&q->sends_posted, __ATOMIC_RELAXED);
			uint64_t done = __atomic_load_n(&q->sends_done, __ATOMIC_RELAXED);

			if (q->errored || q->cur_state == IBV_QPS_ERR)
				continue;
			if (done < posted)
				late = q;
			tail |= q->tail_unsig;
		}
		if (!late)
			break;
		if (now_ns(CLOCK_MONOTONIC) > deadline) {
			unsigned long long n = late->sends_posted - late->sends_done;

			pthread_mutex_unlock(&S.lock);
			set_failed(ETIMEDOUT,
				   "quiesce: QP 0x%x still has %llu signaled send(s) outstanding "
				   "after %llu ms", late->v.qp_num, n,
				   (unsigned long long)S.quiesce_timeout_ms);
			return -1;
		}
		pthread_mutex_unlock(&S.lock);
		sleep_ms(1);
		pthread_mutex_lock(&S.lock);
	}
	if (tail) {
		/* Unsignaled sends after the last signaled one cannot be
		 * observed: give them time to leave (see docs/verbs.md). */
		pthread_mutex_unlock(&S.lock);
		sleep_ms(50);
		pthread_mutex_lock(&S.lock);
		drain_all_cqs();
	}
	pthread_mutex_unlock(&S.lock);
	dbg("sends quiesced in %llu us",
	    (unsigned long long)((now_ns(CLOCK_MONOTONIC) - t0) / 1000));
	set_state(IBCR_VSTATE_SENDS_DONE);
	return 0;
}

static int chan_push(struct schan *ch, struct scq *c)
{
	if (ch->npend == ch->cappend) {
		int cap = ch->cappend ? ch->cappend * 2 : 8;
		struct scq **n = realloc(ch->pend,
					 (size_t)cap * sizeof *n);	// NOLINT(bugprone-sizeof-expression): of pointers

		if (!n)
			return -1;
		ch->pend = n;
		ch->cappend = cap;
	}
	ch->pend[ch->npend++] = c;
	return 0;
}

static int quiesce_drain(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = t0 + S.quiesce_timeout_ms * 1000000ull;
	struct list *p;
	uint32_t i;

	if (g_mode < 1 && quiesce_sends())
		return -1;
	set_state(IBCR_VSTATE_BUSY);
	__atomic_store_n(&g_mode, 2, __ATOMIC_SEQ_CST);
	heavy_barrier();
	if (wait_gate(1, deadline)) {
		set_failed(ETIMEDOUT, "quiesce: a thread stayed inside a verbs call for %llu ms",
			   (unsigned long long)S.quiesce_timeout_ms);
		return -1;
	}
	pthread_mutex_lock(&S.lock);
	cm_record_flags();
	/* Nobody may be inside a real call on an event fd from now on. */
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);

		pthread_mutex_lock(&c->async_lock);
		c->async_flags = fcntl(c->vx.context.async_fd, F_GETFL);
		pthread_mutex_unlock(&c->async_lock);
	}
	if (drain_all_cqs() < 0)
		goto fail;
	list_for(p, &S.chans) {
		struct schan *ch = container(p, struct schan, link);

		pthread_mutex_lock(&ch->rd_lock);
		ch->fd_flags = fcntl(ch->v.fd, F_GETFL);
		for (;;) {
			struct pollfd pf = { ch->real->fd, POLLIN, 0 };
			struct ibv_cq *rcq;
			void *rctx;
			struct scq *c;

			if (poll(&pf, 1, 0) <= 0)
				break;
			if (R.get_cq_event(ch->real, &rcq, &rctx))
				break;
			c = rctx;
			__atomic_fetch_add(&c->ev_got, 1, __ATOMIC_RELAXED);
			c->armed = 0;
			if (chan_push(ch, c)) {
				pthread_mutex_unlock(&ch->rd_lock);
				goto fail;
			}
		}
		pthread_mutex_unlock(&ch->rd_lock);
	}
	/* A last look: nothing may arrive once every peer is quiet. */
	if (drain_all_cqs() < 0)
		goto fail;
	ctl_update_fds();
	for (i = 0; i < CTL.nfds; i++) {
		struct ibcr_verbs_fd *f = &CTL.fds[i];

		if (f->kind != IBCR_VFD_COMP_CHANNEL)
			continue;
		list_for(p, &S.chans) {
			struct schan *ch = container(p, struct schan, link);
			int k;

			if (ch->v.fd != f->fd)
				continue;
			for (k = 0; k < ch->npend && k < IBCR_VERBS_MAX_WAKE; k++)
				f->wake_cq[k] = (uintptr_t)ch->pend[k]->real;
			f->nwake = (uint32_t)k;
		}
	}
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);

		ht_reap(&c->qtab);
		ht_reap(&c->lkey);
	}
	CTL.epoch++;
	pthread_mutex_unlock(&S.lock);
	dbg("drained in %llu us, epoch %llu",
	    (unsigned long long)((now_ns(CLOCK_MONOTONIC) - t0) / 1000),
	    (unsigned long long)CTL.epoch);
	set_state(IBCR_VSTATE_QUIESCED);
	return 0;
fail:
	pthread_mutex_unlock(&S.lock);
	set_failed(EIO, "quiesce: draining completions failed");
	return -1;
}

static void release(void)
{
	__atomic_store_n(&g_mode, 0, __ATOMIC_SEQ_CST);
	futex_wake_all(&g_mode);
	set_state(IBCR_VSTATE_RUNNING);
}

/* --------------------------------------------------------------- rebuild */

static void move_fd(int newfd, int appfd, int *extra, const char *what)
{
	if (*extra >= 0 && *extra != newfd && *extra != appfd)
		close(*extra);	/* the previous real number: a stand-in now */
	*extra = -1;
	if (newfd == appfd)
		return;
	if (dup2(newfd, appfd) < 0)
		fatal(errno, "restart: dup2 of the new %s fd %d onto %d: %s", what, newfd, appfd,
		      strerror(errno));
	if (epoll_readd(appfd))
		fatal(errno, "restart: the program's epoll cannot watch its %s fd %d again",
		      what, appfd);
	*extra = newfd;
}

static struct ibv_device *find_device(const char *name, struct ibv_device ***list)
{
	int n = 0, i;
	struct ibv_device **l = R.get_device_list(&n);

	*list = l;
	if (!l)
		fatal(errno, "restart: no RDMA devices (ibv_get_device_list: %s); %s was in use",
		      strerror(errno), name);
	for (i = 0; i < n; i++)
		if (!strcmp(R.get_device_name(l[i]), name))
			return l[i];
	fatal(ENODEV, "restart: RDMA device %s not found (%d device%s present)", name, n,
	      n == 1 ? "" : "s");
}

static void replay_qp(struct sqp *q)
{
	static const int order[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD };
	int target = q->cur_state, i, r;

	if (target == IBV_QPS_RESET)
		return;
	for (i = 0; i < 4; i++) {
		int s = order[i];
		struct ibv_qp_attr a;
		int mask;

		if (target != IBV_QPS_ERR && target != IBV_QPS_SQE && s > target)
			break;
		if (target == IBV_QPS_SQE && s > IBV_QPS_RTS)
			break;
		if (!(q->rec[s].mask & IBV_QP_STATE))
			break;
		a = q->rec[s].attr;
		mask = q->rec[s].mask & ~IBV_QP_CUR_STATE;
		if (mask & IBV_QP_AV) {
			struct rdev *rd = NULL;

			xl_ah_attr(&a.ah_attr, &rd);
			if (rd)
				q->rdev = rd;
		}
		if (mask & IBV_QP_ALT_PATH)
			xl_ah_attr(&a.alt_ah_attr, NULL);
		if (mask & IBV_QP_DEST_QPN) {
			uint64_t v;

			if (!q->rdev || !ht_get(&q->rdev->qpn, a.dest_qp_num, &v))
				fatal(ENOENT, "restart: QP 0x%x: its peer did not publish QP 0x%x",
				      q->v.qp_num, a.dest_qp_num);
			a.dest_qp_num = (uint32_t)v;
		}
		r = R.modify_qp(q->real, &a, mask);
		if (r)
			fatal(r, "restart: QP 0x%x (now 0x%x): replaying the move to state %d: %s",
			      q->v.qp_num, q->real->qp_num, s, strerror(r));
	}
	if (target == IBV_QPS_ERR) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		R.modify_qp(q->real, &a, IBV_QP_STATE);
	}
	q->v.state = (enum ibv_qp_state)target;
}

/*
 * A channel whose drained events are still to be delivered keeps a pipe
 * at its number, readable while they wait. The restore's stand-in has
 * no writer: once read empty it reports EOF (EPOLLHUP) for ever, and
 * UCX, which watches its channels but never reads them, then spins in
 * epoll_wait. The shim's own pipe keeps its write end (pend_wr) until
 * the switch; it holds one event (the new real CQ) per drained one.
 */
static void chan_standin(struct schan *ch)
{
	int p[2], k;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		fatal(errno, "restart: completion channel fd %d: a pipe: %s", ch->v.fd,
		      strerror(errno));
	for (k = 0; k < ch->npend; k++) {
		uint64_t ev = (uintptr_t)ch->pend[k]->real;

		if (write(p[1], &ev, sizeof ev) != (ssize_t)sizeof ev)
			break;	/* full: readable all the same */
	}
	if (dup2(p[0], ch->v.fd) < 0)
		fatal(errno, "restart: dup2 onto completion channel fd %d: %s", ch->v.fd,
		      strerror(errno));
	close(p[0]);
	if (epoll_readd(ch->v.fd))
		fatal(errno, "restart: the program's epoll cannot watch its completion channel "
		      "fd %d again", ch->v.fd);
	ch->pend_wr = p[1];
}

static void rebuild(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline;
	struct list *p;
	int ci = 0;
	char why[300];

	S.restart_start_ns = now_ns(CLOCK_REALTIME);
	deadline = t0 + restart_timeout() * 1000000ull;
	membarrier_setup();
	mkdir_p(rdv_dir());
	pthread_mutex_lock(&S.lock);
	if (cm_rebuild(why, sizeof(why)))
		fatal(errno, "%s", why);

	/* Contexts: reopen by name, the new descriptors onto the old numbers. */
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);
		struct ibv_device **l;
		struct ibv_device *d = find_device(c->name, &l);
		struct ibv_context *real = R.open_device(d);

		if (!real)
			fatal(errno, "restart: cannot open RDMA device %s: %s", c->name,
			      strerror(errno));
		R.free_device_list(l);
		move_fd(real->cmd_fd, c->vx.context.cmd_fd, &c->extra_cmd_fd, "device");
		move_fd(real->async_fd, c->vx.context.async_fd, &c->extra_async_fd, "async event");
		if (c->async_flags > 0)
			fcntl(c->vx.context.async_fd, F_SETFL, c->async_flags);
		c->real = real;
		c->vx.context.num_comp_vectors = real->num_comp_vectors;
		capture_ports(c, 0);
		ht_clear(&c->qtab);
		ht_clear(&c->lkey);
	}
	list_for(p, &S.pds) {
		struct spd *pd = container(p, struct spd, link);

		pd->real = R.alloc_pd(pd->ctx->real);
		if (!pd->real)
			fatal(errno, "restart: alloc_pd on %s: %s", pd->ctx->name, strerror(errno));
	}
	/* MRs: the same addresses and lengths; the memory is back already. */
	list_for(p, &S.mrs) {
		struct smr *m = container(p, struct smr, link);
		struct ibv_pd *pd = m->pd->real;

		if (m->how == 0)
			m->real = R.reg_mr(pd, m->v.addr, m->v.length, (int)m->access);
		else
			m->real = R.reg_mr_iova2(pd, m->v.addr, m->v.length, m->iova, m->access);
		if (!m->real)
			fatal(errno, "restart: re-registering the MR at %p (%zu bytes): %s",
			      m->v.addr, m->v.length, strerror(errno));
		if (m->real->lkey != m->v.lkey)
			ht_put(&m->pd->ctx->lkey, m->v.lkey, m->real->lkey);
		dbg("mr %p+%zu lkey 0x%x->0x%x rkey 0x%x->0x%x", m->v.addr, m->v.length,
		    m->v.lkey, m->real->lkey, m->v.rkey, m->real->rkey);
	}
	list_for(p, &S.chans) {
		struct schan *ch = container(p, struct schan, link);

		ch->real = R.create_comp_channel(ch->ctx->real);
		if (!ch->real)
			fatal(errno, "restart: create_comp_channel: %s", strerror(errno));
		if (ch->extra_fd >= 0 && ch->extra_fd != ch->real->fd && ch->extra_fd != ch->v.fd)
			close(ch->extra_fd);
		if (ch->pend_wr >= 0)
			close(ch->pend_wr);	/* the last restart's: a stand-in now */
		ch->pend_wr = -1;
		ch->extra_fd = ch->real->fd != ch->v.fd ? ch->real->fd : -1;
		if (ch->fd_flags > 0)
			fcntl(ch->real->fd, F_SETFL, ch->fd_flags);
		/* With drained events still to deliver, the stand-in (readable)
		 * stays at the application's number until they are taken. */
		ch->switch_pending = 1;
		if (!ch->npend && ch->extra_fd >= 0) {
			if (dup2(ch->real->fd, ch->v.fd) < 0)
				fatal(errno, "restart: dup2 onto completion channel fd %d: %s",
				      ch->v.fd, strerror(errno));
			if (epoll_readd(ch->v.fd))
				fatal(errno, "restart: the program's epoll cannot watch its "
				      "completion channel fd %d again", ch->v.fd);
			ch->switch_pending = 0;
		} else if (ch->extra_fd < 0) {
			ch->switch_pending = 0;
		}
	}
	list_for(p, &S.cqs) {
		struct scq *c = container(p, struct scq, link);

		c->real = R.create_cq(c->ctx->real, c->cqe_req, c, c->chan ? c->chan->real : NULL,
				      c->comp_vector);
		if (!c->real)
			fatal(errno, "restart: create_cq (%d entries): %s", c->cqe_req,
			      strerror(errno));
		c->rpoll = c->real->context->ops.poll_cq;
		c->v.handle = c->real->handle;
		c->ev_old += c->ev_got - c->ev_acked;
		c->ev_got = c->ev_acked = 0;
		c->async_old += c->async_unacked;
		c->async_unacked = 0;
		if (c->armed)
			c->real->context->ops.req_notify_cq(c->real, c->solicited);
	}
	list_for(p, &S.chans) {
		struct schan *ch = container(p, struct schan, link);

		if (ch->switch_pending)
			chan_standin(ch);
	}
	list_for(p, &S.srqs) {
		struct ssrq *s = container(p, struct ssrq, link);
		struct ibv_srq_init_attr a = { .srq_context = s, .attr = s->attr };

		a.attr.srq_limit = 0;
		s->real = R.create_srq(s->pd->real, &a);
		if (!s->real)
			fatal(errno, "restart: create_srq: %s", strerror(errno));
		s->rpost = s->real->context->ops.post_srq_recv;
		s->v.handle = s->real->handle;
		s->async_old += s->async_unacked;
		s->async_unacked = 0;
	}
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);
		struct ibv_qp_init_attr a = q->init;

		a.qp_context = q;
		a.send_cq = q->scq->real;
		a.recv_cq = q->rcq->real;
		a.srq = q->srq ? q->srq->real : NULL;
		q->real = R.create_qp(q->pd->real, &a);
		if (!q->real)
			fatal(errno, "restart: create_qp for QP 0x%x: %s", q->v.qp_num,
			      strerror(errno));
		q->rpost_send = q->real->context->ops.post_send;
		q->rpost_recv = q->real->context->ops.post_recv;
		q->v.handle = q->real->handle;
		q->sends_posted = q->sends_done = 0;
		q->tail_unsig = 0;
		q->rdev = NULL;
		q->async_old += q->async_unacked;
		q->async_unacked = 0;
		ht_put(&q->ctx->qtab, q->real->qp_num, (uintptr_t)q);
		dbg("qp 0x%x -> 0x%x", q->v.qp_num, q->real->qp_num);
	}

	/* Rendezvous, phase 1: what each connection's peer needs. The peer
	 * tables start afresh (nothing reads them while rebuilding). */
	while (S.rdevs) {
		struct rdev *d = S.rdevs;

		S.rdevs = d->next;
		ht_clear(&d->qpn);
		ht_clear(&d->rkey);
		free(d);
	}
	S.n_ud_neg = 0;
	ht_clear(&S.rev_qpn);
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);
		struct rdv_content ct;
		struct list *qp;

		if (content_make(c, &ct))
			fatal(ENOMEM, "restart: out of memory");
		ingest(ct.text);	/* our own QPs and MRs, for loopback */
		list_for(qp, &S.qps) {
			struct sqp *q = container(qp, struct sqp, link);
			char name[256];

			if (q->ctx != c || !q->has_remote || q->cur_state < IBV_QPS_RTR)
				continue;
			pair_name(name, sizeof name, "rc", &q->remote_addr, q->remote_qpn,
				  &q->my_addr, q->v.qp_num);
			if (publish(name, ct.text, ct.len))
				fatal(errno, "restart: cannot write %s/%s: %s", rdv_dir(), name,
				      strerror(errno));
		}
		free(ct.text);
		ci++;
	}
	pthread_mutex_unlock(&S.lock);
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);
		char name[256];

		if (!q->has_remote || q->cur_state < IBV_QPS_RTR)
			continue;
		pair_name(name, sizeof name, "rc", &q->my_addr, q->v.qp_num, &q->remote_addr,
			  q->remote_qpn);
		wait_pair(q, name, deadline, 1);
	}
	pthread_mutex_lock(&S.lock);

	/* Replay every QP's transitions with translated attributes. */
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);

		if (q->has_remote)
			q->rdev = rdev_find(&q->remote_addr);
		replay_qp(q);
	}
	/* Receives posted before the checkpoint and not completed. */
	list_for(p, &S.srqs) {
		struct ssrq *s = container(p, struct ssrq, link);
		int r;

		if (s->attr.srq_limit) {
			struct ibv_srq_attr a = { .srq_limit = s->attr.srq_limit };

			R.modify_srq(s->real, &a, IBV_SRQ_LIMIT);
		}
		r = repost_ring(&s->ring, s, 1);
		if (r)
			fatal(r, "restart: re-posting %u SRQ receives: %s", s->ring.count,
			      strerror(r));
	}
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);
		int r;

		if (q->srq || q->cur_state < IBV_QPS_INIT || q->cur_state > IBV_QPS_SQD)
			continue;
		r = repost_ring(&q->ring, q, 0);
		if (r)
			fatal(r, "restart: QP 0x%x: re-posting %u receives: %s", q->v.qp_num,
			      q->ring.count, strerror(r));
		dbg("qp 0x%x: %u receives re-posted", q->v.qp_num, q->ring.count);
	}
	list_for(p, &S.ahs) {
		struct sah *h = container(p, struct sah, link);

		h->real = NULL;
		h->rdev = NULL;
		if (!ah_recreate(h))
			dbg("AH not recreated yet: %s", strerror(errno));
	}
	S.translating = 1;

	/* Phase 2: tell the peers this end is ready; announce UD QPs. */
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);
		struct rdv_content ct;
		struct list *qp;

		if (content_make(c, &ct))
			fatal(ENOMEM, "restart: out of memory");
		list_for(qp, &S.qps) {
			struct sqp *q = container(qp, struct sqp, link);
			char name[256];
			int i, k;

			if (q->ctx != c)
				continue;
			if (q->has_remote && q->cur_state >= IBV_QPS_RTR) {
				pair_name(name, sizeof name, "ready", &q->remote_addr,
					  q->remote_qpn, &q->my_addr, q->v.qp_num);
				if (publish(name, ct.text, ct.len))
					fatal(errno, "restart: cannot write %s/%s: %s", rdv_dir(),
					      name, strerror(errno));
			}
			if (q->v.qp_type != IBV_QPT_UD)
				continue;
			for (i = 0; i < c->nports; i++) {
				struct pinfo *pi = &c->port[i];
				struct vaddr a;

				memset(&a, 0, sizeof a);
				if (pi->lid_app) {
					a.kind = 2;
					a.lid = pi->lid_app;
					pair_name(name, sizeof name, "ud", &a, q->v.qp_num, &a, 0);
					*strstr(name, "-from-") = 0;
					publish(name, ct.text, ct.len);
				}
				for (k = 0; k < pi->ngid; k++) {
					a.kind = 1;
					a.gid = pi->gid[k].app;
					pair_name(name, sizeof name, "ud", &a, q->v.qp_num, &a, 0);
					*strstr(name, "-from-") = 0;
					publish(name, ct.text, ct.len);
				}
			}
		}
		free(ct.text);
	}
	pthread_mutex_unlock(&S.lock);
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);
		char name[256];

		if (!q->has_remote || q->cur_state < IBV_QPS_RTR)
			continue;
		pair_name(name, sizeof name, "ready", &q->my_addr, q->v.qp_num, &q->remote_addr,
			  q->remote_qpn);
		wait_pair(q, name, deadline, 0);
	}
	pthread_mutex_lock(&S.lock);
	ctl_update_fds();
	S.epoch_rebuilt = CTL.epoch;
	pthread_mutex_unlock(&S.lock);
	dbg("rebuilt in %llu ms", (unsigned long long)((now_ns(CLOCK_MONOTONIC) - t0) / 1000000));
}

/* ---------------------------------------------------------------- helper */

/*
 * Sleeps until a byte arrives in the wake pipe (the saver or the restore
 * wrote `cmd`), or a second has passed; takes whatever bytes are there.
 */
static void wait_wake(void)
{
	struct pollfd pf = { S.wake[0], POLLIN, 0 };
	struct stat r, w;
	char buf[64];

	if (S.wake[0] < 0) {
		sleep_ms(20);
		return;
	}
	if (poll(&pf, 1, 1000) <= 0)
		return;
	/*
	 * The application may have closed the descriptor, or put one of its
	 * own at its number (closefrom, dup2): never read what is not ours
	 * (both ends are one pipe, after a restore too); poll every 20 ms
	 * from then on, as before ABI 2.
	 */
	if ((pf.revents & POLLNVAL) || fstat(S.wake[0], &r) || fstat(S.wake[1], &w) ||
	    !S_ISFIFO(r.st_mode) || r.st_ino != w.st_ino || r.st_dev != w.st_dev) {
		S.wake[0] = -1;
		CTL.wake_fd = -1;
		return;
	}
	while (read(S.wake[0], buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
}

void *helper_main(void *arg)
{
	(void)arg;
	t_helper = 1;
	for (;;) {
		int cmd = __atomic_load_n(&CTL.cmd, __ATOMIC_ACQUIRE);

		if (cmd != S.last_cmd) {
			S.last_cmd = cmd;
			switch (cmd) {
			case IBCR_VCMD_QUIESCE_SENDS:
				quiesce_sends();
				break;
			case IBCR_VCMD_QUIESCE_DRAIN:
				quiesce_drain();
				break;
			case IBCR_VCMD_RELEASE:
				release();
				break;
			case IBCR_VCMD_RESTART:
				set_state(IBCR_VSTATE_BUSY);
				CTL.message[0] = 0;
				CTL.error = 0;
				rebuild();
				release();
				break;
			default:
				break;
			}
			continue;
		}
		wait_wake();
	}
	return NULL;
}

void helper_start(void)
{
	sigset_t all, old;
	pthread_t t;

	pthread_mutex_lock(&S.lock);
	if (S.helper_started) {
		pthread_mutex_unlock(&S.lock);
		return;
	}
	S.last_cmd = CTL.cmd;
	/* both ends stay open: the read end never sees EOF */
	if (pipe2(S.wake, O_CLOEXEC | O_NONBLOCK)) {
		S.wake[0] = S.wake[1] = -1;
		warnx_("cannot make the helper's wake pipe: it polls instead");
	}
	CTL.wake_fd = S.wake[0];
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, helper_main, NULL) == 0) {
		S.helper = t;
		S.helper_started = 1;
		pthread_setname_np(t, "ibcr-verbs");
	} else {
		warnx_("cannot start the helper thread: checkpoints will not work");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&S.lock);
}

/* ------------------------------------------------------------ test hooks */

/*
 * For tests without a saver/loader: with the process QUIESCED, destroy
 * every real verbs object and put at each recorded descriptor what the
 * restart-loader would (/dev/null; a pipe holding the wake events for
 * completion channels). cmd = RESTART then rebuilds. Returns 0 or errno.
 */
EXPORT int ibcr_verbs_test_teardown(void)
{
	struct list *p;
	uint32_t i;

	if (CTL.state != IBCR_VSTATE_QUIESCED)
		return EBUSY;
	pthread_mutex_lock(&S.lock);
	list_for(p, &S.ahs) {
		struct sah *h = container(p, struct sah, link);

		if (h->real)
			R.destroy_ah(h->real);
		h->real = NULL;
	}
	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);

		R.destroy_qp(q->real);
		q->real = NULL;
	}
	list_for(p, &S.srqs) {
		struct ssrq *s = container(p, struct ssrq, link);

		R.destroy_srq(s->real);
		s->real = NULL;
	}
	list_for(p, &S.cqs) {
		struct scq *c = container(p, struct scq, link);

		if (c->ev_got > c->ev_acked)
			R.ack_cq_events(c->real, c->ev_got - c->ev_acked);
		R.destroy_cq(c->real);
		c->real = NULL;
	}
	list_for(p, &S.chans) {
		struct schan *ch = container(p, struct schan, link);

		R.destroy_comp_channel(ch->real);
		ch->real = NULL;
	}
	list_for(p, &S.mrs) {
		struct smr *m = container(p, struct smr, link);

		R.dereg_mr(m->real);
		m->real = NULL;
	}
	list_for(p, &S.pds) {
		struct spd *pd = container(p, struct spd, link);

		R.dealloc_pd(pd->real);
		pd->real = NULL;
	}
	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);

		R.close_device(c->real);
		c->real = NULL;
	}
	for (i = 0; i < CTL.nfds; i++) {
		struct ibcr_verbs_fd *f = &CTL.fds[i];
		int fd = -1, pp[2];
		uint32_t k;

		if (f->kind == IBCR_VFD_COMP_CHANNEL && pipe(pp) == 0) {
			for (k = 0; k < f->nwake; k++) {
				uint64_t ev = f->wake_cq[k];

				if (write(pp[1], &ev, sizeof ev) != sizeof ev)
					break;
			}
			close(pp[1]);
			fd = pp[0];
		} else {
			fd = open("/dev/null", O_RDWR);
		}
		if (fd >= 0 && fd != f->fd) {
			dup2(fd, f->fd);
			close(fd);
		}
	}
	pthread_mutex_unlock(&S.lock);
	return 0;
}

EXPORT uint32_t ibcr_verbs_test_real_qpn(struct ibv_qp *qp)
{
	/* IS_V also answers for NULL; qp never is */
	if (IS_V(qp) && ((struct sqp *)qp)->real)
		return ((struct sqp *)qp)->real->qp_num;
	return qp->qp_num;	// cppcheck-suppress nullPointerRedundantCheck
}

EXPORT int ibcr_verbs_test_real_mr(struct ibv_mr *mr, uint32_t *lkey, uint32_t *rkey,
				   void **addr, size_t *length)
{
	struct ibv_mr *r = IS_V(mr) ? ((struct smr *)mr)->real : mr;

	if (!r)
		return ENOENT;
	*lkey = r->lkey;
	*rkey = r->rkey;
	*addr = r->addr;
	*length = r->length;
	return 0;
}
