// SPDX-License-Identifier: MIT
/*
 * restart-loader's command line, --log and --pidfile. Every option is in
 * the usage text; t_cli checks that the man page names each one.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "version.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: restart-loader [-v | -vv] [--stats[=text|json]] [--progress | --no-progress]\n"
		   "                      [--detach] [--pidfile FILE] [--log FILE] [--pid-ns]\n"
		   "                      [--new-pids]\n"
		   "                      [--path-map OLD=NEW]... [--addr-map OLD=NEW]...\n"
		   "                      [--barrier CMD] [--cpu-check=enabled|in-use]\n"
		   "                      [--cgroup=saved|here] [--lazy] IMAGE\n"
		   "       restart-loader --unlock-net IMAGE\n"
		   "       restart-loader --check\n"
		   "       restart-loader --version | --help\n"
		   "  -v, --verbose       say what could not be done as hoped; twice (-vv): also\n"
		   "                      each step of the restore\n"
		   "      --stats[=text|json]\n"
		   "                      print the restore's timings and sizes on stderr: one\n"
		   "                      ibcr-stats: line (text, the default) or one JSON object\n"
		   "      --progress      show the progress of the restore on stderr, even when\n"
		   "                      it is not a terminal (default: only on a terminal)\n"
		   "      --no-progress   never show it\n"
		   "  -d, --detach        return once the processes run, leaving them to run on\n"
		   "                      (reparented; their exit status is not collected)\n"
		   "      --pidfile FILE  write the restored (first) process's pid to FILE\n"
		   "      --log FILE      write the loader's own messages to FILE (appended)\n"
		   "      --path-map OLD=NEW\n"
		   "                      restore the image's paths under OLD under NEW (repeatable)\n"
		   "      --addr-map OLD=NEW\n"
		   "                      restore the sockets' IP address OLD as NEW (repeatable)\n"
		   "      --barrier CMD   one restart of a job over several nodes: run `CMD sockets`\n"
		   "                      once its TCP connections exist, before they go live\n"
		   "      --pid-ns        restore in a PID namespace of its own (and a user\n"
		   "                      namespace when unprivileged): the original PIDs\n"
		   "                      without privilege\n"
		   "      --new-pids      where a saved pid (of a process whose parent is not in\n"
		   "                      the image) or a thread id is taken or cannot be chosen,\n"
		   "                      take a new one (said on stderr) instead of refusing;\n"
		   "                      the program may still hold the old one\n"
		   "      --cpu-check=enabled|in-use\n"
		   "                      in-use: require only the CPU state the threads hold,\n"
		   "                      not all the saving kernel enabled\n"
		   "      --cgroup=saved|here\n"
		   "                      saved (default): each process back into its saved\n"
		   "                      cgroup v2 path; here: left in the loader's own\n"
		   "      --lazy          resume before the memory is in; the loader fills it\n"
		   "                      behind (one process, CAP_SYS_PTRACE; else filled\n"
		   "                      first, as always)\n"
		   "      --unlock-net    restore nothing: let the packets of the image's TCP\n"
		   "                      connections through again (their peers see them reset)\n"
		   "      --check         say whether this machine can checkpoint and restore,\n"
		   "                      one line per capability; exit 0 if it can\n"
		   "  -V, --version       print the version and exit\n"
		   "  -h, --help          show this help\n");
}

int loader_parse(int argc, char **argv, struct loader_opts *o)
{
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "stats", optional_argument, NULL, 'S' },
		{ "progress", no_argument, NULL, 'P' },
		{ "no-progress", no_argument, NULL, 'Q' },
		{ "detach", no_argument, NULL, 'd' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "log", required_argument, NULL, 'l' },
		{ "check", no_argument, NULL, 'c' },
		{ "unlock-net", no_argument, NULL, 'U' },
		{ "cgroup", required_argument, NULL, 'G' },
		{ "path-map", required_argument, NULL, 'M' },
		{ "addr-map", required_argument, NULL, 'A' },
		{ "barrier", required_argument, NULL, 'B' },
		{ "pid-ns", no_argument, NULL, 'N' },
		{ "new-pids", no_argument, NULL, 'I' },
		{ "cpu-check", required_argument, NULL, 'C' },
		{ "lazy", no_argument, NULL, 'L' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	*o = (struct loader_opts){ .progress = -1 };
	while ((c = getopt_long(argc, argv, "vdVh", opts, NULL)) != -1) {
		switch (c) {
		case 'v': o->verbose++; break;
		case 'S':
			if (optarg && strcmp(optarg, "text") && strcmp(optarg, "json")) {
				fprintf(stderr, "restart-loader: --stats=%s: expected text or json\n",
					optarg);
				return 2;
			}
			o->stats = optarg && !strcmp(optarg, "json") ? 2 : 1;
			break;
		case 'P': o->progress = 1; break;
		case 'Q': o->progress = 0; break;
		case 'd': o->detach = 1; break;
		case 'p': o->pidfile = optarg; break;
		case 'l': o->log = optarg; break;
		case 'c': o->check = 1; break;
		case 'U': o->unlock_net = 1; break;
		case 'G':
			if (!optarg || (strcmp(optarg, "saved") && strcmp(optarg, "here"))) {
				fprintf(stderr, "restart-loader: --cgroup=%s: expected saved or here\n",
					optarg);
				return 2;
			}
			o->cgroup_here = !strcmp(optarg, "here");
			break;
		case 'N': o->pidns = 1; break;
		case 'I': o->new_pids = 1; break;
		case 'L': o->lazy = 1; break;
		case 'C':
			if (!optarg || (strcmp(optarg, "in-use") && strcmp(optarg, "enabled"))) {
				fprintf(stderr, "restart-loader: --cpu-check=%s: expected enabled "
					"or in-use\n", optarg);
				return 2;
			}
			o->cpu_in_use = !strcmp(optarg, "in-use");
			break;
		case 'M': {
			struct ibcr_err e = { "" };

			if (pathmap_add(&o->pm, optarg, &e)) {
				fprintf(stderr, "restart-loader: %s\n", e.msg);
				return 2;
			}
			break;
		}
		case 'A': {
			struct ibcr_err e = { "" };

			if (addrmap_add(&o->am, optarg, &e)) {
				fprintf(stderr, "restart-loader: %s\n", e.msg);
				return 2;
			}
			break;
		}
		case 'B': o->barrier = optarg; break;
		case 'V': ibcr_print_version(stdout, "restart-loader"); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o->check && optind == argc)
		return -1;
	if (o->check || optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	o->image = argv[optind];
	return -1;
}

static int caller_err = -1;	/* the caller's stderr, under --log */

int loader_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0) {
		fprintf(stderr, "restart-loader: --log %s: %s\n", path, strerror(errno));
		return -1;
	}
	caller_err = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (caller_err < 0 || dup2(fd, 2) < 0) {
		fprintf(stderr, "restart-loader: --log %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int loader_stdio_move(int base)
{
	int fd;

	if (caller_err < 0 || caller_err >= base)
		return 0;
	fd = fcntl(caller_err, F_DUPFD_CLOEXEC, base);
	if (fd < 0)
		return -1;
	close(caller_err);
	caller_err = fd;
	return 0;
}

void loader_stdio_restore(void)
{
	if (caller_err >= 0)
		dup2(caller_err, 2);	/* the restored process's fd 2: the caller's */
}

int loader_write_pidfile(const char *path, pid_t pid)
{
	size_t n = strlen(path) + 32;
	char *tmp = malloc(n);
	FILE *f;
	int rc = -1;

	if (!tmp)
		return -1;
	snprintf(tmp, n, "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "we");
	if (f) {
		int werr = fprintf(f, "%d\n", (int)pid) < 0;

		if (fclose(f) || werr || rename(tmp, path))
			unlink(tmp);
		else
			rc = 0;
	}
	if (rc)
		fprintf(stderr, "restart-loader: --pidfile %s: %s\n", path, strerror(errno));
	free(tmp);
	return rc;
}
