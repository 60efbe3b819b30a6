// SPDX-License-Identifier: MIT
/*
 * Descriptor tables shared between processes (CLONE_FILES): a process
 * that shared the table of an earlier one of the image (its group's
 * leader) is forked by its parent, also of the group, with CLONE_FILES,
 * and so lives in the same table from birth. One table, so one process
 * places its descriptors: the leader. The others wait until it has
 * (every number is then what it was: nothing of theirs may land on one
 * meanwhile), open their own descriptors of the restore (mapped files,
 * the image, above every saved number) and tell the leader which, and
 * the leader closes what the table holds beyond the saved descriptors,
 * theirs and its own only once they have. Two pipes per group, made by
 * the loader before it forks anything: "placed" (a byte per member) and
 * "done" (each member's descriptors).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "fdkinds.h"

#define MAX_KEEP 4096

int group_pipes(struct job *j, uint32_t n, int base)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l = j[i].ps.rec.files_of;
		struct restore *lead;

		j[i].rs.grp[0] = j[i].rs.grp[1] = j[i].rs.grp[2] = j[i].rs.grp[3] = -1;
		if (!l || (j[i].ps.rec.flags & IBCR_PROCF_ZOMBIE))
			continue;
		if (l > n || l - 1 >= i)
			return -1;
		lead = &j[l - 1].rs;
		if (!lead->nmembers) {
			int p[2][2];

			if (pipe2(p[0], O_CLOEXEC) || pipe2(p[1], O_CLOEXEC))
				return -1;
			for (int k = 0; k < 4; k++) {
				int *fd = &p[k / 2][k % 2], high = fcntl(*fd, F_DUPFD_CLOEXEC, base);

				close(*fd);
				if ((lead->grp[k] = high) < 0)
					return -1;
			}
		}
		lead->nmembers++;
		for (int k = 0; k < 4; k++)
			j[i].rs.grp[k] = lead->grp[k];
	}
	return 0;
}

unsigned long group_clone_flags(const struct job *child)
{
	return child->ps.rec.files_of ? CLONE_FILES : 0;
}

void group_wait_placed(const struct restore *rs)
{
	struct ibcr_err e = { "" };
	char c;

	if (!rs->ps->rec.files_of)
		return;
	if (read(rs->grp[0], &c, 1) != 1) {
		ibcr_fail(&e, "pid %d: the process whose descriptor table it shares ended "
			  "before placing the descriptors", rs->ps->rec.pid);
		child_fail(rs->status_fd, &e);
	}
}

int group_keeps(const struct restore *rs, int fd)
{
	for (uint32_t i = 0; i < rs->nkeep; i++)
		if (rs->keep[i] == fd)
			return 1;
	for (int k = 0; k < 4; k++)
		if (rs->grp[k] == fd)
			return 1;
	return 0;
}

/* The leader, its descriptors placed: the members may go; what they keep. */
int group_lead(struct restore *rs, struct ibcr_err *e)
{
	if (!rs->nmembers)
		return 0;
	for (uint32_t i = 0; i < rs->nmembers; i++)
		if (write(rs->grp[1], "p", 1) != 1)
			return ibcr_fail_errno(e, errno, "telling the processes sharing the "
					       "descriptor table to go on");
	rs->keep = xmalloc(sizeof(int) * MAX_KEEP);
	for (uint32_t i = 0; i < rs->nmembers; i++) {
		int32_t cnt = 0;

		if (read_full(rs->grp[2], &cnt, sizeof(cnt)) || cnt < 0 ||
		    rs->nkeep + (uint32_t)cnt > MAX_KEEP ||
		    read_full(rs->grp[2], rs->keep + rs->nkeep, sizeof(int) * (size_t)cnt))
			return ibcr_fail(e, "a process sharing the descriptor table ended before "
					 "it was ready");
		rs->nkeep += (uint32_t)cnt;
	}
	return 0;
}

/* After the leader's close of the rest: the group's pipes go too. */
void group_close(struct restore *rs)
{
	for (int k = 0; k < 4 && rs->nmembers; k++)
		close(rs->grp[k]);
}

/* A member, the table placed: its own descriptors, told to the leader. */
int group_follow(struct restore *rs, int (*open_own)(struct restore *, struct ibcr_err *),
		 struct ibcr_err *e)
{
	struct buf b = { 0 };
	int32_t cnt = 0;
	int img, rc;

	/* the leader's core closes the image's descriptor: one of our own */
	if ((img = fcntl(rs->r->fd, F_DUPFD_CLOEXEC, rs->fd_base)) < 0)
		return ibcr_fail_errno(e, errno, "a descriptor of the image of its own");
	rs->r->fd = img;
	if (open_own(rs, e))
		return -1;
	buf_put(&b, &cnt, sizeof(cnt));
	buf_put(&b, &img, sizeof(img));
	buf_put(&b, &rs->status_fd, sizeof(int));
	buf_put(&b, &rs->control_fd, sizeof(int));
	if (rs->exe_fd >= 0)
		buf_put(&b, &rs->exe_fd, sizeof(int));
	for (uint32_t i = 0; i < rs->ps->nvmas; i++)
		if (rs->map_fds[i] >= 0)
			buf_put(&b, &rs->map_fds[i], sizeof(int));
	cnt = (int32_t)((b.len - sizeof(cnt)) / sizeof(int));
	memcpy(b.p, &cnt, sizeof(cnt));
	rc = write_full(rs->grp[3], b.p, b.len);
	buf_free(&b);
	return rc ? ibcr_fail_errno(e, errno, "telling the leader of its descriptor table "
				    "its own descriptors") : 0;
}
