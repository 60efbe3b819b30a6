/* SPDX-License-Identifier: MIT */
/*
 * librdmacm event channels (/dev/infiniband/rdma_cm). UCX's rdmacm
 * module opens one at start-up and creates no CM id unless the program
 * connects through sockaddr addresses. A channel without a live CM id
 * holds no kernel state that matters: it is reopened at restart at the
 * same number. A CM id alive (a connection, a listener, a resolved
 * address) makes the quiesce fail, naming it: exact or refused.
 *
 * librdmacm is dlopen()ed by the program's plugins, never by the shim:
 * the real functions are found in the copy already loaded (RTLD_NOLOAD),
 * so that the shim costs nothing where librdmacm is absent. Its structs
 * are declared here (librdmacm-dev is not needed): what is used is the
 * stable head of struct rdma_event_channel and struct rdma_cm_event.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

#define RDMA_CM_DEV "/dev/infiniband/rdma_cm"
#define CM_EVENT_CONNECT_REQUEST 4	/* RDMA_CM_EVENT_CONNECT_REQUEST */

struct rdma_event_channel {
	int fd;
};
struct rdma_cm_event_head {
	void *id;
	void *listen_id;
	int event;
};

struct cmchan {
	struct cmchan *next;
	struct rdma_event_channel *ch;
	int flags;	/* fcntl F_GETFL, at the drain */
};

/* Under S.lock. */
static struct {
	struct cmchan *chans;
	void **ids;	/* live CM ids, unordered */
	int nids, capids;
} CM;

static void *cm_real(const char *name)
{
	void *h = dlopen("librdmacm.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *p = NULL;

	if (h) {
		p = dlvsym(h, name, "RDMACM_1.0");
		dlclose(h);
	}
	return p;
}

#define REAL(var, name)                                 \
	do {                                            \
		if (!(var))                             \
			*(void **)&(var) = cm_real(name); \
		if (!(var)) {                           \
			errno = ENOSYS;                 \
			return ERRVAL;                  \
		}                                       \
	} while (0)

static void id_add(void *id)
{
	int i;

	for (i = 0; i < CM.nids; i++)
		if (CM.ids[i] == id)
			return;
	if (CM.nids == CM.capids) {
		int cap = CM.capids ? CM.capids * 2 : 8;
		void **n = realloc(CM.ids, (size_t)cap * sizeof(*n));	// NOLINT(bugprone-sizeof-expression): of pointers

		if (!n) {
			/* unknown to the quiesce: better refuse every checkpoint */
			CM.nids = -1;
			return;
		}
		CM.ids = n;
		CM.capids = cap;
	}
	if (CM.nids >= 0)
		CM.ids[CM.nids++] = id;
}

static void id_del(void *id)
{
	int i;

	for (i = 0; i < CM.nids; i++)
		if (CM.ids[i] == id) {
			CM.ids[i] = CM.ids[--CM.nids];
			return;
		}
}

#define ERRVAL NULL
EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	static struct rdma_event_channel *(*real)(void);
	struct rdma_event_channel *ch;
	struct cmchan *c;
	int g;

	REAL(real, "rdma_create_event_channel");
	shim_init();
	g = gate_enter(0);
	ch = real();
	c = ch ? calloc(1, sizeof(*c)) : NULL;
	if (c) {
		c->ch = ch;
		c->flags = -1;
		pthread_mutex_lock(&S.lock);
		c->next = CM.chans;
		CM.chans = c;
		ctl_update_fds();
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	if (ch && !c)
		warnx_("out of memory recording rdma_cm channel fd %d: checkpoints will "
		       "refuse it", ch->fd);
	/* the quiesce needs the helper even without a device */
	if (c)
		helper_start();
	return ch;
}
#undef ERRVAL

EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	static void (*real)(struct rdma_event_channel *);
	struct cmchan **p, *c = NULL;
	int g;

	if (!real)
		*(void **)&real = cm_real("rdma_destroy_event_channel");
	if (!real)
		return;
	g = gate_enter(0);
	pthread_mutex_lock(&S.lock);
	for (p = &CM.chans; *p; p = &(*p)->next)
		if ((*p)->ch == ch) {
			c = *p;
			*p = c->next;
			break;
		}
	real(ch);
	ctl_update_fds();
	pthread_mutex_unlock(&S.lock);
	gate_leave(g);
	free(c);
}

#define ERRVAL (-1)
/* A call that made a CM id at *id (r == 0): recorded, and the gate left. */
static int made_id(int g, int r, void **id)
{
	if (!r) {
		pthread_mutex_lock(&S.lock);
		id_add(*id);
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	return r;
}

EXPORT int rdma_create_id(struct rdma_event_channel *ch, void **id, void *context, int ps)
{
	static int (*real)(struct rdma_event_channel *, void **, void *, int);
	int g;

	REAL(real, "rdma_create_id");
	g = gate_enter(0);
	return made_id(g, real(ch, id, context, ps), id);
}

EXPORT int rdma_create_ep(void **id, void *res, void *pd, void *qp_init_attr)
{
	static int (*real)(void **, void *, void *, void *);
	int g;

	REAL(real, "rdma_create_ep");
	g = gate_enter(0);
	return made_id(g, real(id, res, pd, qp_init_attr), id);
}

EXPORT int rdma_destroy_id(void *id)
{
	static int (*real)(void *);
	int g, r;

	REAL(real, "rdma_destroy_id");
	g = gate_enter(0);
	r = real(id);
	if (!r) {
		pthread_mutex_lock(&S.lock);
		id_del(id);
		pthread_mutex_unlock(&S.lock);
	}
	gate_leave(g);
	return r;
}

/* Not gated: it blocks in read(2) until an event comes. */
EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch, void **event)
{
	static int (*real)(struct rdma_event_channel *, void **);
	int r;

	REAL(real, "rdma_get_cm_event");
	r = real(ch, event);
	if (!r && ((struct rdma_cm_event_head *)*event)->event == CM_EVENT_CONNECT_REQUEST) {
		/* a new id for the connection, made inside librdmacm */
		pthread_mutex_lock(&S.lock);
		id_add(((struct rdma_cm_event_head *)*event)->id);
		pthread_mutex_unlock(&S.lock);
	}
	return r;
}
#undef ERRVAL

/* ------------------------------------------------------------ the stage */

void cm_update_fds(int *n)
{
	struct cmchan *c;

	for (c = CM.chans; c; c = c->next)
		ctl_add_fd(n, c->ch->fd, IBCR_VFD_RDMA_CM);
}

int cm_check_idle(char *why, size_t n)
{
	if (!CM.nids)
		return 0;
	if (CM.nids < 0)
		snprintf(why, n, "quiesce: an RDMA CM id could not be recorded (out of memory)");
	else
		snprintf(why, n, "quiesce: %d RDMA CM id%s alive (rdma_cm connections, "
			 "listeners and resolved addresses are not supported)", CM.nids,
			 CM.nids == 1 ? " is" : "s are");
	return -1;
}

void cm_record_flags(void)
{
	struct cmchan *c;

	for (c = CM.chans; c; c = c->next)
		c->flags = fcntl(c->ch->fd, F_GETFL);
}

/* At restart (S.lock held): each channel's device again, at its number. */
int cm_rebuild(char *why, size_t n)
{
	struct cmchan *c;

	for (c = CM.chans; c; c = c->next) {
		int fd = open(RDMA_CM_DEV, O_RDWR | O_CLOEXEC);

		if (fd < 0 || (fd != c->ch->fd && dup2(fd, c->ch->fd) < 0)) {
			snprintf(why, n, "restart: reopening %s at fd %d: %s", RDMA_CM_DEV,
				 c->ch->fd, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		if (fd != c->ch->fd)
			close(fd);
		if (c->flags >= 0)
			fcntl(c->ch->fd, F_SETFL, c->flags);
		epoll_readd(c->ch->fd);
		dbg("rdma_cm channel at fd %d reopened", c->ch->fd);
	}
	return 0;
}
