// SPDX-License-Identifier: MIT
/*
 * Descriptor tables shared between processes (clone with CLONE_FILES):
 * kcmp(KCMP_FILES) tells. Each process that shares the table of an
 * earlier one of the image records that one (files_of): the restore
 * makes it with CLONE_FILES from its parent, which must share the table
 * too (a table is shared only by cloning it).
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fdkinds.h"

#define KCMP_FILES 2

static int same_table(pid_t a, pid_t b, struct ibcr_err *e)
{
	long r = syscall(SYS_kcmp, a, b, KCMP_FILES, 0, 0);

	if (r < 0)
		return ibcr_fail_errno(e, errno, "pid %d, pid %d: comparing their descriptor "
				       "tables (kcmp)", (int)a, (int)b);
	return r == 0;
}

int fdtable_share(struct target *t, uint32_t n, struct ibcr_err *e)
{
	for (uint32_t k = 0; k < n; k++) {
		struct ibcr_proc *r = &t[k].ps.rec;
		int same = 0;

		if (t[k].zombie)
			continue;
		for (uint32_t i = 0; i < k && !r->files_of; i++) {
			if (t[i].zombie || t[i].ps.rec.files_of)
				continue;	/* the group's first one stands for it */
			if ((same = same_table(t[i].pid, t[k].pid, e)) < 0)
				return -1;
			if (same)
				r->files_of = i + 1;
		}
		if (!r->files_of)
			continue;
		for (uint32_t p = 0; p < n; p++)
			if (t[p].pid == r->ppid && !t[p].zombie &&
			    (p + 1 == r->files_of || t[p].ps.rec.files_of == r->files_of))
				same = 2;
		if (same != 2)
			return ibcr_fail(e, "pid %d shares its descriptor table (CLONE_FILES) with "
					 "pid %d but not with its parent: not supported",
					 (int)t[k].pid, (int)t[r->files_of - 1].pid);
	}
	return 0;
}
