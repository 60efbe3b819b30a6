// SPDX-License-Identifier: MIT
/* The restore core's main line and its failure path. */
#include <linux/mman.h>

#include "core.h"
#include "rt/fmt.h"
#include "status.h"
#include "sys.h"

/*
 * The loader reads the status pipe: ST_ERROR and a message means the restore
 * failed. fd 2 is not used: by now it may be the restored process's own
 * stderr (a log file, say), not the terminal of whoever restarted it.
 */
void core_die(struct plan *p, const char *f, ...)
{
	char msg[512];
	va_list ap;
	size_t n;

	msg[0] = ST_ERROR;
	va_start(ap, f);
	n = 1 + fmt_v(msg + 1, sizeof(msg) - 1, f, ap);
	va_end(ap);
	sys_write(p->status_fd, msg, n);
	sys_exit_group(127);
}

void core_trace(struct plan *p, const char *f, ...)
{
	char msg[256];
	va_list ap;
	size_t n;

	if (!(p->flags & PLAN_TRACE))
		return;
	msg[0] = ST_TRACE;
	va_start(ap, f);
	n = 1 + fmt_v(msg + 1, sizeof(msg) - 2, f, ap);
	va_end(ap);
	msg[n++] = '\n';
	sys_write(p->status_fd, msg, n);
}

void core_main(struct plan *p)
{
	if (p->magic != PLAN_MAGIC)
		sys_exit_group(127);
	core_trace(p, "core running at %p", (void *)p->hole_start);
	core_unmap_loader(p);
	core_trace(p, "loader unmapped");
	core_move_specials(p);
	core_vdso_proxy(p);
	core_trace(p, "special mappings moved");
	core_map_regions(p);
	core_trace(p, "regions mapped");
	for (uint64_t i = 0; i < p->npokes; i++)
		__builtin_memcpy((void *)p->pokes[i].addr, p->pokes[i].data, p->pokes[i].len);
	core_set_process(p);
	core_chroot(p);
	core_trace(p, "process state set");
	core_start_threads(p);
}

void core_unmap_loader(struct plan *p)
{
	for (uint64_t i = 0; i < p->nunmap; i++) {
		const struct plan_range *r = &p->unmap[i];
		long rc = sys_munmap(r->start, r->end - r->start);

		if (rc)
			core_die(p, "unmapping loader region %#lx-%#lx: error %ld",
				 (unsigned long)r->start, (unsigned long)r->end, -rc);
	}
}

/*
 * The kernel's special mappings move as a set: each first to a parking
 * place in the hole, then to its saved address, so that a saved address
 * overlapping a current one never makes mremap refuse. The parking place
 * is reserved again afterwards: threads resume before the loader unmaps
 * the hole, and their new mappings must not land in a range about to be
 * unmapped.
 */
void core_move_specials(struct plan *p)
{
	uint64_t park = 0, park_len = 0;
	long rc;

	for (int pass = 0; pass < 2; pass++)
		for (uint64_t i = 0; i < p->nspecial; i++) {
			struct plan_special *s = &p->special[i];
			uint64_t from = pass ? s->park : s->cur;
			uint64_t to = pass ? s->target : s->park;

			rc = sys_mremap(from, s->len, s->len, MREMAP_MAYMOVE | MREMAP_FIXED, to);

			if (rc != (long)to)
				core_die(p, "moving kernel mapping %#lx to %#lx: error %ld",
					 (unsigned long)from, (unsigned long)to, -rc);
			if (pass)
				continue;
			if (!park || s->park < park)
				park = s->park;
			park_len += s->len;
		}
	if (!park_len)
		return;
	rc = sys_mmap(park, park_len, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (rc != (long)park)
		core_die(p, "reserving %#lx-%#lx: error %ld", (unsigned long)park,
			 (unsigned long)(park + park_len), -rc);
}
