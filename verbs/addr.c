/* SPDX-License-Identifier: MIT */
/*
 * Port addresses as the application knows them and as they are now: the
 * port capture at open and after a rebuild, how one end names the other,
 * and the peer tables that translate a destination (see docs/verbs.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"

void hex(char *out, const uint8_t *p, int n)
{
	static const char d[] = "0123456789abcdef";
	int i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

int unhex(const char *s, uint8_t *p, int n)
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
void addr_str(const struct vaddr *a, char *out)
{
	if (a->kind == VADDR_GID) {
		out[0] = 'g';
		hex(out + 1, a->gid.raw, 16);
	} else {
		sprintf(out, "l%04x", a->lid);
	}
}

int addr_eq(const struct vaddr *a, const struct vaddr *b)
{
	if (a->kind != b->kind)
		return 0;
	if (a->kind == VADDR_GID)
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
		out->kind = VADDR_LID;
		out->lid = pi->lid_app;
		return;
	}
	out->kind = VADDR_GID;
	for (k = 0; k < pi->ngid; k++)
		if (pi->gid[k].idx == (uint32_t)sgid_index) {
			out->gid = pi->gid[k].app;
			return;
		}
	R.query_gid(c->real, (uint8_t)port, sgid_index, &out->gid);
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

void ah_addr(const struct ibv_ah_attr *at, struct vaddr *a)
{
	memset(a, 0, sizeof *a);
	a->port = at->port_num;
	if (at->is_global) {
		a->kind = VADDR_GID;
		a->gid = at->grh.dgid;
	} else {
		a->kind = VADDR_LID;
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
		if (a.kind == VADDR_GID)
			at->grh.dgid = d->addr[i].cur.gid;
		else
			at->dlid = d->addr[i].cur.lid;
		return 1;
	}
	return 0;
}

