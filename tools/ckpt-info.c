// SPDX-License-Identifier: MIT
/*
 * ckpt-info: what is inside an image.
 *
 *   ckpt-info [--verify] [--json] [--progress | --no-progress] IMAGE
 *
 * Prints the header, the SysV semaphore sets (with their values) and
 * message queues, each process with its threads (pc, sp, interrupted
 * syscall) and its regions (address range, protection, backing, bytes
 * stored), its files and opaque sections. --verify also reads every
 * region's page data and checks its CRC; metadata CRCs are always
 * checked. Exit status: 0 good, 1 damaged or unreadable, 2 usage.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "compress.h"
#include "verbs_abi.h"
#include "filedata.h"
#include "fobj.h"
#include "image_io.h"
#include "info.h"
#include "netlock.h"
#include "progress.h"
#include "sockopt.h"
#include "version.h"

/* Registers are arch-specific; these offsets work for either image. */
void info_pc_sp(uint32_t arch, const uint8_t *gp, uint32_t n,
		unsigned long long *pc, unsigned long long *sp)
{
	const uint64_t *r = (const uint64_t *)gp;

	*pc = *sp = 0;
	if (arch == IBCR_ARCH_X86_64 && n >= 21 * 8) {
		*pc = r[16];	/* rip */
		*sp = r[19];	/* rsp */
	} else if (arch == IBCR_ARCH_AARCH64 && n >= 33 * 8) {
		*sp = r[31];
		*pc = r[32];
	}
}

const char *info_vma_kind(const struct ibcr_vma *v)
{
	switch (v->kind) {
	case IBCR_VMA_ANON:
		return (v->flags & IBCR_VMAF_HEAP) ? "heap" :
		       (v->flags & IBCR_VMAF_STACK) ? "stack" :
		       (v->flags & IBCR_VMAF_DELETED) ? "anon(copy)" : "anon";
	case IBCR_VMA_FILE:
		if (v->flags & IBCR_VMAF_OBJFILE)
			return (v->flags & IBCR_VMAF_SHARED) ? "objfile-shared" : "objfile";
		return (v->flags & IBCR_VMAF_SHARED) ? "file-shared" : "file";
	case IBCR_VMA_SHMEM: return "shmem";
	case IBCR_VMA_SPECIAL: return "kernel";
	case IBCR_VMA_DEVICE: return "device";
	}
	return "?";
}

const char *info_fd_kind(uint32_t k)
{
	switch (k) {
	case IBCR_FD_REG: return "file";
	case IBCR_FD_DIR: return "dir";
	case IBCR_FD_CHR: return "chrdev";
	case IBCR_FD_STDIO: return "stdio";
	case IBCR_FD_STAGE: return "stage";
	case IBCR_FD_PIPE: return "pipe";
	case IBCR_FD_FIFO: return "fifo";
	case IBCR_FD_UNIX: return "unix";
	case IBCR_FD_INET: return "inet";
	case IBCR_FD_NETLINK: return "netlink";
	case IBCR_FD_EVENTFD: return "eventfd";
	case IBCR_FD_TIMERFD: return "timerfd";
	case IBCR_FD_SIGNALFD: return "sigfd";
	case IBCR_FD_EPOLL: return "epoll";
	case IBCR_FD_INOTIFY: return "inotify";
	case IBCR_FD_DELETED: return "deleted";
	case IBCR_FD_MEMFD: return "memfd";
	case IBCR_FD_TTY: return "tty";
	case IBCR_FD_PTMX: return "ptmx";
	case IBCR_FD_PTS: return "pts";
	case IBCR_FD_EXTERNAL: return "extern";
	case IBCR_FD_OPATH: return "o_path";
	case IBCR_FD_DELDIR: return "deldir";
	case IBCR_FD_PIDFD: return "pidfd";
	}
	return "?";
}

static void print_threads(uint32_t arch, const struct ibcr_process_state *ps)
{
	printf("  threads: %u\n", ps->rec.nthreads);
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		const struct ibcr_thread_state *t = &ps->threads[i];
		unsigned long long pc, sp;

		info_pc_sp(arch, t->gpregs, t->rec.gpregs_size, &pc, &sp);
		printf("    tid %-7d %-15s pc %#014llx sp %#014llx", t->rec.tid,
		       t->rec.comm, pc, sp);
		if (t->rec.syscall_nr >= 0)
			printf("  in syscall %lld", (long long)t->rec.syscall_nr);
		if (t->rec.nsiginfo)
			printf("  %u pending", t->rec.nsiginfo);
		if (t->rec.flags & IBCR_THREADF_PKEYS_DEFAULT)
			printf("  pkeys default");
		printf("\n");
	}
	if (ps->nptimers)
		printf("  POSIX timers: %u\n", ps->nptimers);
	for (uint32_t i = 0; i < ps->nptimers; i++) {
		const struct ibcr_ptimer *pt = &ps->ptimers[i];

		printf("    timer %-5d clock %d notify %d signal %d value %#llx left %lld ns "
		       "every %lld ns overrun %d", pt->id, pt->clock, pt->notify, pt->signo,
		       (unsigned long long)pt->sigval, (long long)pt->value_ns,
		       (long long)pt->interval_ns, pt->overrun);
		if (pt->notify & IBCR_SIGEV_THREAD_ID)
			printf(" tid %d", pt->tid);
		printf("\n");
	}
}

/* Each thread's credentials and sandbox, the process's root and dumpable. */
static void print_priv(const struct ibcr_process_state *ps)
{
	const struct ibcr_priv *pv = &ps->priv;

	printf("  root %s  dumpable %u  loginuid %u\n", pv->root, pv->hdr.dumpable,
	       pv->hdr.nthreads ? pv->creds[0].loginuid : 0);
	for (uint32_t i = 0; i < pv->hdr.nthreads; i++) {
		const struct ibcr_creds *c = &pv->creds[i];
		uint32_t n = 0;

		printf("    tid %-7d uid %u %u %u %u gid %u %u %u %u groups %u\n"
		       "              eff %016llx prm %016llx inh %016llx bnd %016llx "
		       "amb %016llx securebits %#x%s", ps->threads[i].rec.tid,
		       c->uid[0], c->uid[1], c->uid[2], c->uid[3], c->gid[0], c->gid[1],
		       c->gid[2], c->gid[3], c->ngroups, (unsigned long long)c->cap_eff,
		       (unsigned long long)c->cap_prm, (unsigned long long)c->cap_inh,
		       (unsigned long long)c->cap_bnd, (unsigned long long)c->cap_amb,
		       c->securebits, (c->flags & IBCR_CREDF_NO_NEW_PRIVS) ? " no_new_privs" : "");
		for (uint32_t f = c->filter; f; f = pv->filters[f - 1].prev)
			n++;
		if (c->seccomp == IBCR_SECCOMP_STRICT)
			printf(" seccomp: strict");
		else if (c->seccomp == IBCR_SECCOMP_FILTER)
			printf(" seccomp: %u filters", n);
		printf("\n");
	}
}

/* PATTRS and TATTRS: what the restore sets again besides memory and files */
static void print_attrs(const struct ibcr_process_state *ps)
{
	const struct ibcr_pattrs *a = &ps->pattrs;

	if (!ps->has_attrs)
		return;
	printf("  attrs: oom_score_adj %d  cgroup %s  thp_disable %u  membarrier %#x%s%s\n",
	       a->oom_score_adj, ps->cgroup[0] ? ps->cgroup : "-", a->thp_disable,
	       a->membarrier, (a->flags & IBCR_PATTRF_SUBREAPER) ? "  subreaper" : "",
	       (ps->rec.flags & IBCR_PROCF_STOPPED) ? "  stopped" : "");
	if (ps->rec.flags & IBCR_PROCF_STOPPED)
		printf("  stopped by signal %u\n", a->stop_sig);
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		const struct ibcr_tattrs *t = &ps->tattrs[i];
		int ncpu = 0;

		for (int c = 0; c < IBCR_AFFINITY_BYTES * 8; c++)
			ncpu += t->affinity[c / 8] >> (c % 8) & 1;
		printf("    tid %-7d policy %u prio %u nice %d%s  cpus %d (%02x...)  slack %llu  "
		       "pdeathsig %u\n", t->tid, t->sched_policy, t->sched_priority,
		       t->sched_nice, (t->sched_flags & 1) ? " reset-on-fork" : "", ncpu,
		       t->affinity[0], (unsigned long long)t->timer_slack_ns, t->pdeath_sig);
	}
}

static void print_vmas(const struct ibcr_process_state *ps)
{
	uint64_t total = 0;

	printf("  regions: %u\n", ps->nvmas);
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];
		char kind[32];

		/* +thp: it had transparent huge pages, and gets them again; */
		/* +cow: some pages are its parent's, +cowsrc: children share some */
		snprintf(kind, sizeof(kind), "%s%s%s%s", info_vma_kind(v),
			 (v->flags & IBCR_VMAF_THP) ? "+thp" : "",
			 (v->flags & IBCR_VMAF_COW) ? "+cow" : "",
			 (v->flags & IBCR_VMAF_COWSRC) ? "+cowsrc" : "");
		printf("    %012llx-%012llx %c%c%c%c %-11s %10llu  %s\n",
		       (unsigned long long)v->start, (unsigned long long)v->end,
		       (v->prot & PROT_READ) ? 'r' : '-', (v->prot & PROT_WRITE) ? 'w' : '-',
		       (v->prot & PROT_EXEC) ? 'x' : '-',
		       (v->flags & IBCR_VMAF_SHARED) ? 's' : 'p', kind,
		       (unsigned long long)v->data_len, ps->vma_names[i]);
		total += v->data_len;
	}
	printf("  page data: %llu bytes", (unsigned long long)total);
	if (ps->nblocks) {
		uint64_t stored = 0, raw_blocks = 0;
		uint32_t codec = 0;

		for (uint64_t i = 0; i < ps->nblocks; i++) {
			stored += ps->blocks[i].stored_len;
			raw_blocks += ps->blocks[i].codec == IBCR_CODEC_RAW;
			if (ps->blocks[i].codec != IBCR_CODEC_RAW)
				codec = ps->blocks[i].codec;
		}
		printf(", compressed (%s) to %llu bytes in %llu blocks (%llu stored raw), "
		       "ratio %.2f", codec_name((int)codec), (unsigned long long)stored,
		       (unsigned long long)ps->nblocks, (unsigned long long)raw_blocks,
		       stored ? (double)total / (double)stored : 0.0);
	}
	printf("\n");
}

void info_inet_addr(char *out, size_t n, const struct sockaddr_in6 *a)
{
	char host[INET6_ADDRSTRLEN] = "?";
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)a;

	if (a->sin6_family == AF_INET)
		inet_ntop(AF_INET, &a4->sin_addr, host, sizeof(host));
	else
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
	snprintf(out, n, "%s:%u", host, ntohs(a->sin6_port));
}

static void print_inet_addr(const struct sockaddr_in6 *a)
{
	char s[INET6_ADDRSTRLEN + 8];

	info_inet_addr(s, sizeof(s), a);
	fputs(s, stdout);
}

/* A TCP or UDP socket's role and addresses (the first bytes of its data). */
static void print_inet(const struct ibcr_fobj *o, const uint8_t *data)
{
	static const char *const roles[] = { "fresh", "pair", "listen", "bound", "closed",
					     "repair" };
	uint32_t role = (uint32_t)fobj_inet_role(o);
	struct sockaddr_in6 a[2];

	if (o->data_len < sizeof(a) || !data)
		return;
	memcpy(a, data, sizeof(a));
	printf(" %s ", role < 6 ? roles[role] : "?");
	print_inet_addr(&a[0]);
	if (a[1].sin6_port) {
		printf(" -> ");
		print_inet_addr(&a[1]);
	}
}

/* A socket's saved options: ints as numbers, the rest as bytes. */
static void print_sockopts(const struct ibcr_files *f, uint32_t obj)
{
	const struct ibcr_sockopts *so = f->sockopts;

	for (uint32_t i = 0; so && i < so->n; i++) {
		const struct ibcr_sockopt *o = &so->o[i];
		const struct sockopt_desc *d = sockopt_find(o->level, o->name);
		const uint8_t *v = so->data + o->data_off;
		int32_t iv;

		if (o->obj != obj)
			continue;
		printf("             option %s", d ? d->label : "?");
		if (o->len == 4 && d && d->how != SOH_FILTER) {
			memcpy(&iv, v, 4);
			printf(" %d", iv);
		} else if (d && d->varlen && d->how != SOH_FILTER) {
			printf(" \"%.*s\"", (int)strnlen((const char *)v, o->len), (const char *)v);
		} else {
			printf(" (%u bytes)", o->len);
		}
		printf("\n");
	}
}

static void print_external(const struct ibcr_fobj *o, const uint8_t *data)
{
	static const char *const what[] = { "?", "closed", "/dev/null", "restart-loader's own",
					    "restart-loader's terminal" };
	struct ibcr_external x = { 0, 0 };

	if (o->data_len == sizeof(x) && data)
		memcpy(&x, data, sizeof(x));
	printf(" (restored as %s)", what[x.action <= IBCR_EXT_TTY ? x.action : 0]);
}

/* --verify reads the files' bytes only for their sums */
static int skip_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	(void)arg, (void)off, (void)p, (void)n;
	return 0;
}

static void print_process(uint32_t arch, uint32_t idx, const struct ibcr_process_state *ps,
			  const struct ibcr_files *files)
{
	printf("process %u: pid %d (%s) exe %s\n", idx, ps->rec.pid, ps->rec.comm, ps->exe);
	if (ps->rec.flags & IBCR_PROCF_ZOMBIE)
		printf("  zombie, wait status %#x\n", (unsigned)ps->rec.exit_status);
	printf("  cwd %s  uid %u gid %u  ppid %d pgid %d sid %d\n", ps->cwd,
	       ps->rec.uid[0], ps->rec.gid[0], ps->rec.ppid, ps->rec.pgid, ps->rec.sid);
	print_threads(arch, ps);
	if (!(ps->rec.flags & IBCR_PROCF_ZOMBIE))
		print_priv(ps);
	print_attrs(ps);
	print_vmas(ps);
	printf("  files: %u\n", ps->nfds);
	for (uint32_t i = 0; i < ps->nfds; i++) {
		const struct ibcr_fobj *o = &files->objs[ps->fds[i].obj];

		printf("    fd %-4d %-6s pos %-10llu obj %-3u %s", ps->fds[i].fd, info_fd_kind(o->kind),
		       (unsigned long long)o->pos, ps->fds[i].obj, files->paths[ps->fds[i].obj]);
		if (o->kind == IBCR_FD_INET)
			print_inet(o, files->data[ps->fds[i].obj]);
		if (o->kind == IBCR_FD_EXTERNAL)
			print_external(o, files->data[ps->fds[i].obj]);
		else if (files->attrs[ps->fds[i].obj].same_file)
			printf(" (the file of obj %u)", files->attrs[ps->fds[i].obj].same_file - 1);
		else if (files->attrs[ps->fds[i].obj].flags & IBCR_FATTR_DATA)
			printf(" (%llu bytes in it) in %u extent(s)",
			       (unsigned long long)(files->attrs[ps->fds[i].obj].data_len -
						    files->attrs[ps->fds[i].obj].nextents *
						    sizeof(struct ibcr_extent)),
			       files->attrs[ps->fds[i].obj].nextents);
		else if (o->data_len)
			printf(" (%llu bytes in it)", (unsigned long long)o->data_len);
		printf("\n");
		if (o->kind == IBCR_FD_INET || o->kind == IBCR_FD_UNIX || o->kind == IBCR_FD_NETLINK)
			print_sockopts(files, ps->fds[i].obj);
	}
	for (uint32_t i = 0; i < ps->nopaque; i++) {
		const struct ibcr_opaque *o = &ps->opaque[i];

		printf("  section %s: %llu bytes", o->name, (unsigned long long)o->size);
		if (!strcmp(o->name, IBCR_VERBS_SECTION) &&
		    o->size == sizeof(struct ibcr_verbs_section)) {
			const struct ibcr_verbs_control *c =
				&((const struct ibcr_verbs_section *)o->data)->control;

			printf(" (verbs: epoch %llu, %u device(s)%s%.63s, %u fd(s))",
			       (unsigned long long)c->epoch, c->ndevices,
			       c->ndevices ? ": " : "", c->ndevices ? c->devices[0] : "",
			       c->nfds);
		}
		printf("\n");
	}
}

/* The image-wide SysV semaphore sets and message queues, one line each. */
static void print_sysvipc(const struct ibcr_sysvipc *s)
{
	for (uint32_t i = 0; i < s->nsets; i++) {
		const struct ibcr_sysv_sem *r = &s->sets[i];

		printf("sysv sem id %-6d key 0x%08x mode %03o uid %u gid %u nsems %u values",
		       r->id, (unsigned)r->key, r->mode, r->uid, r->gid, r->nsems);
		for (uint32_t k = 0; k < r->nsems && k < 16; k++)
			printf(" %u", s->values[r->first + k]);
		printf("%s\n", r->nsems > 16 ? " ..." : "");
	}
	for (uint32_t i = 0; i < s->nqueues; i++) {
		const struct ibcr_sysv_msgq *q = &s->queues[i];
		uint64_t bytes = 0;

		for (uint32_t k = q->first; k < q->first + q->nmsgs; k++)
			bytes += s->msgs[k].len;
		printf("sysv msg id %-6d key 0x%08x mode %03o uid %u gid %u qbytes %llu "
		       "messages %u (%llu bytes)\n", q->id, (unsigned)q->key, q->mode, q->uid,
		       q->gid, (unsigned long long)q->qbytes, q->nmsgs,
		       (unsigned long long)bytes);
	}
}

/* The saved [vdso] and the backing files (image_port.c), CRCs checked. */
static int print_portable(struct img_reader *r, int verify, int show, struct ibcr_err *e)
{
	struct ibcr_backings b;
	uint8_t *vdso;
	uint64_t len;

	if (imgr_load_vdso(r, &vdso, &len, e) || imgr_load_backing(r, &b, e))
		return -1;
	if (verify && contents_verify(r, &b, e)) {
		free(vdso);
		ibcr_backings_free(&b);
		return -1;
	}
	if (vdso && show)
		printf("vdso: %llu bytes saved (for a restore on another kernel)\n",
		       (unsigned long long)len);
	for (uint32_t i = 0; i < b.n && show; i++) {
		const struct ibcr_backing *f = &b.f[i];

		printf("backing file %s: %llu bytes, inode %llu%s%s%s\n", b.paths[i],
		       (unsigned long long)f->size, (unsigned long long)f->ino,
		       (f->flags & IBCR_BACKF_SHA256) ? ", sha256" : "",
		       (f->flags & IBCR_BACKF_BUILD_ID) ? ", build-id" : "",
		       (f->flags & IBCR_BACKF_CONTENTS) ? ", carried" : "");
	}
	free(vdso);
	ibcr_backings_free(&b);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ckpt-info [--verify] [--json] [--progress | --no-progress] IMAGE\n"
		   "       ckpt-info --version | --help\n"
		   "      --verify       also read all page data and check every region's checksum\n"
		   "      --json         print the image as one JSON object (docs/json.md)\n"
		   "      --progress     show the progress of --verify on stderr, even when it is\n"
		   "                     not a terminal (default: only on a terminal)\n"
		   "      --no-progress  never show it\n"
		   "  -V, --version      print the version and exit\n"
		   "  -h, --help         show this help\n");
}

struct info_opts {
	int verify, json, progress;
	const char *path;
};

static int parse(int argc, char **argv, struct info_opts *o)
{
	static const struct option opts[] = {
		{ "verify", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "progress", no_argument, NULL, 'P' },
		{ "no-progress", no_argument, NULL, 'Q' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	*o = (struct info_opts){ .progress = -1 };
	while ((c = getopt_long(argc, argv, "Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'v': o->verify = 1; break;
		case 'j': o->json = 1; break;
		case 'P': o->progress = 1; break;
		case 'Q': o->progress = 0; break;
		case 'V': ibcr_print_version(stdout, "ckpt-info"); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	o->path = argv[optind];
	return -1;
}

/* Every process, printed (text or JSON), and with --verify all data read. */
static int walk(struct img_reader *r, const struct info_opts *o, struct json_out *j,
		const struct ibcr_files *files, struct ibcr_err *e)
{
	struct progress pg;
	struct stat st;
	int rc = 0;

	progress_start(&pg, "ckpt-info", "verified", fstat(r->fd, &st) ? 0 : (uint64_t)st.st_size,
		       progress_read_bytes, NULL, o->verify ? o->progress : 0);
	for (uint32_t i = 0; i < r->hdr.nprocs && !rc; i++) {
		struct ibcr_process_state ps;

		if (imgr_load_process(r, i, &ps, e) || ibcr_check_fds(&ps, files, e)) {
			rc = 1;
			break;
		}
		if (o->json)
			json_process(j, r->hdr.arch, i, &ps, files);
		else
			print_process(r->hdr.arch, i, &ps, files);
		if (o->verify && imgr_verify_pages(r, &ps, e))
			rc = 1;
		ibcr_process_free(&ps);
	}
	for (uint32_t i = 0; i < files->nobjs && !rc && o->verify; i++)
		if ((files->attrs[i].flags & IBCR_FATTR_DATA) &&
		    filedata_walk(r->fd, files, i, skip_piece, NULL, e))
			rc = 1;
	progress_end(&pg);
	return rc;
}

int main(int argc, char **argv)
{
	struct img_reader r;
	struct ibcr_files files = { 0 };
	struct ibcr_sockopts sockopts = { 0 };
	struct ibcr_netlock lock;
	int locked = 0;
	struct ibcr_sysvipc ipc = { 0 };
	struct ibcr_err e = { "" };
	struct json_out j = { stdout, 0, NULL, NULL, NULL };
	struct info_opts o;
	int rc = parse(argc, argv, &o);

	if (rc >= 0)
		return rc;
	if (imgr_open(&r, o.path, &e)) {
		fprintf(stderr, "ckpt-info: %s\n", e.msg);
		if (o.json) {
			memset(&r, 0, sizeof(r));
			json_begin(&j, o.path, &r, NULL);
			json_end(&j, 0, 0, e.msg);
		}
		return 1;
	}
	if (!o.json)
		printf("image %s: format %u, %s, page size %u, %u process(es), %u sections%s\n",
		       o.path, r.hdr.version, ibcr_arch_name(r.hdr.arch), r.hdr.page_size,
		       r.hdr.nprocs, r.nsecs,
		       (r.hdr.flags & IBCR_HDRF_SELF_CONTAINED) ? ", self-contained" : "");
	rc = imgr_load_files(&r, &files, &e) ||
	     imgr_load_sockopts(&r, files.nobjs, &sockopts, &e) ||
	     imgr_load_netlock(&r, &lock, &locked, &e) || imgr_load_sysvipc(&r, &ipc, &e) ||
	     print_portable(&r, o.verify, !o.json, &e);
	files.sockopts = &sockopts;
	if (o.json)
		json_begin(&j, o.path, &r, rc ? NULL : &ipc);
	else if (!rc)
		print_sysvipc(&ipc);
	if (!rc && locked && !o.json)
		printf("network lock: nftables table inet %s, %u connection(s), %u listener(s)\n",
		       lock.table, lock.nconns, lock.nlisteners);
	if (!rc)
		rc = walk(&r, &o, &j, &files, &e);
	if (rc)
		fprintf(stderr, "ckpt-info: %s\n", e.msg);
	if (o.json) {
		j.lock = locked && !rc ? &lock : NULL;
		j.files = &files;
		json_end(&j, !rc, o.verify && !rc, e.msg);
	}
	else if (!rc && o.verify)
		printf("verify: every section and region CRC is correct\n");
	imgr_close(&r);
	return rc;
}
