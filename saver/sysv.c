// SPDX-License-Identifier: MIT
/*
 * SysV shared memory segments that the image's processes have attached:
 * their key, id, owner and mode from /proc/sysvipc/shm. Their contents
 * are page data of the regions that map them (memory.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "procfs.h"
#include "saver.h"

#define SHM_DEST_MODE 01000	/* in the perms column: removed, still attached */

static int wanted(const struct target *t, uint32_t n, int id)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++)
			if ((t[k].ps.vmas[i].flags & IBCR_VMAF_SYSV) &&
			    t[k].ps.vmas[i].file_ino == (uint64_t)id)
				return 1;
	return 0;
}

int sysv_capture(const struct target *t, uint32_t n, struct ibcr_sysv *out,
		 struct ibcr_err *e)
{
	char *text, *line, *save = NULL;

	memset(out, 0, sizeof(*out));
	if (proc_read("/proc/sysvipc/shm", &text, NULL, e))
		return -1;
	strtok_r(text, "\n", &save);	/* the column titles */
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct ibcr_sysv_shm s = { 0 };
		unsigned long long size;
		unsigned mode;

		if (sscanf(line, "%d %d %o %llu %*d %*d %*d %u %u %u %u", &s.key, &s.id, &mode,
			   &size, &s.uid, &s.gid, &s.cuid, &s.cgid) != 8 || !wanted(t, n, s.id))
			continue;
		s.mode = mode & 0777;
		s.flags = (mode & SHM_DEST_MODE) ? IBCR_SHM_DEST : 0;
		s.size = size;
		out->shm = xrealloc(out->shm, sizeof(s) * (out->nshm + 1));
		out->shm[out->nshm++] = s;
	}
	free(text);
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < t[k].ps.nvmas; i++) {
			const struct ibcr_vma *v = &t[k].ps.vmas[i];
			int found = 0;

			if (!(v->flags & IBCR_VMAF_SYSV))
				continue;
			for (uint32_t x = 0; x < out->nshm; x++)
				found |= (uint64_t)out->shm[x].id == v->file_ino;
			if (!found)
				return ibcr_fail(e, "pid %d: SysV segment %llu mapped at %#llx is not "
						 "in /proc/sysvipc/shm (another IPC namespace?)",
						 (int)t[k].pid, (unsigned long long)v->file_ino,
						 (unsigned long long)v->start);
		}
	return 0;
}
