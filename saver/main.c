// SPDX-License-Identifier: MIT
/*
 * saver: checkpoint running processes into one image.
 *
 *   saver [--kill | --stop] -o IMAGE PID...
 *
 * The processes are stopped (every thread seized and interrupted) while
 * their state is captured and the image written; then they run on, stay
 * stopped (--stop) or are killed (--kill). A failure at any point leaves
 * them running as before and no image behind. docs/cli.md documents it.
 */
#include <getopt.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "external.h"
#include "ptrace_util.h"
#include "saver.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: saver [--tree] [--kill | --stop] [--compress[=CODEC[:LEVEL]]] [--direct | --cached] [--external-fd SPEC]... [--self-contained] -o IMAGE PID...\n"
		   "  -o, --output IMAGE  write the checkpoint to IMAGE\n"
		   "  -t, --tree          also every descendant of each PID\n"
		   "  -k, --kill          kill the processes once the image is complete\n"
		   "      --tcp-close     give up established TCP connections (restored broken)\n"
		   "      --unlock-net    remove network locks left by checkpoints that made\n"
		   "                      no image (see restart-loader --unlock-net)\n"
		   "      --external-fd [PID:]FD:close|null|inherit|tty\n"
		   "                      what the restore puts at FD, which leads outside the\n"
		   "                      image (of process PID, or of every one): nothing,\n"
		   "                      /dev/null, restart-loader's own FD, or its terminal\n"
		   "      --self-contained\n"
		   "                      carry every mapped and open regular file in the image\n"
		   "      --sysv-ipc=used|all\n"
		   "                      SysV semaphore sets and queues to save: those the\n"
		   "                      processes used last (default), or all they may use\n"
		   "  -s, --stop          leave them stopped (SIGSTOP) instead of running\n"
		   "      --compress[=zstd|zlib][:LEVEL]\n"
		   "                      compress page data (default zstd, level 1)\n"
		   "      --direct        write the image past the page cache (direct I/O)\n"
		   "      --cached        write it through the page cache; by default an image\n"
		   "                      larger than the kernel's dirty background limit goes\n"
		   "                      direct, a smaller one through the cache\n"
		   "      --no-snapshot   keep them stopped while the image is written\n"
		   "      --stats         print timings and sizes (ibcr-stats: ...) on stderr\n"
		   "      --barrier CMD   one checkpoint of a job over several savers: run\n"
		   "                      'CMD PHASE' where every node must be (docs/cli.md)\n"
		   "  -h, --help          show this help\n");
}

static int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v <= 0 || v > 0x3fffffff)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

/* Everything is read before anything is written: errors come early. */
static int capture(struct target *t, struct fobjs *objs, struct ibcr_err *e)
{
	int sig;

	pt_stop_signals_seen();
	pt_group_stop_signal();
	if (capture_regs(t, e) || capture_creds(t, e) || capture_injected(t, e) ||
	    capture_threads(t, e) || capture_procinfo(t, e) || capture_files(t, objs, e) ||
	    capture_locks(t, e) ||
	    capture_memory_map(t, e))
		return -1;
	if (pt_stop_signals_seen())
		t->stopped = 1;	/* a stop signal was on its way in */
	if ((sig = pt_group_stop_signal()))
		t->stop_sig = sig;
	attrs_stop_state(t);
	return 0;
}

static int write_meta(struct img_writer *w, uint32_t idx, struct target *t,
		      struct ibcr_err *e)
{
	struct buf b = { 0 };
	int rc;

	enc_proc(&b, &t->ps);
	rc = imgw_section(w, IBCR_SEC_PROC, idx, NULL, b.p, b.len, e);
	for (uint32_t i = 0; i < t->ps.rec.nthreads && !rc; i++) {
		b.len = 0;
		enc_thread(&b, &t->ps.threads[i]);
		rc = imgw_section(w, IBCR_SEC_THREAD, idx, NULL, b.p, b.len, e);
	}
	if (!rc)
		rc = write_creds(t, idx, w, e);
	if (!rc)
		rc = imgw_section(w, IBCR_SEC_SIGACT, idx, NULL, t->ps.sigact,
				  sizeof(t->ps.sigact), e);
	if (!rc) {
		b.len = 0;
		enc_files(&b, &t->ps);
		rc = imgw_section(w, IBCR_SEC_FILES, idx, NULL, b.p, b.len, e);
	}
	if (!rc) {
		b.len = 0;
		enc_pattrs(&b, &t->ps);
		rc = imgw_section(w, IBCR_SEC_PATTRS, idx, NULL, b.p, b.len, e);
	}
	if (!rc) {
		b.len = 0;
		enc_tattrs(&b, &t->ps);
		rc = imgw_section(w, IBCR_SEC_TATTRS, idx, NULL, b.p, b.len, e);
	}
	buf_free(&b);
	return rc;
}

/* How the image is written (--compress, --direct, --cached). */
struct image_opt {
	int codec, level;
	enum { IO_AUTO, IO_DIRECT, IO_CACHED } io;
	int self_contained;	/* --self-contained */
};

/* "zstd", "zlib", "zstd:3", ":9" (default codec), "" (default). */
static int parse_compress(const char *arg, struct image_opt *c)
{
	const char *colon = arg ? strchr(arg, ':') : NULL;
	size_t name = arg ? (colon ? (size_t)(colon - arg) : strlen(arg)) : 0;
	char *end;

	c->codec = IBCR_CODEC_ZSTD;	/* docs/benchmarks.md: faster at equal ratio */
	if (name == 4 && !strncmp(arg, "zlib", 4))
		c->codec = IBCR_CODEC_ZLIB;
	else if (name && !(name == 4 && !strncmp(arg, "zstd", 4)))
		return -1;
	c->level = 1;
	if (colon) {
		c->level = (int)strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || c->level < 1 ||
		    c->level > 9)	/* zstd beyond 9 needs more memory than we allow */
			return -1;
	}
	return 0;
}

/* The image-wide SysV sections that have something to hold. */
static int write_sysv(struct img_writer *w, const struct ibcr_sysv *sysv,
		      const struct ibcr_sysvipc *ipc, struct ibcr_err *e)
{
	struct buf b = { 0 };
	int rc = 0;

	if (sysv->nshm)
		rc = imgw_section(w, IBCR_SEC_SYSVSHM, IBCR_PROC_NONE, NULL, sysv->shm,
				  sizeof(*sysv->shm) * sysv->nshm, e);
	if (!rc && ipc->nsets) {
		enc_sysvsem(&b, ipc);
		rc = imgw_section(w, IBCR_SEC_SYSVSEM, IBCR_PROC_NONE, NULL, b.p, b.len, e);
	}
	if (!rc && ipc->nqueues) {
		b.len = 0;
		enc_sysvmsg(&b, ipc);
		rc = imgw_section(w, IBCR_SEC_SYSVMSG, IBCR_PROC_NONE, NULL, b.p, b.len, e);
	}
	buf_free(&b);
	return rc;
}

/* Socket options and the network lock left for the restore, if any. */
static int write_net(struct img_writer *w, const struct fobjs *objs, struct ibcr_err *e)
{
	struct ibcr_netlock lock;
	struct buf b = { 0 };
	int rc = 0;

	if (objs->sockopts.n) {
		enc_sockopts(&b, &objs->sockopts);
		rc = imgw_section(w, IBCR_SEC_SOCKOPTS, IBCR_PROC_NONE, NULL, b.p, b.len, e);
	}
	if (!rc && netlock_record(&lock))
		rc = imgw_section(w, IBCR_SEC_NETLOCK, IBCR_PROC_NONE, NULL, &lock,
				  sizeof(lock), e);
	buf_free(&b);
	return rc;
}

static int write_image(const char *out, struct target *t, uint32_t n,
		       struct fobjs *objs, const struct ibcr_sysv *sysv,
		       const struct ibcr_sysvipc *ipc, const struct image_opt *c,
		       uint64_t *direct_bytes, struct ibcr_err *e)
{
	struct img_writer w;
	struct buf b = { 0 };
	int want = c->io == IO_DIRECT || (c->io == IO_AUTO && image_direct(t, n));
	struct backing_opt bo = { c->self_contained, c->codec, c->level, &objs->f };

	if (imgw_open(&w, out, ibcr_host_arch(), n, (want ? IMGW_DIRECT : 0) |
		      (c->self_contained ? IMGW_SELF_CONTAINED : 0), e))
		return -1;
	enc_fileobjs(&b, &objs->f);
	if (imgw_section(&w, IBCR_SEC_FILEOBJS, IBCR_PROC_NONE, NULL, b.p, b.len, e) ||
	    filedata_write(&w, objs, e) ||
	    (objs->f.nobjs && imgw_section(&w, IBCR_SEC_FILEATTRS, IBCR_PROC_NONE, NULL,
					  objs->f.attrs, sizeof(*objs->f.attrs) * objs->f.nobjs,
					  e)) ||
	    write_net(&w, objs, e))
		goto fail;
	if (write_sysv(&w, sysv, ipc, e) || vdso_write_section(t, n, &w, e) ||
	    backing_write(&w, t, n, &bo, e))
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		b.len = 0;
		if (t[i].zombie) {
			enc_proc(&b, &t[i].ps);
			if (imgw_section(&w, IBCR_SEC_PROC, i, NULL, b.p, b.len, e))
				goto fail;
			continue;
		}
		if (write_meta(&w, i, &t[i], e) ||
		    write_memory(&t[i], i, &w, c->codec, c->level, e))
			goto fail;
		snapshot_kill(&t[i]);
		enc_vmas(&b, &t[i].ps);
		if (imgw_section(&w, IBCR_SEC_VMAS, i, NULL, b.p, b.len, e) ||
		    cow_write_section(&t[i], i, &w, e) ||
		    pagesums_write_section(&t[i], i, &w, e) ||
		    verbs_write_section(&t[i], i, &w, e))
			goto fail;
	}
	buf_free(&b);
	if (imgw_commit(&w, e))
		return -1;
	*direct_bytes = w.direct_bytes;
	return 0;
fail:
	buf_free(&b);
	imgw_abort(&w);
	return -1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Lets the processes go: running, stopped or killed; the shims unblock. */
static void release_all(struct target *t, uint32_t n, int how, const char *image)
{
	/* TCP connections leave repair mode before the processes run on */
	tcp_release(how == RELEASE_KILL);
	netlock_release(how == RELEASE_KILL, image);
	unix_release();
	for (uint32_t i = 0; i < n; i++)
		target_release(&t[i], how);
	for (uint32_t i = 0; i < n && how == RELEASE_KILL; i++)
		target_wait_dead(&t[i]);	/* their ports are free when we return */
	if (how != RELEASE_KILL)
		verbs_release(t, n);
}

/*
 * A process that runs on gets a snapshot to be written from, so that it
 * is stopped only while its state is captured. All or none: with several
 * processes, one without a snapshot keeps them all stopped.
 */
static int snapshot_all(struct target *t, uint32_t n, struct ibcr_err *e)
{
	if (snapshot_create_all(t, n, e))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (!t[i].zombie && !t[i].mem_pid)
			return 0;
	return 1;
}

struct stats {
	double start, frozen, seized, captured, snapshotted, released, written;
	uint64_t image_bytes, page_bytes;
	uint64_t direct_bytes;	/* of the image, written past the page cache */
};

static void print_stats(const struct stats *s, struct target *t, uint32_t n,
			const char *out)
{
	struct rusage ru;
	struct stat st;
	uint64_t pages = 0;
	uint32_t fixed = 0;

	for (uint32_t i = 0; i < n; i++) {
		fixed += t[i].vmflags_fixed;
		for (uint32_t k = 0; k < t[i].ps.nvmas; k++)
			pages += t[i].ps.vmas[k].data_len;
	}
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "ibcr-stats: freeze_ms=%.1f capture_ms=%.1f seize_ms=%.1f "
		"snapshot_ms=%.1f write_ms=%.1f "
		"total_ms=%.1f image_bytes=%llu page_bytes=%llu peak_rss_kb=%ld "
		"vmflags_fixed=%u direct_bytes=%llu\n",
		s->released - s->frozen, s->captured - s->frozen, s->seized - s->frozen,
		s->snapshotted ? s->snapshotted - s->captured : 0.0,
		s->written - s->captured, s->written - s->start,
		stat(out, &st) ? 0ull : (unsigned long long)st.st_size,
		(unsigned long long)pages, ru.ru_maxrss, fixed,
		(unsigned long long)s->direct_bytes);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "kill", no_argument, NULL, 'k' },
		{ "stop", no_argument, NULL, 's' },
		{ "stats", no_argument, NULL, 'S' },
		{ "no-snapshot", no_argument, NULL, 'N' },
		{ "compress", optional_argument, NULL, 'z' },
		{ "direct", no_argument, NULL, 'D' },
		{ "cached", no_argument, NULL, 'C' },
		{ "tree", no_argument, NULL, 't' },
		{ "tcp-close", no_argument, NULL, 'T' },
		{ "unlock-net", no_argument, NULL, 'U' },
		{ "external-fd", required_argument, NULL, 'X' },
		{ "self-contained", no_argument, NULL, 'P' },
		{ "sysv-ipc", required_argument, NULL, 'I' },
		{ "barrier", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *out = NULL;
	int how = RELEASE_RUN, c, rc = 0, stats = 0, snapshots = 1, released = 0, tree = 0, ipc_all = 0;
	struct target *t;
	struct ibcr_err e = { "" };
	struct stats s = { .start = now_ms() };
	struct image_opt comp = { IBCR_CODEC_RAW, 0, IO_AUTO, 0 };
	struct fobjs objs = { 0 };
	struct ibcr_sysv sysv = { 0 };
	struct ibcr_sysvipc ipc = { 0 };
	struct target *pre = NULL;	/* --tree: the shims quiesced before the stop */
	uint32_t n, npre = 0;

	while ((c = getopt_long(argc, argv, "o:ksth", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'k': how = RELEASE_KILL; break;
		case 's': how = RELEASE_STOP; break;
		case 'S': stats = 1; break;
		case 'D': comp.io = IO_DIRECT; break;
		case 'C': comp.io = IO_CACHED; break;
		case 'N': snapshots = 0; break;
		case 't': tree = 1; break;
		case 'T': objs.tcp_close = 1; break;
		case 'U': return netlock_unlock_stale();
		case 'X':
			if (external_parse(optarg, &objs)) {
				fprintf(stderr, "saver: --external-fd=%s: expected [PID:]FD:ACTION, "
					"ACTION close, null, inherit or tty\n", optarg);
				return 2;
			}
			break;
		case 'B': coord_init(optarg, "checkpoint"); break;
		case 'P': comp.self_contained = 1; break;
		case 'I':
			if (strcmp(optarg, "used") && strcmp(optarg, "all")) {
				fprintf(stderr, "saver: --sysv-ipc=%s: expected used or all\n", optarg);
				return 2;
			}
			ipc_all = !strcmp(optarg, "all");
			break;
		case 'z':
			if (parse_compress(optarg, &comp)) {
				fprintf(stderr, "saver: --compress=%s: expected zstd or zlib, "
					"optionally :LEVEL (1-9)\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!out || optind >= argc) {
		usage(stderr);
		return 2;
	}
	n = (uint32_t)(argc - optind);
	objs.kill = how == RELEASE_KILL;
	objs.image = out;
	t = xcalloc(n, sizeof(*t));
	for (uint32_t i = 0; i < n; i++) {
		t[i].memfd = -1;
		if (parse_pid(argv[optind + i], &t[i].pid)) {
			fprintf(stderr, "saver: '%s' is not a process id\n", argv[optind + i]);
			return 2;
		}
	}
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = target_check(t[i].pid, &e) || (!tree && verbs_find(&t[i], &e)) ? -1 : 0;
	/* with --tree: the shim processes below, found while they run */
	if (!rc && tree)
		rc = verbs_tree_find(t, n, &pre, &npre, &e);
	/* Verbs users quiesce themselves first, while they still run: no
	 * signaled send outstanding anywhere (every node) before any drain. */
	if (!rc)
		rc = tree ? verbs_quiesce_sends(pre, npre, &e) : verbs_quiesce_sends(t, n, &e);
	if (!rc)
		rc = coord_barrier("sends", &e);
	if (!rc)
		rc = tree ? verbs_quiesce_drain(pre, npre, &e) : verbs_quiesce_drain(t, n, &e);
	/* smaps walks every page: read it now, while they still run */
	for (uint32_t i = 0; i < n && !rc && !tree && how == RELEASE_RUN && snapshots; i++)
		vmflags_preread(&t[i]);
	/* the mapped files' digests too: time they would cost in the freeze */
	for (uint32_t i = 0; i < n && !rc; i++)
		backing_prehash(t[i].pid);
	if (!rc && tree && how == RELEASE_RUN && snapshots)
		tree_preread(t, n);
	s.frozen = now_ms();
	/* All are stopped before any is read: one consistent point in time. */
	if (tree && !rc)
		rc = tree_seize(&t, &n, &e);
	if (tree && !rc)
		tree_adopt_preread(t, n);
	for (uint32_t i = 0; i < n && !rc && !tree; i++)
		rc = target_seize(&t[i], &e);
	s.seized = now_ms();
	if (!rc)
		rc = verbs_after_seize(t, n, pre, npre, &e);
	/* in the image's copy of the wake pipe: the restored helper wakes */
	for (uint32_t i = 0; i < n && !rc; i++)
		verbs_wake(&t[i]);
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = t[i].zombie ? 0 : capture(&t[i], &objs, &e);
	if (!rc)
		rc = attrs_check_tree(t, n, &e);
	if (!rc)
		shm_join_named(t, n);
	if (!rc)
		rc = cow_find(t, n, &e);
	if (!rc)
		shm_decide_refs(t, n);
	if (!rc)
		rc = files_finish(t, n, &objs, &e);
	if (!rc)
		rc = sysv_capture(t, n, &sysv, &e);
	if (!rc)	/* still stopped: the values and messages are theirs */
		rc = sysvipc_capture(t, n, ipc_all, &ipc, &e);
	s.captured = now_ms();
	/* files read while writing must not change: no snapshot then */
	if (!rc && how == RELEASE_RUN && snapshots && !objs.keep_stopped) {
		rc = snapshot_all(t, n, &e);
		released = rc == 1;
		if (released)
			s.snapshotted = now_ms();
		rc = rc < 0 ? -1 : 0;
		if (released)
			release_all(t, n, RELEASE_RUN, out);
	}
	s.released = now_ms();
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = t[i].zombie ? 0 : vmflags_verify(&t[i], &e);
	if (!rc)
		rc = write_image(out, t, n, &objs, &sysv, &ipc, &comp, &s.direct_bytes, &e);
	/* every node's image complete before any process is killed */
	if (!rc && coord_barrier("written", &e)) {
		rc = -1;
		unlink(out);	/* not one image of an incomplete set */
	}
	s.written = now_ms();
	for (uint32_t i = 0; i < n; i++)
		snapshot_destroy(&t[i]);
	filedata_free(&objs);
	if (rc) {
		fprintf(stderr, "saver: %s\n", e.msg);
		how = RELEASE_RUN;	/* never kill what we could not save */
		coord_abort(e.msg);	/* nor let the job's other nodes */
	}
	if (!released) {
		s.released = now_ms();
		release_all(t, n, how, out);
	}
	if (!rc && objs.given_up)
		fprintf(stderr, "saver: --tcp-close: %u TCP connection(s) given up: a restore "
			"brings them back unconnected%s\n", objs.given_up,
			how == RELEASE_KILL ? "; their peers see them closed now" : "");
	verbs_release(pre, npre);	/* quiesced but never adopted (a failure) */
	if (stats && !rc)
		print_stats(&s, t, n, out);
	return rc ? 1 : 0;
}
