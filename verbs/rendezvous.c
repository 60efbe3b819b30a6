/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous after a restart: each process publishes, per device, its
 * old -> new numbers (ports, QPs, MRs) in the rendezvous directory, once
 * per connection and round, and waits for its peers' (docs/verbs.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt.h"

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
int read_pub(const char *name, char **out)
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
	window = restart_timeout() * 1000000ull;
	if (tm + window < S.restart_start_ns) {
		free(t);
		return -1;
	}
	*out = t;
	return 1;
}

/* Merges a publication into the peer tables (S.lock held). */
void ingest(const char *text)
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
			apps[na].kind = curs[na].kind = VADDR_LID;
			apps[na].port = curs[na].port = (uint8_t)port;
			apps[na].lid = (uint16_t)app;
			curs[na].lid = (uint16_t)cur;
			na++;
		} else if (na < SHIM_MAX_GIDS * 2 &&
			   sscanf(l, "gid %u %u %39s %39s", &port, &idx, ah, ch) == 4) {
			memset(&apps[na], 0, sizeof apps[na]);
			memset(&curs[na], 0, sizeof curs[na]);
			apps[na].kind = curs[na].kind = VADDR_GID;
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

/* "ud-ADDR-QPN": where a UD QP announces itself at one of its addresses. */
void ud_pub_name(char *out, size_t n, const struct vaddr *a, uint32_t qpn)
{
	char s[40];

	addr_str(a, s);
	snprintf(out, n, "ud-%s-%x", s, qpn);
}

static void pair_name(char *out, size_t n, const char *kind, const struct vaddr *to,
		      uint32_t to_qpn, const struct vaddr *from, uint32_t from_qpn)
{
	char a[40], b[40];

	addr_str(to, a);
	addr_str(from, b);
	snprintf(out, n, "%s-%s-%x-from-%s-%x", kind, a, to_qpn, b, from_qpn);
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


void rdv_prepare(void)
{
	mkdir_p(rdv_dir());
}

/* The peer tables start afresh (nothing reads them while rebuilding). */
void rdv_forget_peers(void)
{
	while (S.rdevs) {
		struct rdev *d = S.rdevs;

		S.rdevs = d->next;
		ht_clear(&d->qpn);
		ht_clear(&d->rkey);
		free(d);
	}
	S.n_ud_neg = 0;
	ht_clear(&S.rev_qpn);
}

static int connected(const struct sqp *q)
{
	return q->has_remote && q->cur_state >= IBV_QPS_RTR;
}

static void publish_or_die(const char *name, const struct rdv_content *ct)
{
	if (publish(name, ct->text, ct->len))
		fatal(errno, "restart: cannot write %s/%s: %s", rdv_dir(), name, strerror(errno));
}

/* A UD QP, at every address of its port: its destinations look it up. */
static void announce_ud(struct sctx *c, struct sqp *q, const struct rdv_content *ct)
{
	char name[256];
	int i, k;

	for (i = 0; i < c->nports; i++) {
		struct pinfo *pi = &c->port[i];
		struct vaddr a;

		memset(&a, 0, sizeof a);
		if (pi->lid_app) {
			a.kind = VADDR_LID;
			a.lid = pi->lid_app;
			ud_pub_name(name, sizeof name, &a, q->v.qp_num);
			publish(name, ct->text, ct->len);
		}
		for (k = 0; k < pi->ngid; k++) {
			a.kind = VADDR_GID;
			a.gid = pi->gid[k].app;
			ud_pub_name(name, sizeof name, &a, q->v.qp_num);
			publish(name, ct->text, ct->len);
		}
	}
}

/*
 * One round's publications, per device: RDV_RC gives each connected QP's
 * peer this end's tables (and ingests them for loopback), RDV_READY tells
 * it this end is rebuilt and announces the UD QPs.
 */
void rdv_publish(enum rdv_round round)
{
	const char *kind = round == RDV_RC ? "rc" : "ready";
	struct list *p;

	list_for(p, &S.ctxs) {
		struct sctx *c = container(p, struct sctx, link);
		struct rdv_content ct;
		struct list *qp;

		if (content_make(c, &ct))
			fatal(ENOMEM, "restart: out of memory");
		if (round == RDV_RC)
			ingest(ct.text);	/* our own QPs and MRs, for loopback */
		list_for(qp, &S.qps) {
			struct sqp *q = container(qp, struct sqp, link);
			char name[256];

			if (q->ctx != c)
				continue;
			if (connected(q)) {
				pair_name(name, sizeof name, kind, &q->remote_addr, q->remote_qpn,
					  &q->my_addr, q->v.qp_num);
				publish_or_die(name, &ct);
			}
			if (round == RDV_READY && q->v.qp_type == IBV_QPT_UD)
				announce_ud(c, q, &ct);
		}
		free(ct.text);
	}
}

/*
 * This process published its round (mark-ROUND-PID), when the node's agent
 * forwards the directory's files to the other nodes (it made .forward):
 * it counts the marks, then carries the round's files in one exchange.
 */
void rdv_mark(enum rdv_round round)
{
	char path[1024], name[64];

	snprintf(path, sizeof path, "%s/.forward", rdv_dir());
	if (access(path, F_OK))
		return;
	snprintf(name, sizeof name, "mark-%s-%d", round == RDV_RC ? "rc" : "ready",
		 (int)getpid());
	if (publish(name, "", 0))
		fatal(errno, "restart: cannot write %s/%s: %s", rdv_dir(), name, strerror(errno));
}

/* Every connected QP's peer's publication of the round, consumed. */
void rdv_await(enum rdv_round round, uint64_t deadline)
{
	const char *kind = round == RDV_RC ? "rc" : "ready";
	struct list *p;

	list_for(p, &S.qps) {
		struct sqp *q = container(p, struct sqp, link);
		char name[256];

		if (!connected(q))
			continue;
		pair_name(name, sizeof name, kind, &q->my_addr, q->v.qp_num, &q->remote_addr,
			  q->remote_qpn);
		wait_pair(q, name, deadline, round == RDV_RC);
	}
}
