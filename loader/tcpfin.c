// SPDX-License-Identifier: MIT
/*
 * The FIN a connection had received, handed to its restored socket again.
 * Repair mode can set a connection's sequence numbers and queues, not
 * that its peer has closed its side: the socket is restored established,
 * one sequence number short, and then receives the peer's FIN once more,
 * as a packet written here on a raw socket (as root, like repair mode),
 * marked to pass the network lock, which is still in place so that a
 * failure here leaves the peers waiting for another restore:
 * from the peer's address and port, at the FIN's sequence number,
 * acknowledging what the socket had sent. The kernel takes it as it took
 * the first (CLOSE-WAIT, or CLOSING after a FIN of its own); the peer,
 * which had that FIN acknowledged already, sees a duplicate ACK at most.
 * The same for the peer's acknowledgement of a FIN the socket had sent
 * (FIN-WAIT-2): the restore sends that FIN again and hands in the ACK.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loader.h"
#include "netlock.h"

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

/* The TCP header of the peer's FIN or ACK (no options, no data). */
static void fin_header(struct tcphdr *th, const struct sockaddr_in6 *local,
		       const struct sockaddr_in6 *peer, uint32_t seq, uint32_t ack,
		       uint16_t window, int fin)
{
	memset(th, 0, sizeof(*th));
	th->source = peer->sin6_port;	/* same offset in sockaddr_in */
	th->dest = local->sin6_port;
	th->seq = htonl(seq);
	th->ack_seq = htonl(ack);
	th->doff = sizeof(*th) / 4;
	th->fin = fin ? 1 : 0;
	th->ack = 1;
	th->window = htons(window);
}

/* A raw socket whose packets pass the network lock (NETLOCK_MARK). */
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

static int send_v4(const struct sockaddr_in *local, const struct sockaddr_in *peer,
		   struct tcphdr *th)
{
	struct {
		struct iphdr ip;
		struct tcphdr tcp;
	} pkt;
	struct {
		uint32_t src, dst;
		uint8_t zero, proto;
		uint16_t len;
	} ph = { peer->sin_addr.s_addr, local->sin_addr.s_addr, 0, IPPROTO_TCP,
		 htons(sizeof(*th)) };
	int s = raw(AF_INET), rc;

	if (s < 0)
		return -1;
	th->check = 0;
	th->check = fold(sum16(th, sizeof(*th), sum16(&ph, sizeof(ph), 0)));
	memset(&pkt.ip, 0, sizeof(pkt.ip));
	pkt.ip.version = 4;
	pkt.ip.ihl = 5;
	pkt.ip.ttl = 64;
	pkt.ip.protocol = IPPROTO_TCP;
	pkt.ip.tot_len = htons(sizeof(pkt));
	pkt.ip.saddr = peer->sin_addr.s_addr;
	pkt.ip.daddr = local->sin_addr.s_addr;
	pkt.tcp = *th;	/* the kernel fills the IP checksum and id */
	rc = sendto(s, &pkt, sizeof(pkt), 0, (const struct sockaddr *)local,
		    sizeof(*local)) == (ssize_t)sizeof(pkt) ? 0 : -1;
	close(s);
	return rc;
}

static int send_v6(const struct sockaddr_in6 *local, const struct sockaddr_in6 *peer,
		   struct tcphdr *th)
{
	struct {
		struct ip6_hdr ip;
		struct tcphdr tcp;
	} pkt;
	uint32_t len = htonl(sizeof(*th)), next = htonl(IPPROTO_TCP), sum;
	struct sockaddr_in6 to = *local;
	int s = raw(AF_INET6), rc;

	if (s < 0)
		return -1;
	sum = sum16(&peer->sin6_addr, 16, sum16(&local->sin6_addr, 16, 0));
	sum = sum16(&len, 4, sum16(&next, 4, sum));
	th->check = 0;
	th->check = fold(sum16(th, sizeof(*th), sum));
	memset(&pkt.ip, 0, sizeof(pkt.ip));
	pkt.ip.ip6_flow = htonl(6u << 28);
	pkt.ip.ip6_plen = htons(sizeof(*th));
	pkt.ip.ip6_nxt = IPPROTO_TCP;
	pkt.ip.ip6_hlim = 64;
	pkt.ip.ip6_src = peer->sin6_addr;
	pkt.ip.ip6_dst = local->sin6_addr;
	pkt.tcp = *th;
	to.sin6_port = 0;	/* a raw IPv6 socket wants no port here */
	rc = sendto(s, &pkt, sizeof(pkt), 0, (const struct sockaddr *)&to, sizeof(to)) ==
	     (ssize_t)sizeof(pkt) ? 0 : -1;
	close(s);
	return rc;
}

int tcp_send_fin(const struct sockaddr_in6 *local, const struct sockaddr_in6 *peer,
		 uint32_t seq, uint32_t ack, uint16_t window, int fin)
{
	struct tcphdr th;

	fin_header(&th, local, peer, seq, ack, window, fin);
	if (local->sin6_family == AF_INET)
		return send_v4((const struct sockaddr_in *)local,
			       (const struct sockaddr_in *)peer, &th);
	if (IN6_IS_ADDR_V4MAPPED(&local->sin6_addr)) {
		struct sockaddr_in l4 = { .sin_family = AF_INET, .sin_port = local->sin6_port },
				   p4 = { .sin_family = AF_INET, .sin_port = peer->sin6_port };

		memcpy(&l4.sin_addr, &local->sin6_addr.s6_addr[12], 4);
		memcpy(&p4.sin_addr, &peer->sin6_addr.s6_addr[12], 4);
		return send_v4(&l4, &p4, &th);
	}
	return send_v6(local, peer, &th);
}
