/* SPDX-License-Identifier: MIT */
/*
 * Epoll entries on the shim's descriptors. An epoll keys an entry by
 * (file, number) and drops it when its file goes: the restore adds the
 * program's entries for the stand-ins it puts at the shim's numbers, and
 * each time the rebuild puts a new file at one of those numbers (dup2:
 * the stand-in goes) the entries the restart-loader wrote into the
 * control object are added again, with their events and data words.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "shim.h"

int epoll_readd(int fd)
{
	const struct ibcr_verbs_control *c = &ibcr_verbs_control;
	uint32_t i, n = c->nepoll < IBCR_VERBS_MAX_EPOLL ? c->nepoll : IBCR_VERBS_MAX_EPOLL;

	for (i = 0; i < n; i++) {
		struct epoll_event ev;

		if (c->epoll[i].tfd != fd)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.events = c->epoll[i].events;
		ev.data.u64 = c->epoll[i].data;
		if (epoll_ctl(c->epoll[i].epfd, EPOLL_CTL_ADD, fd, &ev) && errno != EEXIST) {
			warnx_("restart: epoll fd %d: watching fd %d again (events %#x): %s",
			       c->epoll[i].epfd, fd, ev.events, strerror(errno));
			return -1;
		}
		dbg("epoll fd %d watches fd %d again", c->epoll[i].epfd, fd);
	}
	return 0;
}
