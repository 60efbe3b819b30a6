// SPDX-License-Identifier: MIT
/*
 * The socket options an image carries, and the SOCKOPTS section's codec.
 *
 * Which options: every one a program can set and getsockopt reads back
 * as it was set, at the socket, IP, IPv6, TCP and UDP levels. Left out,
 * and why: read-only ones (SO_TYPE, SO_ERROR, SO_ACCEPTCONN, SO_COOKIE,
 * ...); SO_INCOMING_CPU and TCP_QUICKACK, which the kernel changes by
 * itself as packets come; the *_NEW twins of SO_RCVTIMEO/SO_SNDTIMEO and
 * SO_TIMESTAMPING, the same setting under another name; SO_BINDTOIFINDEX
 * (SO_BINDTODEVICE names the device, which survives a renumbering);
 * multicast memberships and SO_ATTACH_REUSEPORT_* programs, which
 * nothing reads back; multicast options of a TCP socket, which the
 * kernel sets from the first packet of an accepted connection and no
 * one may set (see docs/design-notes.md, Sockets).
 *
 * Order: a restore sets them in table order. IP_TOS and IPV6_TCLASS set
 * the priority too, so SO_PRIORITY comes after them; SO_LOCK_FILTER
 * after the filter; the buffer sizes before SO_BUF_LOCK.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "buf.h"
#include "image_io.h"
#include "sockopt.h"

/* Newer than some C libraries' headers (the values are the kernel's). */
#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK 72
#endif
#ifndef SO_RESERVE_MEM
#define SO_RESERVE_MEM 73
#endif
#ifndef SO_TXREHASH
#define SO_TXREHASH 74
#endif
#ifndef SO_RCVMARK
#define SO_RCVMARK 75
#endif
#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif
#ifndef IP_LOCAL_PORT_RANGE
#define IP_LOCAL_PORT_RANGE 51
#endif
/* netlink, raw and ICMP levels, as the kernel numbers them */
#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#define NL_PKTINFO 3
#define NL_BROADCAST_ERROR 4
#define NL_NO_ENOBUFS 5
#define NL_LISTEN_ALL_NSID 8
#define NL_CAP_ACK 10
#define NL_EXT_ACK 11
#define NL_GET_STRICT_CHK 12
#define SOL_RAW_LEVEL 255
#define RAW_ICMP_FILTER 1
#define ICMP6_FILTER_OPT 1
#define IPV6_CHECKSUM_OPT 7
#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#define UDP_NO_CHECK6_RX 102
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define I(level, name) { level, name, #name, 4, SOH_PLAIN, 0, 0 }
#define MC(level, name) { level, name, #name, 4, SOH_PLAIN, 0, 1 }
#define SIZED(level, name, size) { level, name, #name, size, SOH_PLAIN, 0, 0 }
#define VAR(level, name, size) { level, name, #name, size, SOH_PLAIN, 1, 0 }
#define HOW(level, name, size, how) { level, name, #name, size, how, 0, 0 }
#define NAMED(level, name, label, size) { level, name, label, size, SOH_PLAIN, 0, 0 }

const struct sockopt_desc sockopt_table[] = {
	/* before bind: what decides whether and where it binds */
	I(SOL_SOCKET, SO_REUSEADDR),
	I(SOL_SOCKET, SO_REUSEPORT),
	I(IPPROTO_IPV6, IPV6_V6ONLY),
	I(IPPROTO_IP, IP_FREEBIND),
	I(IPPROTO_IP, IP_TRANSPARENT),
	I(IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT),
	I(IPPROTO_IP, IP_LOCAL_PORT_RANGE),
	I(IPPROTO_IPV6, IPV6_FREEBIND),
	I(IPPROTO_IPV6, IPV6_TRANSPARENT),
	I(IPPROTO_IPV6, IPV6_ADDR_PREFERENCES),
	VAR(SOL_SOCKET, SO_BINDTODEVICE, 16),
	/* buffers: before a connection's window is chosen */
	HOW(SOL_SOCKET, SO_SNDBUF, 4, SOH_BUFFER),
	HOW(SOL_SOCKET, SO_RCVBUF, 4, SOH_BUFFER),
	I(SOL_SOCKET, SO_BUF_LOCK),
	I(SOL_SOCKET, SO_RESERVE_MEM),
	/* IP and IPv6: the type of service sets the priority as well */
	I(IPPROTO_IP, IP_TOS),
	I(IPPROTO_IP, IP_TTL),
	I(IPPROTO_IP, IP_HDRINCL),
	VAR(IPPROTO_IP, IP_OPTIONS, 40),
	I(IPPROTO_IP, IP_RECVOPTS),
	I(IPPROTO_IP, IP_RETOPTS),
	I(IPPROTO_IP, IP_PKTINFO),
	I(IPPROTO_IP, IP_MTU_DISCOVER),
	I(IPPROTO_IP, IP_RECVERR),
	I(IPPROTO_IP, IP_RECVTTL),
	I(IPPROTO_IP, IP_RECVTOS),
	I(IPPROTO_IP, IP_PASSSEC),
	I(IPPROTO_IP, IP_RECVORIGDSTADDR),
	I(IPPROTO_IP, IP_MINTTL),
	I(IPPROTO_IP, IP_NODEFRAG),
	I(IPPROTO_IP, IP_CHECKSUM),
	I(IPPROTO_IP, IP_RECVFRAGSIZE),
	I(IPPROTO_IP, IP_RECVERR_RFC4884),
	MC(IPPROTO_IP, IP_MULTICAST_IF),
	MC(IPPROTO_IP, IP_MULTICAST_TTL),
	MC(IPPROTO_IP, IP_MULTICAST_LOOP),
	MC(IPPROTO_IP, IP_MULTICAST_ALL),
	I(IPPROTO_IPV6, IPV6_TCLASS),
	I(IPPROTO_IPV6, IPV6_UNICAST_HOPS),
	MC(IPPROTO_IPV6, IPV6_MULTICAST_HOPS),
	MC(IPPROTO_IPV6, IPV6_MULTICAST_LOOP),
	MC(IPPROTO_IPV6, IPV6_MULTICAST_IF),
	MC(IPPROTO_IPV6, IPV6_MULTICAST_ALL),
	I(IPPROTO_IPV6, IPV6_UNICAST_IF),
	I(IPPROTO_IPV6, IPV6_MTU_DISCOVER),
	I(IPPROTO_IPV6, IPV6_RECVERR),
	I(IPPROTO_IPV6, IPV6_RECVPKTINFO),
	I(IPPROTO_IPV6, IPV6_RECVHOPLIMIT),
	I(IPPROTO_IPV6, IPV6_RECVTCLASS),
	I(IPPROTO_IPV6, IPV6_AUTOFLOWLABEL),
	I(IPPROTO_IPV6, IPV6_DONTFRAG),
	I(IPPROTO_IPV6, IPV6_RECVPATHMTU),
	I(IPPROTO_IPV6, IPV6_MINHOPCOUNT),
	I(IPPROTO_IPV6, IPV6_RECVORIGDSTADDR),
	I(IPPROTO_IPV6, IPV6_RECVFRAGSIZE),
	/* the socket level */
	I(SOL_SOCKET, SO_PRIORITY),
	I(SOL_SOCKET, SO_MARK),
	I(SOL_SOCKET, SO_DEBUG),
	I(SOL_SOCKET, SO_DONTROUTE),
	I(SOL_SOCKET, SO_BROADCAST),
	I(SOL_SOCKET, SO_KEEPALIVE),
	I(SOL_SOCKET, SO_OOBINLINE),
	I(SOL_SOCKET, SO_NO_CHECK),
	SIZED(SOL_SOCKET, SO_LINGER, 8),
	I(SOL_SOCKET, SO_RCVLOWAT),
	SIZED(SOL_SOCKET, SO_RCVTIMEO, 16),
	SIZED(SOL_SOCKET, SO_SNDTIMEO, 16),
	I(SOL_SOCKET, SO_PASSCRED),
	I(SOL_SOCKET, SO_PASSSEC),
	I(SOL_SOCKET, SO_PASSPIDFD),
	I(SOL_SOCKET, SO_RCVMARK),
	I(SOL_SOCKET, SO_TIMESTAMP),
	I(SOL_SOCKET, SO_TIMESTAMPNS),
	SIZED(SOL_SOCKET, SO_TIMESTAMPING, 8),
	I(SOL_SOCKET, SO_RXQ_OVFL),
	I(SOL_SOCKET, SO_WIFI_STATUS),
	I(SOL_SOCKET, SO_NOFCS),
	I(SOL_SOCKET, SO_SELECT_ERR_QUEUE),
	I(SOL_SOCKET, SO_BUSY_POLL),
	I(SOL_SOCKET, SO_PREFER_BUSY_POLL),
	I(SOL_SOCKET, SO_BUSY_POLL_BUDGET),
	SIZED(SOL_SOCKET, SO_MAX_PACING_RATE, 8),
	I(SOL_SOCKET, SO_ZEROCOPY),
	SIZED(SOL_SOCKET, SO_TXTIME, 8),
	I(SOL_SOCKET, SO_TXREHASH),
	{ SOL_SOCKET, SO_ATTACH_FILTER, "SO_ATTACH_FILTER", 0, SOH_FILTER, 1, 0 },
	I(SOL_SOCKET, SO_LOCK_FILTER),
	/* TCP */
	I(IPPROTO_TCP, TCP_NODELAY),
	I(IPPROTO_TCP, TCP_CORK),
	HOW(IPPROTO_TCP, TCP_MAXSEG, 4, SOH_UNCONNECTED),
	HOW(IPPROTO_TCP, TCP_WINDOW_CLAMP, 4, SOH_UNCONNECTED),
	I(IPPROTO_TCP, TCP_KEEPIDLE),
	I(IPPROTO_TCP, TCP_KEEPINTVL),
	I(IPPROTO_TCP, TCP_KEEPCNT),
	I(IPPROTO_TCP, TCP_SYNCNT),
	I(IPPROTO_TCP, TCP_LINGER2),
	I(IPPROTO_TCP, TCP_DEFER_ACCEPT),
	VAR(IPPROTO_TCP, TCP_CONGESTION, 16),
	I(IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS),
	I(IPPROTO_TCP, TCP_USER_TIMEOUT),
	I(IPPROTO_TCP, TCP_FASTOPEN),
	I(IPPROTO_TCP, TCP_FASTOPEN_CONNECT),
	I(IPPROTO_TCP, TCP_FASTOPEN_NO_COOKIE),
	I(IPPROTO_TCP, TCP_NOTSENT_LOWAT),
	I(IPPROTO_TCP, TCP_SAVE_SYN),
	I(IPPROTO_TCP, TCP_INQ),
	I(IPPROTO_TCP, TCP_TX_DELAY),
	/* UDP */
	I(IPPROTO_UDP, UDP_CORK),
	I(IPPROTO_UDP, UDP_SEGMENT),
	I(IPPROTO_UDP, UDP_GRO),
	I(IPPROTO_UDP, UDP_NO_CHECK6_TX),
	I(IPPROTO_UDP, UDP_NO_CHECK6_RX),
	/* netlink */
	NAMED(SOL_NETLINK, NL_PKTINFO, "NETLINK_PKTINFO", 4),
	NAMED(SOL_NETLINK, NL_BROADCAST_ERROR, "NETLINK_BROADCAST_ERROR", 4),
	NAMED(SOL_NETLINK, NL_NO_ENOBUFS, "NETLINK_NO_ENOBUFS", 4),
	NAMED(SOL_NETLINK, NL_LISTEN_ALL_NSID, "NETLINK_LISTEN_ALL_NSID", 4),
	NAMED(SOL_NETLINK, NL_CAP_ACK, "NETLINK_CAP_ACK", 4),
	NAMED(SOL_NETLINK, NL_EXT_ACK, "NETLINK_EXT_ACK", 4),
	NAMED(SOL_NETLINK, NL_GET_STRICT_CHK, "NETLINK_GET_STRICT_CHK", 4),
	/* raw and ICMP sockets */
	NAMED(SOL_RAW_LEVEL, RAW_ICMP_FILTER, "ICMP_FILTER", 4),
	NAMED(IPPROTO_ICMPV6, ICMP6_FILTER_OPT, "ICMP6_FILTER", 32),
	NAMED(IPPROTO_IPV6, IPV6_CHECKSUM_OPT, "IPV6_CHECKSUM", 4),
	/* after the data: the peek offset counts from the queue's head */
	HOW(SOL_SOCKET, SO_PEEK_OFF, 4, SOH_LATE),
};

const size_t sockopt_count = sizeof(sockopt_table) / sizeof(sockopt_table[0]);

const struct sockopt_desc *sockopt_find(int level, int name)
{
	for (size_t i = 0; i < sockopt_count; i++)
		if (sockopt_table[i].level == level && sockopt_table[i].name == name)
			return &sockopt_table[i];
	return NULL;
}

void sockopts_add(struct ibcr_sockopts *s, uint32_t obj, int level, int name,
		  const void *val, uint32_t len)
{
	if (s->n == s->cap)
		s->o = xrealloc(s->o, sizeof(*s->o) * (s->cap = s->cap ? 2 * s->cap : 32));
	s->o[s->n++] = (struct ibcr_sockopt){ obj, level, name, len, s->size };
	s->data = xrealloc(s->data, s->size + len + 1);
	memcpy(s->data + s->size, val, len);
	s->size += len;
}

void sockopts_free(struct ibcr_sockopts *s)
{
	free(s->o);
	free(s->data);
	memset(s, 0, sizeof(*s));
}

void enc_sockopts(struct buf *b, const struct ibcr_sockopts *s)
{
	struct ibcr_sockopts_hdr h = { s->n, 0, s->size };

	buf_put(b, &h, sizeof(h));
	if (s->n)
		buf_put(b, s->o, sizeof(*s->o) * s->n);
	if (s->size)
		buf_put(b, s->data, s->size);
}

static int dec_sockopts(struct img_reader *r, const uint8_t *p, uint64_t n, uint32_t nobjs,
			struct ibcr_sockopts *s, struct ibcr_err *e)
{
	struct ibcr_sockopts_hdr h;
	uint64_t rsize;

	if (n < sizeof(h))
		return ibcr_fail(e, "image %s: SOCKOPTS section too short", r->path);
	memcpy(&h, p, sizeof(h));
	rsize = (uint64_t)h.nopts * sizeof(struct ibcr_sockopt);
	if (h.nopts > 1u << 20 || h.data_size > n || sizeof(h) + rsize + h.data_size != n)
		return ibcr_fail(e, "image %s: SOCKOPTS section size does not match its "
				 "contents", r->path);
	s->n = s->cap = h.nopts;
	s->size = h.data_size;
	s->o = xmalloc(rsize + 1);
	s->data = xmalloc(h.data_size + 1);
	memcpy(s->o, p + sizeof(h), rsize);
	memcpy(s->data, p + sizeof(h) + rsize, h.data_size);
	for (uint32_t i = 0; i < h.nopts; i++) {
		const struct ibcr_sockopt *o = &s->o[i];
		const struct sockopt_desc *d = sockopt_find(o->level, o->name);

		if (o->obj >= nobjs || (i && o->obj < s->o[i - 1].obj) ||
		    o->data_off > h.data_size || o->len > h.data_size - o->data_off)
			return ibcr_fail(e, "image %s: socket option %u is malformed", r->path, i);
		/* an option we do not know is one we cannot put back */
		if (!d || (d->how != SOH_FILTER && (d->varlen ? o->len > d->size :
						       o->len != d->size)))
			return ibcr_fail(e, "image %s: socket option %u (level %d, option %d, "
					 "%u bytes) is not one this restart-loader knows",
					 r->path, i, o->level, o->name, o->len);
	}
	return 0;
}

int imgr_load_sockopts(struct img_reader *r, uint32_t nobjs, struct ibcr_sockopts *s,
		       struct ibcr_err *e)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < r->nsecs; i++) {
		uint8_t *p;
		int rc;

		if (r->secs[i].h.type != IBCR_SEC_SOCKOPTS)
			continue;
		if (s->o)
			return ibcr_fail(e, "image %s: two SOCKOPTS sections", r->path);
		if (imgr_payload(r, i, &p, e))
			return -1;
		rc = dec_sockopts(r, p, r->secs[i].h.size, nobjs, s, e);
		free(p);
		if (rc) {
			sockopts_free(s);
			return -1;
		}
	}
	return 0;
}
