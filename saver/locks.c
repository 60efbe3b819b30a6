// SPDX-License-Identifier: MIT
/*
 * File locks, as /proc/PID/fdinfo shows them on the descriptor that set
 * them ("lock:" lines, the /proc/locks format): POSIX record locks (the
 * process's), flock and OFD locks (the open file description's). An
 * active lease is the description's attribute (fdattrs.c); a lease being
 * broken and mandatory locks cannot be taken back and fail the
 * checkpoint.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "procfs.h"
#include "saver.h"

static int parse(const char *line, struct ibcr_lock *l)
{
	char kind[16], mode[16], rw[16], end[32];
	unsigned long long start;

	if (sscanf(line, "%*d: %15s %15s %15s %*d %*s %llu %31s", kind, mode, rw, &start,
		   end) != 5)
		return -1;
	if (!strcmp(kind, "LEASE") && !strcmp(mode, "ACTIVE"))
		return 1;	/* F_GETLEASE tells it: fdattrs.c */
	if (strcmp(mode, "ADVISORY"))
		return -1;
	if (!strcmp(kind, "POSIX"))
		l->kind = IBCR_LOCK_POSIX;
	else if (!strcmp(kind, "FLOCK"))
		l->kind = IBCR_LOCK_FLOCK;
	else if (!strcmp(kind, "OFDLCK"))
		l->kind = IBCR_LOCK_OFD;
	else
		return -1;
	l->write = !strcmp(rw, "WRITE");
	l->start = start;
	l->end = strcmp(end, "EOF") ? strtoull(end, NULL, 10) : UINT64_MAX;
	return 0;
}

int capture_locks(struct target *t, struct ibcr_err *e)
{
	struct ibcr_process_state *ps = &t->ps;

	for (uint32_t i = 0; i < ps->nfds; i++) {
		char path[64], *s, *line, *save = NULL;

		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)t->pid, ps->fds[i].fd);
		if (proc_read(path, &s, NULL, e))
			return -1;
		for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			struct ibcr_lock l = { .fd = ps->fds[i].fd };
			int rc;

			if (strncmp(line, "lock:", 5) || (rc = parse(line + 5, &l)) > 0)
				continue;
			if (rc) {
				free(s);
				return ibcr_fail(e, "pid %d fd %d: lock%s: not supported",
						 (int)t->pid, ps->fds[i].fd, line + 5);
			}
			ps->locks = xrealloc(ps->locks, sizeof(l) * (ps->nlocks + 1));
			ps->locks[ps->nlocks++] = l;
		}
		free(s);
	}
	return 0;
}
