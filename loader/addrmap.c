// SPDX-License-Identifier: MIT
/*
 * --addr-map OLD=NEW: the image's IP addresses OLD are restored as NEW,
 * for a job whose nodes are restarted on other hosts (ibcr-job restart,
 * docs/design-notes.md "Jobs across nodes"). Every node's loader is given the
 * same map, old node address -> new node address, for all the job's
 * nodes at once, so both ends of a connection between two nodes rewrite
 * its 4-tuple alike: the socket restored on the new host of A, bound to
 * A's new address, "connects" in repair mode to B's new address, where
 * B's end is restored with the mirror image of the same tuple. Ports,
 * sequence numbers and queues stay as they were.
 *
 * The rules apply at once, not one after another (a swap of two hosts is
 * two rules), to the local and the remote address of every TCP and UDP
 * socket, right after the image is read. An IPv4 rule applies to an IPv6
 * socket's v4-mapped addresses (::ffff:a.b.c.d) too. The wildcard and
 * loopback addresses are no host's, so they cannot be mapped. What the
 * processes keep in their memory (a peer's address they would connect
 * to again) is theirs and stays as it was.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "loader.h"

struct addrmap_rule {
	int family;
	uint8_t old[16], new[16];
};

static int parse(const char *s, size_t n, int *family, uint8_t out[16])
{
	char b[INET6_ADDRSTRLEN];

	if (n == 0 || n >= sizeof(b))
		return -1;
	memcpy(b, s, n);
	b[n] = 0;
	memset(out, 0, 16);
	if (inet_pton(AF_INET, b, out) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, b, out) == 1)
		*family = AF_INET6;
	else
		return -1;
	return 0;
}

static int unmappable(int family, const uint8_t *a)
{
	static const uint8_t zero[16];

	if (family == AF_INET)
		return !memcmp(a, zero, 4) || a[0] == 127;
	return !memcmp(a, zero, 16) || IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)a);
}

int addrmap_add(struct addrmap *am, const char *arg, struct ibcr_err *e)
{
	const char *eq = strchr(arg, '=');
	struct addrmap_rule r;
	int fnew;

	if (!eq || parse(arg, (size_t)(eq - arg), &r.family, r.old) ||
	    parse(eq + 1, strlen(eq + 1), &fnew, r.new))
		return ibcr_fail(e, "--addr-map %s: expected OLD=NEW, two IP addresses", arg);
	if (fnew != r.family)
		return ibcr_fail(e, "--addr-map %s: OLD and NEW must be both IPv4 or both IPv6",
				 arg);
	if (unmappable(r.family, r.old) || unmappable(r.family, r.new))
		return ibcr_fail(e, "--addr-map %s: the wildcard and loopback addresses belong "
				 "to no host and cannot be mapped", arg);
	for (size_t i = 0; i < am->n; i++)
		if (am->rule[i].family == r.family && !memcmp(am->rule[i].old, r.old, 16))
			return ibcr_fail(e, "--addr-map %s: that address is mapped twice", arg);
	am->rule = xrealloc(am->rule, (am->n + 1) * sizeof(*am->rule));
	am->rule[am->n++] = r;
	return 0;
}

/* Rewrites the len-byte address at a by the first rule of family. */
static void map_one(const struct addrmap *am, int family, uint8_t *a, size_t len)
{
	for (size_t i = 0; i < am->n; i++)
		if (am->rule[i].family == family && !memcmp(am->rule[i].old, a, len)) {
			memcpy(a, am->rule[i].new, len);
			return;
		}
}

static void map_sockaddr(const struct addrmap *am, int family, uint8_t *sa)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct sockaddr_in6 a6;
	struct sockaddr_in a4;

	if (family == AF_INET) {
		memcpy(&a4, sa, sizeof(a4));
		map_one(am, AF_INET, (uint8_t *)&a4.sin_addr, 4);
		memcpy(sa, &a4, sizeof(a4));
		return;
	}
	memcpy(&a6, sa, sizeof(a6));
	if (!memcmp(a6.sin6_addr.s6_addr, v4mapped, sizeof(v4mapped)))
		map_one(am, AF_INET, a6.sin6_addr.s6_addr + 12, 4);
	else
		map_one(am, AF_INET6, a6.sin6_addr.s6_addr, 16);
	memcpy(sa, &a6, sizeof(a6));
}

void addrmap_files(const struct addrmap *am, struct ibcr_files *f)
{
	for (uint32_t i = 0; am && am->n && i < f->nobjs; i++) {
		const struct ibcr_fobj *o = &f->objs[i];
		int family = fobj_inet_family(o);

		if (o->kind != IBCR_FD_INET || !f->data[i] ||
		    o->data_len < 2 * sizeof(struct sockaddr_in6) ||
		    (family != AF_INET && family != AF_INET6))
			continue;
		map_sockaddr(am, family, f->data[i]);
		map_sockaddr(am, family, f->data[i] + sizeof(struct sockaddr_in6));
	}
}
