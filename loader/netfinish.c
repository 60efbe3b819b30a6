// SPDX-License-Identifier: MIT
/*
 * The network's last steps of a restore, once every process exists:
 * UNIX queues refilled (the credentials in them name the restored
 * pids), TCP connections out of repair mode and their unsent bytes
 * sent, then the image's network lock removed so their packets flow
 * again. And --unlock-net, which restores nothing and only removes it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "buf.h"
#include "loader.h"
#include "netlock.h"

/* UNIX queues, once the processes exist: their pids are the credentials'. */
static int refill_unix(const struct job *j, uint32_t n, const struct ibcr_files *f,
		       const int *fds, struct ibcr_err *e)
{
	int32_t *old = xcalloc(n + 1, sizeof(int32_t)), *now = xcalloc(n + 1, sizeof(int32_t));
	struct pidmap pm = { n, old, now };
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		old[i] = j[i].ps.rec.pid;
		now[i] = j[i].child > 0 ? j[i].child : j[i].ps.rec.pid;
	}
	rc = unix_refill(f, fds, &pm, e);
	free(old);
	free(now);
	return rc;
}

int net_finish(const struct job *j, uint32_t n, const struct ibcr_files *f, const int *fds,
	       struct ibcr_err *e)
{
	/* a job over nodes: every node's ends exist, in repair mode (lib/coord.c) */
	if (refill_unix(j, n, f, fds, e) || coord_barrier("sockets", e))
		return -1;
	coord_settled();	/* a failure from here on fails this node only */
	return tcp_finish(f, fds, e) || tcp_replay(f, fds, e) ? -1 : 0;
}

void net_unlock(const struct ibcr_netlock *lock, int locked)
{
	struct ibcr_err e = { "" };

	if (locked && netlock_drop(lock->table, &e))
		fprintf(stderr, "restart-loader: %s\n", e.msg);
}

int net_unlock_only(const struct ibcr_netlock *lock, int locked, const char *image)
{
	struct ibcr_err e = { "" };

	if (!locked) {
		printf("%s holds no network lock\n", image);
		return 0;
	}
	if (netlock_drop(lock->table, &e)) {
		fprintf(stderr, "restart-loader: %s\n", e.msg);
		return 1;
	}
	printf("%s: network lock %s removed (%u TCP connection(s) given up)\n", image,
	       lock->table, lock->nconns);
	return 0;
}
