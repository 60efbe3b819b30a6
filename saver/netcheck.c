// SPDX-License-Identifier: MIT
/*
 * Before saver --kill kills anything: what the restore of the image's
 * TCP and UDP sockets will need from this machine, where it can be
 * checked now. Refused, naming the socket and the reason:
 *
 *   a socket also open in a process outside the checkpoint: that process
 *      keeps the port (and the connection) after the kill, so the
 *      restored socket could not have it;
 *   a socket bound to an address this host no longer has (one removed
 *      while the program ran), unless it may bind to any (IP_FREEBIND,
 *      IP_TRANSPARENT);
 *   a socket bound to a network device (SO_BINDTODEVICE) that is gone.
 *
 * What may be held by others is otherwise no concern here: two sockets
 * share a port only by SO_REUSEADDR or SO_REUSEPORT, which the restored
 * socket has again, and connections in TIME-WAIT are dropped at restore.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "saver.h"

/* The option (level, name) of object i as saved, or NULL. */
static const struct ibcr_sockopt *saved_opt(const struct fobjs *o, uint32_t i, int level,
					    int name)
{
	for (uint32_t k = 0; k < o->sockopts.n; k++)
		if (o->sockopts.o[k].obj == i && o->sockopts.o[k].level == level &&
		    o->sockopts.o[k].name == name)
			return &o->sockopts.o[k];
	return NULL;
}

static int saved_on(const struct fobjs *o, uint32_t i, int level, int name)
{
	const struct ibcr_sockopt *s = saved_opt(o, i, level, name);
	int v = 0;

	if (s && s->len == sizeof(v))
		memcpy(&v, o->sockopts.data + s->data_off, sizeof(v));
	return v != 0;
}

/* Whether this host has the address now (loopback ones it always has). */
static int address_here(const struct sockaddr_in6 *a)
{
	struct ifaddrs *all, *x;
	int found = 0, v4 = a->sin6_family == AF_INET || IN6_IS_ADDR_V4MAPPED(&a->sin6_addr);
	uint8_t want[16];

	if (v4)
		memcpy(want, a->sin6_family == AF_INET ?
		       (const void *)&((const struct sockaddr_in *)a)->sin_addr :
		       (const void *)&a->sin6_addr.s6_addr[12], 4);
	else
		memcpy(want, &a->sin6_addr, 16);
	if (v4 ? (want[0] == 127 || !memcmp(want, "\0\0\0\0", 4)) :
		 IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr))
		return 1;
	if (getifaddrs(&all))
		return 1;	/* cannot tell: the restore will say */
	for (x = all; x && !found; x = x->ifa_next) {
		if (!x->ifa_addr || x->ifa_addr->sa_family != (v4 ? AF_INET : AF_INET6))
			continue;
		found = v4 ? !memcmp(&((struct sockaddr_in *)x->ifa_addr)->sin_addr, want, 4) :
			     !memcmp(&((struct sockaddr_in6 *)x->ifa_addr)->sin6_addr, want, 16);
	}
	freeifaddrs(all);
	return found;
}

static void addr_str(const struct sockaddr_in6 *a, char *s, size_t n)
{
	if (a->sin6_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, s, (socklen_t)n);
	else
		inet_ntop(AF_INET6, &a->sin6_addr, s, (socklen_t)n);
}

/* The image's sockets that processes outside it hold too, found in one pass. */
struct outside {
	const struct fobjs *o;
	pid_t *pid;	/* per object: a holder outside, or 0 */
};

static int note_holder(void *arg, pid_t pid, uint64_t ino)
{
	struct outside *w = arg;

	for (uint32_t i = 0; i < w->o->f.nobjs; i++)
		if (w->o->f.objs[i].kind == IBCR_FD_INET && fobj_sock_ino(&w->o->f.objs[i]) == ino &&
		    !w->pid[i])
			w->pid[i] = pid;
	return 0;
}

static int check_one(const struct fobjs *o, uint32_t i, pid_t other, struct ibcr_err *e)
{
	const struct ibcr_fobj *ob = &o->f.objs[i];
	int role = fobj_inet_role(ob);
	const struct ibcr_sockopt *dev = saved_opt(o, i, SOL_SOCKET, SO_BINDTODEVICE);
	struct sockaddr_in6 a;
	char host[INET6_ADDRSTRLEN] = "?";

	if (role == IBCR_SOCK_FRESH || role == IBCR_SOCK_CLOSED || !o->f.data[i] ||
	    ob->data_len < sizeof(a))
		return 0;
	memcpy(&a, o->f.data[i], sizeof(a));
	addr_str(&a, host, sizeof(host));
	if (other)
		return ibcr_fail(e, "pid %d fd %d: socket on %s port %u is also open in pid %d, "
				 "outside the checkpoint, which keeps it after the kill: the "
				 "restore could not have it (checkpoint that process too)",
				 (int)o->rep_pid[i], o->rep_fd[i], host, ntohs(a.sin6_port),
				 (int)other);
	if (!address_here(&a) && !saved_on(o, i, IPPROTO_IP, IP_FREEBIND) &&
	    !saved_on(o, i, IPPROTO_IP, IP_TRANSPARENT) &&
	    !saved_on(o, i, IPPROTO_IPV6, IPV6_FREEBIND) &&
	    !saved_on(o, i, IPPROTO_IPV6, IPV6_TRANSPARENT))
		return ibcr_fail(e, "pid %d fd %d: socket bound to %s, an address this host no "
				 "longer has: the restore could not bind it", (int)o->rep_pid[i],
				 o->rep_fd[i], host);
	if (dev && dev->len > 1) {
		char name[IF_NAMESIZE + 1] = "";

		memcpy(name, o->sockopts.data + dev->data_off,
		       dev->len < IF_NAMESIZE ? dev->len : IF_NAMESIZE);
		if (!if_nametoindex(name))
			return ibcr_fail(e, "pid %d fd %d: socket bound to network device %s, "
					 "which is gone: the restore could not bind it",
					 (int)o->rep_pid[i], o->rep_fd[i], name);
	}
	return 0;
}

int net_precheck(const struct target *t, uint32_t n, const struct fobjs *o,
		 struct ibcr_err *e)
{
	struct outside w = { o, NULL };
	int rc = 0;

	if (!o->kill)
		return 0;
	w.pid = xcalloc(o->f.nobjs + 1, sizeof(pid_t));
	walk_outside(t, n, "socket", note_holder, &w);
	for (uint32_t i = 0; i < o->f.nobjs && !rc; i++)
		if (o->f.objs[i].kind == IBCR_FD_INET)
			rc = check_one(o, i, w.pid[i], e);
	free(w.pid);
	return rc;
}
