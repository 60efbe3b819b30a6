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

#include "buf.h"
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
	pt_stop_signals_seen();
	if (capture_regs(t, e) || capture_injected(t, e) ||
	    capture_threads(t, e) || capture_procinfo(t, e) || capture_files(t, objs, e) ||
	    capture_locks(t, e) ||
	    capture_memory_map(t, e))
		return -1;
	if (pt_stop_signals_seen())
		t->stopped = 1;	/* a stop signal was on its way in */
	if (t->stopped)
		t->ps.rec.flags |= IBCR_PROCF_STOPPED;
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
		rc = imgw_section(w, IBCR_SEC_SIGACT, idx, NULL, t->ps.sigact,
				  sizeof(t->ps.sigact), e);
	if (!rc) {
		b.len = 0;
		enc_files(&b, &t->ps);
		rc = imgw_section(w, IBCR_SEC_FILES, idx, NULL, b.p, b.len, e);
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

static int write_image(const char *out, struct target *t, uint32_t n,
		       const struct fobjs *objs, const struct ibcr_sysv *sysv,
		       const struct ibcr_sysvipc *ipc, const struct image_opt *c,
		       uint64_t *direct_bytes, struct ibcr_err *e)
{
	struct img_writer w;
	struct buf b = { 0 };
	int want = c->io == IO_DIRECT || (c->io == IO_AUTO && image_direct(t, n));

	if (imgw_open(&w, out, ibcr_host_arch(), n, want ? IMGW_DIRECT : 0, e))
		return -1;
	enc_fileobjs(&b, &objs->f);
	if (imgw_section(&w, IBCR_SEC_FILEOBJS, IBCR_PROC_NONE, NULL, b.p, b.len, e))
		goto fail;
	if (write_sysv(&w, sysv, ipc, e))
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
static void release_all(struct target *t, uint32_t n, int how)
{
	/* TCP connections leave repair mode before the processes run on */
	tcp_release(how == RELEASE_KILL);
	for (uint32_t i = 0; i < n; i++)
		target_release(&t[i], how);
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
	for (uint32_t i = 0; i < n; i++)
		if (!t[i].zombie && snapshot_create(&t[i], e))
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
	struct fobjs objs;
	struct ibcr_sysv sysv;
	struct ibcr_sysvipc ipc;
	struct stats s;
	int released;		/* let go already (they run on the snapshot) */
};

/* Checks every process, quiesces verbs users, stops them all. */
static int stop_all(const struct saver_opts *o, struct run *r, struct ibcr_err *e)
{
	int rc = 0;

	r->n = o->npids;
	r->t = xcalloc(r->n, sizeof(*r->t));
	for (uint32_t i = 0; i < r->n; i++) {
		r->t[i].memfd = -1;
		r->t[i].pid = o->pids[i];
	}
	for (uint32_t i = 0; i < r->n && !rc; i++)
		rc = target_check(r->t[i].pid, e) || verbs_find(&r->t[i], e) ? -1 : 0;
	/* Verbs users quiesce themselves first, while they still run. */
	if (!rc)
		rc = verbs_quiesce(r->t, r->n, e);
	/* smaps walks every page: read it now, while they still run */
	for (uint32_t i = 0; i < r->n && !rc && !o->tree && o->how == RELEASE_RUN &&
	     o->snapshots; i++)
		vmflags_preread(&r->t[i]);
	/* the parking gadget is in their code, which does not change: look now */
	for (uint32_t i = 0; i < r->n && !rc; i++) {
		struct ibcr_err later;	/* looked for again in the freeze */

		park_prepare(&r->t[i], &later);
	}
	r->s.frozen = now_ms();
	/* All are stopped before any is read: one consistent point in time. */
	if (o->tree && !rc)
		rc = tree_seize(&r->t, &r->n, e);
	for (uint32_t i = 0; i < r->n && !rc && !o->tree; i++)
		rc = target_seize(&r->t[i], e);
	r->s.seized = now_ms();
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
		shm_join_named(r->t, r->n);
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
static int snapshot_release(const struct saver_opts *o, struct run *r, struct ibcr_err *e)
{
	int rc;

	if (o->how != RELEASE_RUN || !o->snapshots)
		return 0;
	rc = snapshot_all(r->t, r->n, e);
	r->released = rc == 1;
	if (r->released) {
		r->s.snapshotted = now_ms();
		release_all(r->t, r->n, RELEASE_RUN);
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

/* One checkpoint into image: 0, or 1 with the reason said. */
static int checkpoint(const struct saver_opts *o, const char *image)
{
	struct run r = { .s = { .start = now_ms() } };
	struct ibcr_err e = { "" };
	int how = o->how, rc;

	r.objs.tcp_close = o->tcp_close;
	guard_start(image);	/* before anything is attached */
	rc = stop_all(o, &r, &e);
	if (!rc)
		rc = capture_all(o, &r, &e);
	if (!rc)
		rc = snapshot_release(o, &r, &e);
	r.s.released = now_ms();
	for (uint32_t i = 0; i < r.n && !rc; i++)
		rc = r.t[i].zombie ? 0 : vmflags_verify(&r.t[i], &e);
	if (!rc) {
		struct progress pg;

		progress_start(&pg, "saver", "saved", pages_expected(&r), pages_put, NULL,
			       o->progress);
		rc = write_image(image, r.t, r.n, &r.objs, &r.sysv, &r.ipc, &o->comp,
				 &r.s.direct_bytes, &e);
		progress_end(&pg);
	}
	r.s.written = now_ms();
	for (uint32_t i = 0; i < r.n; i++)
		snapshot_destroy(&r.t[i]);
	if (rc) {
		explain_exited(r.t, r.n, &e);
		fprintf(stderr, "saver: %s\n", e.msg);
		how = RELEASE_RUN;	/* never kill what we could not save */
	}
	if (!r.released) {
		r.s.released = now_ms();
		release_all(r.t, r.n, how);
	}
	if (how == RELEASE_KILL)	/* their pids free for a restore at once */
		wait_gone(r.t, r.n);
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
		return 1;
	}
	outpath_clean_stale(o.image);
	return checkpoint(&o, o.image);
}
