// SPDX-License-Identifier: MIT
/*
 * Encoding of the metadata sections of one process (saver side). The
 * decoding, with all its checks, is in image_read.c.
 */
#include <string.h>

#include "buf.h"
#include "image_io.h"

void enc_proc(struct buf *b, const struct ibcr_process_state *ps)
{
	struct ibcr_proc rec = ps->rec;
	struct buf s = { 0 };

	rec.exe_off = (uint32_t)buf_str(&s, ps->exe ? ps->exe : "");
	rec.cwd_off = (uint32_t)buf_str(&s, ps->cwd ? ps->cwd : "");
	rec.cmdline_off = (uint32_t)buf_put(&s, ps->cmdline, rec.cmdline_len);
	buf_put(&s, "", 1);
	buf_put(b, &rec, sizeof(rec));
	buf_put(b, s.p, s.len);
	buf_free(&s);
}

void enc_thread(struct buf *b, const struct ibcr_thread_state *t)
{
	uint32_t nsig = t->rec.nsiginfo + t->rec.nsiginfo_shared;

	buf_put(b, &t->rec, sizeof(t->rec));
	buf_put(b, t->gpregs, t->rec.gpregs_size);
	buf_put(b, t->fpregs, t->rec.fpregs_size);
	buf_put(b, t->siginfo, (size_t)nsig * IBCR_SIGINFO_SIZE);
}

void enc_files(struct buf *b, const struct ibcr_process_state *ps)
{
	struct ibcr_files_hdr h = { .nfds = ps->nfds, .nlocks = ps->nlocks };

	buf_put(b, &h, sizeof(h));
	buf_put(b, ps->fds, sizeof(struct ibcr_fd) * ps->nfds);
	buf_put(b, ps->locks, sizeof(struct ibcr_lock) * ps->nlocks);
}

void enc_fileobjs(struct buf *b, const struct ibcr_files *f)
{
	struct ibcr_fileobjs_hdr h = { .nobjs = f->nobjs };
	struct buf s = { 0 }, d = { 0 };
	size_t at;

	buf_put(b, &h, sizeof(h));
	at = buf_put(b, f->objs, sizeof(struct ibcr_fobj) * f->nobjs);
	for (uint32_t i = 0; i < f->nobjs; i++) {
		struct ibcr_fobj *o = (struct ibcr_fobj *)(b->p + at) + i;

		o->path_off = (uint32_t)buf_str(&s, f->paths[i] ? f->paths[i] : "");
		o->data_off = f->data[i] ? buf_put(&d, f->data[i], o->data_len) : 0;
		if (!f->data[i])
			o->data_len = 0;
	}
	((struct ibcr_fileobjs_hdr *)b->p)->strtab_size = (uint32_t)s.len;
	((struct ibcr_fileobjs_hdr *)b->p)->data_size = d.len;
	buf_put(b, s.p, s.len);
	buf_put(b, d.p, d.len);
	buf_free(&s);
	buf_free(&d);
}

void enc_vmas(struct buf *b, const struct ibcr_process_state *ps)
{
	struct ibcr_vmas_hdr h = { .nvmas = ps->nvmas, .nruns = ps->nruns };
	struct buf s = { 0 };
	size_t at;

	buf_put(b, &h, sizeof(h));
	at = buf_put(b, ps->vmas, sizeof(struct ibcr_vma) * ps->nvmas);
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		struct ibcr_vma *v = (struct ibcr_vma *)(b->p + at) + i;

		v->name_off = (uint32_t)buf_str(&s, ps->vma_names[i]);
	}
	buf_put(b, ps->runs, sizeof(struct ibcr_run) * ps->nruns);
	((struct ibcr_vmas_hdr *)b->p)->strtab_size = (uint32_t)s.len;
	buf_put(b, s.p, s.len);
	buf_free(&s);
}

void enc_sysvsem(struct buf *b, const struct ibcr_sysvipc *s)
{
	struct ibcr_sysv_sem_hdr h = { .nsets = s->nsets, .nvalues = s->nvalues };

	buf_put(b, &h, sizeof(h));
	buf_put(b, s->sets, sizeof(struct ibcr_sysv_sem) * s->nsets);
	buf_put(b, s->values, sizeof(uint16_t) * s->nvalues);
}

void enc_sysvmsg(struct buf *b, const struct ibcr_sysvipc *s)
{
	struct ibcr_sysv_msg_hdr h = { .nqueues = s->nqueues, .nmsgs = s->nmsgs,
				       .data_size = s->data_size };

	buf_put(b, &h, sizeof(h));
	buf_put(b, s->queues, sizeof(struct ibcr_sysv_msgq) * s->nqueues);
	buf_put(b, s->msgs, sizeof(struct ibcr_sysv_msg) * s->nmsgs);
	buf_put(b, s->data, s->data_size);
}
