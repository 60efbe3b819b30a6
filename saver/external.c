// SPDX-License-Identifier: MIT
/*
 * Descriptors that lead outside the image, and what the restore puts
 * there: `saver --external-fd [PID:]FD:ACTION`. A process started by a
 * job scheduler, a CI runner or ssh holds pipes and sockets above fd 2
 * that lead to processes the image does not have; they cannot come back
 * as they were, so the user says what comes back instead (close, null,
 * inherit: restart-loader's own fd of that number, tty: its controlling
 * terminal). Without a rule such a descriptor is refused at checkpoint,
 * and the refusal names the option (EXTERNAL_HINT).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "external.h"

static const char *const names[] = {
	[IBCR_EXT_CLOSE] = "close", [IBCR_EXT_NULL] = "null",
	[IBCR_EXT_INHERIT] = "inherit", [IBCR_EXT_TTY] = "tty",
};

static int parse_num(const char *s, const char *end, long max, long *v)
{
	char *stop;

	if (s == end)
		return -1;
	*v = strtol(s, &stop, 10);
	return stop == end && *v >= 0 && *v <= max ? 0 : -1;
}

int external_parse(const char *arg, struct fobjs *o)
{
	const char *last = strrchr(arg, ':'), *first = strchr(arg, ':');
	struct ext_rule r = { 0 };
	long pid = 0, fd;

	if (!last)
		return -1;
	for (uint32_t a = IBCR_EXT_CLOSE; a <= IBCR_EXT_TTY; a++)
		if (!strcmp(last + 1, names[a]))
			r.action = a;
	if (!r.action)
		return -1;
	if (first != last && parse_num(arg, first, 0x3fffffff, &pid))
		return -1;
	if (parse_num(first == last ? arg : first + 1, last, 1 << 20, &fd))
		return -1;
	r.pid = (pid_t)pid;
	r.fd = (int)fd;
	o->ext = xrealloc(o->ext, sizeof(*o->ext) * (o->next + 1));
	o->ext[o->next++] = r;
	return 0;
}

const struct ext_rule *external_find(const struct fobjs *o, pid_t pid, int fd)
{
	for (uint32_t i = 0; i < o->next; i++)
		if (o->ext[i].fd == fd && (!o->ext[i].pid || o->ext[i].pid == pid))
			return &o->ext[i];
	return NULL;
}

void external_object(const struct ext_rule *r, int fd, struct ibcr_fobj *ob, uint8_t **data)
{
	struct ibcr_external x = { r->action, fd };

	ob->kind = IBCR_FD_EXTERNAL;
	ob->data_len = sizeof(x);
	*data = xmalloc(sizeof(x));
	memcpy(*data, &x, sizeof(x));
}

const char *external_action_name(uint32_t action)
{
	return action >= IBCR_EXT_CLOSE && action <= IBCR_EXT_TTY ? names[action] : "?";
}

/*
 * An epoll that watches a descriptor which comes back closed or as
 * /dev/null (which cannot be watched) would lose that entry: refused.
 * Entries are by the fd numbers of the process fobj_epoll_pid names.
 */
static int check_epoll(const struct target *p, const struct fobjs *o, uint32_t i,
		       struct ibcr_err *e)
{
	const uint64_t *w = (const uint64_t *)o->f.data[i];

	for (uint64_t k = 0; w && k < fobj_epoll_entries(&o->f.objs[i]); k++)
		for (uint32_t f = 0; f < p->ps.nfds; f++) {
			const struct ibcr_fd *d = &p->ps.fds[f];
			struct ibcr_external x;

			if (d->fd != (int)w[3 * k] || o->f.objs[d->obj].kind != IBCR_FD_EXTERNAL)
				continue;
			memcpy(&x, o->f.data[d->obj], sizeof(x));
			if (x.action == IBCR_EXT_CLOSE || x.action == IBCR_EXT_NULL)
				return ibcr_fail(e, "pid %d fd %d: its epoll watches fd %d, which "
						 "--external-fd makes %s at restore: the epoll "
						 "would lose that entry (inherit or tty keep it)",
						 (int)p->pid, o->rep_fd[i], d->fd, names[x.action]);
		}
	return 0;
}

int external_check_epolls(const struct target *t, uint32_t n, const struct fobjs *o,
			  struct ibcr_err *e)
{
	for (uint32_t i = 0; i < o->f.nobjs && o->next; i++)
		for (uint32_t k = 0; k < n && o->f.objs[i].kind == IBCR_FD_EPOLL; k++)
			if (t[k].pid == fobj_epoll_pid(&o->f.objs[i]) && check_epoll(&t[k], o, i, e))
				return -1;
	return 0;
}
