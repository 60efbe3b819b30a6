// SPDX-License-Identifier: MIT
/*
 * ibcr-pmix - the PMIx engine of a job's barriers (docs/verbs.md "Jobs
 * across nodes"): the `--barrier` command of saver and restart-loader,
 * and the all-to-all exchange of ibcr-job restart, through the PMIx
 * server of the launcher that started the node agents (slurmstepd under
 * `srun --mpi=pmix`, Open MPI's mpirun).
 *
 *   ibcr-pmix serve SOCK [PHASE,... [PID]]   one per node agent: the PMIx
 *                                      client (ends when PID does)
 *   ibcr-pmix -s SOCK PHASE            a barrier: exit 0, or 1 with why
 *   ibcr-pmix -s SOCK abort MESSAGE    this node failed: every peer's
 *                                      next barrier fails with MESSAGE
 *   ibcr-pmix -s SOCK put KEY VALUE    given to every peer at the next barrier
 *   ibcr-pmix -s SOCK get KEY          after it: "RANK VALUE" per node
 *   ibcr-pmix -s SOCK putdir KEY DIR PREFIX,...  the files of DIR whose
 *                                      names begin so, now, as one value
 *   ibcr-pmix -s SOCK getdir KEY DIR   after the barrier: every other
 *                                      node's files of KEY into DIR
 *   ibcr-pmix -s SOCK last [PHASE]     the server ends after PHASE instead
 *                                      (none: only at `end`)
 *   ibcr-pmix -s SOCK end              the server ends
 *
 * A barrier or an abort is one PMIx_Fence with data collection, carrying
 * this node's status ("ok" or the abort's message) and the values put
 * since the last one: one exchange per barrier, whatever the number of
 * keys. The server ends after the last PHASE named at its start, after a
 * barrier that saw an abort, or on `end`; SOCK.done then holds the last
 * answer, for the calls that come after (a saver's abort once its peers
 * are gone). IBCR_PMIX_STATS=FILE: "fences N" is written there at the end,
 * "fence PHASE MS ms" for each (the wait for the slowest node included),
 * and "files sent S received R" when files went through (putdir, getdir).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <pmix.h>

#include "pmix_bundle.h"

#define REQ_MAX 4096
#define ANSWER_MAX 8192
#define PUTS_MAX 64

struct engine {
	pmix_proc_t me;
	uint32_t size;		/* nodes */
	unsigned seq;		/* fences so far */
	int told;		/* our abort went out in a fence */
	int seen_abort;		/* a fence carried an abort: the job failed */
	char abort_msg[1024];
	char last[ANSWER_MAX];	/* the answer once the server is gone */
	char puts[PUTS_MAX][REQ_MAX];	/* "KEY VALUE", for the next fence */
	int nputs;
	char phases[REQ_MAX];	/* ",sends,written,": the server ends after the last */
	char *bundle;		/* putdir's files, for the next fence */
	char bundle_key[256];
	int used_files;
	unsigned sent, received;	/* files, for the stats */
	char timed[16][80];	/* "PHASE MS" of the first fences, for the stats */
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int job_size(struct engine *g)
{
	pmix_proc_t wild;
	pmix_value_t *v = NULL;
	pmix_status_t rc;

	PMIX_PROC_CONSTRUCT(&wild);
	PMIX_LOAD_NSPACE(wild.nspace, g->me.nspace);
	wild.rank = PMIX_RANK_WILDCARD;
	rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || !v || v->type != PMIX_UINT32) {
		fprintf(stderr, "ibcr-pmix: the PMIx server does not say the job's size: %s\n",
			PMIx_Error_string(rc));
		return -1;
	}
	g->size = v->data.uint32;
	PMIX_VALUE_RELEASE(v);
	return 0;
}

static int put_str(const char *key, const char *val)
{
	pmix_value_t v;
	pmix_status_t rc;

	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = (char *)val;
	rc = PMIx_Put(PMIX_GLOBAL, key, &v);
	if (rc != PMIX_SUCCESS)
		fprintf(stderr, "ibcr-pmix: PMIx_Put %s: %s\n", key, PMIx_Error_string(rc));
	return rc == PMIX_SUCCESS ? 0 : -1;
}

/* rank's string under key (after a fence); NULL if it has none */
static char *get_str(struct engine *g, uint32_t rank, const char *key)
{
	pmix_proc_t p;
	pmix_value_t *v = NULL;
	char *s = NULL;

	PMIX_PROC_CONSTRUCT(&p);
	PMIX_LOAD_NSPACE(p.nspace, g->me.nspace);
	p.rank = rank;
	if (PMIx_Get(&p, key, NULL, 0, &v) == PMIX_SUCCESS && v && v->type == PMIX_STRING)
		s = strdup(v->data.string);
	if (v)
		PMIX_VALUE_RELEASE(v);
	return s;
}

static void key_of(char *out, size_t n, unsigned seq, const char *name)
{
	snprintf(out, n, "ibcr.%u.%s", seq, name);
}

/*
 * One fence carrying our status and the pending puts. 0: every node ok;
 * 1: a node aborted (why names it); -1: the fence itself failed.
 */
static int fence(struct engine *g, const char *phase, char *why, size_t n)
{
	char key[512];
	pmix_info_t info[2];
	pmix_status_t rc;
	const char *t = getenv("IBCR_JOB_TIMEOUT");
	int timeout = t ? atoi(t) : 120;
	uint32_t r;
	int i, err = 0;
	double t0 = now_ms();

	g->seq++;
	key_of(key, sizeof(key), g->seq, "status");
	err |= put_str(key, g->abort_msg[0] ? g->abort_msg : "ok");
	for (i = 0; i < g->nputs; i++) {
		char *sp = strchr(g->puts[i], ' ');	/* handle() saw one */

		if (sp) {
			*sp = 0;
			key_of(key, sizeof(key), g->seq, g->puts[i]);
			err |= put_str(key, sp + 1);
		}
	}
	g->nputs = 0;
	if (g->bundle) {
		key_of(key, sizeof(key), g->seq, g->bundle_key);
		err |= put_str(key, g->bundle);
		free(g->bundle);
		g->bundle = NULL;
	}
	if (g->abort_msg[0])
		g->told = 1;
	rc = err ? PMIX_ERROR : PMIx_Commit();
	if (rc == PMIX_SUCCESS) {
		PMIX_INFO_CONSTRUCT(&info[0]);
		PMIX_INFO_CONSTRUCT(&info[1]);
		PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, NULL, PMIX_BOOL);
		PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
		rc = PMIx_Fence(NULL, 0, info, 2);
	}
	if (g->seq <= 16)
		snprintf(g->timed[g->seq - 1], sizeof(g->timed[0]), "%.60s %.1f", phase,
			 now_ms() - t0);
	if (rc != PMIX_SUCCESS) {
		snprintf(why, n, "the PMIx fence of '%s' failed: %s", phase, PMIx_Error_string(rc));
		g->seen_abort = 1;
		return -1;
	}
	key_of(key, sizeof(key), g->seq, "status");
	for (r = 0; r < g->size; r++) {
		char *s = get_str(g, r, key);

		if (s && strcmp(s, "ok")) {
			snprintf(why, n, "node %u: %s", r, s);
			free(s);
			g->seen_abort = 1;
			return 1;
		}
		if (!s) {
			snprintf(why, n, "node %u gave no status at '%s'", r, phase);
			g->seen_abort = 1;
			return 1;
		}
		free(s);
	}
	return 0;
}

/* "RANK VALUE" lines of every node's KEY at the last fence. */
static void get_all(struct engine *g, const char *name, char *out, size_t n)
{
	char key[512];
	size_t len = 0;
	uint32_t r;

	out[0] = 0;
	key_of(key, sizeof(key), g->seq, name);
	for (r = 0; r < g->size && len + 1 < n; r++) {
		char *s = get_str(g, r, key);
		int w;

		if (!s)
			continue;
		w = snprintf(out + len, n - len, "%u %s\n", r, s);
		free(s);
		if (w < 0 || (size_t)w >= n - len)
			break;
		len += (size_t)w;
	}
}

/* putdir KEY DIR PREFIXES: the files, read now, go out at the next fence. */
static void put_dir(struct engine *g, char *arg, char *ans, size_t n)
{
	char key[256], dir[REQ_MAX], prefixes[REQ_MAX], why[1024];
	unsigned nf;

	if (sscanf(arg, "%255s %4095s %4095s", key, dir, prefixes) != 3) {
		snprintf(ans, n, "1 putdir: KEY DIR PREFIX,... wanted");
		return;
	}
	free(g->bundle);
	g->bundle = bundle_dir(dir, prefixes, &nf, why, sizeof(why));
	if (!g->bundle) {
		snprintf(ans, n, "1 %s", why);
		return;
	}
	snprintf(g->bundle_key, sizeof(g->bundle_key), "%s", key);
	g->sent += nf;
	g->used_files = 1;
	snprintf(ans, n, "0 %u files", nf);
}

/* getdir KEY DIR: every other node's files of the last fence into DIR. */
static void get_dir(struct engine *g, char *arg, char *ans, size_t n)
{
	char key[512], name[256], dir[REQ_MAX], why[1024];
	unsigned nf = 0;
	uint32_t r;

	if (sscanf(arg, "%255s %4095s", name, dir) != 2) {
		snprintf(ans, n, "1 getdir: KEY DIR wanted");
		return;
	}
	key_of(key, sizeof(key), g->seq, name);
	for (r = 0; r < g->size; r++) {
		char *s = r == g->me.rank ? NULL : get_str(g, r, key);
		int bad;

		if (!s && r != g->me.rank) {
			snprintf(ans, n, "1 node %u gave no files under '%s'", r, name);
			return;
		}
		if (!s)
			continue;
		bad = unbundle(s, dir, &nf, why, sizeof(why));
		free(s);
		if (bad) {
			snprintf(ans, n, "1 node %u: %s", r, why);
			return;
		}
	}
	g->received += nf;
	g->used_files = 1;
	snprintf(ans, n, "0 %u files", nf);
}

/* Answers one request: "0 TEXT" (done), "1 TEXT" (failed). Sets *end. */
static void handle(struct engine *g, char *req, char *ans, size_t n, int *end)
{
	char why[2048] = "";
	char *arg = strchr(req, ' ');
	int r;

	if (arg)
		*arg++ = 0;
	if (!strcmp(req, "put") && arg && strchr(arg, ' ')) {
		if (g->nputs == PUTS_MAX) {
			snprintf(ans, n, "1 too many values for one exchange");
			return;
		}
		snprintf(g->puts[g->nputs++], REQ_MAX, "%s", arg);
		snprintf(ans, n, "0 ");
	} else if (!strcmp(req, "get") && arg) {
		snprintf(ans, n, "0 ");
		get_all(g, arg, ans + 2, n - 2);
	} else if (!strcmp(req, "putdir") && arg) {
		put_dir(g, arg, ans, n);
	} else if (!strcmp(req, "getdir") && arg) {
		get_dir(g, arg, ans, n);
	} else if (!strcmp(req, "last")) {
		g->phases[0] = 0;
		if (arg && *arg)
			snprintf(g->phases, sizeof(g->phases), ",%.*s,", REQ_MAX - 8, arg);
		snprintf(ans, n, "0 ");
	} else if (!strcmp(req, "end")) {
		*end = 1;
		snprintf(ans, n, "0 ");
	} else if (!strcmp(req, "abort")) {
		if (!g->abort_msg[0])
			snprintf(g->abort_msg, sizeof(g->abort_msg), "%s", arg && *arg ? arg : "aborted");
		/* our abort joins the fence the peers wait in now */
		if (!g->seen_abort && !g->told)
			fence(g, "abort", why, sizeof(why));
		*end = 1;
		/* this node's later barriers fail too */
		snprintf(g->last, sizeof(g->last), "1 node %u: %s", g->me.rank, g->abort_msg);
		snprintf(ans, n, "0 ");
	} else if (g->seen_abort) {
		snprintf(ans, n, "1 %s", g->last[0] ? g->last + 2 : "the job's barrier failed");
	} else {
		r = fence(g, req, why, sizeof(why));
		snprintf(ans, n, "%d %s", r ? 1 : 0, why);
		if (r)
			*end = 1;
		else if (g->phases[0]) {
			char p[REQ_MAX + 3];

			snprintf(p, sizeof(p), ",%s,", req);
			/* the last phase named: nothing more will come */
			if (strlen(g->phases) >= strlen(p) &&
			    !strcmp(g->phases + strlen(g->phases) - strlen(p), p))
				*end = 1;
		}
	}
}

static int sock_addr(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path)) {
		fprintf(stderr, "ibcr-pmix: socket path %s: too long\n", path);
		return -1;
	}
	memcpy(a->sun_path, path, strlen(path) + 1);
	return 0;
}

static int read_req(int c, char *req, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got + 1 < n && (r = read(c, req + got, n - 1 - got)) > 0)
		got += (size_t)r;
	req[got] = 0;
	return got ? 0 : -1;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return;	/* the client went away: nothing to tell */
		}
		p += w;
		n -= (size_t)w;
	}
}

static int done_file(const char *sock, const char *ans)
{
	char path[512], tmp[520];
	FILE *f;

	snprintf(path, sizeof(path), "%s.done", sock);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(ans, f) == EOF || fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "ibcr-pmix: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Requests one by one, until the last; or until the agent `watch` is gone. */
static int serve_loop(struct engine *g, int l, const char *sock, pid_t watch)
{
	char req[REQ_MAX], ans[ANSWER_MAX];
	int end = 0;

	snprintf(ans, sizeof(ans), "0 ");
	while (!end) {
		struct pollfd pf = { l, POLLIN, 0 };
		int c;

		if (poll(&pf, 1, 1000) == 0) {
			if (watch > 0 && kill(watch, 0) && errno == ESRCH)
				break;
			continue;
		}
		c = accept(l, NULL, NULL);
		if (c < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "ibcr-pmix: accept on %s: %s\n", sock, strerror(errno));
			return -1;
		}
		if (read_req(c, req, sizeof(req)) == 0) {
			handle(g, req, ans, sizeof(ans), &end);
			if (ans[0] == '1')
				snprintf(g->last, sizeof(g->last), "%s", ans);
			if (end)	/* before the answer: a next call finds it */
				done_file(sock, g->last[0] ? g->last : "0 ");
			write_all(c, ans, strlen(ans));
		}
		close(c);
	}
	return 0;
}

static int serve(const char *sock, const char *phases, pid_t watch)
{
	static struct engine g;	/* 256 KiB of pending values */
	struct sockaddr_un a;
	pmix_status_t rc;
	int l, r;

	memset(&g, 0, sizeof(g));
	signal(SIGPIPE, SIG_IGN);
	if (phases)
		snprintf(g.phases, sizeof(g.phases), ",%.*s,", REQ_MAX - 8, phases);
	if (sock_addr(sock, &a))
		return 1;
	/*
	 * No shared-memory data store: its files (in the PMIx server's
	 * directory, often /tmp) would be mapped by this process while a
	 * restart-loader restores, and a loader checks that no process
	 * outside its restore maps the files it restores. Everything this
	 * client asks comes through the socket instead.
	 */
	setenv("PMIX_MCA_gds", "hash", 1);
	rc = PMIx_Init(&g.me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "ibcr-pmix: no PMIx server to talk to (PMIx_Init: %s)\n",
			PMIx_Error_string(rc));
		return 1;
	}
	if (job_size(&g)) {
		PMIx_Finalize(NULL, 0);
		return 1;
	}
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(sock);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 8)) {
		fprintf(stderr, "ibcr-pmix: socket %s: %s\n", sock, strerror(errno));
		PMIx_Finalize(NULL, 0);
		return 1;
	}
	printf("ready rank %u of %u\n", g.me.rank, g.size);
	fflush(stdout);
	r = serve_loop(&g, l, sock, watch);
	close(l);
	unlink(sock);
	if (getenv("IBCR_PMIX_STATS")) {
		FILE *f = fopen(getenv("IBCR_PMIX_STATS"), "w");

		int bad = !f;

		if (f) {
			bad |= fprintf(f, "fences %u\n", g.seq) < 0;
			for (unsigned k = 0; k < g.seq && k < 16; k++)
				bad |= fprintf(f, "fence %s ms\n", g.timed[k]) < 0;
			if (g.used_files)
				bad |= fprintf(f, "files sent %u received %u\n", g.sent,
					       g.received) < 0;
			bad |= fclose(f) != 0;
		}
		if (bad)
			fprintf(stderr, "ibcr-pmix: cannot write %s\n", getenv("IBCR_PMIX_STATS"));
	}
	PMIx_Finalize(NULL, 0);
	return r ? 1 : 0;
}

/* The server's answer (0), or SOCK.done's once it is gone (1). */
static int ask(const char *sock, const char *req, char *ans, size_t n)
{
	struct sockaddr_un a;
	size_t got = 0;
	ssize_t r;
	int c;

	if (sock_addr(sock, &a))
		return -1;
	c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -1;
	if (connect(c, (struct sockaddr *)&a, sizeof(a))) {
		char path[512];
		FILE *f;

		close(c);
		snprintf(path, sizeof(path), "%s.done", sock);
		f = fopen(path, "r");
		if (!f) {
			snprintf(ans, n, "1 the node's PMIx agent (%s) is gone", sock);
			return 0;
		}
		got = fread(ans, 1, n - 1, f);
		ans[got] = 0;
		fclose(f);
		return 1;
	}
	write_all(c, req, strlen(req));
	shutdown(c, SHUT_WR);
	while (got + 1 < n && (r = read(c, ans + got, n - 1 - got)) > 0)
		got += (size_t)r;
	ans[got] = 0;
	close(c);
	if (got < 2) {
		snprintf(ans, n, "1 the node's PMIx agent ended without an answer");
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: ibcr-pmix serve SOCK [PHASE,... [PID]]\n"
			"       ibcr-pmix -s SOCK PHASE | abort MESSAGE | put KEY VALUE | "
			"get KEY | putdir KEY DIR PREFIX,... | getdir KEY DIR | last [PHASE] | end\n");
	return 2;
}

int main(int argc, char **argv)
{
	char req[REQ_MAX], ans[ANSWER_MAX];
	size_t len = 0;
	int i, r;

	if (argc >= 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2], argc > 3 && *argv[3] ? argv[3] : NULL,
			     argc > 4 ? (pid_t)atoi(argv[4]) : 0);
	if (argc < 4 || strcmp(argv[1], "-s"))
		return usage();
	req[0] = 0;
	for (i = 3; i < argc; i++) {
		int w = snprintf(req + len, sizeof(req) - len, "%s%s", i > 3 ? " " : "", argv[i]);

		if (w < 0 || (size_t)w >= sizeof(req) - len) {
			fprintf(stderr, "ibcr-pmix: request too long\n");
			return 2;
		}
		len += (size_t)w;
	}
	r = ask(argv[2], req, ans, sizeof(ans));
	if (r < 0) {
		printf("cannot reach the node's PMIx agent at %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	/* a value or files wanted from a fence that cannot come any more */
	if (r && ans[0] == '0' && (!strcmp(argv[3], "get") || !strncmp(argv[3], "putdir", 6) ||
				   !strcmp(argv[3], "getdir") || !strcmp(argv[3], "put"))) {
		printf("the node's PMIx agent (%s) ended before '%s'\n", argv[2], argv[3]);
		return 1;
	}
	if (!strcmp(argv[3], "abort"))
		return 0;	/* told, or the job failed already */
	fputs(ans + 2, stdout);
	if (ans[2] && ans[strlen(ans) - 1] != '\n')
		putchar('\n');
	return ans[0] == '0' ? 0 : 1;
}
