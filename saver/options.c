// SPDX-License-Identifier: MIT
/*
 * The saver's command line (docs/cli.md, docs/man/saver.1). Every
 * option is in the usage text; t_cli checks that the man page names
 * each one the usage does.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "external.h"
#include "image.h"
#include "options.h"
#include "saver.h"
#include "version.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: saver [-t] [-k | -s] [--compress[=CODEC[:LEVEL]]] [--direct | --cached]\n"
		   "             [--no-snapshot] [--tcp-close] [--sysv-ipc=used|all]\n"
		   "             [--external-fd [PID:]FD:ACTION]... [--self-contained] [--barrier CMD]\n"
		   "             [--stats[=text|json]] [--progress | --no-progress]\n"
		   "             [--interval SECONDS] [--keep N] -o IMAGE PID...\n"
		   "       saver --unlock-net\n"
		   "       saver --version | --help\n"
		   "  -o, --output IMAGE  write the checkpoint to IMAGE (a regular file)\n"
		   "  -t, --tree          also every descendant of each PID\n"
		   "  -k, --kill          kill the processes once the image is complete\n"
		   "  -s, --stop          leave them stopped (SIGSTOP) instead of running\n"
		   "      --tcp-close     give up established TCP connections (restored broken)\n"
		   "      --unlock-net    remove network locks left by checkpoints that made\n"
		   "                      no image (see restart-loader --unlock-net)\n"
		   "      --external-fd [PID:]FD:close|null|inherit|tty\n"
		   "                      what the restore puts at FD, which leads outside the\n"
		   "                      image (of process PID, or of every one): nothing,\n"
		   "                      /dev/null, restart-loader's own FD, or its terminal\n"
		   "      --self-contained\n"
		   "                      carry every mapped and open regular file in the image\n"
		   "      --barrier CMD   one checkpoint of a job over several savers: run\n"
		   "                      'CMD PHASE' where every node must be (docs/cli.md)\n"
		   "      --sysv-ipc=used|all\n"
		   "                      SysV semaphore sets and queues to save: those the\n"
		   "                      processes used last (default), or all they may use\n"
		   "      --compress[=zstd|zlib][:LEVEL]\n"
		   "                      compress page data (default zstd, level 1)\n"
		   "      --direct        write the image past the page cache (direct I/O)\n"
		   "      --cached        write it through the page cache; by default an image\n"
		   "                      larger than the kernel's dirty background limit goes\n"
		   "                      direct, a smaller one through the cache\n"
		   "      --no-snapshot   keep them stopped while the image is written\n"
		   "      --stats[=text|json]\n"
		   "                      print timings and sizes on stderr: one ibcr-stats:\n"
		   "                      line (text, the default) or one JSON object\n"
		   "      --progress      show the progress of the write on stderr, even when\n"
		   "                      it is not a terminal (default: only on a terminal)\n"
		   "      --no-progress   never show it\n"
		   "      --interval SECONDS\n"
		   "                      checkpoint again every SECONDS until the processes\n"
		   "                      exit; each image replaces the last once complete\n"
		   "      --keep N        numbered images IMAGE.1, IMAGE.2, ...: the newest N\n"
		   "                      are kept, IMAGE links to the newest\n"
		   "  -V, --version       print the version and exit\n"
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

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "saver: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 2;
}

/* A count for --interval or --keep: 1 to 10^6. */
static int parse_count(const char *s, unsigned *v)
{
	char *end;
	long x = strtol(s, &end, 10);

	if (!*s || *end || x < 1 || x > 1000000)
		return -1;
	*v = (unsigned)x;
	return 0;
}

static int parse_one(int c, struct saver_opts *o)
{
	switch (c) {
	case 'o': o->out = optarg; break;
	case 'k': o->how = RELEASE_KILL; break;
	case 's': o->how = RELEASE_STOP; break;
	case 'S':
		if (optarg && strcmp(optarg, "text") && strcmp(optarg, "json"))
			return bad("--stats=%s: expected text or json", optarg);
		o->stats = optarg && !strcmp(optarg, "json") ? STATS_JSON : STATS_TEXT;
		break;
	case 'P': o->progress = 1; break;
	case 'Q': o->progress = 0; break;
	case 'D': o->comp.io = IO_DIRECT; break;
	case 'C': o->comp.io = IO_CACHED; break;
	case 'N': o->snapshots = 0; break;
	case 't': o->tree = 1; break;
	case 'T': o->tcp_close = 1; break;
	case 'U': return netlock_unlock_stale();
	case 'X':
		if (!o->ext)
			o->ext = xcalloc(1, sizeof(*o->ext));
		if (external_parse(optarg, o->ext))
			return bad("--external-fd=%s: expected [PID:]FD:ACTION, ACTION close, "
				   "null, inherit or tty", optarg);
		break;
	case 'B': coord_init(optarg, "checkpoint"); break;
	case 'E': o->comp.self_contained = 1; break;
	case 'I':
		if (strcmp(optarg, "used") && strcmp(optarg, "all"))
			return bad("--sysv-ipc=%s: expected used or all", optarg);
		o->ipc_all = !strcmp(optarg, "all");
		break;
	case 'z':
		if (parse_compress(optarg, &o->comp))
			return bad("--compress=%s: expected zstd or zlib, optionally :LEVEL (1-9)",
				   optarg);
		break;
	case 'i':
		if (parse_count(optarg, &o->interval))
			return bad("--interval %s: expected a number of seconds (1-1000000)", optarg);
		break;
	case 'K':
		if (parse_count(optarg, &o->keep))
			return bad("--keep %s: expected how many images to keep (1-1000000)", optarg);
		break;
	case 'h': usage(stdout); return 0;
	case 'V': ibcr_print_version(stdout, "saver"); return 0;
	default: usage(stderr); return 2;
	}
	return -1;
}

/* The PIDs: numbers, each once. */
static int parse_pids(int argc, char **argv, struct saver_opts *o)
{
	o->npids = (uint32_t)(argc - optind);
	o->pids = xcalloc(o->npids, sizeof(pid_t));
	for (uint32_t i = 0; i < o->npids; i++) {
		if (parse_pid(argv[optind + i], &o->pids[i]))
			return bad("'%s' is not a process id", argv[optind + i]);
		for (uint32_t k = 0; k < i; k++)
			if (o->pids[k] == o->pids[i])
				return bad("pid %s: given twice", argv[optind + i]);
	}
	return -1;
}

int saver_parse(int argc, char **argv, struct saver_opts *o)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "kill", no_argument, NULL, 'k' },
		{ "stop", no_argument, NULL, 's' },
		{ "stats", optional_argument, NULL, 'S' },
		{ "progress", no_argument, NULL, 'P' },
		{ "no-progress", no_argument, NULL, 'Q' },
		{ "no-snapshot", no_argument, NULL, 'N' },
		{ "compress", optional_argument, NULL, 'z' },
		{ "direct", no_argument, NULL, 'D' },
		{ "cached", no_argument, NULL, 'C' },
		{ "tree", no_argument, NULL, 't' },
		{ "tcp-close", no_argument, NULL, 'T' },
		{ "unlock-net", no_argument, NULL, 'U' },
		{ "external-fd", required_argument, NULL, 'X' },
		{ "self-contained", no_argument, NULL, 'E' },
		{ "barrier", required_argument, NULL, 'B' },
		{ "sysv-ipc", required_argument, NULL, 'I' },
		{ "interval", required_argument, NULL, 'i' },
		{ "keep", required_argument, NULL, 'K' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, rc;

	*o = (struct saver_opts){ .how = RELEASE_RUN, .snapshots = 1, .progress = -1,
				  .comp = { IBCR_CODEC_RAW, 0, IO_AUTO, 0 } };
	while ((c = getopt_long(argc, argv, "o:kstVh", opts, NULL)) != -1)
		if ((rc = parse_one(c, o)) >= 0)
			return rc;
	if (!o->out || optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (o->interval && o->how == RELEASE_KILL)
		return bad("%s: --interval checkpoints again and again; --kill after the "
			   "first would end that", "--interval with --kill");
	return parse_pids(argc, argv, o);
}
