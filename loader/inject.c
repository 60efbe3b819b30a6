// SPDX-License-Identifier: MIT
/*
 * Packets a restored socket had received, handed to it again as if from
 * its peer: written here on a raw socket (as root, like repair mode) with
 * the peer's address and port as their source, marked to pass the
 * network lock (NETLOCK_MARK), which is still in place so that a failure
 * leaves the peers waiting for another restore.
 *
 * TCP: repair mode can set a connection's sequence numbers and queues,
 * not that its peer has closed its side. The socket is restored
 * established, one sequence number short, and then receives the peer's
 * FIN once more, at the FIN's sequence number, acknowledging what the
 * socket had sent: the kernel takes it as it took the first (CLOSE-WAIT,
 * or CLOSING after a FIN of its own); the peer, which had that FIN
 * acknowledged already, sees a duplicate ACK at most. The same for the
 * peer's acknowledgement of a FIN the socket had sent (FIN-WAIT-2).
 *
 * UDP: each datagram that waited in the socket, from its sender, to the
 * address the socket is bound to (the loopback one for a wildcard).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loader.h"
#include "netlock.h"

#define MAX_PAYLOAD 65507u	/* an IPv4 packet's limit, less its headers */

static uint32_t sum16(const void *p, size_t n, uint32_t sum)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		sum += (uint32_t)(b[n - 1] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* A raw socket whose packets pass the network lock. */
static int raw(int family)
{
	int s = socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	uint32_t mark = NETLOCK_MARK;

	if (s >= 0 && setsockopt(s, SOL_SOCKET, SO_MARK, &mark, sizeof(mark))) {
		close(s);
		return -1;
	}
	return s;
}

/* IPv4 or IPv6 addresses of a packet, IPv4-mapped ones as IPv4. */
struct ends {
	int v4;
	uint8_t src[16], dst[16];
};

static void ends_of(const struct sockaddr_in6 *to, const struct sockaddr_in6 *from,
		    struct ends *x)
{
	const struct sockaddr_in6 *a[2] = { from, to };
	uint8_t *out[2] = { x->src, x->dst };

	x->v4 = to->sin6_family == AF_INET || IN6_IS_ADDR_V4MAPPED(&to->sin6_addr);
	for (int k = 0; k < 2; k++) {
		if (a[k]->sin6_family == AF_INET)
			memcpy(out[k], &((const struct sockaddr_in *)a[k])->sin_addr, 4);
		else if (x->v4)
			memcpy(out[k], &a[k]->sin6_addr.s6_addr[12], 4);
		else
			memcpy(out[k], &a[k]->sin6_addr, 16);
	}
}

/*
 * Sends the transport header and payload l4 (len bytes, protocol proto,
 * its checksum at check_off filled here) from x->src to x->dst.
 */
static int send_l4(const struct ends *x, int proto, uint8_t *l4, size_t len, size_t check_off)
{
	size_t alen = x->v4 ? 4 : 16, hlen = x->v4 ? sizeof(struct iphdr) : sizeof(struct ip6_hdr);
	uint8_t *pkt = malloc(hlen + len);
	uint32_t plen = htonl((uint32_t)len), next = htonl((uint32_t)proto), sum;
	struct sockaddr_in6 to6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in to4 = { .sin_family = AF_INET };
	int s = raw(x->v4 ? AF_INET : AF_INET6), rc = -1;

	if (!pkt || s < 0)
		goto out;
	sum = sum16(x->dst, alen, sum16(x->src, alen, 0));
	sum = x->v4 ? sum16((const uint8_t[]){ 0, (uint8_t)proto, (uint8_t)(len >> 8),
						(uint8_t)len }, 4, sum) :
		      sum16(&next, 4, sum16(&plen, 4, sum));
	memset(l4 + check_off, 0, 2);
	sum = fold(sum16(l4, len, sum));
	memcpy(l4 + check_off, &sum, 2);
	memset(pkt, 0, hlen);
	if (x->v4) {
		struct iphdr *ip = (struct iphdr *)pkt;

		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = (uint8_t)proto;
		ip->tot_len = htons((uint16_t)(hlen + len));
		memcpy(&ip->saddr, x->src, 4);
		memcpy(&ip->daddr, x->dst, 4);	/* the kernel fills the checksum, the id */
		memcpy(&to4.sin_addr, x->dst, 4);
	} else {
		struct ip6_hdr *ip = (struct ip6_hdr *)pkt;

		ip->ip6_flow = htonl(6u << 28);
		ip->ip6_plen = htons((uint16_t)len);
		ip->ip6_nxt = (uint8_t)proto;
		ip->ip6_hlim = 64;
		memcpy(&ip->ip6_src, x->src, 16);
		memcpy(&ip->ip6_dst, x->dst, 16);
		memcpy(&to6.sin6_addr, x->dst, 16);	/* a raw IPv6 socket wants no port */
	}
	memcpy(pkt + hlen, l4, len);
	rc = sendto(s, pkt, hlen + len, 0,
		    x->v4 ? (const struct sockaddr *)&to4 : (const struct sockaddr *)&to6,
		    x->v4 ? sizeof(to4) : sizeof(to6)) == (ssize_t)(hlen + len) ? 0 : -1;
out:
	if (s >= 0)
		close(s);
	free(pkt);
	return rc;
}

int tcp_send_fin(const struct sockaddr_in6 *local, const struct sockaddr_in6 *peer,
		 uint32_t seq, uint32_t ack, uint16_t window, int fin)
{
	struct tcphdr th;
	struct ends x;

	memset(&th, 0, sizeof(th));
	th.source = peer->sin6_port;	/* the same offset in a sockaddr_in */
	th.dest = local->sin6_port;
	th.seq = htonl(seq);
	th.ack_seq = htonl(ack);
	th.doff = sizeof(th) / 4;
	th.fin = fin ? 1 : 0;
	th.ack = 1;
	th.window = htons(window);
	ends_of(local, peer, &x);
	return send_l4(&x, IPPROTO_TCP, (uint8_t *)&th, sizeof(th), offsetof(struct tcphdr, check));
}

int udp_send_again(const struct sockaddr_in6 *local, const struct sockaddr_in6 *from,
		   const uint8_t *data, uint32_t len)
{
	struct sockaddr_in6 to = *local;
	uint8_t *pkt;
	struct udphdr *uh;
	struct ends x;
	int rc;

	if (len > MAX_PAYLOAD)
		return errno = EMSGSIZE, -1;
	ends_of(&to, from, &x);
	/* bound to any address: the datagram comes to the loopback one */
	if (x.v4 && !memcmp(x.dst, "\0\0\0\0", 4))
		memcpy(x.dst, "\x7f\0\0\x01", 4);
	else if (!x.v4 && !memcmp(x.dst, &in6addr_any, 16))
		memcpy(x.dst, &in6addr_loopback, 16);
	if (!(pkt = malloc(sizeof(*uh) + len)))
		return -1;
	uh = (struct udphdr *)pkt;
	uh->source = from->sin6_port;
	uh->dest = local->sin6_port;
	uh->len = htons((uint16_t)(sizeof(*uh) + len));
	memcpy(pkt + sizeof(*uh), data, len);
	rc = send_l4(&x, IPPROTO_UDP, pkt, sizeof(*uh) + len, offsetof(struct udphdr, check));
	free(pkt);
	return rc;
}
