// SPDX-License-Identifier: MIT
/*
 * saver: checkpoint running processes into one image.
 *
 *   saver [--kill | --stop] -o IMAGE PID...   (options.c: all of them)
 *
 * The processes are stopped (every thread seized and interrupted) while
 * their state is captured and the image written; then they run on, stay
 * stopped (--stop) or are killed (--kill). A failure at any point leaves
 * them running as before and no image behind. docs/cli.md documents it.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "external.h"
#include "guard.h"
#include "options.h"
#include "outpath.h"
#include "park.h"
#include "progress.h"
#include "sink.h"
#include "statsout.h"
#include "ptrace_util.h"
#include "saver.h"

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
	if (!rc && t->ps.nptimers) {
		b.len = 0;
		enc_ptimers(&b, &t->ps);
		rc = imgw_section(w, IBCR_SEC_PTIMERS, idx, NULL, b.p, b.len, e);
	}
	buf_free(&b);
	return rc;
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
	/* out of repair mode since their capture (tcp.c) */
	if (how != RELEASE_KILL)
		tcp_release(0);
	netlock_release(how == RELEASE_KILL, image);
	unix_release();
	if (how == RELEASE_KILL)
		saver_die_at("kill");
	for (uint32_t i = 0; i < n; i++)
		target_release(&t[i], how);
	if (how == RELEASE_KILL) {
		guard_netlock_over();	/* a lock kept is the image's now */
		wait_gone(t, n);	/* their pids and ports free for a restore at once */
		saver_die_at("killed");
		tcp_release(1);		/* closed in repair mode: their peers hear nothing */
	}
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
			const char *out, int json)
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
	const struct stat_field f[] = {
		STAT_MS("freeze_ms", s->released - s->frozen),
		STAT_MS("capture_ms", s->captured - s->frozen),
		STAT_MS("seize_ms", s->seized - s->frozen),
		STAT_MS("snapshot_ms", s->snapshotted ? s->snapshotted - s->captured : 0.0),
		STAT_MS("write_ms", s->written - s->captured),
		STAT_MS("total_ms", s->written - s->start),
		STAT_COUNT("image_bytes", stat(out, &st) ? 0 : st.st_size),
		STAT_COUNT("page_bytes", pages),
		STAT_COUNT("peak_rss_kb", ru.ru_maxrss),
		STAT_COUNT("vmflags_fixed", fixed),
		STAT_COUNT("direct_bytes", s->direct_bytes),
	};

	stats_print(stderr, json, "saver", f, sizeof(f) / sizeof(f[0]));
}

/* One checkpoint's processes and what was captured of them. */
struct run {
	struct target *t;
	uint32_t n;
	struct target *pre;	/* --tree: the shims quiesced before the stop */
	uint32_t npre;
	struct fobjs objs;
	struct ibcr_sysv sysv;
	struct ibcr_sysvipc ipc;
	struct stats s;
	int released;		/* let go already (they run on the snapshot) */
};

/* While they run: checks, verbs quiesced, what costs time read ahead. */
static int before_freeze(const struct saver_opts *o, struct run *r, struct ibcr_err *e)
{
	int rc = 0;

	r->n = o->npids;
	r->t = xcalloc(r->n, sizeof(*r->t));
	for (uint32_t i = 0; i < r->n; i++) {
		r->t[i].memfd = -1;
		r->t[i].pid = o->pids[i];
	}
	for (uint32_t i = 0; i < r->n && !rc; i++)
		rc = target_check(r->t[i].pid, e) || (!o->tree && verbs_find(&r->t[i], e)) ? -1 : 0;
	/* with --tree: the shim processes below, found while they run */
	if (!rc && o->tree)
		rc = verbs_tree_find(r->t, r->n, &r->pre, &r->npre, e);
	/* Verbs users quiesce themselves first, while they still run: no
	 * signaled send outstanding anywhere (every node) before any drain. */
	if (!rc)
		rc = o->tree ? verbs_quiesce_sends(r->pre, r->npre, e) :
			       verbs_quiesce_sends(r->t, r->n, e);
	if (!rc)
		rc = coord_barrier("sends", e);
	if (!rc)
		rc = o->tree ? verbs_quiesce_drain(r->pre, r->npre, e) :
			       verbs_quiesce_drain(r->t, r->n, e);
	/* smaps walks every page: read it now, while they still run */
	for (uint32_t i = 0; i < r->n && !rc && !o->tree && o->how == RELEASE_RUN &&
	     o->snapshots; i++)
		vmflags_preread(&r->t[i]);
	/* the mapped files' digests too: time they would cost in the freeze */
	for (uint32_t i = 0; i < r->n && !rc; i++)
		backing_prehash(r->t[i].pid);
	if (!rc && o->tree && o->how == RELEASE_RUN && o->snapshots)
		tree_preread(r->t, r->n);
	/* the parking gadget is in their code, which does not change: look now */
	for (uint32_t i = 0; i < r->n && !rc; i++) {
		struct ibcr_err later;	/* looked for again in the freeze */

		park_prepare(&r->t[i], &later);
	}
	return rc;
}

/* All are stopped before any is read: one consistent point in time. */
static int stop_all(const struct saver_opts *o, struct run *r, struct ibcr_err *e)
{
	int rc = 0;

	r->s.frozen = now_ms();
	if (o->tree)
		rc = tree_seize(&r->t, &r->n, e);
	if (o->tree && !rc)
		tree_adopt_preread(r->t, r->n);
	for (uint32_t i = 0; i < r->n && !rc && !o->tree; i++)
		rc = target_seize(&r->t[i], e);
	r->s.seized = now_ms();
	if (!rc)
		rc = verbs_after_seize(r->t, r->n, r->pre, r->npre, e);
	return rc;
}

static int capture_all(const struct saver_opts *o, struct run *r, struct ibcr_err *e)
{
	int rc = 0;

	/* in the image's copy of the wake pipe: the restored helper wakes */
	for (uint32_t i = 0; i < r->n; i++)
		verbs_wake(&r->t[i]);
	for (uint32_t i = 0; i < r->n && !rc; i++)
		rc = r->t[i].zombie ? 0 : capture(&r->t[i], &r->objs, e);
	if (!rc)
		warn_children(r->t, r->n);
	if (!rc)
		rc = attrs_check_tree(r->t, r->n, e);
	if (!rc)
		shm_join_named(r->t, r->n);
	if (!rc)
		rc = cow_find(r->t, r->n, e);
	if (!rc)
		shm_decide_refs(r->t, r->n);
	if (!rc)
		rc = files_finish(r->t, r->n, &r->objs, e);
	if (!rc)
		rc = sysv_capture(r->t, r->n, &r->sysv, e);
	if (!rc)	/* still stopped: the values and messages are theirs */
		rc = sysvipc_capture(r->t, r->n, o->ipc_all, &r->ipc, e);
	r->s.captured = now_ms();
	return rc;
}

/* Processes that run on get a snapshot and run again before the write. */
static int snapshot_release(const struct saver_opts *o, struct run *r, const char *image,
			    struct ibcr_err *e)
{
	int rc;

	/* files read while writing must not change: no snapshot then */
	if (o->how != RELEASE_RUN || !o->snapshots || r->objs.keep_stopped)
		return 0;
	rc = snapshot_all(r->t, r->n, e);
	r->released = rc == 1;
	if (r->released) {
		r->s.snapshotted = now_ms();
		release_all(r->t, r->n, RELEASE_RUN, image);
	}
	return rc < 0 ? -1 : 0;
}

static uint64_t pages_put(void *arg)
{
	(void)arg;
	return __atomic_load_n(&sink_bytes, __ATOMIC_RELAXED);
}

/* What the image's page data will be, about: the processes' own memory. */
static uint64_t pages_expected(const struct run *r)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < r->n; i++)
		if (!r->t[i].zombie)
			sum += progress_rss_bytes((void *)&r->t[i].pid);
	return sum;
}

static int write_all(const struct saver_opts *o, const char *image, struct run *r,
		     struct ibcr_err *e)
{
	struct progress pg;
	int rc = 0;

	for (uint32_t i = 0; i < r->n && !rc; i++)
		rc = r->t[i].zombie ? 0 : vmflags_verify(&r->t[i], e);
	if (rc)
		return rc;
	progress_start(&pg, "saver", "saved", pages_expected(r), pages_put, NULL, o->progress);
	rc = write_image(image, r->t, r->n, &r->objs, &r->sysv, &r->ipc, &o->comp,
			 &r->s.direct_bytes, e);
	progress_end(&pg);
	/* every node's image complete before any process is killed */
	if (!rc && coord_barrier("written", e)) {
		rc = -1;
		unlink(image);	/* not one image of an incomplete set */
	}
	return rc;
}

/* One checkpoint into image: 0, or 1 with the reason said. */
static int checkpoint(const struct saver_opts *o, const char *image)
{
	struct run r = { .s = { .start = now_ms() } };
	struct ibcr_err e = { "" };
	int how = o->how, rc;

	if (o->ext)
		r.objs = *o->ext;	/* --external-fd's rules */
	r.objs.tcp_close = o->tcp_close;
	r.objs.kill = how == RELEASE_KILL;
	r.objs.image = image;	/* named by a network lock left for the restore */
	guard_start(image);	/* before anything is attached */
	rc = before_freeze(o, &r, &e);
	if (!rc)
		rc = stop_all(o, &r, &e);
	if (!rc)
		rc = capture_all(o, &r, &e);
	if (!rc)
		rc = snapshot_release(o, &r, image, &e);
	r.s.released = now_ms();
	if (!rc)
		rc = write_all(o, image, &r, &e);
	r.s.written = now_ms();
	for (uint32_t i = 0; i < r.n; i++)
		snapshot_destroy(&r.t[i]);
	filedata_free(&r.objs);
	if (rc) {
		explain_exited(r.t, r.n, &e);
		fprintf(stderr, "saver: %s\n", e.msg);
		how = RELEASE_RUN;	/* never kill what we could not save */
		coord_abort(e.msg);	/* nor let the job's other nodes */
	}
	if (!r.released) {
		r.s.released = now_ms();
		release_all(r.t, r.n, how, image);
	}
	if (!rc && r.objs.given_up)
		fprintf(stderr, "saver: --tcp-close: %u TCP connection(s) given up: a restore "
			"brings them back unconnected%s\n", r.objs.given_up,
			how == RELEASE_KILL ? "; their peers see them closed now" : "");
	verbs_release(r.pre, r.npre);	/* quiesced but never adopted (a failure) */
	guard_end();
	if (o->stats && !rc)
		print_stats(&r.s, r.t, r.n, image, o->stats == STATS_JSON);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct saver_opts o;
	struct ibcr_err e = { "" };
	int rc = saver_parse(argc, argv, &o);

	if (rc >= 0)
		return rc;
	if (o.interval || o.keep)
		return interval_run(&o, checkpoint);
	if (outpath_check(o.out, &o.image, &e)) {
		fprintf(stderr, "saver: %s\n", e.msg);
		coord_abort(e.msg);	/* the job's other nodes must not wait for this one */
		return 1;
	}
	outpath_clean_stale(o.image);
	return checkpoint(&o, o.image);
}
