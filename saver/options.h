/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_OPTIONS_H
#define IBCR_SAVER_OPTIONS_H

#include <stdint.h>
#include <sys/types.h>

/* How the image is written (--compress, --direct, --cached). */
struct image_opt {
	int codec, level;
	enum { IO_AUTO, IO_DIRECT, IO_CACHED } io;
	int self_contained;	/* --self-contained */
};

struct fobjs;

enum { STATS_OFF, STATS_TEXT, STATS_JSON };

/* The command line, parsed (options.c). */
struct saver_opts {
	const char *out;	/* -o as given */
	char *image;		/* where the image goes (a link's target) */
	int how;		/* RELEASE_RUN, _STOP, _KILL */
	int stats;		/* STATS_* */
	int snapshots, tree, tcp_close, ipc_all;
	int progress;		/* -1: on a terminal; 0 off; 1 on */
	struct image_opt comp;
	unsigned interval;	/* --interval: seconds between checkpoints, 0 once */
	unsigned keep;		/* --keep: numbered images, the newest N kept */
	struct fobjs *ext;	/* --external-fd's rules, or NULL */
	pid_t *pids;
	uint32_t npids;
};

/*
 * Parses argv into o. Returns -1 to go on, else the exit status to exit
 * with at once (0 after --help or --version, 2 on a usage error, said).
 */
int saver_parse(int argc, char **argv, struct saver_opts *o);

/* One checkpoint into image (main.c): 0, or 1 with the reason said. */
typedef int (*checkpoint_fn)(const struct saver_opts *o, const char *image);

/* interval.c: --interval and --keep, each checkpoint made by fn */
int interval_run(struct saver_opts *o, checkpoint_fn fn);

#endif
