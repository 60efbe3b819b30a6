// SPDX-License-Identifier: MIT
/*
 * The saver's side of the network lock (lib/netlock.h). Before the first
 * TCP connection is captured, one nftables transaction makes a table of
 * this checkpoint's own with two chains, at the raw priority (before
 * connection tracking), that drop every packet of each connection: in
 * the input hook those coming from the peer, in the output hook those
 * the checkpointed socket would send. With --kill, new connections to
 * the image's listeners (a SYN without ACK) are dropped too, so that a
 * client connecting meanwhile retries instead of being refused.
 *
 * A checkpoint that lets the processes run on (or fails) removes the
 * table as soon as their connections leave repair mode: the lock makes
 * the capture consistent (nothing arrives between reading the sequence
 * numbers and the queues) and lasts as long as the freeze. With --kill
 * the table stays, named in the image, until restart-loader has the
 * sockets live again. A saver that died leaves it to its guardian
 * (guard.h), which removes it unless a complete image holds it; left
 * behind all the same (the guardian killed too): `saver --unlock-net`
 * (netlock_unlock_stale).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "guard.h"
#include "image_io.h"
#include "netlock.h"
#include "saver.h"

/* One saver run takes at most one lock. */
static struct {
	struct buf in, out;	/* rule lines of the input and output chains */
	uint32_t nconns, nlisteners;
	char table[48];
	uint64_t created_ns;
	int held, keep;
} lk;

/* "ip saddr 1.2.3.4 tcp sport 80" (selector "saddr"/"daddr"); IPv4-mapped as IPv4. */
static void match(struct buf *b, const struct sockaddr_storage *a, const char *addr,
		  const char *port)
{
	char host[INET6_ADDRSTRLEN], line[128];
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)a;
	uint16_t p = a->ss_family == AF_INET ? a4->sin_port : a6->sin6_port;
	const char *fam = "ip";

	if (a->ss_family == AF_INET) {
		inet_ntop(AF_INET, &a4->sin_addr, host, sizeof(host));
	} else if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
		inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], host, sizeof(host));
	} else {
		inet_ntop(AF_INET6, &a6->sin6_addr, host, sizeof(host));
		fam = "ip6";
	}
	snprintf(line, sizeof(line), " %s %s %s tcp %s %u", fam, addr, host, port, ntohs(p));
	buf_put(b, line, strlen(line));
}

void netlock_conn(const struct sockaddr_storage *local, const struct sockaddr_storage *remote)
{
	buf_put(&lk.in, "\t\t", 2);
	match(&lk.in, remote, "saddr", "sport");
	match(&lk.in, local, "daddr", "dport");
	buf_put(&lk.in, " counter drop\n", 14);
	buf_put(&lk.out, "\t\t", 2);
	match(&lk.out, local, "saddr", "sport");
	match(&lk.out, remote, "daddr", "dport");
	buf_put(&lk.out, " counter drop\n", 14);
	lk.nconns++;
}

static int is_any(const struct sockaddr_storage *a)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;

	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr);
}

void netlock_listener(const struct sockaddr_storage *local)
{
	char line[96];
	uint16_t port = local->ss_family == AF_INET ?
		((const struct sockaddr_in *)local)->sin_port :
		((const struct sockaddr_in6 *)local)->sin6_port;

	buf_put(&lk.in, "\t\t", 2);
	if (is_any(local)) {
		/* all addresses; an IPv6 one takes IPv4 too unless V6ONLY */
		snprintf(line, sizeof(line), "%stcp dport %u",
			 local->ss_family == AF_INET ? "meta nfproto ipv4 " : "", ntohs(port));
		buf_put(&lk.in, line, strlen(line));
	} else {
		match(&lk.in, local, "daddr", "dport");
	}
	snprintf(line, sizeof(line), " tcp flags & (syn | ack) == syn counter drop\n");
	buf_put(&lk.in, line, strlen(line));
	lk.nlisteners++;
}

/* The image's absolute path, as an nft string may hold it. */
static void quoted(char *dst, size_t n, const char *s)
{
	char cwd[256];
	size_t k = 0;

	if (s[0] != '/' && getcwd(cwd, sizeof(cwd))) {
		for (const char *c = cwd; *c && k + 2 < n; c++)
			dst[k++] = (*c == '"' || *c == '\\' || *c < ' ') ? '?' : *c;
		dst[k++] = '/';
	}
	for (; *s && k + 1 < n; s++)
		dst[k++] = (*s == '"' || *s == '\\' || *s < ' ') ? '?' : *s;
	dst[k] = 0;
}

int netlock_take(const char *image, int keep, struct ibcr_err *e)
{
	struct timespec ts;
	struct buf s = { 0 };
	char head[600], path[400];
	int rc;

	if (!lk.nconns && !lk.nlisteners)
		return 0;
	if (!lk.nconns && !keep)
		return 0;	/* listeners alone need no lock while they stay alive */
	clock_gettime(CLOCK_REALTIME, &ts);
	lk.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	snprintf(lk.table, sizeof(lk.table), NETLOCK_PREFIX "%d-%lld", (int)getpid(),
		 (long long)ts.tv_sec);
	quoted(path, sizeof(path), image);
	snprintf(head, sizeof(head),
		 "table inet %s {\n\tcomment \"saver %d image %s\"\n"
		 "\tchain input {\n\t\ttype filter hook input priority raw; policy accept;\n"
		 "\t\tmeta mark 0x%x accept\n", lk.table, (int)getpid(), path, NETLOCK_MARK);
	buf_put(&s, head, strlen(head));
	buf_put(&s, lk.in.p, lk.in.len);
	snprintf(head, sizeof(head), "\t}\n\tchain output {\n\t\ttype filter hook output "
		 "priority raw; policy accept;\n\t\tmeta mark 0x%x accept\n", NETLOCK_MARK);
	buf_put(&s, head, strlen(head));
	if (lk.out.len)
		buf_put(&s, lk.out.p, lk.out.len);
	buf_put(&s, "\t}\n}\n", 5);
	buf_put(&s, "", 1);
	guard_netlock(lk.table);	/* it removes the lock should we die */
	rc = nft_run((const char *)s.p, e);
	buf_free(&s);
	if (rc) {
		guard_netlock_over();
		char why[sizeof(e->msg)];

		memcpy(why, e->msg, sizeof(why));
		return ibcr_fail(e, "locking the network for %u TCP connection(s): %.380s "
				 "(the lock needs nftables and CAP_NET_ADMIN; saver --tcp-close "
				 "gives the connections up instead)", lk.nconns, why);
	}
	lk.held = 1;
	lk.keep = keep;
	return 0;
}

int netlock_record(struct ibcr_netlock *rec)
{
	if (!lk.held || !lk.keep)
		return 0;
	memset(rec, 0, sizeof(*rec));
	memcpy(rec->table, lk.table, sizeof(rec->table));
	rec->nconns = lk.nconns;
	rec->nlisteners = lk.nlisteners;
	rec->created_ns = lk.created_ns;
	return 1;
}

void netlock_release(int killed, const char *image)
{
	struct ibcr_err e = { "" };

	if (lk.held && killed && lk.keep && lk.nconns)
		fprintf(stderr, "saver: the packets of %u TCP connection(s)%s are held back "
			"(nftables table inet %s) until `restart-loader %s` has them live "
			"again; `restart-loader --unlock-net %s` lets them go\n", lk.nconns,
			lk.nlisteners ? " and new connections to the listeners" : "", lk.table,
			image, image);
	else if (lk.held && killed && lk.keep)
		fprintf(stderr, "saver: new connections to the image's %u TCP listener(s) are "
			"held back (nftables table inet %s) until `restart-loader %s`; "
			"`restart-loader --unlock-net %s` lets them go\n", lk.nlisteners,
			lk.table, image, image);
	else if (lk.held && netlock_drop(lk.table, &e))
		fprintf(stderr, "saver: %s\n", e.msg);
	else if (lk.held)
		guard_netlock_over();
	lk.held = 0;
	buf_free(&lk.in);
	buf_free(&lk.out);
	lk.nconns = lk.nlisteners = 0;
}

/* "saver PID image PATH" from the table's comment: the image's path. */
static int table_image(const char *table, char *path, size_t n, struct ibcr_err *e)
{
	const char *argv[] = { "nft", "list", "table", "inet", table, NULL };
	char *out = nft_output(argv, e), *c, *end;

	if (!out)
		return -1;
	c = strstr(out, "comment \"saver ");
	c = c ? strstr(c, " image ") : NULL;
	end = c ? strchr(c + 7, '"') : NULL;
	path[0] = 0;
	if (end && (size_t)(end - c - 7) < n) {
		memcpy(path, c + 7, (size_t)(end - c - 7));
		path[end - c - 7] = 0;
	}
	free(out);
	return 0;
}

int netlock_image_holds(const char *path, const char *table)
{
	struct img_reader r;
	struct ibcr_netlock l;
	struct ibcr_err e;
	int found = 0;

	if (!path[0] || imgr_open(&r, path, &e))
		return 0;
	if (imgr_load_netlock(&r, &l, &found, &e))
		found = 0;
	imgr_close(&r);
	return found && !strcmp(l.table, table);
}

/* Whether the saver that took lock `table` still runs. */
static int owner_alive(const char *table)
{
	char path[64], comm[32] = "";
	long pid = strtol(table + strlen(NETLOCK_PREFIX), NULL, 10);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return !strncmp(comm, "saver", 5);
}

/* One lock: kept while its saver runs or its image holds it, else removed. */
static int unlock_one(const char *table, struct ibcr_err *e)
{
	char image[400];

	if (owner_alive(table)) {
		printf("%s: kept, its saver is still at work\n", table);
		return 0;
	}
	if (table_image(table, image, sizeof(image), e))
		return -1;
	if (netlock_image_holds(image, table)) {
		printf("%s: kept, it holds the connections of %s (restart-loader "
		       "--unlock-net %s lets them go)\n", table, image, image);
		return 0;
	}
	if (netlock_drop(table, e))
		return -1;
	printf("%s: removed (no image holds it: %s%s)\n", table,
	       image[0] ? image : "its image is unknown",
	       image[0] ? " is gone or is another checkpoint's" : "");
	return 0;
}

int netlock_unlock_stale(void)
{
	const char *argv[] = { "nft", "list", "tables", NULL };
	struct ibcr_err e = { "" };
	char *out = nft_output(argv, &e), *line, *save = NULL;
	int rc = 0, n = 0;

	if (!out) {
		fprintf(stderr, "saver: --unlock-net: %s\n", e.msg);
		return 1;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char table[64];

		if (sscanf(line, "table inet %63s", table) != 1 || !netlock_name_ok(table))
			continue;
		n++;
		if (unlock_one(table, &e)) {
			fprintf(stderr, "saver: --unlock-net: %s\n", e.msg);
			rc = 1;
		}
	}
	if (!n)
		printf("no network lock of ibcr\n");
	free(out);
	return rc;
}
