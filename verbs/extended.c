/* SPDX-License-Identifier: MIT */
/*
 * Extended verbs on the shim's virtual objects. The virtual context is an
 * extended one (struct verbs_context in front of it, abi_compat the
 * extended marker), so the inline helpers of verbs.h find the operations
 * the shim implements and say EOPNOTSUPP for every other (NULL):
 *
 *   query_device_ex, query_port   forwarded to the real context's (the
 *                                 current device's attributes)
 *   create_cq_ex                  a virtual CQ with the polling API
 *                                 (start_poll, next_poll, end_poll, read_*)
 *   create_qp_ex                  a virtual QP, with the ibv_wr_* API when
 *                                 asked for send operations (wr.c)
 *
 * An extended CQ is a plain CQ underneath: each start_poll/next_poll takes
 * one completion through the shim's own poll (so the shadow queue of a
 * checkpoint, the bookkeeping of sends and receives and the translation
 * of QP numbers after a restart are those of ibv_poll_cq), and the read_*
 * functions answer from it. So only the standard completion fields can
 * be asked for (IBV_WC_STANDARD_FLAGS); timestamps, VLANs, flow tags and
 * tag matching are refused with EOPNOTSUPP, as are parent domains.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

#define SCQX(x) ((struct scq *)(x))

static int query_device_ex(struct ibv_context *context,
			   const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_context *real = container(context, struct sctx, vx.context)->real;
	struct verbs_context *rv = verbs_get_ctx_op(real, query_device_ex);

	/* without it the caller falls back to ibv_query_device, as plain */
	return rv ? rv->query_device_ex(real, input, attr, attr_size) : EOPNOTSUPP;
}

static int query_port(struct ibv_context *context, uint8_t port, struct ibv_port_attr *attr,
		      size_t attr_len)
{
	struct ibv_context *real = container(context, struct sctx, vx.context)->real;
	struct verbs_context *rv = verbs_get_ctx_op(real, query_port);

	if (rv)
		return rv->query_port(real, port, attr, attr_len);
	if (attr_len < sizeof(*attr))
		return EINVAL;
	memset(attr, 0, attr_len);
	return R.query_port(real, port, attr);
}

/* One completion into cq->ex_wc and the public status and wr_id. */
static int take_one(struct ibv_cq_ex *vx)
{
	struct scq *c = SCQX(vx);
	int r = shim_poll_cq(&c->v, 1, &c->ex_wc);

	if (r < 0)
		return r == -1 ? EINVAL : -r;
	if (r == 0)
		return ENOENT;
	vx->status = c->ex_wc.status;
	vx->wr_id = c->ex_wc.wr_id;
	return 0;
}

static int start_poll(struct ibv_cq_ex *vx, struct ibv_poll_cq_attr *attr)
{
	if (attr && attr->comp_mask)
		return EINVAL;
	return take_one(vx);
}

static int next_poll(struct ibv_cq_ex *vx)
{
	return take_one(vx);
}

static void end_poll(struct ibv_cq_ex *vx)
{
	(void)vx;	/* nothing held between the polls */
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.vendor_err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.byte_len;
}

static __be32 read_imm_data(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.imm_data;	/* the invalidated rkey too */
}

static uint32_t read_qp_num(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.wc_flags;
}

static uint32_t read_slid(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.slid;
}

static uint8_t read_sl(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.sl;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *vx)
{
	return SCQX(vx)->ex_wc.dlid_path_bits;
}

static struct ibv_cq_ex *create_cq_ex(struct ibv_context *context,
				      struct ibv_cq_init_attr_ex *a)
{
	struct ibv_cq *cq;
	struct scq *c;

	if ((a->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) ||
	    (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) ||
	    ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (a->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		dbg("create_cq_ex: wc_flags %#llx, comp_mask %#x: not supported",
		    (unsigned long long)a->wc_flags, a->comp_mask);
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = ibv_create_cq(context, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector);
	if (!cq)
		return NULL;
	c = SCQX(cq);
	c->ex = 1;
	c->vx.comp_mask = 0;
	c->vx.start_poll = start_poll;
	c->vx.next_poll = next_poll;
	c->vx.end_poll = end_poll;
	c->vx.read_opcode = read_opcode;
	c->vx.read_vendor_err = read_vendor_err;
	c->vx.read_byte_len = read_byte_len;
	c->vx.read_imm_data = read_imm_data;
	c->vx.read_qp_num = read_qp_num;
	c->vx.read_src_qp = read_src_qp;
	c->vx.read_wc_flags = read_wc_flags;
	c->vx.read_slid = read_slid;
	c->vx.read_sl = read_sl;
	c->vx.read_dlid_path_bits = read_dlid_path_bits;
	return &c->vx;
}

void ext_context_init(struct sctx *c)
{
	c->vx.sz = sizeof(c->vx);
	c->vx.query_device_ex = query_device_ex;
	c->vx.query_port = query_port;
	c->vx.create_cq_ex = create_cq_ex;
	c->vx.create_qp_ex = shim_create_qp_ex;
	c->vx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}
