// SPDX-License-Identifier: MIT
/*
 * restart-loader: bring back the processes of an image.
 *
 *   restart-loader [-v] IMAGE   (options.c: all of them)
 *
 * The image is checked before anything changes. The loader then forks
 * the process to restore (with its saved PID where permitted), which
 * rebuilds itself from the image, and stays as its parent: it finishes
 * the hand-over (finalize.c), waits, and exits with its exit status, so
 * the restored program runs in the foreground of the calling shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fdkinds.h"
#include "loader.h"
#include "stream.h"
#include "lazy.h"
#include "netlock.h"
#include "options.h"
#include "progress.h"
#include "sockopt.h"
#include "statsout.h"

void run_child(struct restore *rs);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double trace_t0;	/* the loader's start: trace lines say when */

/* Prints a trace line of the child or its core (IBCR_TRACE=1). */
static void print_trace(int fd)
{
	char c;

	fprintf(stderr, "restart-loader: trace: %.1f ms: ", now_ms() - trace_t0);
	while (read(fd, &c, 1) == 1 && c != '\n')
		fputc(c, stderr);
	fputc('\n', stderr);
}

/* Exits the way a restored process did. */
__attribute__((noreturn)) void exit_like(int st)
{
	if (WIFSIGNALED(st)) {
		/* no core dump of ours: the program's own was made, or not */
		struct rlimit none = { 0, 0 };

		setrlimit(RLIMIT_CORE, &none);
		signal(WTERMSIG(st), SIG_DFL);
		raise(WTERMSIG(st));
		_exit(128 + WTERMSIG(st));
	}
	_exit(WEXITSTATUS(st));
}

/* The page data reader of j's process, once; j->pages_open says whether it is. */
static void job_pages_open(struct job *j, struct ibcr_err *e)
{
	if (j->pages_open || pages_open(&j->pages, &j->ps, j->rs.r->fd, j->rs.r->path,
					j->child, e))
		return;
	j->pages_open = 1;
	j->pages.rs = &j->rs;	/* its lazy regions stay out of the stream */
}

/*
 * A region of a compressed image, asked for by the core (its index and
 * its userfaultfd's number or -1): fill it, answer CT_DONE; CT_CANNOT
 * when that descriptor cannot be had, CT_FAILED after saying why it failed.
 */
static void serve_fill(struct job *j, const struct st_fill *m)
{
	struct ibcr_err e = { "" };
	char reply = CT_DONE;
	int rc = -1;

	job_pages_open(j, &e);
	if (j->pages_open)
		rc = pages_fill(&j->pages, m->vma, m->uffd, &e);
	if (rc > 0)
		reply = CT_CANNOT;
	if (rc < 0) {
		fprintf(stderr, "restart-loader: pid %d: %s\n", j->ps.rec.pid, e.msg);
		reply = CT_FAILED;
	}
	if (write(j->control_fd, &reply, 1) != 1)
		return;
}

/*
 * The core fills a large region with our help (pagehelp.c): ST_HELP, we
 * write the part from `from` on; ST_HELP_UFFD, we copy it in through the
 * core's userfaultfd, or answer CT_CANNOT when we cannot have it. CT_DONE
 * comes with the page_sum of what we put in.
 */
static void serve_help(struct job *j, const struct st_help *m)
{
	struct ibcr_err e = { "" };
	struct ct_help_done reply = { CT_DONE, 0 };
	uint32_t sum = 0;
	int rc;

	job_pages_open(j, &e);
	if (!j->pages_open)
		rc = -1;
	else if (m->kind == ST_HELP_UFFD)
		rc = pages_help_uffd(&j->pages, m->vma, m->from, m->uffd, &sum, &e);
	else
		rc = pages_help(&j->pages, m->vma, m->from, &sum, &e);
	if (rc > 0)
		reply.kind = CT_CANNOT;
	if (rc < 0) {
		fprintf(stderr, "restart-loader: pid %d: %s\n", j->ps.rec.pid, e.msg);
		reply.kind = CT_FAILED;
	}
	reply.sum = sum;
	/* one write: the core reads the sum right after the CT_DONE */
	if (write(j->control_fd, &reply, reply.kind == CT_DONE ? sizeof(reply) : 1) < 0)
		return;
}

/* The rest of a fixed message whose kind byte m->kind has been read. */
static int read_body(int fd, union st_msg *m)
{
	size_t rest = st_len(m->kind) - 1;

	return read(fd, (uint8_t *)m + 1, rest) == (ssize_t)rest ? 0 : -1;
}

/* One fixed message on the way to the verdict; -1: the pipe broke. */
static int serve_msg(struct job *j, const union st_msg *m)
{
	switch (m->kind) {
	case ST_FILL:
		serve_fill(j, &m->fill);
		return 0;
	case ST_HELP:
	case ST_HELP_UFFD:
		serve_help(j, &m->help);
		return 0;
	case ST_LAZY:
		return lazy_serve(j, &m->lazy, j->rs.verbose);
	default:	/* ST_CHILD */
		j->child = m->child.pid;
		return 0;
	}
}

/*
 * Reads the child's status pipe up to its verdict: ST_READY, ST_ERROR
 * and a message, or nothing (it died). On the way: trace lines and, for
 * compressed images, requests to fill a region, for large regions of
 * uncompressed ones, to help fill it; --lazy, the core's userfaultfd.
 */
static int read_status(struct job *j, char *msg, size_t size)
{
	for (;;) {
		union st_msg m;
		ssize_t n = read(j->status_fd, &m.kind, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1)
			return -1;
		if (m.kind == ST_TRACE) {
			print_trace(j->status_fd);
			continue;
		}
		if (m.kind == ST_ERROR) {
			n = read(j->status_fd, msg, size - 1);
			msg[n > 0 ? n : 0] = 0;
			return ST_ERROR;
		}
		if (!st_len(m.kind))
			return m.kind;
		if (m.kind == ST_READY) {
			/* 0: finalize says it cannot read the plan */
			j->plan_addr = read_body(j->status_fd, &m) ? 0 : m.ready.plan;
			return ST_READY;
		}
		if (read_body(j->status_fd, &m) || serve_msg(j, &m))
			return -1;
	}
}

/* Stops everything restored so far; the roots are ours to reap. */
static void kill_all(struct job *j, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (j[i].child > 0 && !j[i].exited) {
			kill(j[i].child, SIGKILL);
			while (j[i].parent < 0 && waitpid(j[i].child, &j[i].st, 0) < 0 &&
			       errno == EINTR)
				;
			j[i].exited = 1;
		}
}

/* Waits until every restored process is ready; any failure stops them all. */
static int wait_ready(struct job *j, uint32_t n)
{
	char msg[600];

	for (uint32_t i = 0; i < n; i++) {
		int c;

		if (is_zombie(&j[i]))
			continue;
		c = read_status(&j[i], msg, sizeof(msg));
		if (c == ST_READY)
			continue;
		if (c == ST_ERROR) {
			fprintf(stderr, "restart-loader: pid %d: %s\n", j[i].ps.rec.pid, msg);
		} else if (j[i].parent < 0) {
			int st = 0;

			while (waitpid(j[i].child, &st, 0) < 0 && errno == EINTR)
				;
			j[i].exited = 1;
			fprintf(stderr, "restart-loader: pid %d: restore failed: the new "
				"process %s %d before it was ready\n", j[i].ps.rec.pid,
				WIFSIGNALED(st) ? "was killed by signal" : "exited with status",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		} else {
			fprintf(stderr, "restart-loader: pid %d: restore failed: the new "
				"process ended before it was ready\n", j[i].ps.rec.pid);
		}
		kill_all(j, n);
		return -1;
	}
	return 0;
}

/*
 * The roots are the loader's children (the others belong to their own
 * restored parents). Exit status: a lone root's own; of several, the
 * first failure's.
 */
static __attribute__((noreturn)) void wait_all(struct job *j, uint32_t n)
{
	uint32_t left = 0, roots = 0;
	pid_t *pids = xcalloc(n + 1, sizeof(*pids));

	for (uint32_t i = 0; i < n; i++)
		if (j[i].parent < 0 && j[i].child > 0)
			pids[roots++] = j[i].child, left += !j[i].exited;
	signal(SIGINT, SIG_IGN);	/* terminal signals reach the processes */
	signal(SIGQUIT, SIG_IGN);
	init_forward(pids, roots);	/* a container's init passes them on */
	term_forward(pids, roots);	/* any loader: SIGTERM, SIGHUP were meant for them */
	while (left) {
		int st;
		pid_t pid = waitpid(-1, &st, 0);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;
		for (uint32_t i = 0; i < n; i++)
			if (j[i].parent < 0 && j[i].child == pid && !j[i].exited) {
				j[i].st = st;
				j[i].exited = 1;
				left--;
			}
	}
	for (uint32_t i = 0; i < n; i++)
		if (j[i].parent < 0 && j[i].child > 0 &&
		    (roots == 1 || !WIFEXITED(j[i].st) || WEXITSTATUS(j[i].st)))
			exit_like(j[i].st);
	_exit(0);
}

static int open_image(const char *path, struct img_reader *r, struct ibcr_err *e)
{
	if (imgr_open(r, path, e))
		return -1;
	if (r->hdr.arch != ibcr_host_arch())
		return ibcr_fail(e, "image %s is for %s; this is %s", path,
				 ibcr_arch_name(r->hdr.arch), ibcr_arch_name(ibcr_host_arch()));
	if (r->hdr.page_size != (uint32_t)getpagesize())
		return ibcr_fail(e, "image %s has %u-byte pages; this system %d", path,
				 r->hdr.page_size, getpagesize());
	return 0;
}

/* Everything that can be checked before anything changes. */
/* The image's backing files: a self-contained image's put back first. */
static int backing(struct img_reader *r, const struct ibcr_files *files,
		   const struct pathmap *pm, struct selfc **sc, struct backing_ctx **bc,
		   struct ibcr_err *e)
{
	static struct ibcr_backings b;

	if (imgr_load_backing(r, &b, e))
		return -1;
	pathmap_backing(pm, &b);
	if ((r->hdr.flags & IBCR_HDRF_SELF_CONTAINED) && selfc_prepare(r, &b, files, sc, e))
		return -1;
	*bc = backing_ctx(&b, selfc_trusted(*sc));
	return 0;
}

static int prepare(struct img_reader *r, struct job *j, const struct ibcr_files *files,
		   const struct loader_opts *o, struct ibcr_err *e)
{
	struct backing_ctx *bc = NULL;
	struct selfc *sc = NULL;

	if (backing(r, files, &o->pm, &sc, &bc, e) || preflight_files(files, e))
		return -1;
	for (uint32_t i = 0; i < r->hdr.nprocs; i++) {
		struct job *x = &j[i];

		x->rs = (struct restore){ .r = r, .ps = &x->ps, .proc = i, .exe_fd = -1,
					  .verbose = o->verbose > 0, .files = files, .jobs = j,
					  .njobs = r->hdr.nprocs, .backing = bc,
					  .cpu_in_use = o->cpu_in_use, .new_ids = o->new_pids,
					  .cgroup_here = o->cgroup_here };
		if (imgr_load_process(r, i, &x->ps, e))
			return -1;
		pathmap_process(&o->pm, &x->ps);
		if (selfc_process(sc, &x->ps, e))
			return -1;
		if (is_zombie(x))
			continue;
		if (preflight(&x->rs, e) || creds_preflight(&x->rs, e))
			return -1;
		if (verbs_pokes(&x->rs, e))
			return -1;
		/* as the root of a user namespace, the saved ids must be mapped */
		if (geteuid() == 0 && (x->ps.rec.uid[0] || x->ps.rec.uid[1] || x->ps.rec.gid[0] ||
				       x->ps.rec.gid[1]) && userns_check_creds(&x->ps, e))
			return -1;
	}
	tree_link(j, r->hdr.nprocs);
	return ids_preflight(j, r->hdr.nprocs, e);
}

/* Every descriptor of the loader's goes above every saved number. */
static int fd_base(const struct job *j, uint32_t n)
{
	int base = 3;

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < j[i].ps.nfds; k++)
			if (j[i].ps.fds[k].fd >= base)
				base = j[i].ps.fds[k].fd + 1;
	return base;
}

static void print_stats(int json, double start, double t_prepared, double t_filled,
			uint64_t copied, uint64_t written, uint64_t direct)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	const struct stat_field f[] = {
		STAT_MS("restore_ms", now_ms() - start),
		STAT_MS("prepare_ms", t_prepared - start),
		STAT_MS("memory_ms", t_filled - t_prepared),
		STAT_MS("finish_ms", now_ms() - t_filled),
		STAT_COUNT("peak_rss_kb", ru.ru_maxrss),
		STAT_COUNT("uffd_kb", copied >> 10),
		STAT_COUNT("written_kb", written >> 10),
		STAT_COUNT("direct_kb", direct >> 10),
	};

	stats_print(stderr, json, "restart-loader", f, sizeof(f) / sizeof(f[0]));
}

/* The image's page data: what a restore's progress is measured against. */
static uint64_t page_bytes(const struct job *j, uint32_t n)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < j[i].ps.nvmas; k++)
			sum += j[i].ps.vmas[k].data_len;
	return sum;
}

/* The first root: its pid for --pidfile and the progress of its fill. */
static pid_t first_root(const struct job *j, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (j[i].parent < 0 && j[i].child > 0)
			return j[i].child;
	return 0;
}

/* Made and filled, every process ready; the progress shown meanwhile. */
static int start_all(const struct loader_opts *o, struct job *j, uint32_t n, int base,
		     pid_t *root)
{
	struct progress pg;
	int rc;

	if (tree_start(j, n, base, o->verbose > 0))
		return -1;
	*root = first_root(j, n);
	progress_start(&pg, "restart-loader", "restored", page_bytes(j, n),
		       progress_rss_bytes, root, *root ? o->progress : 0);
	rc = wait_ready(j, n);
	progress_end(&pg);
	return rc;
}

int main(int argc, char **argv)
{
	double start = trace_t0 = now_ms(), t_prepared, t_filled;
	uint64_t copied = 0, written = 0, direct = 0;	/* page data we put in, read direct */
	struct loader_opts o;
	struct img_reader r;
	struct ibcr_err e = { "" };
	struct ibcr_files files;
	struct ibcr_sockopts sockopts;
	struct ibcr_netlock lock;
	struct ibcr_sysv sysv;
	struct ibcr_sysvipc ipc;
	struct job *j;
	int verbose, base, img_fd = -1, *obj_fds = NULL, locked, rc = loader_parse(argc, argv, &o);
	pid_t root = 0;
	uint32_t failed = UINT32_MAX;	/* the object objects_open could not make */

	if (rc >= 0)
		return rc;
	if (o.check)
		return loader_check();
	if (o.log && loader_log_open(o.log))
		return 1;
	verbose = o.verbose > 0;
	if (o.verbose > 1)
		setenv("IBCR_TRACE", "1", 1);	/* children and the core read it */
	/*
	 * A child that died leaves its pipes broken: say why (it did, on its
	 * status pipe) rather than die of SIGPIPE answering it. The core sets
	 * every signal's saved action, this one included.
	 */
	signal(SIGPIPE, SIG_IGN);
	if (o.pidns && pidns_enter(&e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	if (o.barrier)
		coord_init(o.barrier, "restart");
	coord_abort_on_exit();	/* a failure here fails every node's restart */
	if (open_image(o.image, &r, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	if (imgr_load_netlock(&r, &lock, &locked, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	if (o.unlock_net)
		return net_unlock_only(&lock, locked, o.image);
	j = xcalloc(r.hdr.nprocs, sizeof(*j));
	if (imgr_load_files(&r, &files, &e) ||
	    imgr_load_sockopts(&r, files.nobjs, &sockopts, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	pathmap_files(&o.pm, &files);
	addrmap_files(&o.am, &files);
	if (prepare(&r, j, &files, &o, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	files.sockopts = &sockopts;
	/* checked, then made again: a conflict stops us before any change */
	if (imgr_load_sysvipc(&r, &ipc, &e) || sysvipc_prepare(&ipc, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	/* first: files mapped shared are made again here, and may be open too */
	if (imgr_load_sysv(&r, &sysv, &e) || shm_prepare(j, r.hdr.nprocs, &sysv, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	base = fd_base(j, r.hdr.nprocs);
	if ((img_fd = fcntl(r.fd, F_DUPFD_CLOEXEC, base)) < 0 || loader_stdio_move(base) ||
	    objects_open(&files, base, &obj_fds, &failed, &e)) {
		if (img_fd >= 0 && failed != UINT32_MAX)
			objects_name_holder(j, r.hdr.nprocs, failed, &e);
		fprintf(stderr, "restart-loader: %s\n", img_fd < 0 ? strerror(errno) : e.msg);
		return 1;
	}
	close(r.fd);
	r.fd = img_fd;
	for (uint32_t i = 0; i < r.hdr.nprocs; i++) {
		j[i].rs.obj_fds = obj_fds;
		j[i].rs.fd_base = base;
		j[i].pidfd = -1;
	}
	for (uint32_t i = 0; o.lazy && i < r.hdr.nprocs; i++)
		j[i].rs.lazy = 1;
	if (o.lazy)	/* a tree's regions shared copy-on-write stay eager */
		lazy_tree_note(j, r.hdr.nprocs, o.image, verbose);
	stream_decide(j, r.hdr.nprocs, r.fd, verbose);
	if (cow_prepare(j, r.hdr.nprocs, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	t_prepared = now_ms();
	if (start_all(&o, j, r.hdr.nprocs, base, &root)) {
		kill_all(j, r.hdr.nprocs);
		return 1;
	}
	t_filled = now_ms();
	if (o.lazy)
		lazy_pin(j, r.hdr.nprocs);	/* a damaged chunk kills them all */
	/*
	 * every process exists: I/O signal owners, leases (before any resumes);
	 * UNIX queues refilled, connections go live, their packets flow again
	 */
	if (fdattr_finish(j, r.hdr.nprocs, &files, obj_fds, &e) ||
	    net_finish(j, r.hdr.nprocs, &files, obj_fds, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		kill_all(j, r.hdr.nprocs);
		return 1;
	}
	net_unlock(&lock, locked);
	shm_remove_dead(&sysv);
	/* the processes have them: a pipe's end held here would hide its EOF */
	for (uint32_t i = 0; i < files.nobjs; i++)
		if (obj_fds[i] >= 0)
			close(obj_fds[i]);
	for (uint32_t i = 0; i < r.hdr.nprocs; i++) {
		if (is_zombie(&j[i]))
			continue;
		copied += j[i].pages.copied;
		written += j[i].pages.written;
		direct += stream_direct_bytes(j[i].pages.stream);
		if (j[i].pages_open)
			pages_close(&j[i].pages);
		ids_report(&j[i]);	/* its threads wait in the core: all there */
		if (finalize(j[i].child, j[i].plan_addr, j[i].control_fd, verbose,
			     j[i].lazy != NULL, &e)) {
			fprintf(stderr, "restart-loader: pid %d: %s\n", j[i].ps.rec.pid, e.msg);
			kill_all(j, r.hdr.nprocs);
			return 1;
		}
		/* it was stopped (Ctrl-Z: SIGTSTP): still is, by the same signal */
		if (j[i].ps.rec.flags & IBCR_PROCF_STOPPED)
			kill(j[i].child, j[i].ps.pattrs.stop_sig ? (int)j[i].ps.pattrs.stop_sig
								 : SIGSTOP);
		close(j[i].status_fd);
		close(j[i].control_fd);
	}
	if (o.stats)
		print_stats(o.stats == 2, start, t_prepared, t_filled, copied, written, direct);
	if (o.pidfile && loader_write_pidfile(o.pidfile, root))
		return 1;
	lazy_hold_all(j, r.hdr.nprocs);
	for (uint32_t i = 0; i < r.hdr.nprocs; i++) {
		if (o.stats && j[i].lazy)
			fprintf(stderr, "ibcr-stats: lazy_fill_ms=%.1f full_ms=%.1f faults=%llu "
				"direct_kb=%llu\n", lazy_fill_ms(j[i].lazy), now_ms() - start,
				(unsigned long long)lazy_faults(j[i].lazy),
				(unsigned long long)(lazy_direct_bytes(j[i].lazy) >> 10));
		lazy_free(j[i].lazy);
		j[i].lazy = NULL;
	}
	if (o.lazy)
		lazy_unpin(j, r.hdr.nprocs);
	/* they run: --detach leaves them to whoever inherits them */
	if (o.detach)
		return 0;
	wait_all(j, r.hdr.nprocs);
}
