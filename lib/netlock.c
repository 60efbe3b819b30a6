// SPDX-License-Identifier: MIT
/*
 * Running nftables' `nft` for the network lock (netlock.h), and the
 * NETLOCK section. nft is the kernel's packet filter's own, well-kept
 * command; ibcr hands it a script on its standard input rather than
 * speaking nf_tables netlink itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "image_io.h"
#include "netlock.h"

/* Where Debian puts it; a PATH lookup after these. */
static const char *const nft_paths[] = { "/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft" };

static void exec_nft(char *const *argv)
{
	for (size_t i = 0; i < sizeof(nft_paths) / sizeof(nft_paths[0]); i++)
		execv(nft_paths[i], argv);
	execvp("nft", argv);
}

/*
 * nft with argv, script (or nothing) on its stdin; its stdout and
 * stderr gathered in *out. The exit status, or -1 (errno) if it did not run.
 */
static int run(char *const *argv, const char *script, char **out)
{
	int in[2], res[2], st = 0;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	struct buf b = { 0 };
	char chunk[4096];
	ssize_t k;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC))
		return -1;
	if (pipe2(res, O_CLOEXEC)) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], 0) < 0 || dup2(res[1], 1) < 0 || dup2(res[1], 2) < 0)
			_exit(126);
		exec_nft(argv);
		dprintf(2, "nft not found (install nftables): %s\n", strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(res[1]);
	/* should nft stop reading early, its status and words say why: no SIGPIPE */
	sigaction(SIGPIPE, &ign, &old);
	if (pid > 0 && script)
		write_full(in[1], script, strlen(script));
	close(in[1]);
	sigaction(SIGPIPE, &old, NULL);
	while ((k = read(res[0], chunk, sizeof(chunk))) > 0 || (k < 0 && errno == EINTR))
		if (k > 0)
			buf_put(&b, chunk, (size_t)k);
	close(res[0]);
	buf_put(&b, "", 1);
	*out = (char *)b.p;
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The first line nft complained with, for a message. */
static const char *first_line(char *s)
{
	char *nl;

	while (*s == '\n')
		s++;
	if ((nl = strchr(s, '\n')))
		*nl = 0;
	return *s ? s : "no reason given";
}

int nft_run(const char *script, struct ibcr_err *e)
{
	static char *const argv[] = { "nft", "-f", "-", NULL };
	char *out = NULL;
	int rc = run(argv, script, &out);

	if (rc < 0)
		ibcr_fail_errno(e, errno, "running nft (nftables)");
	else if (rc)
		ibcr_fail(e, "nft (nftables) failed: %s", first_line(out));
	free(out);
	return rc ? -1 : 0;
}

char *nft_output(const char *const *argv, struct ibcr_err *e)
{
	char *out = NULL;
	int rc = run((char *const *)argv, NULL, &out);

	if (!rc)
		return out;
	if (rc < 0)
		ibcr_fail_errno(e, errno, "running nft (nftables)");
	else
		ibcr_fail(e, "nft (nftables) failed: %s", first_line(out));
	free(out);
	return NULL;
}

int netlock_name_ok(const char *t)
{
	size_t n = strlen(NETLOCK_PREFIX), dashes = 0;

	if (strncmp(t, NETLOCK_PREFIX, n) || !t[n] || strlen(t) >= 48)
		return 0;
	for (t += n; *t; t++) {
		if (*t == '-' && dashes++ == 0)
			continue;
		if (*t < '0' || *t > '9')
			return 0;
	}
	return dashes == 1;
}

int netlock_drop(const char *table, struct ibcr_err *e)
{
	char script[160];

	if (!netlock_name_ok(table))
		return ibcr_fail(e, "network lock '%s': not a name ibcr gives", table);
	/* adding first makes the delete succeed when the table is gone already */
	snprintf(script, sizeof(script), "add table inet %s\ndelete table inet %s\n", table,
		 table);
	if (nft_run(script, e)) {
		char why[sizeof(e->msg)];

		memcpy(why, e->msg, sizeof(why));
		return ibcr_fail(e, "removing the network lock (nftables table inet %s): %.400s",
				 table, why);
	}
	return 0;
}

int imgr_load_netlock(struct img_reader *r, struct ibcr_netlock *l, int *found,
		      struct ibcr_err *e)
{
	*found = 0;
	memset(l, 0, sizeof(*l));
	for (uint32_t i = 0; i < r->nsecs; i++) {
		uint8_t *p;

		if (r->secs[i].h.type != IBCR_SEC_NETLOCK)
			continue;
		if (*found || r->secs[i].h.size != sizeof(*l))
			return ibcr_fail(e, "image %s: NETLOCK section is malformed", r->path);
		if (imgr_payload(r, i, &p, e))
			return -1;
		memcpy(l, p, sizeof(*l));
		free(p);
		if (memchr(l->table, 0, sizeof(l->table)) == NULL || !netlock_name_ok(l->table))
			return ibcr_fail(e, "image %s: NETLOCK section names no table ibcr "
					 "would make", r->path);
		*found = 1;
	}
	return 0;
}
