// SPDX-License-Identifier: MIT
/*
 * A restored socket's options (the image's SOCKOPTS, lib/sockopt.h), set
 * on the new socket in the order of lib/sockopt.c's table and each read
 * back: an option the kernel does not keep as saved fails the restore,
 * naming it, rather than leaving the program with another setting.
 * Most are set as soon as the socket exists (before bind, connect,
 * listen and repair mode, which forces SO_REUSEADDR on while it lasts),
 * the peek offset once the queued data is back.
 */
#include <errno.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "loader.h"
#include "sockopt.h"

#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK 72
#endif

/* Reads it back: 0 when the kernel keeps exactly the saved value. */
static int kept(int s, const struct ibcr_sockopt *o, const uint8_t *val)
{
	uint8_t now[64];
	socklen_t l = sizeof(now);

	if (o->len > sizeof(now) || getsockopt(s, o->level, o->name, now, &l))
		return -1;
	return l == o->len && !memcmp(now, val, l) ? 0 : -1;
}

/* SO_SNDBUF/SO_RCVBUF: the kernel doubles the value set; FORCE past the maximum. */
static int set_buffer(int s, const struct ibcr_sockopt *o, const uint8_t *val)
{
	int want, half;

	memcpy(&want, val, sizeof(want));
	half = want / 2;
	if (!setsockopt(s, SOL_SOCKET, o->name, &half, sizeof(half)) && !kept(s, o, val))
		return 0;
	/* above net.core.[wr]mem_max: root may go past it */
	if (setsockopt(s, SOL_SOCKET, o->name == SO_SNDBUF ? SO_SNDBUFFORCE : SO_RCVBUFFORCE,
		       &half, sizeof(half)))
		return -1;
	return kept(s, o, val) ? (errno = ERANGE, -1) : 0;
}

/* A classic BPF program, given back as it was read (SO_GET_FILTER). */
static int set_filter(int s, const struct ibcr_sockopt *o, const uint8_t *val)
{
	struct sock_fprog prog = { (unsigned short)(o->len / 8),
				   (struct sock_filter *)(uintptr_t)val };
	uint8_t back[4096 * 8];
	socklen_t n = sizeof(back) / 8;

	if (o->len % 8 || o->len / 8 > 4096 ||
	    setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)))
		return errno ? -1 : (errno = EINVAL, -1);
	if (getsockopt(s, SOL_SOCKET, SO_GET_FILTER, back, &n) || n * 8 != o->len ||
	    memcmp(back, val, o->len))
		return errno = ERANGE, -1;
	return 0;
}

static int set_one(int s, const struct ibcr_sockopt *o, const uint8_t *val,
		   const struct sockopt_desc *d)
{
	errno = 0;
	if (d->how == SOH_BUFFER)
		return set_buffer(s, o, val);
	if (d->how == SOH_FILTER)
		return set_filter(s, o, val);
	if (setsockopt(s, o->level, o->name, val, o->len))
		return -1;
	return kept(s, o, val) ? (errno = ERANGE, -1) : 0;
}

int sockopt_apply(int s, uint32_t obj, const struct ibcr_files *f, int late,
		  struct ibcr_err *e)
{
	const struct ibcr_sockopts *so = f->sockopts;

	for (uint32_t i = 0; so && i < so->n; i++) {
		const struct ibcr_sockopt *o = &so->o[i];
		const struct sockopt_desc *d = sockopt_find(o->level, o->name);

		if (o->obj != obj || !d || (d->how == SOH_LATE) != late)
			continue;
		if (set_one(s, o, so->data + o->data_off, d) == 0)
			continue;
		if (errno == ERANGE)
			return ibcr_fail(e, "socket %s: option %s: the kernel does not keep the "
					 "saved value", f->paths[obj], d->label);
		return ibcr_fail_errno(e, errno, "socket %s: setting option %s%s", f->paths[obj],
				       d->label, errno == EPERM ? " (needs CAP_NET_ADMIN)" : "");
	}
	return 0;
}

int sockopt_after_repair(int s, uint32_t obj, const struct ibcr_files *f,
			 struct ibcr_err *e)
{
	const struct ibcr_sockopts *so = f->sockopts;

	for (uint32_t i = 0; so && i < so->n; i++) {
		const struct ibcr_sockopt *o = &so->o[i];

		if (o->obj == obj && o->level == SOL_SOCKET && o->name == SO_REUSEADDR &&
		    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, so->data + o->data_off, o->len))
			return ibcr_fail_errno(e, errno, "socket %s: SO_REUSEADDR after repair "
					       "mode", f->paths[obj]);
	}
	return 0;
}

int sockopt_buffers(int s, uint32_t obj, const struct ibcr_files *f, struct ibcr_err *e)
{
	const struct ibcr_sockopts *so = f->sockopts;
	int unlocked = 0, lock_saved = 0;

	for (uint32_t i = 0; so && i < so->n; i++) {
		const struct ibcr_sockopt *o = &so->o[i];
		const struct sockopt_desc *d = sockopt_find(o->level, o->name);

		if (o->obj != obj || !d || (d->how != SOH_BUFFER && o->name != SO_BUF_LOCK) ||
		    o->level != SOL_SOCKET)
			continue;
		lock_saved |= o->name == SO_BUF_LOCK;
		if (set_one(s, o, so->data + o->data_off, d))
			return ibcr_fail_errno(e, errno, "socket %s: %s back as saved",
					       f->paths[obj], d->label);
	}
	/* sizes the program did not fix go back to the kernel's tuning */
	if (!lock_saved && setsockopt(s, SOL_SOCKET, SO_BUF_LOCK, &unlocked, sizeof(unlocked)))
		return ibcr_fail_errno(e, errno, "socket %s: SO_BUF_LOCK", f->paths[obj]);
	return 0;
}
