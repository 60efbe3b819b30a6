// SPDX-License-Identifier: MIT
/*
 * ckpt-info --json: the image as one JSON object, the same facts as the
 * text output, with names and types fixed by docs/json.md. Addresses are
 * strings ("0x7f..."), every other number a JSON integer.
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "compress.h"
#include "fobj.h"
#include "info.h"
#include "statsout.h"
#include "version.h"

static void str(FILE *f, const char *name, const char *v, int comma)
{
	fprintf(f, "%s\"%s\":\"", comma ? "," : "", name);
	json_escape(f, v ? v : "");
	fputc('"', f);
}

static void num(FILE *f, const char *name, long long v)
{
	fprintf(f, ",\"%s\":%lld", name, v);
}

static void unum(FILE *f, const char *name, unsigned long long v)
{
	fprintf(f, ",\"%s\":%llu", name, v);
}

static void addr(FILE *f, const char *name, unsigned long long v)
{
	fprintf(f, ",\"%s\":\"%#llx\"", name, v);
}

static void sysvipc(FILE *f, const struct ibcr_sysvipc *s)
{
	fputs(",\"sysv_sem\":[", f);
	for (uint32_t i = 0; i < s->nsets; i++) {
		const struct ibcr_sysv_sem *r = &s->sets[i];

		fprintf(f, "%s{\"id\":%d", i ? "," : "", r->id);
		num(f, "key", r->key);
		unum(f, "mode", r->mode);
		unum(f, "uid", r->uid);
		unum(f, "gid", r->gid);
		fputs(",\"values\":[", f);
		for (uint32_t k = 0; k < r->nsems; k++)
			fprintf(f, "%s%u", k ? "," : "", s->values[r->first + k]);
		fputs("]}", f);
	}
	fputs("],\"sysv_msg\":[", f);
	for (uint32_t i = 0; i < s->nqueues; i++) {
		const struct ibcr_sysv_msgq *q = &s->queues[i];
		uint64_t bytes = 0;

		for (uint32_t k = q->first; k < q->first + q->nmsgs; k++)
			bytes += s->msgs[k].len;
		fprintf(f, "%s{\"id\":%d", i ? "," : "", q->id);
		num(f, "key", q->key);
		unum(f, "mode", q->mode);
		unum(f, "uid", q->uid);
		unum(f, "gid", q->gid);
		unum(f, "qbytes", q->qbytes);
		unum(f, "messages", q->nmsgs);
		unum(f, "message_bytes", bytes);
		fputc('}', f);
	}
	fputc(']', f);
}

void json_begin(struct json_out *j, const char *path, const struct img_reader *r,
		const struct ibcr_sysvipc *ipc)
{
	FILE *f = j->f;

	j->path = path;
	fputs("{\"schema\":1", f);
	str(f, "release", ibcr_release(), 1);
	str(f, "image", path, 1);
	unum(f, "format", r->hdr.version);
	str(f, "arch", ibcr_arch_name(r->hdr.arch), 1);
	unum(f, "page_size", r->hdr.page_size);
	unum(f, "nprocs", r->hdr.nprocs);
	unum(f, "sections", r->nsecs);
	unum(f, "created_ns", r->hdr.created_ns);
	if (ipc)
		sysvipc(f, ipc);
	fputs(",\"processes\":[", f);
	j->procs = 0;
}

static void threads(FILE *f, uint32_t arch, const struct ibcr_process_state *ps)
{
	fputs(",\"threads\":[", f);
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		const struct ibcr_thread_state *t = &ps->threads[i];
		unsigned long long pc, sp;

		info_pc_sp(arch, t->gpregs, t->rec.gpregs_size, &pc, &sp);
		fprintf(f, "%s{\"tid\":%d", i ? "," : "", t->rec.tid);
		str(f, "comm", t->rec.comm, 1);
		addr(f, "pc", pc);
		addr(f, "sp", sp);
		num(f, "syscall", t->rec.syscall_nr);
		unum(f, "pending", t->rec.nsiginfo);
		fputc('}', f);
	}
	fputc(']', f);
}

static void regions(FILE *f, const struct ibcr_process_state *ps)
{
	uint64_t total = 0, stored = 0;

	fputs(",\"regions\":[", f);
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];
		char prot[5] = { (v->prot & PROT_READ) ? 'r' : '-', (v->prot & PROT_WRITE) ? 'w' : '-',
				 (v->prot & PROT_EXEC) ? 'x' : '-',
				 (v->flags & IBCR_VMAF_SHARED) ? 's' : 'p', 0 };

		fprintf(f, "%s{\"start\":\"%#llx\"", i ? "," : "", (unsigned long long)v->start);
		addr(f, "end", v->end);
		str(f, "prot", prot, 1);
		str(f, "kind", info_vma_kind(v), 1);
		fprintf(f, ",\"thp\":%s,\"cow\":%s,\"cowsrc\":%s",
			(v->flags & IBCR_VMAF_THP) ? "true" : "false",
			(v->flags & IBCR_VMAF_COW) ? "true" : "false",
			(v->flags & IBCR_VMAF_COWSRC) ? "true" : "false");
		unum(f, "bytes", v->data_len);
		str(f, "name", ps->vma_names[i], 1);
		fputc('}', f);
		total += v->data_len;
	}
	fputc(']', f);
	unum(f, "page_bytes", total);
	if (!ps->nblocks) {
		fputs(",\"compressed\":null", f);
		return;
	}
	uint32_t codec = 0;
	uint64_t raw = 0;

	for (uint64_t i = 0; i < ps->nblocks; i++) {
		stored += ps->blocks[i].stored_len;
		raw += ps->blocks[i].codec == IBCR_CODEC_RAW;
		if (ps->blocks[i].codec != IBCR_CODEC_RAW)
			codec = ps->blocks[i].codec;
	}
	fputs(",\"compressed\":{", f);
	str(f, "codec", codec_name((int)codec), 0);
	unum(f, "stored_bytes", stored);
	unum(f, "blocks", ps->nblocks);
	unum(f, "raw_blocks", raw);
	fputc('}', f);
}

static void files_of(FILE *f, const struct ibcr_process_state *ps, const struct ibcr_files *files)
{
	fputs(",\"files\":[", f);
	for (uint32_t i = 0; i < ps->nfds; i++) {
		const struct ibcr_fobj *o = &files->objs[ps->fds[i].obj];

		fprintf(f, "%s{\"fd\":%d", i ? "," : "", ps->fds[i].fd);
		str(f, "kind", info_fd_kind(o->kind), 1);
		unum(f, "pos", o->pos);
		unum(f, "obj", ps->fds[i].obj);
		str(f, "path", files->paths[ps->fds[i].obj], 1);
		unum(f, "bytes", o->data_len);
		fputc('}', f);
	}
	fputs("],\"sections\":[", f);
	for (uint32_t i = 0; i < ps->nopaque; i++) {
		fprintf(f, "%s{", i ? "," : "");
		str(f, "name", ps->opaque[i].name, 0);
		unum(f, "bytes", ps->opaque[i].size);
		fputc('}', f);
	}
	fputc(']', f);
}

void json_process(struct json_out *j, uint32_t arch, uint32_t idx,
		  const struct ibcr_process_state *ps, const struct ibcr_files *files)
{
	FILE *f = j->f;

	fprintf(f, "%s{\"index\":%u", j->procs++ ? "," : "", idx);
	num(f, "pid", ps->rec.pid);
	num(f, "ppid", ps->rec.ppid);
	num(f, "pgid", ps->rec.pgid);
	num(f, "sid", ps->rec.sid);
	str(f, "comm", ps->rec.comm, 1);
	str(f, "exe", ps->exe, 1);
	str(f, "cwd", ps->cwd, 1);
	unum(f, "uid", ps->rec.uid[0]);
	unum(f, "gid", ps->rec.gid[0]);
	fprintf(f, ",\"zombie\":%s,\"stopped\":%s",
		(ps->rec.flags & IBCR_PROCF_ZOMBIE) ? "true" : "false",
		(ps->rec.flags & IBCR_PROCF_STOPPED) ? "true" : "false");
	threads(f, arch, ps);
	regions(f, ps);
	files_of(f, ps, files);
	fputc('}', f);
}

/* The sockets of role `role` (image.h, ibcr_sock_role): their addresses. */
static void locked(FILE *f, const char *name, const struct ibcr_files *files, uint32_t role)
{
	int first = 1;

	fprintf(f, ",\"%s\":[", name);
	for (uint32_t i = 0; files && i < files->nobjs; i++) {
		const struct ibcr_fobj *o = &files->objs[i];
		struct sockaddr_in6 a[2];
		char s[2][INET6_ADDRSTRLEN + 8];

		if (o->kind != IBCR_FD_INET || (uint32_t)fobj_inet_role(o) != role ||
		    fobj_inet_type(o) != SOCK_STREAM || o->data_len < sizeof(a) ||
		    !files->data[i])
			continue;
		memcpy(a, files->data[i], sizeof(a));
		info_inet_addr(s[0], sizeof(s[0]), &a[0]);
		info_inet_addr(s[1], sizeof(s[1]), &a[1]);
		if (role == IBCR_SOCK_LISTEN) {
			fprintf(f, "%s\"", first ? "" : ",");
			json_escape(f, s[0]);
			fputc('"', f);
		} else {
			fprintf(f, "%s{", first ? "" : ",");
			str(f, "local", s[0], 0);
			str(f, "remote", s[1], 1);
			fputc('}', f);
		}
		first = 0;
	}
	fputc(']', f);
}

/* The network lock the image holds (docs/json.md), or null. */
static void netlock(FILE *f, const struct json_out *j)
{
	const struct ibcr_netlock *l = j->lock;

	if (!l) {
		fputs(",\"network_lock\":null", f);
		return;
	}
	fputs(",\"network_lock\":{", f);
	str(f, "table", l->table, 0);
	str(f, "family", "inet", 1);
	unum(f, "connections", l->nconns);
	unum(f, "listeners", l->nlisteners);
	unum(f, "created_ns", l->created_ns);
	locked(f, "locked_connections", j->files, IBCR_SOCK_REPAIR);
	if (l->nlisteners)
		locked(f, "locked_listeners", j->files, IBCR_SOCK_LISTEN);
	else
		fputs(",\"locked_listeners\":[]", f);
	fputs(",\"unlock\":[\"restart-loader\",\"--unlock-net\",\"", f);
	json_escape(f, j->path ? j->path : "");
	fputs("\"]}", f);
}

void json_end(struct json_out *j, int ok, int verified, const char *error)
{
	FILE *f = j->f;

	fprintf(f, "],\"ok\":%s,\"verified\":%s", ok ? "true" : "false",
		verified ? "true" : "false");
	if (!ok)
		str(f, "error", error, 1);
	netlock(f, j);
	fputs("}\n", f);
	fflush(f);
}
