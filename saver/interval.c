// SPDX-License-Identifier: MIT
/*
 * --interval SECONDS and --keep N: checkpoints again and again, and
 * numbered images.
 *
 * With --keep, the images are IMAGE.1, IMAGE.2, ... (one more than the
 * highest number already there), IMAGE is a symbolic link to the newest,
 * and only the newest N stay. An image is complete (renamed into place,
 * synced) before the link moves to it and before any older one is
 * removed, so at every moment the newest complete image is there. With
 * --interval alone each checkpoint replaces IMAGE, atomically as always.
 *
 * Each checkpoint of --interval runs in a child of its own: a fresh saver,
 * nothing carried over from the last one. SIGINT and SIGTERM end the
 * series after the checkpoint under way, which they do not interrupt;
 * the series ends by itself when the processes have exited. Exit status:
 * that of the last checkpoint.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "options.h"
#include "outpath.h"
#include "proc_stat.h"
#include "saver.h"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *d;

	if (!slash)
		return xstrdup(".");
	d = xstrdup(path);
	d[slash == path ? 1 : slash - path] = 0;
	return d;
}

/* K when name is BASE.K (K digits), else 0. */
static unsigned long number_of(const char *name, const char *base)
{
	size_t b = strlen(base);
	char *end;
	unsigned long k;

	if (strncmp(name, base, b) || name[b] != '.' || name[b + 1] < '0' || name[b + 1] > '9')
		return 0;
	k = strtoul(name + b + 1, &end, 10);
	return *end ? 0 : k;
}

/* The numbers of IMAGE's numbered images, ascending; *n of them. */
static unsigned long *numbers(const char *image, size_t *n)
{
	char *dir = dir_of(image);
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned long *v = NULL;

	*n = 0;
	while (d && (de = readdir(d))) {
		unsigned long k = number_of(de->d_name, base_of(image));

		if (!k)
			continue;
		v = xrealloc(v, (*n + 1) * sizeof(*v));
		size_t i = (*n)++;

		for (; i && v[i - 1] > k; i--)
			v[i] = v[i - 1];
		v[i] = k;
	}
	if (d)
		closedir(d);
	free(dir);
	return v;
}

static char *numbered(const char *image, unsigned long k)
{
	size_t len = strlen(image) + 24;
	char *p = xmalloc(len);

	snprintf(p, len, "%s.%lu", image, k);
	return p;
}

/* IMAGE -> IMAGE.K, replaced atomically; then only the newest keep stay. */
static void rotate(const char *image, unsigned long k, unsigned keep)
{
	size_t len = strlen(image) + 32, n;
	char *tmp = xmalloc(len), *target = numbered(base_of(image), k);
	unsigned long *v;

	snprintf(tmp, len, "%s.lnk.%d", image, (int)getpid());
	unlink(tmp);
	if (symlink(target, tmp) || rename(tmp, image)) {
		fprintf(stderr, "saver: note: %s could not be made a link to %s: %s\n",
			image, target, strerror(errno));
		unlink(tmp);
	}
	v = numbers(image, &n);
	for (size_t i = 0; i + keep < n; i++) {
		char *old = numbered(image, v[i]);

		if (unlink(old) && errno != ENOENT)
			fprintf(stderr, "saver: note: removing %s: %s\n", old, strerror(errno));
		free(old);
	}
	free(v);
	free(target);
	free(tmp);
}

/* IMAGE itself must be free, or a link (ours, from an earlier series). */
static int check_link(const char *image, struct ibcr_err *e)
{
	struct stat st;

	if (lstat(image, &st) || S_ISLNK(st.st_mode))
		return 0;
	return ibcr_fail(e, "image %s: exists and is not a symbolic link; with --keep it "
			 "becomes a link to the newest numbered image (move it away first)",
			 image);
}

static int gone(pid_t pid)
{
	struct proc_stat st;

	return !proc_stat_of(pid, &st) || st.state == 'Z' || st.state == 'X';
}

static int any_gone(const struct saver_opts *o)
{
	for (uint32_t i = 0; i < o->npids; i++)
		if (gone(o->pids[i]))
			return 1;
	return 0;
}

/* One checkpoint of a series, in a child (a fresh saver each time). */
static int run_child(const struct saver_opts *o, const char *path, checkpoint_fn fn)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "saver: fork: %s\n", strerror(errno));
		return 1;
	}
	if (!pid) {
		signal(SIGINT, SIG_IGN);	/* the series stops after this one */
		signal(SIGTERM, SIG_IGN);
		_exit(fn(o, path));
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* Sleeps until `until` (CLOCK_MONOTONIC seconds), or a stop, or an exit. */
static void pause_until(const struct saver_opts *o, double until)
{
	for (;;) {
		struct timespec now, step = { 0, 100 * 1000 * 1000 };

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (stop_requested || any_gone(o) || now.tv_sec + now.tv_nsec / 1e9 >= until)
			return;
		nanosleep(&step, NULL);
	}
}

int interval_run(struct saver_opts *o, checkpoint_fn fn)
{
	struct ibcr_err e = { "" };
	unsigned long next = 0;
	int rc = 0, done = 0;
	char *real;

	if (o->keep && check_link(o->out, &e)) {
		fprintf(stderr, "saver: %s\n", e.msg);
		return 1;
	}
	if (o->keep) {
		size_t n;
		unsigned long *v = numbers(o->out, &n);

		next = n ? v[n - 1] + 1 : 1;
		free(v);
	}
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	for (;;) {
		struct timespec t0;
		char *path = o->keep ? numbered(o->out, next) : xstrdup(o->out);

		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (outpath_check(path, &real, &e)) {
			fprintf(stderr, "saver: %s\n", e.msg);
			free(path);
			return 1;
		}
		outpath_clean_stale(o->keep ? o->out : real);
		rc = o->interval ? run_child(o, real, fn) : fn(o, real);
		if (!rc && o->keep)
			rotate(o->out, next++, o->keep);
		done += !rc;
		free(real);
		free(path);
		if (!o->interval || stop_requested)
			break;
		pause_until(o, t0.tv_sec + t0.tv_nsec / 1e9 + o->interval);
		if (stop_requested || any_gone(o))
			break;
	}
	if (o->interval && any_gone(o))
		fprintf(stderr, "saver: note: a process exited; the series ends after %d "
			"image(s)\n", done);
	return rc;
}
