// SPDX-License-Identifier: MIT
/*
 * Decoding of one process's sections, with every offset, count and
 * string checked against its section, and the memory map checked for
 * order, bounds and page data that is really there.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "compress.h"
#include "rt/crc32c.h"
#include "rt/xxh64.h"
#include "image_io.h"

/* A string at `off` of a table of `size` bytes must end inside it. */
static const char *str_at(const uint8_t *tab, uint64_t size, uint64_t off)
{
	if (off >= size || !memchr(tab + off, 0, size - off))
		return NULL;
	return (const char *)tab + off;
}

#define BAD(what) ibcr_fail(e, "image %s: process %u: %s", r->path, proc, what)

static int dec_proc(struct img_reader *r, uint32_t proc, const uint8_t *p,
		    uint64_t n, struct ibcr_process_state *ps, struct ibcr_err *e)
{
	const uint8_t *tab = p + sizeof(struct ibcr_proc);
	uint64_t tn = n - sizeof(struct ibcr_proc);
	const char *exe, *cwd;

	if (n < sizeof(struct ibcr_proc))
		return BAD("PROC section too short");
	memcpy(&ps->rec, p, sizeof(ps->rec));
	exe = str_at(tab, tn, ps->rec.exe_off);
	cwd = str_at(tab, tn, ps->rec.cwd_off);
	if (!exe || !cwd || ps->rec.cmdline_off > tn ||
	    ps->rec.cmdline_len > tn - ps->rec.cmdline_off)
		return BAD("PROC strings out of bounds");
	if ((ps->rec.nthreads == 0) != !!(ps->rec.flags & IBCR_PROCF_ZOMBIE) ||
	    ps->rec.nthreads > 65536 ||
	    ps->rec.auxv_words > IBCR_MAX_AUXV || ps->rec.ngroups > 32)
		return BAD("PROC counts out of range");
	ps->exe = xstrdup(exe);
	ps->cwd = xstrdup(cwd);
	ps->cmdline = xmalloc(ps->rec.cmdline_len + 1);
	memcpy(ps->cmdline, tab + ps->rec.cmdline_off, ps->rec.cmdline_len);
	ps->cmdline[ps->rec.cmdline_len] = 0;
	return 0;
}

static int dec_thread(struct img_reader *r, uint32_t proc, const uint8_t *p,
		      uint64_t n, struct ibcr_thread_state *t, struct ibcr_err *e)
{
	uint64_t need;

	if (n < sizeof(t->rec))
		return BAD("THREAD section too short");
	memcpy(&t->rec, p, sizeof(t->rec));
	if (t->rec.gpregs_size == 0 || t->rec.gpregs_size > 4096 ||
	    t->rec.fpregs_size > 65536 || t->rec.nsiginfo > 65536 ||
	    t->rec.nsiginfo_shared > 65536)
		return BAD("THREAD sizes out of range");
	need = sizeof(t->rec) + t->rec.gpregs_size + t->rec.fpregs_size +
	       (uint64_t)(t->rec.nsiginfo + t->rec.nsiginfo_shared) * IBCR_SIGINFO_SIZE;
	if (need != n)
		return BAD("THREAD section size does not match its contents");
	p += sizeof(t->rec);
	t->gpregs = xmalloc(t->rec.gpregs_size);
	memcpy(t->gpregs, p, t->rec.gpregs_size);
	p += t->rec.gpregs_size;
	t->fpregs = xmalloc(t->rec.fpregs_size);
	memcpy(t->fpregs, p, t->rec.fpregs_size);
	p += t->rec.fpregs_size;
	need = (uint64_t)(t->rec.nsiginfo + t->rec.nsiginfo_shared) * IBCR_SIGINFO_SIZE;
	t->siginfo = xmalloc(need);
	memcpy(t->siginfo, p, need);
	return 0;
}

static int dec_files(struct img_reader *r, uint32_t proc, const uint8_t *p,
		     uint64_t n, struct ibcr_process_state *ps, struct ibcr_err *e)
{
	struct ibcr_files_hdr h;

	if (n < sizeof(h))
		return BAD("FILES section too short");
	memcpy(&h, p, sizeof(h));
	if (h.nfds > 1u << 20 || h.nlocks > 1u << 20 ||
	    sizeof(h) + (uint64_t)h.nfds * sizeof(struct ibcr_fd) +
	    (uint64_t)h.nlocks * sizeof(struct ibcr_lock) != n)
		return BAD("FILES section size does not match its contents");
	ps->nfds = h.nfds;
	ps->fds = xcalloc(h.nfds, sizeof(struct ibcr_fd));
	memcpy(ps->fds, p + sizeof(h), h.nfds * sizeof(struct ibcr_fd));
	ps->nlocks = h.nlocks;
	ps->locks = xcalloc(h.nlocks, sizeof(struct ibcr_lock));
	memcpy(ps->locks, p + sizeof(h) + h.nfds * sizeof(struct ibcr_fd),
	       h.nlocks * sizeof(struct ibcr_lock));
	for (uint32_t i = 0; i < h.nlocks; i++) {
		uint32_t k = ps->locks[i].kind;

		if (k < IBCR_LOCK_POSIX || k > IBCR_LOCK_OFD || ps->locks[i].start > ps->locks[i].end)
			return BAD("FILES lock malformed");
	}
	for (uint32_t i = 0; i < h.nfds; i++)
		if (ps->fds[i].fd < 0 || (i && ps->fds[i].fd <= ps->fds[i - 1].fd))
			return BAD("FILES entry malformed");
	return 0;
}

int ibcr_check_fds(const struct ibcr_process_state *ps, const struct ibcr_files *f,
		   struct ibcr_err *e)
{
	for (uint32_t i = 0; i < ps->nfds; i++)
		if (ps->fds[i].obj >= f->nobjs)
			return ibcr_fail(e, "pid %d: fd %d names file object %u of %u",
					 ps->rec.pid, ps->fds[i].fd, ps->fds[i].obj, f->nobjs);
	return 0;
}

static int dec_fileobjs(struct img_reader *r, const uint8_t *p, uint64_t n,
			struct ibcr_files *f, struct ibcr_err *e)
{
	struct ibcr_fileobjs_hdr h;
	const uint8_t *tab, *data;

	if (n < sizeof(h))
		return ibcr_fail(e, "image %s: FILEOBJS section too short", r->path);
	memcpy(&h, p, sizeof(h));
	if (h.nobjs > 1u << 20 ||
	    sizeof(h) + (uint64_t)h.nobjs * sizeof(struct ibcr_fobj) + h.strtab_size +
	    h.data_size != n)
		return ibcr_fail(e, "image %s: FILEOBJS section size does not match its "
				 "contents", r->path);
	f->nobjs = h.nobjs;
	f->objs = xcalloc(h.nobjs, sizeof(struct ibcr_fobj));
	f->paths = xcalloc(h.nobjs, sizeof(char *));
	f->data = xcalloc(h.nobjs, sizeof(uint8_t *));
	memcpy(f->objs, p + sizeof(h), h.nobjs * sizeof(struct ibcr_fobj));
	tab = p + sizeof(h) + h.nobjs * sizeof(struct ibcr_fobj);
	data = tab + h.strtab_size;
	for (uint32_t i = 0; i < h.nobjs; i++) {
		const struct ibcr_fobj *o = &f->objs[i];
		const char *s = str_at(tab, h.strtab_size, o->path_off);

		if (!s || o->data_off > h.data_size || o->data_len > h.data_size - o->data_off)
			return ibcr_fail(e, "image %s: file object %u is malformed", r->path, i);
		f->paths[i] = xstrdup(s);
		if (o->data_len) {
			f->data[i] = xmalloc(o->data_len);
			memcpy(f->data[i], data + o->data_off, o->data_len);
		}
	}
	return 0;
}

/* Each object's record, checked against FILEDATA's bounds and the objects. */
static int dec_fattrs(struct img_reader *r, const uint8_t *p, uint64_t n,
		      struct ibcr_files *f, struct ibcr_err *e)
{
	if (n != (uint64_t)f->nobjs * sizeof(struct ibcr_fattr))
		return ibcr_fail(e, "image %s: FILEATTRS section does not match the %u file "
				 "objects", r->path, f->nobjs);
	memcpy(f->attrs, p, n);
	for (uint32_t i = 0; i < f->nobjs; i++) {
		const struct ibcr_fattr *a = &f->attrs[i];

		if (a->same_file > i || ((a->flags & IBCR_FATTR_DATA) &&
		    (a->data_off > f->filedata_size || a->data_len > f->filedata_size - a->data_off ||
		     (uint64_t)a->nextents * sizeof(struct ibcr_extent) > a->data_len)))
			return ibcr_fail(e, "image %s: the attributes of file object %u are "
					 "malformed", r->path, i);
	}
	return 0;
}

/* FILEDATA's place (read a piece at a time), then FILEATTRS. */
static int load_fattrs(struct img_reader *r, struct ibcr_files *f, struct ibcr_err *e)
{
	int rc = 0;

	f->filedata_fd = r->fd;
	f->attrs = xcalloc(f->nobjs + 1, sizeof(*f->attrs));
	for (uint32_t i = 0; i < r->nsecs; i++)
		if (r->secs[i].h.type == IBCR_SEC_FILEDATA) {
			if (f->filedata_off)
				return ibcr_fail(e, "image %s: two FILEDATA sections", r->path);
			f->filedata_off = r->secs[i].payload;
			f->filedata_size = r->secs[i].h.size;
		}
	for (uint32_t i = 0; i < r->nsecs && !rc; i++) {
		uint8_t *p;

		if (r->secs[i].h.type != IBCR_SEC_FILEATTRS)
			continue;
		if (imgr_payload(r, i, &p, e))
			return -1;
		rc = dec_fattrs(r, p, r->secs[i].h.size, f, e);
		free(p);
	}
	return rc;
}

int imgr_load_files(struct img_reader *r, struct ibcr_files *f, struct ibcr_err *e)
{
	memset(f, 0, sizeof(*f));
	for (uint32_t i = 0; i < r->nsecs; i++) {
		uint8_t *p;
		int rc;

		if (r->secs[i].h.type != IBCR_SEC_FILEOBJS)
			continue;
		if (f->objs)
			return ibcr_fail(e, "image %s: two FILEOBJS sections", r->path);
		if (imgr_payload(r, i, &p, e))
			return -1;
		rc = dec_fileobjs(r, p, r->secs[i].h.size, f, e);
		free(p);
		if (rc) {
			ibcr_files_free(f);
			return -1;
		}
	}
	if (load_fattrs(r, f, e)) {
		ibcr_files_free(f);
		return -1;
	}
	return 0;
}

int imgr_load_sysv(struct img_reader *r, struct ibcr_sysv *s, struct ibcr_err *e)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < r->nsecs; i++) {
		uint64_t size = r->secs[i].h.size;
		uint8_t *p;

		if (r->secs[i].h.type != IBCR_SEC_SYSVSHM)
			continue;
		if (s->shm || size % sizeof(struct ibcr_sysv_shm) ||
		    size > 65536 * sizeof(struct ibcr_sysv_shm))
			return ibcr_fail(e, "image %s: SYSVSHM section is malformed", r->path);
		if (imgr_payload(r, i, &p, e))
			return -1;
		s->nshm = (uint32_t)(size / sizeof(struct ibcr_sysv_shm));
		s->shm = (struct ibcr_sysv_shm *)p;
	}
	return 0;
}

/* Each set's values follow the previous set's, all inside the table. */
static int dec_sysvsem(struct img_reader *r, const uint8_t *p, uint64_t n,
		       struct ibcr_sysvipc *s, struct ibcr_err *e)
{
	struct ibcr_sysv_sem_hdr h;
	uint64_t next = 0;

	if (n < sizeof(h))
		return ibcr_fail(e, "image %s: SYSVSEM section too short", r->path);
	memcpy(&h, p, sizeof(h));
	if (h.nsets > 1u << 24 || h.nvalues > 1u << 28 ||
	    sizeof(h) + (uint64_t)h.nsets * sizeof(struct ibcr_sysv_sem) +
	    (uint64_t)h.nvalues * sizeof(uint16_t) != n)
		return ibcr_fail(e, "image %s: SYSVSEM section size does not match its "
				 "contents", r->path);
	s->nsets = h.nsets;
	s->nvalues = h.nvalues;
	s->sets = xcalloc(h.nsets + 1, sizeof(struct ibcr_sysv_sem));
	s->values = xcalloc(h.nvalues + 1, sizeof(uint16_t));
	memcpy(s->sets, p + sizeof(h), h.nsets * sizeof(struct ibcr_sysv_sem));
	memcpy(s->values, p + sizeof(h) + h.nsets * sizeof(struct ibcr_sysv_sem),
	       h.nvalues * sizeof(uint16_t));
	for (uint32_t i = 0; i < h.nsets; i++) {
		if (!s->sets[i].nsems || s->sets[i].first != next)
			return ibcr_fail(e, "image %s: SysV semaphore set %d is malformed",
					 r->path, s->sets[i].id);
		next += s->sets[i].nsems;
	}
	if (next != h.nvalues)
		return ibcr_fail(e, "image %s: SYSVSEM section has %u values for %llu "
				 "semaphores", r->path, h.nvalues, (unsigned long long)next);
	return 0;
}

/* Each queue's messages follow the previous queue's; texts inside the data. */
static int dec_msgs(struct img_reader *r, struct ibcr_sysvipc *s, struct ibcr_err *e)
{
	uint64_t next = 0;

	for (uint32_t i = 0; i < s->nqueues; i++) {
		if (s->queues[i].first != next)
			return ibcr_fail(e, "image %s: SysV message queue %d is malformed",
					 r->path, s->queues[i].id);
		next += s->queues[i].nmsgs;
	}
	if (next != s->nmsgs)
		return ibcr_fail(e, "image %s: SYSVMSG section has %u messages, its queues "
				 "%llu", r->path, s->nmsgs, (unsigned long long)next);
	for (uint32_t i = 0; i < s->nmsgs; i++) {
		const struct ibcr_sysv_msg *m = &s->msgs[i];

		if (m->mtype <= 0 || m->data_off > s->data_size ||
		    m->len > s->data_size - m->data_off)
			return ibcr_fail(e, "image %s: SysV message %u is malformed",
					 r->path, i);
	}
	return 0;
}

static int dec_sysvmsg(struct img_reader *r, const uint8_t *p, uint64_t n,
		       struct ibcr_sysvipc *s, struct ibcr_err *e)
{
	struct ibcr_sysv_msg_hdr h;
	uint64_t qsize, msize;

	if (n < sizeof(h))
		return ibcr_fail(e, "image %s: SYSVMSG section too short", r->path);
	memcpy(&h, p, sizeof(h));
	qsize = (uint64_t)h.nqueues * sizeof(struct ibcr_sysv_msgq);
	msize = (uint64_t)h.nmsgs * sizeof(struct ibcr_sysv_msg);
	if (h.nqueues > 1u << 24 || h.nmsgs > 1u << 28 || h.data_size > n ||
	    sizeof(h) + qsize + msize + h.data_size != n)
		return ibcr_fail(e, "image %s: SYSVMSG section size does not match its "
				 "contents", r->path);
	s->nqueues = h.nqueues;
	s->nmsgs = h.nmsgs;
	s->data_size = h.data_size;
	s->queues = xmalloc(qsize + 1);
	s->msgs = xmalloc(msize + 1);
	s->data = xmalloc(h.data_size + 1);
	memcpy(s->queues, p + sizeof(h), qsize);
	memcpy(s->msgs, p + sizeof(h) + qsize, msize);
	memcpy(s->data, p + sizeof(h) + qsize + msize, h.data_size);
	return dec_msgs(r, s, e);
}

/* The one section of `type`, decoded by dec; none is fine (older images). */
static int load_one(struct img_reader *r, uint32_t type, struct ibcr_sysvipc *s,
		    int (*dec)(struct img_reader *, const uint8_t *, uint64_t,
			       struct ibcr_sysvipc *, struct ibcr_err *),
		    struct ibcr_err *e)
{
	int seen = 0;

	for (uint32_t i = 0; i < r->nsecs; i++) {
		uint8_t *p;
		int rc;

		if (r->secs[i].h.type != type)
			continue;
		if (seen++)
			return ibcr_fail(e, "image %s: two %s sections", r->path,
					 ibcr_sec_type_name(type));
		if (imgr_payload(r, i, &p, e))
			return -1;
		rc = dec(r, p, r->secs[i].h.size, s, e);
		free(p);
		if (rc)
			return -1;
	}
	return 0;
}

int imgr_load_sysvipc(struct img_reader *r, struct ibcr_sysvipc *s, struct ibcr_err *e)
{
	memset(s, 0, sizeof(*s));
	if (load_one(r, IBCR_SEC_SYSVSEM, s, dec_sysvsem, e) ||
	    load_one(r, IBCR_SEC_SYSVMSG, s, dec_sysvmsg, e)) {
		ibcr_sysvipc_free(s);
		return -1;
	}
	return 0;
}

void ibcr_sysvipc_free(struct ibcr_sysvipc *s)
{
	free(s->sets);
	free(s->values);
	free(s->queues);
	free(s->msgs);
	free(s->data);
	memset(s, 0, sizeof(*s));
}

void ibcr_files_free(struct ibcr_files *f)
{
	for (uint32_t i = 0; i < f->nobjs; i++) {
		if (f->paths)
			free(f->paths[i]);
		if (f->data)
			free(f->data[i]);
	}
	free(f->objs);
	free(f->paths);
	free(f->data);
	free(f->attrs);
	memset(f, 0, sizeof(*f));
}

static int check_vma(struct img_reader *r, uint32_t proc,
		     struct ibcr_process_state *ps, uint32_t i, struct ibcr_err *e)
{
	const struct ibcr_vma *v = &ps->vmas[i];
	uint64_t pg = r->hdr.page_size, pages = 0, prev_end = v->start;

	if (v->start >= v->end || v->start % pg || v->end % pg ||
	    (i && v->start < ps->vmas[i - 1].end))
		return ibcr_fail(e, "image %s: process %u: region %u %#llx-%#llx is out "
				 "of order or misaligned", r->path, proc, i,
				 (unsigned long long)v->start, (unsigned long long)v->end);
	if (v->run0 > ps->nruns || v->nruns > ps->nruns - v->run0)
		return BAD("region run table out of bounds");
	for (uint64_t k = v->run0; k < v->run0 + v->nruns; k++) {
		const struct ibcr_run *run = &ps->runs[k];

		if (run->addr % pg || run->addr < prev_end || run->npages == 0 ||
		    run->npages > (v->end - run->addr) / pg)
			return ibcr_fail(e, "image %s: process %u: region %#llx-%#llx: "
					 "page run %#llx+%llu out of bounds", r->path,
					 proc, (unsigned long long)v->start,
					 (unsigned long long)v->end,
					 (unsigned long long)run->addr,
					 (unsigned long long)run->npages);
		prev_end = run->addr + run->npages * pg;
		pages += run->npages;
	}
	if (pages * pg != v->data_len || v->data_off % pg ||
	    v->data_off > ps->pages_size || v->data_len > ps->pages_size - v->data_off)
		return ibcr_fail(e, "image %s: process %u: region %#llx-%#llx: its page "
				 "data is missing from the image", r->path, proc,
				 (unsigned long long)v->start, (unsigned long long)v->end);
	return 0;
}

static int dec_vmas(struct img_reader *r, uint32_t proc, const uint8_t *p,
		    uint64_t n, struct ibcr_process_state *ps, struct ibcr_err *e)
{
	struct ibcr_vmas_hdr h;
	const uint8_t *tab;
	uint64_t fixed, next = 0;

	if (n < sizeof(h))
		return BAD("VMAS section too short");
	memcpy(&h, p, sizeof(h));
	fixed = sizeof(h) + (uint64_t)h.nvmas * sizeof(struct ibcr_vma) +
		h.nruns * sizeof(struct ibcr_run);
	if (h.nvmas > 1u << 20 || h.nruns > 1ull << 32 || fixed + h.strtab_size != n)
		return BAD("VMAS section size does not match its contents");
	ps->nvmas = h.nvmas;
	ps->nruns = h.nruns;
	ps->vmas = xcalloc(h.nvmas, sizeof(struct ibcr_vma));
	ps->vma_names = xcalloc(h.nvmas, sizeof(char *));
	ps->runs = xcalloc(h.nruns, sizeof(struct ibcr_run));
	p += sizeof(h);
	memcpy(ps->vmas, p, h.nvmas * sizeof(struct ibcr_vma));
	p += h.nvmas * sizeof(struct ibcr_vma);
	memcpy(ps->runs, p, h.nruns * sizeof(struct ibcr_run));
	tab = p + h.nruns * sizeof(struct ibcr_run);
	for (uint32_t i = 0; i < h.nvmas; i++) {
		const char *s = str_at(tab, h.strtab_size, ps->vmas[i].name_off);

		if (!s)
			return BAD("VMAS name out of bounds");
		ps->vma_names[i] = xstrdup(s);
		if (check_vma(r, proc, ps, i, e))
			return -1;
		/* the regions' data follow each other in the page stream */
		if (ps->vmas[i].data_len && ps->vmas[i].data_off != next)
			return BAD("region data out of order in the page stream");
		next += ps->vmas[i].data_len;
	}
	return 0;
}

/* The block index of a compressed PAGES payload, every header checked. */
int imgr_scan_blocks(struct img_reader *r, const struct img_section *s, const char *what,
		     struct ibcr_blockref **blocks, uint64_t *nblocks, uint64_t *raw_size,
		     struct ibcr_err *e)
{
	uint64_t off = s->payload, end = s->payload + s->h.size, raw = 0, cap = 0;

	while (off < end) {
		struct ibcr_block b;
		struct ibcr_blockref *ref;

		if (end - off < sizeof(b) || pread(r->fd, &b, sizeof(b), (off_t)off) != sizeof(b))
			return ibcr_fail(e, "image %s: %s: page block at offset %llu "
					 "is cut off", r->path, what, (unsigned long long)off);
		if (b.magic != IBCR_BLOCK_MAGIC ||
		    b.hdr_crc != crc32c(0, &b, offsetof(struct ibcr_block, hdr_crc)))
			return ibcr_fail(e, "image %s: %s: page block at offset %llu "
					 "is corrupt (header CRC mismatch)", r->path, what,
					 (unsigned long long)off);
		if (b.raw_off != raw || b.raw_len == 0 || b.raw_len > (16u << 20) ||
		    b.stored_len > end - off - sizeof(b) || b.codec > IBCR_CODEC_ZLIB ||
		    (b.codec == IBCR_CODEC_RAW && b.stored_len != b.raw_len))
			return ibcr_fail(e, "image %s: %s: page block at offset %llu "
					 "is malformed", r->path, what, (unsigned long long)off);
		if (*nblocks == cap)
			*blocks = xrealloc(*blocks, sizeof(**blocks) * (cap = cap ? cap * 2 : 64));
		ref = &(*blocks)[(*nblocks)++];
		*ref = (struct ibcr_blockref){ off + sizeof(b), b.raw_off, b.raw_len,
					       b.stored_len, b.codec, b.raw_crc };
		raw += b.raw_len;
		off += sizeof(b) + (b.stored_len + 7) / 8 * 8;
	}
	*raw_size = raw;
	return 0;
}

static int scan_blocks(struct img_reader *r, uint32_t proc, const struct img_section *s,
		       struct ibcr_process_state *ps, struct ibcr_err *e)
{
	char what[32];

	snprintf(what, sizeof(what), "process %u", proc);
	return imgr_scan_blocks(r, s, what, &ps->blocks, &ps->nblocks, &ps->pages_size, e);
}

static int dec_opaque(const struct img_section *s, const uint8_t *p,
		      struct ibcr_process_state *ps)
{
	struct ibcr_opaque *o;

	ps->opaque = xrealloc(ps->opaque, sizeof(*o) * (ps->nopaque + 1));
	o = &ps->opaque[ps->nopaque++];
	memcpy(o->name, s->h.name, sizeof(o->name));
	o->name[sizeof(o->name) - 1] = 0;
	o->size = s->h.size;
	o->data = xmalloc(s->h.size + 1);
	memcpy(o->data, p, s->h.size);
	return 0;
}

static int dec_one(struct img_reader *r, uint32_t proc, uint32_t idx,
		   const uint8_t *p, struct ibcr_process_state *ps,
		   uint32_t *nthreads, struct ibcr_err *e)
{
	const struct img_section *s = &r->secs[idx];

	switch (s->h.type) {
	case IBCR_SEC_PROC:
		if (ps->threads)
			return BAD("two PROC sections");
		if (dec_proc(r, proc, p, s->h.size, ps, e))
			return -1;
		ps->threads = xcalloc(ps->rec.nthreads, sizeof(*ps->threads));
		return 0;
	case IBCR_SEC_THREAD:
		if (!ps->threads || *nthreads >= ps->rec.nthreads)
			return BAD("THREAD section out of place");
		return dec_thread(r, proc, p, s->h.size, &ps->threads[(*nthreads)++], e);
	case IBCR_SEC_SIGACT:
		if (s->h.size != sizeof(ps->sigact))
			return BAD("SIGACT section has the wrong size");
		memcpy(ps->sigact, p, sizeof(ps->sigact));
		return 0;
	case IBCR_SEC_FILES:
		return dec_files(r, proc, p, s->h.size, ps, e);
	case IBCR_SEC_VMAS:
		return dec_vmas(r, proc, p, s->h.size, ps, e);
	case IBCR_SEC_OPAQUE:
		return dec_opaque(s, p, ps);
	case IBCR_SEC_CREDS:
		return dec_creds(r->path, proc, p, s->h.size, &ps->priv, e);
	case IBCR_SEC_SECCOMP:
		return dec_seccomp(r->path, proc, p, s->h.size, &ps->priv, e);
	case IBCR_SEC_COW:
		return dec_cow(r->path, proc, p, s->h.size, r->hdr.page_size, ps, e);
	case IBCR_SEC_PAGESUMS:
		return dec_pagesums(r->path, proc, p, s->h.size, r->hdr.page_size, ps, e);
	case IBCR_SEC_PATTRS:
		return dec_pattrs(r->path, proc, p, s->h.size, ps, e);
	case IBCR_SEC_TATTRS:
		return dec_tattrs(r->path, proc, p, s->h.size, ps, e);
	case IBCR_SEC_PTIMERS:
		return dec_ptimers(r->path, proc, p, s->h.size, ps, e);
	}
	return ibcr_fail(e, "image %s: section %u has unknown type %u", r->path, idx,
			 s->h.type);
}

int imgr_load_process(struct img_reader *r, uint32_t proc,
		      struct ibcr_process_state *ps, struct ibcr_err *e)
{
	uint32_t nthreads = 0, seen = 0;
	enum { S_PROC = 1, S_SIG = 2, S_FILES = 4, S_PAGES = 8, S_VMAS = 16 };

	memset(ps, 0, sizeof(*ps));
	for (uint32_t i = 0; i < r->nsecs; i++) {
		const struct img_section *s = &r->secs[i];
		uint8_t *p;

		if (s->h.proc != proc)
			continue;
		if (s->h.type == IBCR_SEC_PAGES) {
			/* page data is checked region by region as it is read */
			ps->pages_off = s->payload;
			ps->pages_size = s->h.size;
			seen |= S_PAGES;
			if ((s->h.flags & IBCR_SECF_BLOCKS) && scan_blocks(r, proc, s, ps, e))
				goto fail;
			continue;
		}
		if (imgr_payload(r, i, &p, e))
			goto fail;
		if (dec_one(r, proc, i, p, ps, &nthreads, e)) {
			free(p);
			goto fail;
		}
		free(p);
		seen |= s->h.type == IBCR_SEC_PROC ? S_PROC :
			s->h.type == IBCR_SEC_SIGACT ? S_SIG :
			s->h.type == IBCR_SEC_FILES ? S_FILES :
			s->h.type == IBCR_SEC_VMAS ? S_VMAS : 0;
	}
	/* attributes: both sections or, in an older image, neither */
	ps->has_attrs = ps->cgroup && ps->tattrs;
	if ((ps->rec.flags & IBCR_PROCF_ZOMBIE) ? seen != S_PROC :
	    seen != (S_PROC | S_SIG | S_FILES | S_PAGES | S_VMAS) ||
	    nthreads != ps->rec.nthreads || (!ps->has_attrs && (ps->cgroup || ps->tattrs))) {
		ibcr_fail(e, "image %s: process %u is incomplete (sections missing)",
			  r->path, proc);
		goto fail;
	}
	if (!(ps->rec.flags & IBCR_PROCF_ZOMBIE) && ibcr_priv_check(r->path, proc, ps, e))
		goto fail;
	return 0;
fail:
	ibcr_process_free(ps);
	return -1;
}

/* Streams the page data of every region, in order, through the region CRCs. */
struct crc_walk {
	const struct ibcr_process_state *ps;
	uint32_t region, crc;
	uint64_t pos;		/* stream offset reached */
};

static int walk_bytes(struct img_reader *r, struct crc_walk *w, const uint8_t *p,
		      uint64_t n, struct ibcr_err *e)
{
	while (n) {
		const struct ibcr_vma *v;
		uint64_t end, k;

		while (w->region < w->ps->nvmas && !w->ps->vmas[w->region].data_len)
			w->region++;
		if (w->region >= w->ps->nvmas)
			return 0;	/* bytes past the last region: nobody's */
		v = &w->ps->vmas[w->region];
		end = v->data_off + v->data_len;
		k = end - w->pos < n ? end - w->pos : n;
		w->crc = page_sum(w->crc, p, (size_t)k, r->hdr.page_size,
				  (w->pos - v->data_off) / r->hdr.page_size);
		w->pos += k;
		p += k;
		n -= k;
		if (w->pos == end) {
			if (w->crc != v->data_crc)
				return ibcr_fail(e, "image %s: region %#llx-%#llx (%s): page "
						 "data is corrupt (checksum mismatch)", r->path,
						 (unsigned long long)v->start,
						 (unsigned long long)v->end,
						 ibcr_vma_label(w->ps, w->region));
			w->crc = 0;
			w->region++;
		}
	}
	return 0;
}

static int verify_raw(struct img_reader *r, struct crc_walk *w, uint8_t *buf,
		      size_t cap, struct ibcr_err *e)
{
	for (uint64_t done = 0; done < w->ps->pages_size; ) {
		size_t k = w->ps->pages_size - done < cap ? w->ps->pages_size - done : cap;
		ssize_t got = pread(r->fd, buf, k, (off_t)(w->ps->pages_off + done));

		/* whole pages only: the sums go page by page */
		for (ssize_t more = got; more > 0 && (size_t)got < k; got += more)
			more = pread(r->fd, buf + got, k - (size_t)got,
				     (off_t)(w->ps->pages_off + done + (uint64_t)got));
		if (got <= 0 || (size_t)got < k)
			return ibcr_fail_errno(e, got ? errno : EIO, "image %s: reading page data",
					       r->path);
		if (walk_bytes(r, w, buf, (uint64_t)got, e))
			return -1;
		done += (uint64_t)got;
	}
	return 0;
}

static int verify_blocks(struct img_reader *r, struct crc_walk *w, uint8_t *buf,
			 size_t cap, struct ibcr_err *e)
{
	uint8_t *stored = xmalloc(cap);
	int rc = 0;

	for (uint64_t i = 0; i < w->ps->nblocks && !rc; i++) {
		const struct ibcr_blockref *b = &w->ps->blocks[i];

		if (b->raw_len > cap || b->stored_len > cap ||
		    pread(r->fd, stored, b->stored_len, (off_t)b->file_off) != b->stored_len ||
		    blk_decompress((int)b->codec, stored, b->stored_len, buf, b->raw_len) ||
		    block_sum(buf, b->raw_len) != b->raw_crc)
			rc = ibcr_fail(e, "image %s: page block %llu (stream offset %llu) is "
				       "corrupt", r->path, (unsigned long long)i,
				       (unsigned long long)b->raw_off);
		else
			rc = walk_bytes(r, w, buf, b->raw_len, e);
	}
	free(stored);
	return rc;
}

int imgr_verify_pages(struct img_reader *r, const struct ibcr_process_state *ps,
		      struct ibcr_err *e)
{
	size_t cap = 64u << 20;
	uint8_t *buf = xmalloc(cap);
	struct crc_walk w = { ps, 0, 0, 0 };
	int rc = ps->nblocks ? verify_blocks(r, &w, buf, cap, e) : verify_raw(r, &w, buf, cap, e);

	free(buf);
	return rc;
}

void ibcr_process_free(struct ibcr_process_state *ps)
{
	if (ps->threads)
		for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
			free(ps->threads[i].gpregs);
			free(ps->threads[i].fpregs);
			free(ps->threads[i].siginfo);
		}
	for (uint32_t i = 0; ps->vma_names && i < ps->nvmas; i++)
		free(ps->vma_names[i]);
	for (uint32_t i = 0; i < ps->nopaque; i++)
		free(ps->opaque[i].data);
	free(ps->threads);
	free(ps->fds);
	free(ps->locks);
	free(ps->vmas);
	free(ps->vma_names);
	free(ps->runs);
	free(ps->opaque);
	free(ps->cow);
	free(ps->cow_runs);
	free(ps->blocks);
	free(ps->exe);
	free(ps->cwd);
	free(ps->cmdline);
	ibcr_priv_free(&ps->priv);
	free(ps->cgroup);
	free(ps->tattrs);
	free(ps->ptimers);
	free(ps->sums);
	memset(ps, 0, sizeof(*ps));
}
