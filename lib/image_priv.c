// SPDX-License-Identifier: MIT
/*
 * The CREDS and SECCOMP sections of one process: encoding (saver) and
 * decoding with every count, index and string checked (loader, tools).
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "image_io.h"

#define BAD(what) ibcr_fail(e, "image %s: process %u: %s", path, proc, what)

/* The kernel's limits: BPF_MAXINSNS per filter, MAX_INSNS_PER_PATH per chain. */
#define MAX_FILTER_INSNS 4096
#define MAX_PATH_INSNS 32768
#define MAX_GROUPS 65536	/* NGROUPS_MAX */

void enc_creds(struct buf *b, const struct ibcr_priv *pv)
{
	struct ibcr_creds_hdr h = pv->hdr;
	const char *root = pv->root ? pv->root : "/";

	h.root_len = (uint32_t)strlen(root) + 1;
	buf_put(b, &h, sizeof(h));
	buf_put(b, pv->creds, sizeof(struct ibcr_creds) * h.nthreads);
	buf_put(b, pv->groups, sizeof(uint32_t) * h.ngroups);
	buf_put(b, root, h.root_len);
}

void enc_seccomp(struct buf *b, const struct ibcr_priv *pv)
{
	struct ibcr_seccomp_hdr h = { pv->nfilters, pv->ninsns };

	buf_put(b, &h, sizeof(h));
	buf_put(b, pv->filters, sizeof(struct ibcr_seccomp_filter) * pv->nfilters);
	buf_put(b, pv->insns, sizeof(uint64_t) * pv->ninsns);
}

static int check_creds(const char *path, uint32_t proc, const struct ibcr_priv *pv,
		       struct ibcr_err *e)
{
	for (uint32_t i = 0; i < pv->hdr.nthreads; i++) {
		const struct ibcr_creds *c = &pv->creds[i];

		if (c->ngroups > MAX_GROUPS || c->group0 > pv->hdr.ngroups ||
		    c->ngroups > pv->hdr.ngroups - c->group0)
			return BAD("CREDS groups out of bounds");
		if (c->seccomp > IBCR_SECCOMP_FILTER || (c->flags & ~IBCR_CREDF_NO_NEW_PRIVS) ||
		    (c->cap_amb & ~(c->cap_prm & c->cap_inh)) || (c->cap_eff & ~c->cap_prm))
			return BAD("CREDS record out of range");
	}
	if (pv->hdr.dumpable > 2)
		return BAD("CREDS dumpable out of range");
	return 0;
}

int dec_creds(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
	      struct ibcr_priv *pv, struct ibcr_err *e)
{
	struct ibcr_creds_hdr h;
	uint64_t need;

	if (pv->creds)
		return BAD("two CREDS sections");
	if (n < sizeof(h))
		return BAD("CREDS section too short");
	memcpy(&h, p, sizeof(h));
	if (h.nthreads == 0 || h.nthreads > 65536 || h.root_len == 0 || h.root_len > 4096 ||
	    h.ngroups > (uint64_t)MAX_GROUPS * h.nthreads)
		return BAD("CREDS counts out of range");
	need = sizeof(h) + (uint64_t)h.nthreads * sizeof(struct ibcr_creds) +
	       (uint64_t)h.ngroups * 4 + h.root_len;
	if (need != n || p[n - 1] || strlen((const char *)p + n - h.root_len) + 1 != h.root_len)
		return BAD("CREDS section size does not match its contents");
	pv->hdr = h;
	p += sizeof(h);
	pv->creds = xmalloc(sizeof(struct ibcr_creds) * h.nthreads);
	memcpy(pv->creds, p, sizeof(struct ibcr_creds) * h.nthreads);
	p += sizeof(struct ibcr_creds) * h.nthreads;
	pv->groups = xmalloc(4 * (size_t)h.ngroups + 4);
	memcpy(pv->groups, p, 4 * (size_t)h.ngroups);
	pv->root = xstrdup((const char *)p + 4 * (size_t)h.ngroups);
	return check_creds(path, proc, pv, e);
}

static int check_filters(const char *path, uint32_t proc, const struct ibcr_priv *pv,
			 struct ibcr_err *e)
{
	uint32_t *depth = xcalloc(pv->nfilters + 1, sizeof(uint32_t));
	int rc = 0;

	/* depth[i + 1]: instructions on the way from filter i down, as the kernel counts */
	for (uint32_t i = 0; i < pv->nfilters && !rc; i++) {
		const struct ibcr_seccomp_filter *f = &pv->filters[i];

		if (f->prev > i || f->ninsns == 0 || f->ninsns > MAX_FILTER_INSNS ||
		    f->insn0 > pv->ninsns || f->ninsns > pv->ninsns - f->insn0)
			rc = BAD("SECCOMP filter out of bounds");
		else if ((depth[i + 1] = depth[f->prev] + f->ninsns + 4) > MAX_PATH_INSNS + 4)
			rc = BAD("SECCOMP filters longer than the kernel allows");
	}
	free(depth);
	return rc;
}

int dec_seccomp(const char *path, uint32_t proc, const uint8_t *p, uint64_t n,
		struct ibcr_priv *pv, struct ibcr_err *e)
{
	struct ibcr_seccomp_hdr h;

	if (pv->filters)
		return BAD("two SECCOMP sections");
	if (n < sizeof(h))
		return BAD("SECCOMP section too short");
	memcpy(&h, p, sizeof(h));
	if (h.nfilters == 0 || h.nfilters > 65536 || h.ninsns > (1u << 24) ||
	    n != sizeof(h) + (uint64_t)h.nfilters * sizeof(struct ibcr_seccomp_filter) +
		 (uint64_t)h.ninsns * 8)
		return BAD("SECCOMP section size does not match its contents");
	pv->nfilters = h.nfilters;
	pv->ninsns = h.ninsns;
	p += sizeof(h);
	pv->filters = xmalloc(sizeof(struct ibcr_seccomp_filter) * h.nfilters);
	memcpy(pv->filters, p, sizeof(struct ibcr_seccomp_filter) * h.nfilters);
	pv->insns = xmalloc(8 * (size_t)h.ninsns + 8);
	memcpy(pv->insns, p + sizeof(struct ibcr_seccomp_filter) * h.nfilters,
	       8 * (size_t)h.ninsns);
	return check_filters(path, proc, pv, e);
}

int ibcr_priv_check(const char *path, uint32_t proc, const struct ibcr_process_state *ps,
		    struct ibcr_err *e)
{
	const struct ibcr_priv *pv = &ps->priv;

	if (!pv->creds || pv->hdr.nthreads != ps->rec.nthreads)
		return BAD("its credentials (CREDS) are missing or do not match its threads");
	for (uint32_t i = 0; i < pv->hdr.nthreads; i++) {
		const struct ibcr_creds *c = &pv->creds[i];

		if ((c->seccomp == IBCR_SECCOMP_FILTER) != (c->filter != 0) ||
		    c->filter > pv->nfilters)
			return BAD("a thread's seccomp filters are missing (SECCOMP)");
	}
	return 0;
}

void ibcr_priv_free(struct ibcr_priv *p)
{
	free(p->creds);
	free(p->groups);
	free(p->root);
	free(p->filters);
	free(p->insns);
	memset(p, 0, sizeof(*p));
}
