/* SPDX-License-Identifier: MIT */
#ifndef IBCR_LOADER_OPTIONS_H
#define IBCR_LOADER_OPTIONS_H

#include <sys/types.h>

#include "loader.h"

/* restart-loader's command line (options.c; docs/cli.md, docs/man). */
struct loader_opts {
	const char *image;
	int verbose;		/* -v 1, -vv 2 (each step, as IBCR_TRACE=1) */
	int stats;		/* 0, 1 text, 2 JSON */
	int check;		/* --check: can this machine restore? */
	int detach;		/* return once the processes run */
	int progress;		/* -1 on a terminal, 0 never, 1 always */
	const char *pidfile, *log;
	int pidns;		/* --pid-ns: a PID namespace of its own */
	int new_pids;		/* --new-pids: a root or thread whose id is taken gets another */
	int cpu_in_use;		/* --cpu-check=in-use */
	int unlock_net;		/* --unlock-net: only remove the image's network lock */
	int cgroup_here;	/* --cgroup=here: stay in the loader's cgroup */
	int lazy;		/* --lazy: resume first, fill the memory behind */
	struct pathmap pm;	/* --path-map OLD=NEW... */
	struct addrmap am;	/* --addr-map OLD=NEW... */
	const char *barrier;	/* --barrier CMD: one restart of a job over nodes */
};

/* -1 to go on, else the exit status to exit with at once. */
int loader_parse(int argc, char **argv, struct loader_opts *o);

/*
 * --log FILE: the loader's own messages go to FILE; the caller's stderr
 * is kept (above every saved fd number, loader_stdio_move) and given
 * back as fd 2 to each restored process, which rebinds its stdio to
 * the loader's (loader_stdio_restore, in the child).
 */
int loader_log_open(const char *path);
int loader_stdio_move(int base);
void loader_stdio_restore(void);

/* --pidfile FILE: pid, written whole or not at all (a temporary, renamed). */
int loader_write_pidfile(const char *path, pid_t pid);

/* check.c: --check, one line per capability; 0 when restores work here. */
int loader_check(void);

#endif
